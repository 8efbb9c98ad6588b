#!/usr/bin/env bash
#
# test/package/build-deb.sh: the Debian package, built from the source
# distribution the way a Debian builder would (`make deb`; packaging.mk).
#
#   bash test/package/build-deb.sh [--ref REF | --worktree] [--out DIR]
#
#  1. installs the build dependencies that are missing (debhelper, dpkg-dev,
#     fakeroot, postgresql-server-dev-all and, unless nocheck, postgresql-all
#     for the build-time tests; the last two pinned to the installed
#     postgresql-common);
#  2. makes the source distribution (test/package/dist.sh; --worktree by
#     default, --ref REF for a commit), unpacks it into a temp dir, adds
#     debian/ from the same source (the distribution leaves it out) and puts
#     the archive next to it as the Debian orig tarball;
#  3. runs `dpkg-buildpackage -us -uc` there (the source package, then the
#     binary packages, exactly what `-b` alone builds): pg_buildext builds
#     and installs the extension for each supported PostgreSQL version and
#     runs the regression suite against the packaged files on a
#     pg_virtualenv cluster (a free port of 55800-55849, on localhost);
#  4. copies the .deb files, the source package (.dsc, orig and debian
#     tarballs), .changes, .buildinfo and the build log to DIR (default
#     build/deb/, emptied of them first) and prints the .deb paths last.
#
# Nothing is installed into the system's PostgreSQL: pg_buildext's test
# cluster finds the extension in debian/<package>/ (extension_destdir).
#
# Environment: DEB_BUILD_OPTIONS or DEB_BUILD_PROFILES with nocheck skip the
# build-time tests; KEEP_TMP=1 keeps the build tree; SOG_PKG_PORT forces
# the test cluster's port.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/test/lib.sh"

src=(--worktree)
out=$root/build/deb
while [ $# -gt 0 ]; do
	case $1 in
		--ref) src=(--ref "$2"); shift 2 ;;
		--worktree) src=(--worktree); shift ;;
		--out) out=$2; shift 2 ;;
		*) echo "usage: $0 [--ref REF | --worktree] [--out DIR]" >&2; exit 2 ;;
	esac
done

# --- 1. build dependencies ----------------------------------------------------

# postgresql-server-dev-all and postgresql-all must be the version of the
# installed postgresql-common (they depend on it exactly); asking apt for
# the newest would upgrade postgresql-common, and with it the tools of the
# system's PostgreSQL, as a side effect of building a package.  So pin them
# to the installed version when the archive still has it.
pg_common=$(dpkg-query -W -f='${Version}' postgresql-common 2>/dev/null || true)
pin() {
	local p=$1
	if [ -n "$pg_common" ] &&
		apt-cache madison "$p" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' |
			grep -qxF "$pg_common"; then
		echo "$p=$pg_common"
	else
		echo "$p"
	fi
}
deps=(debhelper dpkg-dev fakeroot postgresql-server-dev-all)
# nocheck (in DEB_BUILD_OPTIONS or DEB_BUILD_PROFILES) skips the build-time
# tests, and with the profile postgresql-all <!nocheck> is not needed.
case " ${DEB_BUILD_OPTIONS:-} ${DEB_BUILD_PROFILES:-} " in
	*" nocheck "*)
		export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"
		export DEB_BUILD_PROFILES="${DEB_BUILD_PROFILES:+$DEB_BUILD_PROFILES }nocheck"
		;;
	*) deps+=(postgresql-all) ;;
esac
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	pinned=()
	for p in "${missing[@]}"; do pinned+=("$(pin "$p")"); done
	echo "build-deb: installing build dependencies: ${pinned[*]}"
	if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
		echo "build-deb: missing ${missing[*]}, and neither root nor sudo is available to install them" >&2
		exit 1
	fi
	sog_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	sog_as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${pinned[@]}" >/dev/null
else
	echo "build-deb: build dependencies present (${deps[*]})"
fi

# --- 2. the source distribution, unpacked -------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-deb.XXXXXX")
cleanup() {
	local rc=$?
	if [ "${KEEP_TMP:-0}" = 1 ]; then
		echo "build-deb: KEEP_TMP=1, the build tree stays in $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
# The test cluster's server runs as the postgres user and reads the
# extension's files out of the build tree: it must be able to enter it.
chmod 755 "$tmp"
umask 022

bash "$here/dist.sh" "${src[@]}" --out "$tmp" >"$tmp/dist.log" || { cat "$tmp/dist.log"; exit 1; }
cat "$tmp/dist.log"
archive=$(tail -n 1 "$tmp/dist.log")
tar -C "$tmp" -xzf "$archive"
tree=$tmp/$(basename "$archive" .tar.gz)
# debian/ from the same source (the distribution leaves it out).
if [ "${src[0]}" = --worktree ]; then
	(cd "$root" && git ls-files -z --cached --others --exclude-standard -- debian |
		while IFS= read -r -d "" f; do if [ -f "$f" ]; then printf "%s\0" "$f"; fi; done |
		tar --null --no-recursion -cf - -T -) | tar -C "$tree" -xf -
else
	git -C "$root" archive "${src[1]}" -- debian | tar -C "$tree" -xf -
fi
if [ ! -f "$tree/debian/changelog" ] || [ ! -f "$tree/debian/control" ]; then
	echo "build-deb: no debian/ packaging in ${src[*]#--}" >&2
	exit 1
fi
source_pkg=$(sed -n '1s/^\([^ ]*\) .*/\1/p' "$tree/debian/changelog")
upstream=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$tree/debian/changelog")
upstream=${upstream#*:}
upstream=${upstream%-*}
cp "$archive" "$tmp/${source_pkg}_$upstream.orig.tar.gz"
# META.json, the control file and debian/changelog agree on the version.
perl "$here/check-meta.pl" --root "$tree" "$tree/META.json"

# --- 3. dpkg-buildpackage -------------------------------------------------------------

PGPORT=${SOG_PKG_PORT:-}
if [ -z "$PGPORT" ]; then
	PGPORT=$(sog_first_free_port 55800 55849) || {
		echo "build-deb: no free port in 55800-55849 for the test cluster" >&2
		exit 1
	}
fi
export PGPORT
# The source package too (-us -uc, not -b): dpkg-source checks the tree
# against the orig tarball, and lintian then sees the source package.
echo "build-deb: dpkg-buildpackage -us -uc in $tree (build-time test cluster on port $PGPORT)"
start=$(date +%s)
if ! (cd "$tree" && dpkg-buildpackage -us -uc) >"$tmp/build.log" 2>&1; then
	tail -n 150 "$tmp/build.log"
	echo "build-deb: dpkg-buildpackage failed (the last 150 lines of its log are above; KEEP_TMP=1 keeps $tmp/build.log)" >&2
	exit 1
fi
# What pg_buildext did, and the build-time regression run.
grep -E '^### |^# [0-9]+: |^test [a-z_]+ +\.\.\. |^ +[a-z_]+ +\.\.\. |^=+ *$|tests? (passed|failed)' "$tmp/build.log" || true
echo "build-deb: dpkg-buildpackage done in $(($(date +%s) - start)) s"

# --- 4. the results -----------------------------------------------------------------------

mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/*.dsc \
	"$out"/*.debian.tar.* "$out"/*.orig.tar.* "$out"/build.log
shopt -s nullglob
debs=("$tmp"/*.deb)
if [ ${#debs[@]} -eq 0 ]; then
	echo "build-deb: dpkg-buildpackage made no .deb" >&2
	exit 1
fi
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$tmp"/*.dsc \
	"$tmp"/*.debian.tar.* "$tmp"/*.orig.tar.* "$tmp/build.log" "$out"/
for d in "$out"/*.deb; do
	echo "build-deb: $(basename "$d"): $(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version), $(du -k "$d" | cut -f1) KiB, Depends: $(dpkg-deb -f "$d" Depends)"
done
echo "build-deb: source package $(basename "$out"/*.dsc), changes $(cd "$out" && echo *.changes)"
for d in "$out"/*.deb; do
	echo "$d"
done
