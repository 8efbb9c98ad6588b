#!/usr/bin/env bash
#
# tools/pgindent.sh: src/ in PostgreSQL's style, by PostgreSQL's own
# pgindent (`make pgindent`; `make pgindent-check` changes nothing and
# fails if a file would change).
#
# pgindent is not in Debian's binary packages, so the script takes it from
# Debian's source package of the PostgreSQL major PG_CONFIG names (apt-get
# source, through a private list of deb-src sources, into build/pgindent/,
# once), and runs it with pg_bsd_indent (Debian's pg-bsd-indent) and a
# typedefs list: PostgreSQL's, from the same source, and the project's own,
# src/typedefs.list, which the script checks lists every typedef of src/.
# A block between /* *INDENT-OFF* */ and /* *INDENT-ON* */ is left alone.
#
#   tools/pgindent.sh            rewrite src/**/*.c and *.h in place
#   tools/pgindent.sh --check    print the diff; exit 1 if a file would change
#
# Environment: PG_CONFIG (default pg_config).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
source "$repo/test/lib.sh"

check=0
[ "${1:-}" = --check ] && check=1

sog_install_packages pg-bsd-indent dpkg-dev bzip2 || exit 1

major=$("${PG_CONFIG:-pg_config}" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
cache=$repo/build/pgindent/$major
if [ ! -x "$cache/pgindent/pgindent" ]; then
	echo "pgindent: fetching Debian's source of postgresql-$major for its pgindent"
	rm -rf "$cache" && mkdir -p "$cache/apt/lists/partial" "$cache/apt/parts" "$cache/dl"
	# the machine's own Debian sources, as deb-src
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	cat >"$cache/apt/parts/src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	aptopts=(-q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$cache/apt/parts"
		-o Dir::State::Lists="$cache/apt/lists")
	apt-get "${aptopts[@]}" update >/dev/null
	(cd "$cache/dl" && apt-get "${aptopts[@]}" source --download-only "postgresql-$major" >/dev/null 2>&1)
	orig=$(ls "$cache"/dl/postgresql-"$major"_*.orig.tar.* | head -n 1)
	v=${orig##*_}
	top=postgresql-${v%.orig.tar.*}		# the tarball's top directory
	tar xf "$orig" -C "$cache" "$top/src/tools/pgindent"
	mv "$cache/$top/src/tools/pgindent" "$cache/pgindent"
	rm -rf "$cache/dl" "$cache/apt" "${cache:?}/$top"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the typedefs src/ declares: "} Name;" closing a typedef, "typedef ...
# Name;" and "typedef ... (*Name)(...)"
{
	grep -rhoE '^\}\s*[A-Z][A-Za-z0-9_]*\s*;' "$repo/src" | sed -E 's/^\}\s*//; s/\s*;//'
	grep -rhoE '^typedef\s+[^;()]*[ *]([A-Za-z_][A-Za-z0-9_]*)\s*;' "$repo/src" |
		sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*)\s*;$/\1/'
	grep -rhoE '^typedef\s+[^;]*\(\s*\*\s*([A-Za-z_][A-Za-z0-9_]*)\)' "$repo/src" |
		sed -E 's/.*\(\s*\*\s*([A-Za-z_][A-Za-z0-9_]*)\)$/\1/'
} | sort -u >"$tmp/ours"
missing=$(comm -23 "$tmp/ours" <(sort -u "$repo/src/typedefs.list"))
if [ -n "$missing" ]; then
	echo "pgindent: src/typedefs.list lacks: $(echo $missing)" >&2
	exit 1
fi
sort -u "$cache/pgindent/typedefs.list" "$repo/src/typedefs.list" >"$tmp/typedefs.list"

# every .c and .h of src/ and its folders, by their paths under src/
files=$(cd "$repo" && find src -name '*.[ch]' | sort)
for f in $files; do
	mkdir -p "$tmp/$(dirname "$f")"
	cp "$repo/$f" "$tmp/$f"
done
(cd "$tmp" && perl "$cache/pgindent/pgindent" --typedefs="$tmp/typedefs.list" \
	--indent="$(command -v pg_bsd_indent)" $files)

changed=0
for name in $files; do
	f=$tmp/$name
	cmp -s "$f" "$repo/$name" && continue
	changed=$((changed + 1))
	if [ "$check" = 1 ]; then
		diff -u --label "a/$name" --label "b/$name" "$repo/$name" "$f" || true
	else
		cp "$f" "$repo/$name"
		echo "pgindent: $name"
	fi
done
echo "pgindent: $changed file(s) $([ "$check" = 1 ] && echo 'would change' || echo changed)"
[ "$check" = 0 ] || [ "$changed" = 0 ]
