#!/usr/bin/env bash
#
# test/portable/regress.sh: the C edition's regression suite and isolation
# specs, with their own expected files, against the portable edition
# installed the way a managed service's user installs it: through pg_tle,
# by a role that holds pgtle_admin and is not a superuser (docs/portable.md).
#
#   1. pg_tle and the private copy of PostgreSQL without the C edition
#      (test/portable/lib.sh, as run.sh);
#   2. the whole edition built from the tree (portable/build.pl);
#   3. a cluster with pg_tle preloaded; a database with pg_tle and pgcrypto
#      (the tests' SHA-256 oracle), and the edition installed there by
#      sog_tle_admin: pgtle.install_extension, then CREATE EXTENSION; the
#      regression suite's database and the isolation specs' are copies;
#   4. pg_regress --use-existing with the Makefile's REGRESS list but
#      setup, which is the C edition's install test (it drops the
#      extension and creates it again as the superuser: step 3 is the
#      portable edition's); then pg_isolation_regress with ISOLATION, each
#      spec's CREATE EXTENSION run as sog_tle_admin;
#   5. TAP: the crash tests (t/001-004, t/013: kills mid-sink, immediate
#      and SIGKILL restarts, a recovery interrupted, a pipelined worker
#      killed at each step), t/012 (a claim that times out names the
#      transaction holding the checkpoint: prepared, or an apply in a
#      savepoint) and t/014 (sink transactions prepared by a
#      two-phase coordinator, gaps among them) on the portable edition
#      (SogTest::extension_node makes its node from the private copy when
#      SOG_PORTABLE_INSTALL is set); t/015_edition_move.pl: a database
#      moved from the C edition to the portable one and back by pg_dump and
#      pg_restore.
#
#   test/portable/regress.sh [--major N] [--allow-missing] [TEST...]
#
# TEST... runs those regression tests only (no isolation specs).
# --allow-missing (development) builds with portable/build.pl's stubs for
# what is not ported yet.  Prints "portable-regress: passed (...)" or the
# failing tests and their diffs' first lines; exit status 1 on any.

set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
source "$srcdir/test/lib.sh"

major=15
allow=()
only=()
while [ $# -gt 0 ]; do
	case $1 in
		--major) major=$2; shift 2 ;;
		--allow-missing) allow=(--allow-missing); shift ;;
		-*) echo "usage: $0 [--major N] [--allow-missing] [TEST...]" >&2; exit 2 ;;
		*) only+=("$1"); shift ;;
	esac
done

t0=$(date +%s)
say() { printf '\n=== %s\n' "$*"; }
failures=()
fail() { echo "portable-regress: FAILED: $*"; failures+=("$*"); }
finish() {
	if [ ${#failures[@]} -eq 0 ]; then
		echo "portable-regress: passed ($*; $(($(date +%s) - t0)) s)"
		exit 0
	fi
	echo "portable-regress: ${#failures[@]} failure(s) in $(($(date +%s) - t0)) s"
	exit 1
}

ext=stream_offset_guard
tarball=${PG_TLE_TARBALL:-$srcdir/../shared/vendor/pg_tle/pg_tle-1.5.3.tar.gz}
sysbin=/usr/lib/postgresql/$major/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-portable-regress.XXXXXX")
chmod 755 "$tmp"
umask 022
server_bins=()
server_dirs=()
cleanup() {
	local rc=$? i
	for i in "${!server_dirs[@]}"; do
		if [ -f "${server_dirs[$i]}/postmaster.pid" ]; then
			as_pg "${server_bins[$i]}/pg_ctl" -D "${server_dirs[$i]}" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
	if [ "${KEEP_TMP:-0}" = 1 ]; then echo "portable-regress: KEEP_TMP=1, $tmp stays"; else rm -rf "$tmp"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
source "$here/lib.sh"

portable_tle

say "build (the whole edition${allow:+, with stubs for what is not ported})"
out_dir=$tmp/portable
if ! perl "$srcdir/portable/build.pl" "${allow[@]}" --out "$out_dir"; then
	fail "portable/build.pl"
	finish
fi
chmod -R a+rX "$out_dir"

say "cluster with pg_tle; the edition installed by sog_tle_admin (pgtle_admin, not a superuser)"
start_cluster "$pbin" tle "shared_preload_libraries = 'pg_tle'" "max_prepared_transactions = 10" ||
	{ fail "cluster"; finish; }
tsock=$sock
psql_t() { as_pg "$pbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$tsock" "$@"; }
psql_t -U postgres -d postgres <<'EOF' || { fail "cluster setup"; finish; }
CREATE ROLE sog_tle_admin LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE pg_read_all_stats;
CREATE DATABASE sog_template;
GRANT CREATE ON DATABASE sog_template TO sog_tle_admin;
\c sog_template
CREATE EXTENSION pg_tle;
CREATE EXTENSION pgcrypto;
GRANT pgtle_admin TO sog_tle_admin;
-- The extension's owner is not a superuser here, as on a managed service.
-- What the tests' superuser makes for it, an operator of such a service
-- grants it: amcheck's functions (superuser-only by default), which
-- sog.verify_storage() runs as the owner, whenever a test creates amcheck;
-- and the tables the tests attach to the guard's tables with triggers
-- (audit tables), which those triggers write as the owner.
CREATE FUNCTION public.regress_grant_amcheck() RETURNS event_trigger
LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE coalesce((SELECT string_agg(format('GRANT EXECUTE ON FUNCTION %s TO sog_tle_admin', p.oid::regprocedure), '; ')
			   FROM pg_catalog.pg_proc p
			   JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
			   JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
			  WHERE e.extname = 'amcheck'), 'SELECT 1');
END
$f$;
CREATE EVENT TRIGGER regress_grant_amcheck ON ddl_command_end WHEN TAG IN ('CREATE EXTENSION')
	EXECUTE FUNCTION public.regress_grant_amcheck();
ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT ALL ON TABLES TO sog_tle_admin;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres GRANT ALL ON SEQUENCES TO sog_tle_admin;
EOF
if psql_t -U sog_tle_admin -d sog_template -f "$out_dir/pg_tle.sql" >"$tmp/install.log" 2>&1 &&
	psql_t -U sog_tle_admin -d sog_template -c "CREATE EXTENSION $ext" >>"$tmp/install.log" 2>&1; then
	psql_t -U postgres -d sog_template -At -c "SELECT 'installed ' || extname || ' ' || extversion || ' by ' || extowner::regrole || ', superuser: ' || (SELECT rolsuper FROM pg_roles WHERE oid = extowner) FROM pg_extension WHERE extname = '$ext'"
else
	tail -20 "$tmp/install.log"
	fail "install through pg_tle as a pgtle_admin role"
	finish
fi
# The edition registered in template0 too: hostile's SQL_ASCII database is
# made from it (a throwaway cluster; the database only holds pg_tle's
# registration), so that its CREATE EXTENSION fails for the edition's own
# reason (test/portable/expected/README.md), not for a missing control file.
if ! { psql_t -U postgres -d postgres -c "ALTER DATABASE template0 ALLOW_CONNECTIONS true" >/dev/null &&
	psql_t -U postgres -d template0 -c "CREATE EXTENSION pg_tle" >/dev/null &&
	psql_t -U sog_tle_admin -d template0 -f "$out_dir/pg_tle.sql" >>"$tmp/install.log" 2>&1 &&
	psql_t -U postgres -d postgres -c "ALTER DATABASE template0 ALLOW_CONNECTIONS false" >/dev/null; }; then
	tail -5 "$tmp/install.log"
	fail "the edition registered in template0"
fi
# the regression suite's database and the isolation specs' (fresh, as
# pg_isolation_regress makes it for the C edition), each a copy of it
psql_t -U postgres -d postgres -c "CREATE DATABASE contrib_regression TEMPLATE sog_template" \
	-c "CREATE DATABASE isolation_regression TEMPLATE sog_template" \
	-c "GRANT CREATE ON DATABASE contrib_regression, isolation_regression TO sog_tle_admin" >/dev/null ||
	{ fail "the test databases"; finish; }

# The Makefile's lists (what make installcheck runs for the C edition).
list() { make -s -C "$srcdir" -f - print <<EOF
include Makefile
print:
	@echo \$($1)
EOF
}
regress=$(list REGRESS)
isolation=$(list ISOLATION)
if [ ${#only[@]} -gt 0 ]; then
	regress="${only[*]}"
	isolation=
fi
regress=$(printf '%s\n' $regress | grep -vx setup | tr '\n' ' ')

pgxs=$("$sysbin/pg_config" --pgxs)
pg_regress=$(dirname "$pgxs")/../test/regress/pg_regress
pg_isolation_regress=$(dirname "$pgxs")/../test/isolation/pg_isolation_regress
# a copy of test/ that postgres may write (results beside the files; the
# tests include test/*.sql relative to the directory they run in)
mkdir -p "$tmp/tree"
cp -a "$srcdir/test" "$tmp/tree/test"
cp -a "$srcdir/t" "$tmp/tree/t"
cp "$srcdir/$ext.control" "$tmp/tree/"
# The portable edition's own expected files (test/portable/expected/
# README.md: where a domain over text must answer otherwise).
for f in "$here"/expected/*.out; do
	cp "$f" "$tmp/tree/test/expected/$(basename "$f")"
done
# Each isolation spec creates the extension in its setup and drops it in
# its teardown, as the superuser: in the copy, its setup creates it as
# sog_tle_admin, so that every spec runs against an install by a role that
# is not a superuser (the line is checked: a spec written otherwise fails
# here, not silently).
for spec in "$tmp/tree/test/specs/"*.spec; do
	n=$(grep -c '^	CREATE EXTENSION IF NOT EXISTS stream_offset_guard;$' "$spec")
	[ "$n" = 1 ] || fail "$(basename "$spec"): $n lines create the extension (1 expected)"
	sed -i 's/^	CREATE EXTENSION IF NOT EXISTS stream_offset_guard;$/	SET ROLE sog_tle_admin; CREATE EXTENSION IF NOT EXISTS stream_offset_guard; RESET ROLE;/' "$spec"
done
chown -R postgres: "$tmp/tree"

say "regression suite ($(wc -w <<<"$regress") files; setup is the C edition's install test)"
if (cd "$tmp/tree" && as_pg "$pg_regress" --bindir="$pbin" --host="$tsock" --user=postgres \
	--use-existing --dbname=contrib_regression \
	--inputdir=test --outputdir=test $regress) >"$tmp/regress.log" 2>&1; then
	grep -E '^(ok|not ok|test |# All| All)' "$tmp/regress.log" | tail -3
else
	grep -E 'FAILED|failed \(ignored\)|not ok' "$tmp/regress.log" | head -60
	[ -f "$tmp/tree/test/regression.diffs" ] && head -c 6000 "$tmp/tree/test/regression.diffs"
	fail "regression suite: $(grep -cE ' FAILED|^not ok' "$tmp/regress.log") of $(wc -w <<<"$regress") files differ"
fi

if [ -n "$isolation" ]; then
	say "isolation specs ($(wc -w <<<"$isolation"))"
	if (cd "$tmp/tree" && as_pg "$pg_isolation_regress" --bindir="$pbin" --host="$tsock" --user=postgres \
		--use-existing --dbname=isolation_regression \
		--inputdir=test --outputdir=test/output_iso $isolation) >"$tmp/isolation.log" 2>&1; then
		grep -E '^(# All| All)' "$tmp/isolation.log" | tail -1
	else
		grep -E 'FAILED|not ok' "$tmp/isolation.log" | head -40
		[ -f "$tmp/tree/test/output_iso/regression.diffs" ] && head -c 4000 "$tmp/tree/test/output_iso/regression.diffs"
		fail "isolation specs: $(grep -cE ' FAILED|^not ok' "$tmp/isolation.log") of $(wc -w <<<"$isolation") differ"
	fi
fi

if [ ${#only[@]} -eq 0 ]; then
	say "TAP: the crash tests (t/001-004, t/013), the holder named (t/012) and two-phase sink transactions (t/014) on the portable edition, t/015_edition_move.pl (C -> portable -> C)"
	pgxsdir=$(cd "$(dirname "$pgxs")/../.." && pwd)
	mkdir -p "$tmp/tap" && chown postgres: "$tmp/tap"
	if (cd "$tmp/tree" && as_pg env PATH="$sysbin:$PATH" TESTDIR="$tmp/tap" PG_REGRESS="$pg_regress" \
		SOG_PORTABLE_INSTALL="$R/usr/lib/postgresql/$major" SOG_PORTABLE_TLE_SQL="$out_dir/pg_tle.sql" \
		prove -I "$pgxsdir/src/test/perl" -I t t/001_crash_mid_sink.pl t/002_immediate_restart.pl \
			t/003_kill9_restart.pl t/004_recovery_crash.pl \
			t/012_prepared_claim.pl t/013_pipelined_crash.pl t/014_two_phase.pl \
			t/015_edition_move.pl) >"$tmp/tap.log" 2>&1; then
		tail -2 "$tmp/tap.log"
	else
		grep -E '^(not ok|#)' "$tmp/tap.log" | head -40
		tail -3 "$tmp/tap.log"
		fail "TAP on the portable edition"
	fi
fi

finish "the C edition's regression files${isolation:+ and isolation specs} against the portable edition installed through pg_tle by a role that is not a superuser"
