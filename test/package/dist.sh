#!/usr/bin/env bash
#
# test/package/dist.sh: the source distribution, what PGXN takes and what the
# Debian package is built from (`make dist`; packaging.mk).
#
#   bash test/package/dist.sh [--ref REF | --worktree] [--out DIR]
#
# Writes DIR/<name>-<version>.tar.gz (DIR defaults to build/dist), whose
# files all sit under one top-level directory <name>-<version>/, the PGXN
# convention.  Name and version come from META.json; the version must be the
# control file's default_version as SemVer (1.1 -> 1.1.0).
#
# debian/ is left out: an upstream release carries no Debian packaging
# (lintian: no-debian-changes).  The same archive is the Debian orig tarball,
# and test/package/build-deb.sh adds debian/ from the same source.
#
#   --ref REF    (default HEAD) `git archive REF`: exactly a commit, with the
#                commit's time on every file, so the same commit always
#                gives the same bytes.  This is what a release is made from.
#   --worktree   the working tree as it would be committed: tracked files and
#                untracked ones that .gitignore does not exclude (git ls-files
#                --cached --others --exclude-standard), never .git or build
#                output.  For testing uncommitted work; not a release.
#
# The archive is then unpacked into a temp dir and its META.json is checked
# there, against the spec and against the files it ships
# (test/package/check-meta.pl).  The last line of output is the archive's
# path.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

ref=HEAD
worktree=0
out=$root/build/dist
while [ $# -gt 0 ]; do
	case $1 in
		--ref) ref=$2; shift 2 ;;
		--worktree) worktree=1; shift ;;
		--out) out=$2; shift 2 ;;
		*) echo "usage: $0 [--ref REF | --worktree] [--out DIR]" >&2; exit 2 ;;
	esac
done

cd "$root"
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "dist: $root is not a git checkout; the distribution is made from git (git archive)" >&2
	exit 1
fi

# A file as the chosen source has it.
src_file() {
	if [ "$worktree" = 1 ]; then
		cat "$1"
	else
		git show "$ref:$1"
	fi
}

meta=$(src_file META.json) || { echo "dist: no META.json in ${ref}" >&2; exit 1; }
read -r name version < <(printf '%s' "$meta" |
	perl -MJSON::PP -0777 -ne '$m = decode_json($_); print "$m->{name} $m->{version}\n"')
control=$(src_file "$name.control") || { echo "dist: no $name.control" >&2; exit 1; }
default=$(printf '%s\n' "$control" | sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p")
semver=$(printf '%s' "$default" | awk -F. '{ printf "%d.%d.%d", $1, $2, $3 }')
if [ "$semver" != "$version" ]; then
	echo "dist: META.json says version $version, $name.control's default_version is '$default' ($semver): make them agree" >&2
	exit 1
fi

dist=$name-$version
mkdir -p "$out"
archive=$out/$dist.tar.gz
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ "$worktree" = 1 ]; then
	# The files a commit of the working tree would hold, with the time of
	# HEAD (or now, in a repository without commits) on each.
	mtime=$(git log -1 --format=%ct 2>/dev/null || date +%s)
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			case $f in debian/*) continue ;; esac
			[ -f "$f" ] || [ -L "$f" ] || continue	# deleted but still in the index
			printf '%s\0' "$f"
		done | sort -z -u >"$tmp/files"
	tar -C "$root" --transform "s|^|$dist/|" --sort=name --mtime="@$mtime" \
		--owner=0 --group=0 --numeric-owner --mode='u+rw,go+r,go-w' \
		--no-recursion --null -cf - -T "$tmp/files" | gzip -n -9 >"$archive.part"
	if [ -n "$(git status --porcelain --untracked-files=normal 2>/dev/null)" ]; then
		from="the working tree, with uncommitted changes (not a release: commit, then make dist)"
	else
		from="the working tree (identical to $(git rev-parse --short HEAD))"
	fi
else
	commit=$(git rev-parse --verify "$ref^{commit}")
	git archive --format=tar --prefix="$dist/" "$commit" -- . ":(exclude)debian" | gzip -n -9 >"$archive.part"
	from="$ref ($(git rev-parse --short "$commit"))"
	if [ "$ref" = HEAD ] && [ -n "$(git status --porcelain --untracked-files=normal 2>/dev/null)" ]; then
		echo "dist: note: the working tree has changes that are not in HEAD; they are not in the archive (--worktree includes them)"
	fi
fi
mv "$archive.part" "$archive"

# Check what was shipped: one top-level directory, META.json valid and
# consistent with the files in the archive.
tar -C "$tmp" -xzf "$archive"
tops=$(tar -tzf "$archive" | cut -d/ -f1 | sort -u)
if [ "$tops" != "$dist" ]; then
	echo "dist: the archive must hold exactly one top-level directory $dist/, it holds: $tops" >&2
	exit 1
fi
perl "$here/check-meta.pl" --root "$tmp/$dist" "$tmp/$dist/META.json"
nfiles=$(tar -tzf "$archive" | grep -vc '/$')
echo "dist: $dist from $from: $nfiles files, $(du -k "$archive" | cut -f1) KiB"
echo "$archive"
