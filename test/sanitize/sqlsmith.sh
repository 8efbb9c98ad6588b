#!/usr/bin/env bash
#
# test/sanitize/sqlsmith.sh: sqlsmith (Debian's package) against a private
# cluster with the extension and some state (test/sanitize/sqlsmith-state.sql),
# first as the owner (a superuser), then as a consumer role granted with
# sog.grant_consumer, each for a bounded time.  See test/sanitize/README.md.
#
#   test/sanitize/sqlsmith.sh             build, cluster, state, both phases, check
#   test/sanitize/sqlsmith.sh --selftest  the same (15 s a phase) with a null
#                                         pointer dereference patched into the
#                                         copy (sog.position's output function,
#                                         in sqlsmith's sessions only): passes
#                                         only if the run fails on the crash
#                                         (also with SQLSMITH_SANITIZE=1)
#
# The run fails if a backend crashed or failed an assertion (the server log:
# "terminated by signal", "TRAP:", PANIC), if the server stops answering, or,
# with SQLSMITH_SANITIZE=1, if ASan or UBSan wrote a report.  It reports how
# many queries each phase sent and how many named a function, type or table
# of the extension (schema sog).
#
# Environment:
#   SQLSMITH_SECONDS   time per phase (default 120)
#   SQLSMITH_MAX_QUERIES  also stop a phase after this many queries (default
#                      1000000: in practice the time bounds it)
#   SQLSMITH_SEED      sqlsmith's seed (default 1; the consumer phase uses
#                      seed + 1), so that a run can be repeated
#   SQLSMITH_SANITIZE  1: against the ASan/UBSan build of sanitize.sh
#                      (SAN_CC as there) instead of the normal build
#   SAN_ROOT           where the work directory goes (default /tmp/san-pg)
#   KEEP_TMP=1         keep the work directory (cluster, logs, queries)

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

selftest=0
case ${1:-} in
	--selftest) selftest=1 ;;
	"") ;;
	*) echo "usage: $0 [--selftest]" >&2; exit 2 ;;
esac
# A selftest needs only a few queries that return a position.
[ "$selftest" = 1 ] && SQLSMITH_SECONDS=${SQLSMITH_SECONDS:-15}
SQLSMITH_SECONDS=${SQLSMITH_SECONDS:-120}
SQLSMITH_MAX_QUERIES=${SQLSMITH_MAX_QUERIES:-1000000}
SQLSMITH_SEED=${SQLSMITH_SEED:-1}
SQLSMITH_SANITIZE=${SQLSMITH_SANITIZE:-0}
KEEP_TMP=${KEEP_TMP:-0}
for v in SQLSMITH_SECONDS SQLSMITH_MAX_QUERIES SQLSMITH_SEED; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "sqlsmith: $v must be a whole number" >&2; exit 2; }
done
t0=$(date +%s)

say "sqlsmith: dependencies"
pkgs=("${SAN_BASE_PKGS[@]}" sqlsmith)
if [ "$SQLSMITH_SANITIZE" = 1 ]; then
	pkgs+=(patchelf llvm-14)
	[ "${SAN_CC:-clang}" = clang ] && pkgs+=(clang-14 libclang-rt-14-dev)
fi
sog_install_packages "${pkgs[@]}"

name=sqlsmith
[ "$SQLSMITH_SANITIZE" = 1 ] && name+=-asan
[ "$selftest" = 1 ] && name+=-selftest
san_init "$name"
san_cleanup_on_exit sqlsmith

say "sqlsmith: private PostgreSQL in $SAN_PG, build"
san_copy_pg
san_copy_tree
if [ "$selftest" = 1 ]; then
	# The deliberate defect: sog.position's output function dereferences a
	# null pointer in sqlsmith's sessions (application_name sqlsmith::dut)
	# only, so that the state script still runs.
	f=$SAN_TREE/src/type/position.c
	san_selftest_anchors "$f" '#include "utils/builtins.h"' 'PG_FUNCTION_INFO_V1(sog_position_out);' \
		'	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);'
	awk '
		{ print }
		/^#include "utils\/builtins.h"$/ { print "#include \"utils/guc.h\"" }
		/^PG_FUNCTION_INFO_V1\(sog_position_out\);$/ { infn = 1 }
		infn && /^	SogPosition \*p = PG_GETARG_SOG_POSITION_P\(0\);$/ {
			print ""
			print "\tif (application_name != NULL && strncmp(application_name, \"sqlsmith\", 8) == 0)"
			print "\t\t*(volatile int *) 0 = 0;\t/* selftest: a crash only sqlsmith reaches */"
			infn = 0
		}
	' "$f" >"$f.new" && mv "$f.new" "$f"
	echo "selftest: patched sog_position_out in the copy (src/type/position.c) to dereference a null pointer in sqlsmith's sessions"
fi
env_start=()
if [ "$SQLSMITH_SANITIZE" = 1 ]; then
	san_asan_toolchain
	san_asan_build
	env_start=("${SAN_ENV[@]}")
else
	# the normal build, with the extension's assertions on (as make test)
	san_build -g
	echo "built $("$PG_CONFIG" --pkglibdir)/stream_offset_guard.so (assertions on)"
fi

san_chown
san_initdb
say "sqlsmith: cluster (socket $SAN_SOCK, port $SAN_PORT)"
# log_min_messages=log: crashes (LOG) and FATALs, not the thousands of
# ERRORs sqlsmith provokes; a crash still logs the query that caused it
# ("Failed process was running").  TRAP lines go to stderr, the log.
# track_functions=all: pg_stat_user_functions counts the calls of the
# extension's functions that ran (not those refused by privileges, nor the
# STRICT ones skipped for a NULL argument).
san_start "${env_start[@]}" -- -c log_min_messages=log -c log_min_error_statement=panic \
	-c max_connections=20 -c track_functions=all
[ "$SQLSMITH_SANITIZE" = 1 ] && san_asan_maps_check

# The fuzz database, its state, and bounds for everything sqlsmith sends:
# sqlsmith sets statement_timeout to 1s in its session itself; these hold
# for every session of the database too (a set_config() that sqlsmith
# generates can only change its own session, and timeout(1) bounds it).
san_as_pg psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sog_fuzz'
san_as_pg psql -X -q -v ON_ERROR_STOP=1 -d sog_fuzz \
	-c "ALTER DATABASE sog_fuzz SET statement_timeout = '5s'" \
	-c "ALTER DATABASE sog_fuzz SET lock_timeout = '2s'" \
	-c "ALTER DATABASE sog_fuzz SET idle_in_transaction_session_timeout = '10s'"
say "sqlsmith: state"
san_as_pg psql -X -v ON_ERROR_STOP=1 -d sog_fuzz -P pager=off -f "$SAN_TREE/test/sanitize/sqlsmith-state.sql" \
	>"$SAN_DIR/state.out" 2>&1 || { cat "$SAN_DIR/state.out"; exit 1; }
tail -n 22 "$SAN_DIR/state.out"
san_as_pg psql -X -q -v ON_ERROR_STOP=1 -d sog_fuzz -c "ALTER ROLE sog_fuzz_consumer SET sog.claim_timeout = '1s'"

# ran_calls FILE: the calls of each of the extension's functions that ran
# so far ("signature|calls" lines).  A backend sends its counts to the shared
# statistics when it exits, before it leaves pg_stat_activity: so first
# wait (up to 30 s) until no other session is connected to the database.
ran_calls() {
	local i
	for ((i = 0; i < 60; i++)); do
		[ "$(san_as_pg psql -X -At -d sog_fuzz -c "SELECT count(*) FROM pg_stat_activity
			WHERE datname = 'sog_fuzz' AND pid <> pg_backend_pid()")" = 0 ] && break
		sleep 0.5
	done
	san_as_pg psql -X -At -F '|' -d sog_fuzz \
		-c "SELECT funcid::regprocedure, calls FROM pg_stat_user_functions WHERE schemaname = 'sog'" >"$1"
}
ran_calls "$SAN_DIR/calls.before"

# --- the phases ---------------------------------------------------------------------

status=0
summary=()
# phase NAME ROLE SEED [sqlsmith options...]
phase() {
	local name=$1 role=$2 seed=$3
	shift 3
	local out=$SAN_DIR/$name logstart crashes ts n nsog rc=0
	logstart=$(stat -c %s "$SAN_LOG")
	say "sqlsmith: phase $name (as $role, seed $seed, ${SQLSMITH_SECONDS} s)"
	ts=$(date +%s)
	# --dump-all-queries writes every generated query to stdout; --verbose
	# its progress and error statistics to stderr.  timeout(1) bounds the
	# phase (SIGINT first, SIGKILL 15 s later); its status 124 is the
	# normal end.
	san_as_pg timeout --signal=INT --kill-after=15 "$SQLSMITH_SECONDS" \
		sqlsmith --target="host=$SAN_SOCK port=$SAN_PORT dbname=sog_fuzz user=$role" \
		--seed="$seed" --max-queries="$SQLSMITH_MAX_QUERIES" --verbose --dump-all-queries "$@" \
		>"$out.queries" 2>"$out.log" || rc=$?
	case $rc in
		0 | 124 | 130) ;;
		*) echo "sqlsmith: sqlsmith exited with status $rc:"; tail -n 20 "$out.log"; status=1 ;;
	esac
	# one query per statement; sqlsmith ends each with a semicolon line
	n=$(grep -c ';$' "$out.queries" || true)
	nsog=$(awk 'BEGIN { RS = ";\n" } /sog\./ { n++ } END { print n + 0 }' "$out.queries")
	# a call: sog.name( (sqlsmith writes every call schema-qualified)
	nfn=$(awk 'BEGIN { RS = ";\n" } /sog\.[a-z_]+\(/ { n++ } END { print n + 0 }' "$out.queries")
	nfns=$({ grep -oE 'sog\.[a-z_]+\(' "$out.queries" || true; } | sort -u | wc -l)
	echo "queries: $n generated and sent in $(($(date +%s) - ts)) s; $nsog name an object of schema sog; $nfn call a function of the extension ($nfns different ones)"
	echo "functions of the extension called most often (calls):"
	grep -oE 'sog\.[a-z_]+\(' "$out.queries" | sort | uniq -c | sort -rn | sed -n 1,12p |
		sed 's/($//; s/^/  /' || true
	echo "sqlsmith's last statistics:"
	grep -E '^(queries:|error rate:|avg\.)' "$out.log" | tail -n 3 | sed 's/^/  /' || true
	crashes=$(tail -c +"$((logstart + 1))" "$SAN_LOG" |
		grep -E "$SAN_CRASH_RE" || true)
	if [ -n "$crashes" ]; then
		echo "sqlsmith: the server crashed or a backend failed an assertion in phase $name:"
		tail -c +"$((logstart + 1))" "$SAN_LOG" |
			grep -E -A3 "$SAN_CRASH_RE" | sed -n 1,40p
		status=1
	fi
	local ran=0 nran=0
	if ! san_as_pg psql -X -At -d sog_fuzz -c 'SELECT 1' >/dev/null 2>&1; then
		echo "sqlsmith: the server does not answer after phase $name"
		status=1
	else
		ran_calls "$SAN_DIR/calls.after"
		awk -F '|' 'NR == FNR { b[$1] = $2; next } $2 > b[$1] { print $2 - b[$1], $1 }' \
			"$SAN_DIR/calls.before" "$SAN_DIR/calls.after" | sort -rn >"$out.ran"
		ran=$(awk '{ n += $1 } END { print n + 0 }' "$out.ran")
		nran=$(wc -l <"$out.ran")
		mv "$SAN_DIR/calls.after" "$SAN_DIR/calls.before"
		echo "calls of the extension's functions that ran in this phase (pg_stat_user_functions): $ran, of $nran functions (all listed):"
		sed 's/^/  /' "$out.ran"
	fi
	summary+=("$name: $n queries in $(($(date +%s) - ts)) s, $nsog naming sog objects, $nfn calling sog functions ($nfns different), $ran calls of $nran functions that ran, $(echo -n "$crashes" | grep -c . || true) crash lines")
}

phase owner postgres "$SQLSMITH_SEED" --exclude-catalog
phase consumer sog_fuzz_consumer "$((SQLSMITH_SEED + 1))"

say "sqlsmith: state afterwards"
san_as_pg psql -X -d sog_fuzz -P pager=off \
	-c 'SELECT state, count(*) FROM sog.checkpoint GROUP BY state ORDER BY state' \
	-c 'SELECT count(*) AS receipts FROM sog.receipt' || status=1
amcheck=$(san_as_pg psql -X -q -At -d sog_fuzz -c 'SET client_min_messages = warning' \
	-c 'CREATE EXTENSION IF NOT EXISTS amcheck' \
	-c "SELECT coalesce(string_agg(relation || ': ' || problem, E'\n'), '') FROM sog.verify_storage()" 2>&1) ||
	amcheck=${amcheck:-"sog.verify_storage() failed"}
if [ -n "$amcheck" ]; then
	echo "amcheck after sqlsmith: $amcheck"
	status=1
else
	echo "amcheck: sog.verify_storage() finds nothing in the extension's relations"
fi
san_stop

if [ "$SQLSMITH_SANITIZE" = 1 ]; then
	say "sqlsmith: sanitizer reports"
	san_asan_reports
	[ "$SAN_NREPORTS" = 0 ] || status=1
fi

say "sqlsmith: summary"
printf '%s\n' "${summary[@]}"
echo "wall time: $(($(date +%s) - t0)) s"

if [ "$selftest" = 1 ]; then
	# The check must fail, and for the right reason: a backend was
	# terminated by SIGSEGV (signal 11; with SQLSMITH_SANITIZE=1 ASan
	# catches the SEGV, reports it and aborts: signal 6).
	echo "selftest: without --selftest this run would have $([ "$status" = 0 ] && echo passed || echo failed)"
	if [ "$status" != 0 ] && grep -Eq 'was terminated by signal (11|6)' "$SAN_LOG"; then
		echo "selftest: the server log shows the deliberate crash, and the run fails on it, as it must"
		echo "sqlsmith selftest: 1 passed, 0 failed"
		exit 0
	fi
	echo "selftest: the deliberate crash in sog_position_out was NOT detected"
	echo "sqlsmith selftest: 0 passed, 1 failed"
	exit 1
fi

if [ "$status" = 0 ]; then
	echo "sqlsmith: 1 passed, 0 failed"
	exit 0
fi
echo "sqlsmith: 0 passed, 1 failed"
exit 1
