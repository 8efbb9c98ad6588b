#!/usr/bin/env bash
#
# test/bench-smoke.sh: the benchmark's scripts run, without timing anything.
#
# Against an already-running server with the extension installed (PGHOST,
# PGPORT, PGUSER as for psql; make test passes the harness's cluster), in a
# scratch database that is dropped at the end:
#   - loads bench/schema.sql and bench/setup_sog.sql;
#   - runs every pgbench script of bench/pgbench for about a second
#     (B=1 for *_1.sql, B=10 for *_n.sql, 2 clients; the scale script with 1
#     and 16 checkpoints per client; the fill and probe scripts);
#   - bench/micro.sql on 1000 rows, and bench/prune.sql on the filled receipts;
#   - compiles bench/hashloop.c and checks that its chain value equals
#     sog.buffer_hash over the same records (skipped without cc or OpenSSL's
#     headers).
# Asserts only that everything runs without error (and the one chain value);
# no timing assertions.  Prints `bench-smoke: N passed, M failed`.
#
#   PGHOST=/tmp/sock PGPORT=54390 PGUSER=postgres bash test/bench-smoke.sh
#
# SMOKE_SECONDS (whole seconds, default 1) per pgbench script; SMOKE_DB
# (default sog_bench_smoke) names the scratch database.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/../bench" && pwd)
db=${SMOKE_DB:-sog_bench_smoke}
seconds=${SMOKE_SECONDS:-1}
export PGUSER=${PGUSER:-postgres}
if ! command -v pgbench >/dev/null 2>&1; then
	export PATH="$(/usr/lib/postgresql/15/bin/pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin):$PATH"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sog-bench-smoke.XXXXXX")

psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

passed=0
failed=0
check() {			# check NAME COMMAND...: run it, output to a log; show the log on failure
	local name=$1 log
	shift
	log="$work/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log"
	if "$@" >"$log" 2>&1 && ! grep -qE 'aborted|ERROR|error:' "$log"; then
		passed=$((passed + 1))
		echo "ok      $name"
	else
		failed=$((failed + 1))
		echo "FAILED  $name"
		sed 's/^/        /' "$log" | head -40
	fi
}

cleanup() {
	local rc=$?
	psql_admin -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	# the schema's replication origins are cluster-wide objects
	psql_admin -c "SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin
	               WHERE roname LIKE 'bench_p%'" >/dev/null 2>&1 || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- setup -------------------------------------------------------------------
psql_admin -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null ||
	{ echo "bench-smoke: cannot create database $db"; exit 1; }
check "schema.sql" psql_db -f "$bench/schema.sql"
check "setup_sog.sql" psql_db -f "$bench/setup_sog.sql"

# --- every pgbench script --------------------------------------------------------
base=0
next_base() { base=$((base + 10000000000)); }
run_pgbench() {			# run_pgbench SCRIPT [pgbench args...]
	local script=$1
	shift
	next_base
	pgbench -n -M prepared -D pos="$base" -D ready=0 -D origin_ready=0 "$@" -f "$script" "$db"
}
for script in "$bench"/pgbench/*_1.sql "$bench"/pgbench/*_n.sql; do
	name=$(basename "$script" .sql)
	case $name in
		s_n) for npc in 1 16; do
				check "pgbench $name NPC=$npc" run_pgbench "$script" -c 2 -j 2 -T "$seconds" -D B=10 \
					-D NPC="$npc" -D k=0
			done ;;
		*_1) check "pgbench $name" run_pgbench "$script" -c 2 -j 2 -T "$seconds" -D B=1 ;;
		*) check "pgbench $name" run_pgbench "$script" -c 2 -j 2 -T "$seconds" -D B=10 ;;
	esac
done

# receipts, then the probe and the prune on them (as bench/run.sh does)
read -r cpa gena < <(psql_db -tA -F' ' -c "SELECT c.id, (sog.claim(c.id, 'smoke-a')).generation
                                           FROM sog.register('bench', 'receipts', 'A') AS c")
read -r cpb genb < <(psql_db -tA -F' ' -c "SELECT c.id, (sog.claim(c.id, 'smoke-b')).generation
                                           FROM sog.register('bench', 'receipts', 'B') AS c")
check "pgbench fill" run_pgbench "$bench/pgbench/fill.sql" -c 1 -t 5 -D B=1000 -D cp="${cpa:-0}" -D gen="${gena:-0}"
check "pgbench probe" run_pgbench "$bench/pgbench/probe.sql" -c 1 -T "$seconds" -D cp="${cpb:-0}" -D gen="${genb:-0}"
through=$(psql_db -tAc "SELECT applied_position FROM sog.checkpoint WHERE id = ${cpa:-0}")
check "prune.sql" psql_db -tA -F' ' -v cp="${cpa:-0}" -v through="${through:-0}" -v hold=0 -f "$bench/prune.sql"
check "prune removed the receipts" test "$(psql_db -tAc "SELECT count(*) FROM sog.receipt WHERE checkpoint_id = ${cpa:-0}")" = 0

# --- micro-figures ------------------------------------------------------------------
check "micro.sql" psql_db -At -F'|' -v N=1000 -v RUNS=1 -f "$bench/micro.sql"
sqlhex=$(awk -F'|' '$1 ~ /ORDER BY i/ { print $6; exit }' "$work/micro.sql.log" 2>/dev/null)
if command -v cc >/dev/null 2>&1 && cc -O2 -o "$work/hashloop" "$bench/hashloop.c" -lcrypto 2>"$work/cc.log"; then
	check "hashloop.c" "$work/hashloop" 1000 1
	chex=$(awk -F'|' 'NR == 1 { print $6 }' "$work/hashloop.c.log" 2>/dev/null)
	check "hashloop.c and sog.buffer_hash agree" test -n "$chex" -a "$chex" = "$sqlhex"
else
	echo "skip    hashloop.c (no cc or OpenSSL headers: $(head -1 "$work/cc.log" 2>/dev/null))"
fi

# --- the real client ------------------------------------------------------------
# bench/client.c against (b), (c), (g) and (h), one and two clients; for (g)
# and (h) the sink must then hold exactly the events the checkpoint applied,
# once each.
if cc -O2 -Wall -o "$work/client" "$bench/client.c" -I"$(pg_config --includedir)" -lpq -lcrypto 2>"$work/cc-client.log"; then
	conn="dbname=$db"
	check "client.c compiles" true
	# partitions of their own: (b) 10-11, (c) 13-14 (the offsets rows), (g) 50-51,
	# (h) 52-53
	for v in b:10 c:13 g:50 h:52; do
		check "client ${v%:*} B=1" "$work/client" -d "$conn" -v "${v%:*}" -B 1 -c 1 -T 1 -p "${v#*:}"
		check "client ${v%:*} B=100 2 clients" "$work/client" -d "$conn" -v "${v%:*}" -B 100 -c 2 -T 1 -p "${v#*:}"
	done
	check "client (g), (h): the sink holds one row per receipt" test "$(psql_db -tAc "
		SELECT (SELECT count(*) FROM sink WHERE partition BETWEEN 50 AND 53)
		     = (SELECT count(*) FROM bench_cp b, sog.receipts(b.id) WHERE b.part BETWEEN 50 AND 53)
		   AND (SELECT count(*) FROM sink WHERE partition IN (52, 53)) > 0")" = t
else
	failed=$((failed + 1))
	echo "FAILED  client.c does not compile:"
	sed 's/^/        /' "$work/cc-client.log" | head -20
fi

echo "bench-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
