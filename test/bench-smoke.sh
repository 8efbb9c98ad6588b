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
#     headers);
#   - compiles bench/client.c and runs every variant of it (b c g h r w p)
#     for about a second, with checks of what it left (the sink against the
#     receipts; the whole protocol's tokens, read boundaries and commits).
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
# bench/client.c, every variant, one and two clients; for the guarded ones the
# sink must then hold exactly the events the checkpoints applied, once each;
# for the whole protocol (w, p) each checkpoint must hold the provider token
# of its last page and no open read boundary, and the commits per page must
# be two for (w) (note_read committed alone) and one for (p).
commits() { psql_db -tAc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
wait_idle() {
	local i
	for i in $(seq 1 50); do
		[ "$(psql_db -tAc "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		                     AND backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] && break
		sleep 0.1
	done
	sleep 0.3			# the exiting backends' statistics
}
commits_per_page() {		# commits_per_page VARIANT PARTITION LOW HIGH
	local c0 c1 line txns
	c0=$(commits)
	line=$("$work/client" -d "$conn" -v "$1" -B 100 -c 1 -T 1 -p "$2") || return 1
	wait_idle
	c1=$(commits)
	txns=$(echo "$line" | cut -d' ' -f5)
	echo "$line: $((c1 - c0)) commits in $txns transactions"
	awk -v n="$((c1 - c0))" -v t="${txns:-0}" -v lo="$3" -v hi="$4" 'BEGIN { exit !(t > 0 && n / t >= lo && n / t <= hi) }'
}
if cc -O2 -Wall -o "$work/client" "$bench/client.c" -I"$(pg_config --includedir)" -lpq -lcrypto 2>"$work/cc-client.log"; then
	conn="dbname=$db"
	check "client.c compiles" true
	# partitions of their own: (b) 10-11, (c) 13-14 (the offsets rows), (g) 50-51,
	# (h) 52-53, (r) 54-55, (w) 56-57, (p) 58-59, (m) 62-63; the commit counts
	# (w) 60, (p) 61, (m) 63 (after its runs there)
	for v in b:10 c:13 g:50 h:52 r:54 w:56 p:58 m:62; do
		check "client ${v%:*} B=1" "$work/client" -d "$conn" -v "${v%:*}" -B 1 -c 1 -T 1 -p "${v#*:}"
		check "client ${v%:*} B=100 2 clients" "$work/client" -d "$conn" -v "${v%:*}" -B 100 -c 2 -T 1 -p "${v#*:}"
	done
	check "client (w): two commits per page" commits_per_page w 60 1.9 2.5
	check "client (p): one commit per page" commits_per_page p 61 0.9 1.5
	check "client (m): one commit per page" commits_per_page m 63 0.9 1.5
	check "client (g), (h), (r), (w), (p), (m): the sink holds one row per receipt" test "$(psql_db -tAc "
		SELECT (SELECT count(*) FROM sink WHERE partition BETWEEN 50 AND 63)
		     = (SELECT count(*) FROM bench_cp b, sog.receipts(b.id) WHERE b.part BETWEEN 50 AND 63)
		   AND (SELECT count(DISTINCT partition) FROM sink WHERE partition BETWEEN 50 AND 63) = 14")" = t
	check "client (w), (p), (m): each checkpoint holds its last page's token and no open read boundary" test "$(psql_db -tAc "
		SELECT bool_and(c.provider_token = 'T' || c.applied_position::text
		                AND c.source_cursor OPERATOR(sog.=) c.applied_position
		                AND c.read_hash IS NULL AND c.read_count IS NULL
		                AND c.applied_position::text::bigint = (SELECT max(pos) FROM sink s WHERE s.partition = b.part))
		  FROM bench_cp b JOIN sog.checkpoint c ON c.id = b.id WHERE b.part BETWEEN 56 AND 63")" = t
else
	failed=$((failed + 1))
	echo "FAILED  client.c does not compile:"
	sed 's/^/        /' "$work/cc-client.log" | head -20
fi

echo "bench-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
