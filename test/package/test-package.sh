#!/usr/bin/env bash
#
# test/package/test-package.sh: build the Debian package and prove that what
# it ships installs and works (`make test-package`; packaging.mk).
#
#   bash test/package/test-package.sh [--ref REF | --worktree] [--out DIR]
#
#  1. META.json: the checker's self-test (test/package/check-meta.pl); the
#     tree's META.json itself is checked by dist.sh and build-deb.sh;
#  2. the package: test/package/build-deb.sh (dependencies, source
#     distribution, dpkg-buildpackage -us -uc with the build-time regression
#     run), results in DIR (default build/deb);
#  3. lintian on the .changes (source and binary packages), if lintian is
#     installed (or LINTIAN names a command); an E: tag fails the test;
#  4. for each postgresql-<v>-stream-offset-guard .deb: apt's simulation
#     says it would install here with nothing else to change; it has no
#     maintainer scripts; then a private copy of PostgreSQL <v> with the
#     .deb extracted over it (dpkg-deb -x), a throwaway cluster on a unix
#     socket (port 55800-55849), CREATE EXTENSION and ALTER EXTENSION
#     UPDATE from every packaged install version, the version, function
#     calls, the library the backend mapped, and the regression suite
#     (PGXS installcheck with that copy's pg_config and pg_regress).
#
# Why a private copy rather than dpkg -i: see packaging.mk.
#
# Environment: KEEP_TMP=1 keeps the temp dir (cluster, logs, results);
# DEB_BUILD_OPTIONS, DEB_BUILD_PROFILES and SOG_PKG_PORT as for
# build-deb.sh; LINTIAN, the lintian command (default: lintian, when
# installed).

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

t0=$(date +%s)
say() { printf '\n=== %s\n' "$*"; }
failures=()
fail() { echo "test-package: FAILED: $*"; failures+=("$*"); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-pkgtest.XXXXXX")
chmod 755 "$tmp"
umask 022
servers=()		# "bindir data" of each cluster started
cleanup() {
	local rc=$? s
	for s in "${servers[@]}"; do
		if [ -f "${s#* }/postmaster.pid" ]; then
			as_pg "${s%% *}/pg_ctl" -D "${s#* }" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
	if [ "${KEEP_TMP:-0}" = 1 ]; then
		echo "test-package: KEEP_TMP=1, $tmp stays"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# as_pg CMD...: a server-side command as the postgres OS user (as root),
# with the current PATH and libpq variables.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME="$tmp" PATH="$PATH" \
			${PGHOST:+PGHOST="$PGHOST"} ${PGPORT:+PGPORT="$PGPORT"} \
			PGUSER=postgres PGDATABASE=postgres "$@"
	else
		env PGUSER=postgres PGDATABASE=postgres "$@"
	fi
}

# --- 1. the META.json checker ------------------------------------------------------

say "META.json checker"
if ! perl "$here/check-meta.pl" --self-test; then
	fail "check-meta.pl --self-test"
fi

# --- 2. the package --------------------------------------------------------------------

say "package build"
if ! bash "$here/build-deb.sh" "${src[@]}" --out "$out"; then
	fail "build-deb.sh"
	echo "test-package: $((${#failures[@]})) failure(s) in $(($(date +%s) - t0)) s"
	exit 1
fi
out=$(cd "$out" && pwd)	# apt-get -s install takes a path only as ./x or /x

# --- 3. lintian ----------------------------------------------------------------------------

say "lintian"
lintian_cmd=${LINTIAN:-}
if [ -z "$lintian_cmd" ] && command -v lintian >/dev/null 2>&1; then
	lintian_cmd=lintian
fi
if [ -z "$lintian_cmd" ]; then
	echo "lintian: not installed, skipped (apt-get install lintian, or LINTIAN=<command>)"
else
	changes=$(ls "$out"/*.changes)
	echo "lintian: $($lintian_cmd --version) on $(basename "$changes")"
	# -I --pedantic: every tag, down to the pedantic ones; --show-overrides:
	# the overridden ones too, with their justification (N: lines).
	lint=$($lintian_cmd -I --pedantic --show-overrides "$changes" 2>&1 |
		grep -v '^running with root privileges is not recommended' || true)
	if [ -n "$lint" ]; then
		printf '%s\n' "$lint"
	else
		echo "lintian: no tags"
	fi
	if printf '%s\n' "$lint" | grep -q '^E: '; then
		fail "lintian reports errors"
	fi
fi

# --- 4. each package in a private PostgreSQL --------------------------------------------

# The extension's name and default version, from the control file of the
# source the package was built from (the distribution the build used).
ext=stream_offset_guard
dist_tree=$tmp/src
mkdir -p "$dist_tree"
archive=$(ls "$out"/*.orig.tar.gz)
tar -C "$dist_tree" --strip-components=1 -xzf "$archive"
default=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" \
	"$dist_tree/$ext.control")

test_major() {		# test_major V DEB
	local v=$1 deb=$2 R=$tmp/pg-$1 bindir data sock port list stray ok=1
	bindir=$R/usr/lib/postgresql/$v/bin

	say "PostgreSQL $v: $(basename "$deb")"
	if [ ! -x "/usr/lib/postgresql/$v/bin/postgres" ]; then
		fail "$v: /usr/lib/postgresql/$v/bin/postgres is not installed"
		return
	fi

	# Would it install here, and with nothing else to change?  apt's
	# simulation resolves the Depends against this system's packages
	# without taking any lock or changing anything.
	local sim
	if ! sim=$(apt-get -s -o Debug::NoLocking=1 install "$deb" 2>&1); then
		printf '%s\n' "$sim" | tail -n 20
		fail "$v: apt-get -s install says the package does not install here"
	else
		printf '%s\n' "$sim" | grep -E '^(Inst|Remv) ' | sed 's/^/apt-get -s: /'
		if printf '%s\n' "$sim" | grep -E '^(Inst|Remv) ' | grep -vq " $(dpkg-deb -f "$deb" Package) "; then
			echo "apt-get -s: (installing it would also install or remove the packages above)"
		fi
	fi
	# dpkg-deb -x runs no maintainer scripts: there must be none to run.
	local ctrl
	ctrl=$(dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed -e 's|^\./||' -e '/^$/d' | sort | tr '\n' ' ')
	echo "control files: $ctrl"
	if [ "$ctrl" != "control md5sums " ]; then
		fail "$v: the package has maintainer scripts ($ctrl), which extracting it does not run: test them with dpkg -i in a container"
	fi

	# The private copy: PostgreSQL's lib/ and share/ directories, minus any
	# stream_offset_guard files a `make install` left on this system, then
	# the package's files extracted at the paths dpkg -i would write.
	mkdir -p "$R/usr/lib/postgresql" "$R/usr/share/postgresql"
	cp -a "/usr/lib/postgresql/$v" "$R/usr/lib/postgresql/"
	cp -a "/usr/share/postgresql/$v" "$R/usr/share/postgresql/"
	rm -rf "$R/usr/lib/postgresql/$v/lib/$ext.so" \
		"$R/usr/lib/postgresql/$v/lib/bitcode/$ext" \
		"$R/usr/lib/postgresql/$v/lib/bitcode/$ext.index.bc" \
		"$R/usr/share/postgresql/$v/extension/$ext".control \
		"$R/usr/share/postgresql/$v/extension/$ext"--*.sql
	dpkg-deb -x "$deb" "$R"
	list=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | sed 's|^\./|/|' | grep -v '/$' | LC_ALL=C sort)
	local missing=0 f
	while IFS= read -r f; do
		[ -e "$R$f" ] || { echo "not extracted: $f"; missing=1; }
	done <<<"$list"
	[ "$missing" = 0 ] || fail "$v: files of the package are missing from the copy"
	# Every file of the extension in the copy is one the package shipped.
	stray=$(cd "$R" && find . -path "./usr/share/doc" -prune -o -name "$ext*" -type f -print |
		sed 's|^\.||' | LC_ALL=C sort | LC_ALL=C comm -23 - <(printf '%s\n' "$list"))
	if [ -n "$stray" ]; then
		echo "$stray"
		fail "$v: the copy holds extension files the package does not ship"
	fi
	echo "package files (extracted into the copy): $(grep -c "/lib/$ext\.so$" <<<"$list") library, $(grep -c "/extension/$ext[-.]" <<<"$list") in extension/ ($(grep "/extension/$ext[-.]" <<<"$list" | sed 's|.*/||' | tr '\n' ' ')), $(grep -c '/bitcode/' <<<"$list") bitcode, $(grep -c '^/usr/share/doc/' <<<"$list") under /usr/share/doc"

	local pkglibdir sharedir
	pkglibdir=$("$bindir/pg_config" --pkglibdir)
	sharedir=$("$bindir/pg_config" --sharedir)
	echo "pg_config of the copy: pkglibdir $pkglibdir, sharedir $sharedir"
	if [ "$pkglibdir" != "$R/usr/lib/postgresql/$v/lib" ] || [ "$sharedir" != "$R/usr/share/postgresql/$v" ]; then
		fail "$v: the copy's pg_config does not point into the copy"
		return
	fi

	# The throwaway cluster: unix socket only, in the temp dir.
	local run=$tmp/run-$v		# owned by the server's OS user: data, socket, log
	data=$run/data
	sock=$run/sock
	mkdir -p "$data" "$sock"
	chmod 700 "$data"
	port=$(sog_first_free_port 55800 55849) || { fail "$v: no free port in 55800-55849"; return; }
	if [ "$(id -u)" -eq 0 ]; then
		chown -R postgres: "$run" "$dist_tree"
	fi
	servers+=("$bindir $data")
	local -x PATH="$bindir:$PATH" PGHOST="$sock" PGPORT="$port"
	if ! as_pg initdb -D "$data" -A trust -U postgres --locale=C -E UTF8 >"$tmp/initdb-$v.log" 2>&1; then
		tail -n 20 "$tmp/initdb-$v.log"
		fail "$v: initdb"
		return
	fi
	if ! as_pg pg_ctl -D "$data" -l "$run/server.log" -w \
		-o "-c port=$port -c listen_addresses='' -c unix_socket_directories='$sock'" start >/dev/null; then
		tail -n 30 "$run/server.log"
		fail "$v: the server did not start"
		return
	fi
	echo "cluster: $(as_pg psql -X -At -c 'SELECT version()'), port $port, socket in $sock"

	# CREATE EXTENSION, its version, C functions against independent
	# oracles, and the library the backend mapped: the package's.
	local sql out_sql
	sql=$(cat <<-SQL
		\set ON_ERROR_STOP 1
		CREATE DATABASE sog_package;
		\c sog_package
		CREATE EXTENSION $ext;
		SELECT 'version ' || extversion FROM pg_extension WHERE extname = '$ext';
		SELECT 'payload_digest = sha256: ' || (sog.payload_digest('stream_offset_guard'::bytea) = sha256('stream_offset_guard'::bytea));
		SELECT 'position order: ' || ('10'::sog.position OPERATOR(sog.>) '9'::sog.position AND '1-2'::sog.position OPERATOR(sog.<) '1-10'::sog.position);
		SELECT 'library: ' || regexp_replace(l, '^.* ', '')
		  FROM regexp_split_to_table(pg_read_file('/proc/' || pg_backend_pid() || '/maps'), E'\n') AS l
		 WHERE l LIKE '%/$ext.so' LIMIT 1;
	SQL
	)
	if out_sql=$(printf '%s\n' "$sql" | as_pg psql -X -q -At 2>&1); then
		printf '%s\n' "$out_sql"
	else
		printf '%s\n' "$out_sql"
		fail "$v: CREATE EXTENSION and the smoke queries"
	fi
	grep -qx "version $default" <<<"$out_sql" || fail "$v: CREATE EXTENSION did not install default_version $default"
	grep -qx 'payload_digest = sha256: true' <<<"$out_sql" || fail "$v: sog.payload_digest"
	grep -qx 'position order: true' <<<"$out_sql" || fail "$v: sog.position comparison"
	grep -qx "library: $R/usr/lib/postgresql/$v/lib/$ext.so" <<<"$out_sql" ||
		fail "$v: the backend did not load the package's $ext.so from the copy"

	# Every packaged install script, then ALTER EXTENSION UPDATE to the
	# default: the upgrade scripts are in the package and chain up.
	local iv
	for iv in $(printf '%s\n' "$list" | sed -n "s|^/usr/share/postgresql/$v/extension/$ext--\([^-]*\)\.sql$|\1|p"); do
		[ "$iv" = "$default" ] && continue
		if out_sql=$(as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d sog_package \
			-c "DROP EXTENSION $ext" \
			-c "CREATE EXTENSION $ext VERSION '$iv'" \
			-c "ALTER EXTENSION $ext UPDATE" \
			-c "SELECT extversion FROM pg_extension WHERE extname = '$ext'" 2>&1) &&
			[ "$out_sql" = "$default" ]; then
			echo "upgrade: CREATE EXTENSION $ext VERSION '$iv'; ALTER EXTENSION $ext UPDATE -> $out_sql"
		else
			printf '%s\n' "$out_sql"
			fail "$v: installing $iv and updating to $default"
		fi
	done

	# The regression suite with this copy's pg_config: PGXS finds pg_regress
	# and psql in the copy, the server finds the package's files.
	echo "regression suite: make installcheck PG_CONFIG=$bindir/pg_config (REGRESS only)"
	if as_pg make -C "$dist_tree" --no-print-directory PG_CONFIG="$bindir/pg_config" \
		ISOLATION= TAP_TESTS= installcheck >"$tmp/installcheck-$v.log" 2>&1; then
		grep -E '^=+ *$|tests? (passed|failed)' "$tmp/installcheck-$v.log" || true
	else
		tail -n 40 "$tmp/installcheck-$v.log"
		[ -f "$dist_tree/test/regression.diffs" ] && head -n 300 "$dist_tree/test/regression.diffs"
		fail "$v: the regression suite against the package"
	fi

	if grep -E 'terminated by signal|TRAP:' "$run/server.log"; then
		fail "$v: a backend crashed (server log above)"
	fi
	as_pg pg_ctl -D "$data" -m fast -w stop >/dev/null || true
}

shopt -s nullglob
tested=0
for deb in "$out"/postgresql-*-stream-offset-guard_*.deb; do
	v=$(dpkg-deb -f "$deb" Package | sed -n 's/^postgresql-\([0-9.]*\)-stream-offset-guard$/\1/p')
	[ -n "$v" ] || continue
	test_major "$v" "$deb"
	tested=$((tested + 1))
done
[ "$tested" -gt 0 ] || fail "no postgresql-<v>-stream-offset-guard package in $out"

say "summary"
elapsed=$(($(date +%s) - t0))
if [ ${#failures[@]} -eq 0 ]; then
	echo "make test-package: passed ($tested package(s) built, installed into a private PostgreSQL and tested; $elapsed s)"
	exit 0
fi
printf 'failed: %s\n' "${failures[@]}"
echo "make test-package: ${#failures[@]} failure(s) ($elapsed s)"
exit 1
