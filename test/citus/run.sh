#!/usr/bin/env bash
#
# test/citus/run.sh: the guard on Citus (`make test-citus`).
#
#  1. finds Citus in the PostgreSQL that PG_CONFIG names, or builds it from
#     ../shared/vendor/citus (the source tarball and its patches, beside the
#     clone) and installs it there; with neither, prints "skipped: ..." and
#     exits 0.  The build is cached in $SOG_CITUS_CACHE (default
#     /tmp/sog-citus-build), keyed by the checksums of the tarball and
#     patches and by the PostgreSQL it is built for, so a second run only
#     installs it (a second or so); then strips the installed citus.so
#     (strip --strip-unneeded), as a distribution's package ships it, and
#     checks that its symbol table is gone;
#  2. installs the Debian packages the build and the tests need, when
#     missing (root, or sudo);
#  3. copies the working tree (without .git and build products), builds the
#     extension and installs it into the same PostgreSQL;
#  4. runs the TAP tests of test/citus/t with prove, as the `postgres` OS
#     user when run as root: each starts a coordinator and two workers (or
#     two independent servers) on ports of 55700-55799, on 127.0.0.1 and
#     unix sockets, and removes them afterwards.  prove's summary ends the
#     output; the exit status is prove's.
#
# Environment:
#   PG_CONFIG          the PostgreSQL to use (default: the system's 15,
#                      /usr/lib/postgresql/15/bin/pg_config)
#   SOG_CITUS_VENDOR   where the Citus source is (default: ../shared/vendor/citus
#                      beside the repository)
#   SOG_CITUS_CACHE    the build cache (default /tmp/sog-citus-build)
#   PROVE_FLAGS        extra flags for prove (e.g. -v)
#   PROVE_TESTS        test files to run (default: test/citus/t/*.pl)
#   KEEP_TMP=1         keep the temp dir (node logs, data) after the run

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/test/lib.sh"

source "$here/lib.sh"

t_start=$(date +%s)
say() { printf '\n=== %s\n' "$*"; }
KEEP_TMP=${KEEP_TMP:-0}

citus_setup || exit 1

# --- 1. Citus -----------------------------------------------------------------------

say "citus (for $pg_version, $bindir)"
rc=0
citus_ensure || rc=$?
case $rc in
	0) ;;
	1) exit 0 ;;				# skipped (the line is printed)
	*) exit 1 ;;
esac
# as a distribution ships it: without its symbol table (Citus' functions
# that PGXS builds hidden on 16 and later are then nowhere to be found)
citus_strip || exit 1

# --- 2. the extension ---------------------------------------------------------------

tmp=$(mktemp -d /tmp/sog-citus-test.XXXXXX)
cleanup() {
	local rc=$?
	# nodes a killed test left running
	for pidfile in "$tmp"/tap/tmp_check/t_*_data/pgdata/postmaster.pid; do
		[ -f "$pidfile" ] || continue
		kill -9 "$(head -n 1 "$pidfile")" 2>/dev/null || true
	done
	if [ "$KEEP_TMP" = 1 ]; then
		echo "test-citus: kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "extension (a copy of the working tree in $tmp/src)"
mkdir -p "$tmp/tap"
extension_install "$tmp/src" || exit 1

# --- 3. the tests ----------------------------------------------------------------------

say "tap (test/citus/t)"
cp -r "$here/t" "$tmp/tap/t"
# port locks of the tests (ports 55700-55799), shared by concurrent runs
port_dir=/tmp/sog-citus-ports
mkdir -p "$port_dir" && chmod 1777 "$port_dir" 2>/dev/null || true
if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$tmp"
	as_pg() { runuser -u postgres -- "$@"; }
else
	as_pg() { "$@"; }
fi
tests=()
if [ -n "${PROVE_TESTS:-}" ]; then
	for t in $PROVE_TESTS; do tests+=("t/$(basename "$t")"); done
else
	for t in "$tmp"/tap/t/*.pl; do tests+=("t/$(basename "$t")"); done
fi
t_tap=$(date +%s)
set +e
(cd "$tmp/tap" && as_pg env PATH="$bindir:$PATH" HOME="$tmp" TESTDIR="$tmp/tap" \
	PG_REGRESS="$pgxs_top/src/test/regress/pg_regress" \
	SOG_CITUS_PORT_DIR="$port_dir" \
	prove -I "$pgxs_top/src/test/perl" -I t ${PROVE_FLAGS:-} "${tests[@]}")
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	for f in "$tmp"/tap/tmp_check/log/regress_log_*; do
		[ -f "$f" ] || continue
		echo "----- tail of $f -----"
		tail -n 40 "$f"
	done
fi
echo "test-citus: tests took $(citus_elapsed "$t_tap"); the whole run $(citus_elapsed "$t_start")"
exit "$rc"
