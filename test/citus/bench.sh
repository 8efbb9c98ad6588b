#!/usr/bin/env bash
#
# test/citus/bench.sh: what the guard costs on Citus.  Variant (g) (sink rows
# + sog.apply_batch in one transaction) against (b) (sink rows + an offsets
# UPDATE), sent by the benchmark's real client (bench/client.c: libpq
# pipeline mode, binary parameters, SHA-256 on the client), with `sink`
# distributed by partition over two Citus workers, and the same two
# variants on a single PostgreSQL server for comparison.
#
#   bash test/citus/bench.sh                      # about 10 minutes
#   RUNS=1 DURATION=2 bash test/citus/bench.sh    # a quick pass
#
# Four servers of the same PostgreSQL run side by side on this machine: a
# Citus coordinator and two workers (ports BENCH_PORT..+2) and a plain
# single node (+3), all with durable settings (fsync, synchronous_commit on,
# full_page_writes), 512 MB shared_buffers each.  On the Citus cluster the
# extension's state and the offsets table of (b) are local tables of the
# coordinator (the supported topology) and only `sink` is distributed; the
# client's INSERT ... SELECT is written through Citus' COPY path, committed
# with two-phase commit in both variants.
#
# Schema: bench/schema.sql and bench/setup_sog.sql, as `make bench` uses
# them, plus create_distributed_table('sink', 'partition') on the
# coordinator.  Each client owns one partition (0..c-1).
#
# Cells: B = BATCHES events per transaction, c = CLIENTS clients; every run
# measures each cell's four variants one after the other (Citus b, Citus g,
# single b, single g), then the next cell, then the next run.  Before each
# measurement the sink and receipt tables are emptied and every node of the
# setup is checkpointed.  Reported: medians of events/s, and medians of the
# per-run ratios of the same cell (g/b on Citus, g/b on one node, Citus g
# over single-node g).  CPU: during each Citus measurement, the CPU time of
# the coordinator's processes and of each worker's (postmaster, its live
# children and the reaped ones), and the machine's busy time, in % of one
# core; "rest" is the client and everything else on the machine.
#
# Installs what it needs like test/citus/run.sh (Citus from
# ../shared/vendor/citus when missing, the extension from the working tree)
# into PG_CONFIG's PostgreSQL - during development a private copy, see the
# project notes.  Exits 0 with "skipped: ..." when Citus cannot be had.
#
# Environment (defaults in brackets): PG_CONFIG [system 15], RUNS [3],
# DURATION [4] s per measurement, WARMUP [3] s per variant before the first
# run, BATCHES ["1 100 1000"], CLIENTS ["1 4"], BENCH_DIR
# [/tmp/sog-citus-bench], BENCH_PORT [55790] (uses 55790-55793), KEEP [0]
# (1: leave the servers running).  Raw results and the summary in
# $BENCH_DIR/results-<timestamp>/.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/test/lib.sh"
source "$here/lib.sh"

RUNS=${RUNS:-3}
DURATION=${DURATION:-4}
WARMUP=${WARMUP:-3}
BATCHES=${BATCHES:-"1 100 1000"}
CLIENTS=${CLIENTS:-"1 4"}
BENCH_DIR=${BENCH_DIR:-/tmp/sog-citus-bench}
BENCH_PORT=${BENCH_PORT:-55790}
KEEP=${KEEP:-0}

die() { echo "citus-bench: $*" >&2; exit 1; }
say() { echo "$(date +%H:%M:%S) $*"; }

citus_setup || exit 1
rc=0
citus_ensure || rc=$?
[ "$rc" = 1 ] && exit 0
[ "$rc" = 0 ] || exit 1
sog_install_packages gcc libpq-dev libssl-dev || die "cannot install gcc, libpq-dev, libssl-dev"

# --- servers ----------------------------------------------------------------------------

names=(coord w1 w2 single)
port_of() { case $1 in coord) echo "$BENCH_PORT" ;; w1) echo $((BENCH_PORT + 1)) ;;
	w2) echo $((BENCH_PORT + 2)) ;; single) echo $((BENCH_PORT + 3)) ;; esac; }

stop_all() {
	local n
	for n in "${names[@]}"; do
		[ -f "$BENCH_DIR/$n/postmaster.pid" ] &&
			sog_as_pg "$bindir/pg_ctl" -D "$BENCH_DIR/$n" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}
for n in "${names[@]}"; do	# a previous run's servers
	[ -f "$BENCH_DIR/$n/postmaster.pid" ] && sog_as_pg "$bindir/pg_ctl" -D "$BENCH_DIR/$n" -m immediate -w stop >/dev/null 2>&1
done
for n in "${names[@]}"; do
	sog_port_in_use "$(port_of "$n")" && die "port $(port_of "$n") is in use (BENCH_PORT)"
done
rm -rf "$BENCH_DIR"
mkdir -p "$BENCH_DIR"
OUT=$BENCH_DIR/results-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
extension_install "$BENCH_DIR/src" || exit 1
CLIENT=$BENCH_DIR/client
cc -O2 -o "$CLIENT" "$repo/bench/client.c" -I"$("$PG_CONFIG" --includedir)" -lpq -lcrypto ||
	die "cannot compile bench/client.c"
[ "$(id -u)" -eq 0 ] && chown -R postgres: "$BENCH_DIR"
[ "$KEEP" = 1 ] || trap stop_all EXIT

psql_n() {		# psql_n NODE psql-args...
	local n=$1; shift
	sog_as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_DIR" -p "$(port_of "$n")" -U postgres -d postgres "$@"
}

for n in "${names[@]}"; do
	sog_as_pg "$bindir/initdb" -D "$BENCH_DIR/$n" -A trust -U postgres --locale=C -E UTF8 >"$OUT/initdb-$n.log" 2>&1 ||
		die "initdb $n failed"
	{
		echo "port = $(port_of "$n")"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$BENCH_DIR'"
		echo "shared_buffers = 512MB"
		echo "max_wal_size = 4GB"
		echo "min_wal_size = 1GB"
		echo "checkpoint_timeout = 30min"
		echo "fsync = on"
		echo "synchronous_commit = on"
		echo "full_page_writes = on"
		echo "wal_level = replica"
		echo "max_connections = 100"
		echo "jit = off"
		if [ "$n" != single ]; then
			echo "shared_preload_libraries = 'citus'"
			echo "max_prepared_transactions = 100"
		fi
	} >>"$BENCH_DIR/$n/postgresql.conf"
	sog_as_pg "$bindir/pg_ctl" -D "$BENCH_DIR/$n" -l "$OUT/server-$n.log" -w start >/dev/null || die "cannot start $n"
done
for n in coord w1 w2; do psql_n "$n" -c 'CREATE EXTENSION citus' || die "CREATE EXTENSION citus on $n"; done
psql_n coord -c "SELECT citus_set_coordinator_host('127.0.0.1', $(port_of coord))" \
	-c "SELECT citus_add_node('127.0.0.1', $(port_of w1))" \
	-c "SELECT citus_add_node('127.0.0.1', $(port_of w2))" >/dev/null || die "cannot build the Citus cluster"
for n in coord single; do
	psql_n "$n" -f "$repo/bench/schema.sql" >"$OUT/schema-$n.log" 2>&1 || die "bench/schema.sql on $n (see $OUT/schema-$n.log)"
	if [ "$n" = coord ]; then
		psql_n coord -c "SELECT create_distributed_table('sink', 'partition')" >/dev/null || die "cannot distribute sink"
	fi
	psql_n "$n" -f "$repo/bench/setup_sog.sql" >"$OUT/setup-$n.log" 2>&1 || die "bench/setup_sog.sql on $n (see $OUT/setup-$n.log)"
done
# the coordinator's two-phase-commit table (docs/scaling.md, "Two-phase commit")
psql_n coord -c 'CREATE TABLE IF NOT EXISTS sog.citus_2pc (CHECK (false))' \
	-c "SELECT citus_add_local_table_to_metadata('sog.citus_2pc')" >/dev/null || die "cannot create sog.citus_2pc"
say "Citus: coordinator :$(port_of coord), workers :$(port_of w1) :$(port_of w2); single node :$(port_of single)"
psql_n coord -At -F' ' -c "SELECT p, n.nodeport FROM generate_series(0, 3) p,
	LATERAL (SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('sink', p)) n" |
	while read -r p port; do say "  partition $p (client $((p + 1))): shard on the worker at :$port"; done

# --- measurements -----------------------------------------------------------------------

CLK=$(getconf CLK_TCK)
NCPU=$(nproc)
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }
proc_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
node_ticks() {		# CPU ticks of a server: postmaster, live children, reaped children
	local pm p t=0
	pm=$(head -n 1 "$BENCH_DIR/$1/postmaster.pid" 2>/dev/null) || { echo 0; return; }
	t=$(proc_ticks "$pm")
	for p in $(pgrep -P "$pm"); do t=$((t + $(proc_ticks "$p"))); done
	echo "$t"
}
now_ms() { date +%s%3N; }

wait_idle() {		# no client backend left on node $1 but ours, then a moment for reaping
	local i
	for i in $(seq 1 50); do
		[ "$(psql_n "$1" -At -c "SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
			  AND application_name NOT LIKE 'citus_%'")" = 0 ] && break
		sleep 0.1
	done
	sleep 0.3
}

nodes_of() { if [ "$1" = citus ]; then echo coord w1 w2; else echo single; fi; }
entry_of() { if [ "$1" = citus ]; then echo coord; else echo single; fi; }

prepare() {		# empty tables, checkpoint every node of the setup
	local setup=$1 n
	psql_n "$(entry_of "$setup")" -c "TRUNCATE sink, sog.receipt" -c "VACUUM offsets, sog.checkpoint" >/dev/null ||
		die "prepare $setup"
	for n in $(nodes_of "$setup"); do psql_n "$n" -c CHECKPOINT >/dev/null; done
}

# measure SETUP VARIANT B CLIENTS RUN SECONDS [record]
measure() {
	local setup=$1 v=$2 b=$3 c=$4 r=$5 secs=$6 record=${7:-1}
	local entry log t0 b0 b1 t1 line ev n
	local -A n0 n1
	entry=$(entry_of "$setup")
	prepare "$setup"
	log=$OUT/client-$setup-$v-B$b-c$c-r$r.log
	for n in coord w1 w2 single; do n0[$n]=$(node_ticks "$n"); done
	b0=$(busy_ticks); t0=$(now_ms)
	"$CLIENT" -d "host=$BENCH_DIR port=$(port_of "$entry") user=postgres dbname=postgres" \
		-v "$v" -B "$b" -c "$c" -T "$secs" >"$log" 2>&1 || { sed 's/^/    /' "$log" | head -5; die "client failed ($setup $v B=$b c=$c)"; }
	t1=$(now_ms); b1=$(busy_ticks)
	# the client's backends end as it disconnects: let their postmaster
	# reap them (their CPU then counts in its children's times) before
	# reading the servers' CPU
	wait_idle "$entry"
	for n in coord w1 w2 single; do n1[$n]=$(node_ticks "$n"); done
	read -r _ _ _ _ _ _ ev <"$log"
	# CPU in % of one core over the measurement
	pct() { awk -v d="$1" -v ms="$((t1 - t0))" -v hz="$CLK" 'BEGIN { printf "%.0f", 100 * d / (ms / 1000 * hz) }'; }
	local pc pw1 pw2 ps busy
	pc=$(pct $((n1[coord] - n0[coord])))
	pw1=$(pct $((n1[w1] - n0[w1])))
	pw2=$(pct $((n1[w2] - n0[w2])))
	ps=$(pct $((n1[single] - n0[single])))
	busy=$(pct $((b1 - b0)))
	say "$(printf '%-6s %s B=%-4s c=%s run %s: %8.0f ev/s   CPU %%: coordinator %3s  workers %3s+%-3s single %3s  machine %3s of %s' \
		"$setup" "$v" "$b" "$c" "$r" "$ev" "$pc" "$pw1" "$pw2" "$ps" "$busy" "$((100 * NCPU))")"
	[ "$record" = 1 ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$setup" "$v" "$b" "$c" "$r" "$ev" "$pc" "$pw1" "$pw2" "$ps" "$busy" >>"$OUT/results.tsv"
	return 0
}

say "machine: $(nproc) cores ($(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/{printf "%.0f GB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
say "PostgreSQL: $pg_version; Citus $(psql_n coord -At -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'")"
say "warm-up: ${WARMUP}s per variant"
for setup in citus single; do for v in b g; do measure "$setup" "$v" 100 1 0 "$WARMUP" 0; done; done
: >"$OUT/results.tsv"
for r in $(seq 1 "$RUNS"); do
	for b in $BATCHES; do for c in $CLIENTS; do
		for sv in citus:b citus:g single:b single:g; do
			measure "${sv%%:*}" "${sv#*:}" "$b" "$c" "$r" "$DURATION"
		done
	done; done
done

# --- summary ------------------------------------------------------------------------------

awk -F'\t' -v runs="$RUNS" '
function median(list,    a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (n == 0) return "NA"
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = $3 SUBSEP $4; cells[k] = 1; B[k] = $3; C[k] = $4
	ev[$1, $2, k, $5] = $6
	evs[$1, $2, k] = evs[$1, $2, k] " " $6
	if ($1 == "citus") {
		# CPU per 1000 events, in ms of CPU
		cpu_c[$2, k] = cpu_c[$2, k] " " ($6 > 0 ? 10 * $7 / $6 * 1000 : 0)
		cpu_w[$2, k] = cpu_w[$2, k] " " ($6 > 0 ? 10 * ($8 + $9) / $6 * 1000 : 0)
		pc[$2, k] = pc[$2, k] " " $7; pw[$2, k] = pw[$2, k] " " ($8 + $9); busy[$2, k] = busy[$2, k] " " $11
	}
	runs_of[k] = runs_of[k] " " $5
}
END {
	n = 0
	for (k in cells) order[++n] = k
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) {
		split(order[i], x, SUBSEP); split(order[j], y, SUBSEP)
		if (y[1] + 0 < x[1] + 0 || (y[1] == x[1] && y[2] + 0 < x[2] + 0)) { t = order[i]; order[i] = order[j]; order[j] = t }
	}
	printf "Throughput, events/s\n\n"
	printf "| B | clients | Citus (b) | Citus (g) | (g)/(b) on Citus | one node (b) | one node (g) | (g)/(b) on one node | Citus (g) / one node (g) |\n"
	printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
	for (i = 1; i <= n; i++) {
		k = order[i]; rc = ""; rs = ""; rx = ""
		for (r = 1; r <= runs; r++) {
			if (ev["citus", "b", k, r] > 0) rc = rc " " ev["citus", "g", k, r] / ev["citus", "b", k, r]
			if (ev["single", "b", k, r] > 0) rs = rs " " ev["single", "g", k, r] / ev["single", "b", k, r]
			if (ev["single", "g", k, r] > 0) rx = rx " " ev["citus", "g", k, r] / ev["single", "g", k, r]
		}
		printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.2f |\n", B[k], C[k],
			median(evs["citus", "b", k]), median(evs["citus", "g", k]), median(rc),
			median(evs["single", "b", k]), median(evs["single", "g", k]), median(rs), median(rx)
	}
	printf "\nCPU on the Citus cluster: %% of one core during the measurement, and ms of CPU per 1000 events\n\n"
	printf "| B | clients | (b) coordinator %% | (b) workers %% | (g) coordinator %% | (g) workers %% | (g) machine %% | (b) coordinator ms/1000 ev | (b) workers ms/1000 ev | (g) coordinator ms/1000 ev | (g) workers ms/1000 ev |\n"
	printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f |\n", B[k], C[k],
			median(pc["b", k]), median(pw["b", k]), median(pc["g", k]), median(pw["g", k]), median(busy["g", k]),
			median(cpu_c["b", k]), median(cpu_w["b", k]), median(cpu_c["g", k]), median(cpu_w["g", k])
	}
}' "$OUT/results.tsv" >"$OUT/summary.md"
{
	echo
	echo "Citus bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $pg_version, Citus $(psql_n coord -At -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"), RUNS=$RUNS DURATION=${DURATION}s; medians (ratios: medians of per-run ratios of the same cell)"
	echo
	cat "$OUT/summary.md"
} | tee "$OUT/summary.txt"
say "raw results: $OUT/results.tsv"
