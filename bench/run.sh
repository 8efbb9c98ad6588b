#!/usr/bin/env bash
# bench/run.sh - `make bench`: stream_offset_guard against what consumers do
# without it, in ONE run, interleaved, on one throwaway cluster with durable
# settings (fsync=on, synchronous_commit=on).
#
#   bash bench/run.sh                          # the whole table, ~23 min
#   RUNS=1 DURATION=2 bash bench/run.sh        # a quick end-to-end pass
#   RUNS=5 DURATION=10 RETRIES=2 bash bench/run.sh   # slower, steadier
#
# Variants (bench/pgbench/<v>_1.sql for B=1, <v>_n.sql for B>1; a-e are the
# reference baselines, byte-identical copies of ../shared/bench/pgbench):
#   (a) bare sink INSERT          (b) + offsets-table UPDATE with greatest()
#   (c) (b) + an inbox row per event (unique index)
#   (d) sink INSERT + pg_replication_origin_xact_setup
#   (e) idempotent sink (unique index, ON CONFLICT DO NOTHING)
#   (f) sog.apply per event + the sink INSERT, one transaction
#   (g) sog.apply_batch per transaction + the sink INSERT, one transaction
#   (gd) as (g), payload digests computed inside the transaction
#   (r) sog.apply_run per transaction (a dense run, digests in one bytea)
# and the real client (bench/client.c; labels c + its -v letter): (b), (c),
# (g), (h) apply_batch_int8, (r), and the whole protocol of the consumer
# guide with (r): (w) note_read committed alone, then the sink transaction
# with sog.apply_run_page moving the token (two commits per page), (p)
# pipelined (one commit and one call per page: sog.apply_run_page applies
# page k, notes page k+1 and moves the token), (m) pipelined with three
# calls per page (apply_run, note_read, commit_page: the form before
# apply_run_page);
# at B = 1, 100, 1000 events per transaction, 1 and 4 clients (one partition,
# i.e. one checkpoint, per client), RUNS runs of DURATION s per cell; cells
# are interleaved (every variant of a cell, then the next cell; then the next
# run), medians reported.  Plus the scale check ((g), B=100, 4 clients over 4
# and over 64 checkpoints), receipts on disk after a million events,
# prune_receipts of a million receipts while another checkpoint applies, and
# micro-figures (buffer_hash against a plain C loop and `openssl speed`,
# position compare and input/output).
#
# Steps: installs missing Debian packages (make gcc postgresql-15
# postgresql-server-dev-15 libssl-dev openssl libpq-dev), builds a copy of
# the working tree and installs it into a private copy of PostgreSQL in
# $BENCH_DIR/pg (INSTALL below), compiles bench/client.c and
# bench/hashloop.c, creates a fresh cluster in $BENCH_DIR (unix socket only,
# port $BENCH_PORT), runs everything, stops and removes the cluster.
# As root, the server runs as the postgres OS user (runuser).
#
# Output: raw results in bench/results/<timestamp>/ (git-ignored), the
# summary in bench/latest.md, the picture in bench/results.svg (the real
# client: the guard against an offsets table and an inbox) and the rest in
# bench/results-more.svg, all written by bench/report.pl.
#
# Environment (defaults in brackets):
#   RUNS [3] DURATION [4] WARMUP [5]  runs per cell, seconds per run, warm-up s
#   BATCHES ["1 100 1000"]  CLIENTS ["1 4"]
#   VARIANTS ["a b c d e f g gd r"]  GD_BATCHES ["100 1000"] (batch sizes for gd)
#   CLIENT_VARIANTS ["cb cc cg ch cr cw cp cm qg qr qp"] the real client (bench/client.c):
#                                  c + the variant (cb = (b), ch = (h)
#                                  apply_batch_int8, cw = (w) ...), sent over
#                                  libpq's pipeline mode with binary parameters
#                                  (an empty VARIANTS or CLIENT_VARIANTS runs
#                                  none of them); q + a letter (qg qr qw qp qm)
#                                  is that variant against the portable
#                                  edition (docs/portable.md), installed by
#                                  its plain script in database <DB>_portable
#                                  of the same cluster
#   SCALE [1]  SCALE_B [100]       the 4 vs 64 checkpoints check
#   RECEIPTS_N [1000000]           events for the receipts/prune phase
#   MICRO [1]  MICRO_N [1000000]   micro-figures and their size
#   PRUNE_HOLD [2]                 seconds the prune transaction stays open
#   MAX_OTHER_CPU [10] RETRIES [0] a run with more "other CPU" (% of all
#                                  cores) is disturbed and redone RETRIES times
#   BENCH_DIR [/tmp/sog-bench] BENCH_PORT [54340] DB [bench]
#   INSTALL [private]  private = a copy of PostgreSQL in $BENCH_DIR/pg with the
#                  extension in it (system untouched); system = install into
#                  the system PostgreSQL (root/sudo); 0 = use what is installed
#   SRC_REV [working tree]  a git revision to build instead
#   KEEP [0]      1 = keep the cluster (stopped) in $BENCH_DIR
#   PUBLISH [1]   0 = do not overwrite bench/latest.md and bench/results*.svg
#   REPORT_ONLY=<results dir>: rebuild the reports from an earlier run
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
source "$HERE/lib.sh"
PG_MAJOR=${PG_MAJOR:-15}
DURATION=${DURATION:-4}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-5}
BATCHES=${BATCHES:-"1 100 1000"}
CLIENTS=${CLIENTS:-"1 4"}
VARIANTS=${VARIANTS-"a b c d e f g gd r"}
CLIENT_VARIANTS=${CLIENT_VARIANTS-"cb cc cg ch cr cw cp cm qg qr qp"}
GD_BATCHES=${GD_BATCHES:-"100 1000"}
SCALE=${SCALE:-1}
SCALE_B=${SCALE_B:-100}
RECEIPTS_N=${RECEIPTS_N:-1000000}
MICRO=${MICRO:-1}
MICRO_N=${MICRO_N:-1000000}
PRUNE_HOLD=${PRUNE_HOLD:-2}
MAX_OTHER_CPU=${MAX_OTHER_CPU:-10}
RETRIES=${RETRIES:-0}
BENCH_DIR=${BENCH_DIR:-/tmp/sog-bench}
BENCH_PORT=${BENCH_PORT:-54340}
DB=${DB:-bench}
INSTALL=${INSTALL:-private}
SRC_REV=${SRC_REV:-}
KEEP=${KEEP:-0}
PUBLISH=${PUBLISH:-1}
REPORT_ONLY=${REPORT_ONLY:-}
OUT=${OUT:-$HERE/results/$(date +%Y%m%d-%H%M%S)}
SERVER_OPTS=${SERVER_OPTS:-$BENCH_SERVER_OPTS}   # durable settings (bench/lib.sh)

T_START=$(date +%s)
NCPU=$(nproc); CLK=$(getconf CLK_TCK)
say() { printf '[%4ds] %s\n' $(( $(date +%s) - T_START )) "$*"; }
die() { say "error: $*"; exit 1; }

# variant -> batch sizes it runs at
batches_of() { if [ "$1" = gd ]; then echo "$GD_BATCHES"; else echo "$BATCHES"; fi; }
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

if [ -z "$REPORT_ONLY" ]; then
mkdir -p "$OUT" || exit 1
exec > >(tee -a "$OUT/run.log") 2>&1

as_pg() { sog_as_pg "$@"; }

# ---------------------------------------------------------------- dependencies
sog_install_packages make gcc postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR \
  libssl-dev openssl libpq-dev || die "cannot install the benchmark's packages"
PGBIN=${PGBIN:-$(/usr/lib/postgresql/$PG_MAJOR/bin/pg_config --bindir)}
psql_db() { "${PSQL[@]}" -d "$DB" "$@"; }
DBP=${DB}_portable
psql_dbp() { "${PSQL[@]}" -d "$DBP" "$@"; }

# ---------------------------------------------------------------- throwaway dir
DATA=$BENCH_DIR/data
STARTED=0
cleanup() {
  if [ "$STARTED" = 1 ]; then
    say "stopping the cluster"
    bench_stop_cluster "$DATA"
    STARTED=0
  fi
  if [ "$KEEP" != 1 ] && [ -d "$BENCH_DIR" ]; then
    [ -f "$DATA/server.log" ] && cp "$DATA/server.log" "$OUT/server.log" 2>/dev/null
    rm -rf "$BENCH_DIR"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_fresh_dir "$BENCH_DIR"

# ---------------------------------------------------------------- build
# INSTALL=private (default), system or 0, SRC_REV: bench/lib.sh,
# bench_build_extension.
bench_build_extension "$BENCH_DIR" "$INSTALL" "$SRC_REV" "$OUT"
PSQL=("$PGBIN/psql" -h "$BENCH_DIR" -p "$BENCH_PORT" -U postgres -X -q -v ON_ERROR_STOP=1)
PGBENCH=("$PGBIN/pgbench" -h "$BENCH_DIR" -p "$BENCH_PORT" -U postgres -n)
CLIENT=$BENCH_DIR/client
[ -n "$CLIENT_VARIANTS" ] &&
  bench_compile_client "$CLIENT" "$OUT/client-build.log" "/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
HASHLOOP=$BENCH_DIR/hashloop
if [ "$MICRO" = 1 ]; then
  cc -O2 -o "$HASHLOOP" "$HERE/hashloop.c" -lcrypto 2>"$OUT/hashloop-build.log" \
    || { cat "$OUT/hashloop-build.log"; die "cannot compile bench/hashloop.c (libssl-dev?)"; }
fi

# ---------------------------------------------------------------- cluster
bench_start_cluster "$DATA" "$BENCH_PORT" "$BENCH_DIR" "$OUT" "$SERVER_OPTS"
STARTED=1
"${PSQL[@]}" -d postgres -c "CREATE DATABASE $DB" || die "createdb failed"
psql_db -f "$HERE/schema.sql" >/dev/null || die "schema.sql failed"
psql_db -f "$HERE/setup_sog.sql" >/dev/null || die "setup_sog.sql failed"
if [[ " $CLIENT_VARIANTS " == *" q"* ]]; then
  # the portable edition, built from the tree, in a database of its own
  perl "$HERE/../portable/build.pl" --out "$OUT/portable" >"$OUT/portable-build.log" 2>&1 ||
    { cat "$OUT/portable-build.log"; die "portable/build.pl failed"; }
  chmod -R a+rX "$OUT/portable"
  "${PSQL[@]}" -d postgres -c "CREATE DATABASE $DBP" || die "createdb $DBP failed"
  psql_dbp -f "$HERE/schema.sql" >/dev/null || die "schema.sql ($DBP) failed"
  psql_dbp -f "$OUT/portable/install.sql" >/dev/null || die "the portable edition's install.sql failed"
  sed '/EXTENSION .*stream_offset_guard/d' "$HERE/setup_sog.sql" | psql_dbp -f - >/dev/null ||
    die "setup_sog.sql ($DBP) failed"
fi

{
  bench_describe "$BENCH_DIR"
  echo "extension: built from $(paste -sd" " "$OUT/build-rev.txt" 2>/dev/null)"
  echo "duration=$DURATION runs=$RUNS warmup=$WARMUP batches=[$BATCHES] clients=[$CLIENTS] variants=[$VARIANTS] client_variants=[$CLIENT_VARIANTS] gd_batches=[$GD_BATCHES] scale=$SCALE scale_b=$SCALE_B receipts_n=$RECEIPTS_N micro_n=$MICRO_N retries=$RETRIES"
  bench_pg_settings psql_db
} > "$OUT/env.txt"
sed 's/^/  /' "$OUT/env.txt"

# ---------------------------------------------------------------- pgbench runs
# Interference check (as in run-baseline.sh): CPU busy time of the whole VM
# minus that of this script's children and of our postmaster and its children.
busy_ticks() { bench_busy_ticks; }
our_ticks() {
  echo $(( $(bench_proc_ticks $$) + $(bench_tree_ticks "$(head -1 "$DATA/postmaster.pid" 2>/dev/null)") ))
}
now_ms() { date +%s%3N; }
other_since() {   # other CPU % since snapshot "busy ours ms"
  awk -v b="$(( $(busy_ticks) - $1 ))" -v o="$(( $(our_ticks) - $2 ))" -v ms="$(( $(now_ms) - $3 ))" \
      -v n="$NCPU" -v hz="$CLK" 'BEGIN{ x = 100 * (b - o) / (ms / 1000 * hz * n); if (x < 0) x = 0; printf "%.0f", x }'
}
wait_idle() {
  local i n
  for i in $(seq 1 100); do
    n=$(psql_db -tAc "SELECT count(*) FROM pg_stat_activity
                      WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
    [ "$n" = 0 ] && return 0
    sleep 0.1
  done
  echo "warning: $n client backends still active"
}
# Every run starts from empty sink, inbox and receipt tables (receipts are
# kept below applied_position only for replays; a TRUNCATE between runs is
# the bench's shortcut for "pruned").
prepare_run() {
  local db=${1:-$DB}
  "${PSQL[@]}" -d "$db" -c "TRUNCATE sink, sink_u, inbox, sog.receipt" -c "VACUUM offsets, sog.checkpoint" \
          -c "CHECKPOINT" >/dev/null
  wait_idle
}

RUNSEQ=0
next_base() { RUNSEQ=$((RUNSEQ + 1)); BASE=$((RUNSEQ * 10000000000)); }  # positions only grow

# run_one LABEL SCRIPT B CLIENTS RUN DURATION RECORD [extra pgbench args...]
run_one() {
  local label=$1 script=$2 b=$3 c=$4 r=$5 dur=$6 record=$7; shift 7
  [ -f "$script" ] || { echo "missing $script"; return 1; }
  local attempt=0
  while :; do
    prepare_run
    next_base
    local log="$OUT/pgbench/${label}_B${b}_c${c}_r${r}_t${attempt}.log"; mkdir -p "$OUT/pgbench"
    local lsn0; lsn0=$(psql_db -tAc "SELECT pg_current_wal_lsn()")
    local b0 o0 t0; b0=$(busy_ticks); o0=$(our_ticks); t0=$(now_ms)
    "${PGBENCH[@]}" -M prepared -c "$c" -j "$c" -T "$dur" -D B="$b" -D pos="$BASE" \
        -D origin_ready=0 -D ready=0 "$@" -f "$script" "$DB" >"$log" 2>&1
    local rc=$?
    local walb; walb=$(psql_db -tAc "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')::bigint")
    wait_idle
    local b1 o1 t1 other; b1=$(busy_ticks); o1=$(our_ticks); t1=$(now_ms)
    other=$(awk -v b="$((b1 - b0))" -v o="$((o1 - o0))" -v ms="$((t1 - t0))" -v n="$NCPU" -v hz="$CLK" \
            'BEGIN{ x = 100 * (b - o) / (ms / 1000 * hz * n); if (x < 0) x = 0; printf "%.0f", x }')
    local tps lat ntx status=ok
    tps=$(awk '/^tps = /{print $3; exit}' "$log"); lat=$(awk '/^latency average = /{print $4; exit}' "$log")
    ntx=$(awk '/^number of transactions actually processed: /{print $6; exit}' "$log")
    local wpe; wpe=$(awk -v w="${walb:-0}" -v n="${ntx:-0}" -v b="$b" 'BEGIN{ if (n > 0) printf "%.0f", w / (n * b); else print "NA" }')
    if [ "$rc" != 0 ] || [ -z "$tps" ] || grep -q 'aborted' "$log"; then
      status="ERR(rc=$rc)"; tps=${tps:-0}; grep -m3 -E 'error|ERROR' "$log" | sed 's/^/    /'
    fi
    local ev; ev=$(awk -v t="$tps" -v b="$b" 'BEGIN{printf "%.0f", t*b}')
    say "$(printf '%-4s B=%-4s c=%s run %s/%s: %8.0f tps %9s ev/s  lat %s ms  WAL %s B/ev  other CPU %s%%  %s' \
        "$label" "$b" "$c" "$r" "$RUNS" "$tps" "$ev" "${lat:-NA}" "$wpe" "$other" "$status")"
    if [ "$record" = 1 ] && [ "$other" -gt "$MAX_OTHER_CPU" ] && [ "$attempt" -lt "$RETRIES" ]; then
      attempt=$((attempt + 1)); say "  disturbed (other CPU $other% > $MAX_OTHER_CPU%): retry $attempt/$RETRIES"
      continue
    fi
    break
  done
  [ "$record" = 1 ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\tNA\tNA\n' \
      "$label" "$b" "$c" "$r" "$tps" "$ev" "${lat:-NA}" "$status" "$wpe" "$other" "$attempt" >> "$OUT/results.tsv"
  return 0
}
script_of() { if [ "$2" = 1 ]; then echo "$HERE/pgbench/${1}_1.sql"; else echo "$HERE/pgbench/${1}_n.sql"; fi; }

# run_client LABEL B CLIENTS RUN DURATION: the real client (bench/client.c,
# libpq pipeline mode, binary parameters, client-side SHA-256) for variant
# cb, cc, cg, ch, cr, cw or cp (client -v b ... p); recorded in results.tsv
# like a pgbench cell.  Each client process continues its partition from
# where the checkpoint (or the offsets row) stands, with its provider token;
# (p) applies the page it noted last before it stops, so no read boundary
# is left open for the next variant on that checkpoint.
run_client() {
  local label=$1 b=$2 c=$3 r=$4 dur=$5 attempt=0 db=$DB v=${1#c}
  if [[ $label == q* ]]; then db=$DBP; v=${label#q}; fi   # the portable edition
  while :; do
    prepare_run "$db"
    local log="$OUT/client/${label}_B${b}_c${c}_r${r}_t${attempt}.log"; mkdir -p "$OUT/client"
    local lsn0; lsn0=$(psql_db -tAc "SELECT pg_current_wal_lsn()")
    local b0 o0 t0; b0=$(busy_ticks); o0=$(our_ticks); t0=$(now_ms)
    "$CLIENT" -d "host=$BENCH_DIR port=$BENCH_PORT user=postgres dbname=$db" \
      -v "$v" -B "$b" -c "$c" -T "$dur" >"$log" 2>&1
    local rc=$?
    local walb; walb=$(psql_db -tAc "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')::bigint")
    wait_idle
    local b1 o1 t1 other; b1=$(busy_ticks); o1=$(our_ticks); t1=$(now_ms)
    other=$(awk -v b="$((b1 - b0))" -v o="$((o1 - o0))" -v ms="$((t1 - t0))" -v n="$NCPU" -v hz="$CLK" \
            'BEGIN{ x = 100 * (b - o) / (ms / 1000 * hz * n); if (x < 0) x = 0; printf "%.0f", x }')
    # client output: variant B clients seconds transactions events events/s
    # client-CPU-us/txn backend-CPU-us/txn
    local secs ntx ev tps ccpu bcpu status=ok
    read -r _ _ _ secs ntx _ ev ccpu bcpu < <(tail -1 "$log")
    if [ "$rc" != 0 ] || [ -z "${ev:-}" ]; then status="ERR(rc=$rc)"; ev=0; ntx=0; secs=1; ccpu=NA; bcpu=NA; sed 's/^/    /' "$log" | head -3; fi
    tps=$(awk -v n="$ntx" -v s="$secs" 'BEGIN{ printf "%.0f", n / s }')
    local wpe; wpe=$(awk -v w="${walb:-0}" -v n="${ntx:-0}" -v b="$b" 'BEGIN{ if (n > 0) printf "%.0f", w / (n * b); else print "NA" }')
    say "$(printf '%-4s B=%-4s c=%s run %s/%s: %8.0f tps %9s ev/s  WAL %s B/ev  other CPU %s%%  %s' \
        "$label" "$b" "$c" "$r" "$RUNS" "$tps" "$ev" "$wpe" "$other" "$status")"
    if [ "$other" -gt "$MAX_OTHER_CPU" ] && [ "$attempt" -lt "$RETRIES" ]; then
      attempt=$((attempt + 1)); say "  disturbed (other CPU $other% > $MAX_OTHER_CPU%): retry $attempt/$RETRIES"
      continue
    fi
    break
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
      "$label" "$b" "$c" "$r" "$tps" "$ev" NA "$status" "$wpe" "$other" "$attempt" \
      "${ccpu:-NA}" "${bcpu:-NA}" >> "$OUT/results.tsv"
}

ncells=0
for b in $BATCHES; do for c in $CLIENTS; do for v in $VARIANTS; do
  in_list "$b" "$(batches_of "$v")" && ncells=$((ncells + 1)); done
  for v in $CLIENT_VARIANTS; do ncells=$((ncells + 1)); done; done; done
[ "$SCALE" = 1 ] && ncells=$((ncells + 2))
say "$ncells cells x $RUNS run(s) x ${DURATION}s (+~0.5s each to reset): about $(( (ncells * RUNS * (DURATION * 10 + 5) / 10 + 2 * WARMUP + 90) / 60 + 1 )) min in all"

: > "$OUT/results.tsv"
if [ "$WARMUP" -gt 0 ]; then
  say "warm-up (${WARMUP}s of (c) and ${WARMUP}s of (g), B=1000, 4 clients; not recorded)"
  run_one warm "$HERE/pgbench/c_n.sql" 1000 4 0 "$WARMUP" 0
  run_one warm "$HERE/pgbench/g_n.sql" 1000 4 0 "$WARMUP" 0
fi
for r in $(seq 1 "$RUNS"); do
  for b in $BATCHES; do
    for c in $CLIENTS; do
      for v in $VARIANTS; do
        in_list "$b" "$(batches_of "$v")" || continue
        run_one "$v" "$(script_of "$v" "$b")" "$b" "$c" "$r" "$DURATION" 1
      done
      for v in $CLIENT_VARIANTS; do
        run_client "$v" "$b" "$c" "$r" "$DURATION"
      done
    done
  done
  if [ "$SCALE" = 1 ]; then   # (g) at B=SCALE_B, 4 clients: 1 or 16 checkpoints per client
    for npc in 1 16; do
      run_one "s$npc" "$HERE/pgbench/s_n.sql" "$SCALE_B" 4 "$r" "$DURATION" 1 -D NPC="$npc" -D k=0
    done
  fi
done
psql_db -c "TRUNCATE sink, sink_u, inbox, sog.receipt" -c "VACUUM sog.checkpoint" >/dev/null

# ---------------------------------------------------------------- receipts on disk, prune
: > "$OUT/metrics.txt"
metric() { echo "$1=$2" >> "$OUT/metrics.txt"; }
say "receipts: $RECEIPTS_N events with apply_batch (B=1000) on a fresh checkpoint"
read -r CPA GENA < <(psql_db -tA -F' ' -c "SELECT c.id, (sog.claim(c.id, 'bench-receipts')).generation
                                            FROM sog.register('bench', 'receipts', 'A') AS c")
read -r CPB GENB < <(psql_db -tA -F' ' -c "SELECT c.id, (sog.claim(c.id, 'bench-probe')).generation
                                            FROM sog.register('bench', 'receipts', 'B') AS c")
psql_db -c "TRUNCATE sog.receipt" -c "CHECKPOINT" >/dev/null
FILL_B=1000; [ "$RECEIPTS_N" -lt 1000 ] && FILL_B=$RECEIPTS_N
lsn0=$(psql_db -tAc "SELECT pg_current_wal_lsn()")
next_base
"${PGBENCH[@]}" -M prepared -c 1 -j 1 -t $((RECEIPTS_N / FILL_B)) -D B=$FILL_B -D pos="$BASE" \
    -D cp="$CPA" -D gen="$GENA" -f "$HERE/pgbench/fill.sql" "$DB" > "$OUT/fill.log" 2>&1 \
  || { cat "$OUT/fill.log"; die "fill failed"; }
psql_db -c "CHECKPOINT" >/dev/null
# (checkpoints without a retention policy: 1.2 keeps their receipts in the
# partition sog.receipt_0; a partitioned table itself has no size)
RCPT=$(psql_db -tAc "SELECT coalesce(to_regclass('sog.receipt_0'), 'sog.receipt'::regclass)")
psql_db -tA -F' ' -c "SELECT pg_total_relation_size('$RCPT'), pg_relation_size('$RCPT'),
                              pg_indexes_size('$RCPT'), (SELECT count(*) FROM sog.receipt),
                              (SELECT sum(n) FROM sog.receipt),
                              pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')::bigint" > "$OUT/receipts.txt"
read -r R_TOTAL R_HEAP R_INDEX R_ROWS R_N R_WAL < "$OUT/receipts.txt"
metric receipts_events "$R_N"; metric receipts_rows "$R_ROWS"; metric receipts_total "$R_TOTAL"
metric receipts_heap "$R_HEAP"; metric receipts_index "$R_INDEX"; metric receipts_wal "$R_WAL"
metric receipts_fill_tps "$(awk '/^tps = /{print $3; exit}' "$OUT/fill.log")"
say "  $R_N receipts in $R_ROWS rows: $R_TOTAL bytes (heap $R_HEAP, indexes $R_INDEX)"

say "prune: sog.prune_receipts of $R_N receipts on A, held open ${PRUNE_HOLD}s, while B applies"
next_base; PBASE=$BASE
"${PGBENCH[@]}" -M prepared -c 1 -j 1 -T 2 -D pos="$PBASE" -D cp="$CPB" -D gen="$GENB" \
    -l --log-prefix="$OUT/txlog-alone" -f "$HERE/pgbench/probe.sql" "$DB" > "$OUT/probe-alone.log" 2>&1 \
  || { cat "$OUT/probe-alone.log"; die "probe failed"; }
THROUGH=$(psql_db -tAc "SELECT applied_position FROM sog.checkpoint WHERE id = $CPA")
next_base
"${PGBENCH[@]}" -M prepared -c 1 -j 1 -T $((PRUNE_HOLD + 2)) -D pos="$BASE" -D cp="$CPB" -D gen="$GENB" \
    -l --log-prefix="$OUT/txlog-prune" -f "$HERE/pgbench/probe.sql" "$DB" > "$OUT/probe-prune.log" 2>&1 &
PROBE_PID=$!
sleep 0.7
psql_db -tA -F" " -v cp="$CPA" -v through="$THROUGH" -v hold="$PRUNE_HOLD" -f "$HERE/prune.sql" \
  > "$OUT/prune.txt" || die "prune failed"
wait "$PROBE_PID" || { cat "$OUT/probe-prune.log"; die "probe during prune failed"; }
read -r P_N P_T0 P_T1 P_T2 < <(tail -1 "$OUT/prune.txt")
# pgbench -l lines: client txn latency_us script epoch_s epoch_us (at the end of each transaction)
cat "$OUT"/txlog-alone.* 2>/dev/null | awk '{print $3}' | sort -n > "$OUT/probe-alone.lat"
cat "$OUT"/txlog-prune.* 2>/dev/null | awk -v a="$P_T0" -v z="$P_T2" '
  { end = $5 + $6 / 1e6; start = end - $3 / 1e6; if (end >= a && start <= z) print $3 }' | sort -n > "$OUT/probe-during.lat"
pct() { awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "NA"; exit }
        i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.2f", v[i] / 1000 }' "$1"; }
metric prune_receipts "$P_N"
metric prune_s "$(awk -v a="$P_T0" -v b="$P_T1" 'BEGIN{printf "%.4f", b - a}')"
metric prune_txn_s "$(awk -v a="$P_T0" -v b="$P_T2" 'BEGIN{printf "%.3f", b - a}')"
metric probe_alone_n "$(wc -l < "$OUT/probe-alone.lat")"
metric probe_alone_med_ms "$(pct "$OUT/probe-alone.lat" 0.5)"
metric probe_alone_max_ms "$(pct "$OUT/probe-alone.lat" 1)"
metric probe_during_n "$(wc -l < "$OUT/probe-during.lat")"
metric probe_during_med_ms "$(pct "$OUT/probe-during.lat" 0.5)"
metric probe_during_p99_ms "$(pct "$OUT/probe-during.lat" 0.99)"
metric probe_during_max_ms "$(pct "$OUT/probe-during.lat" 1)"
metric probe_overlap_stmt_n "$(cat "$OUT"/txlog-prune.* 2>/dev/null | awk -v a="$P_T0" -v z="$P_T1" '
  { end = $5 + $6 / 1e6; start = end - $3 / 1e6; if (end >= a && start <= z) n++ } END { print n + 0 }')"
say "  pruned $P_N in $(grep '^prune_s=' "$OUT/metrics.txt" | cut -d= -f2) s; B's applies during the prune transaction: $(wc -l < "$OUT/probe-during.lat"), max $(pct "$OUT/probe-during.lat" 1) ms"
psql_db -c "TRUNCATE sink, sog.receipt" >/dev/null

# ---------------------------------------------------------------- micro-figures
if [ "$MICRO" = 1 ]; then
  say "micro: openssl speed -seconds 1 sha256 (one core)"
  snap="$(busy_ticks) $(our_ticks) $(now_ms)"
  openssl speed -seconds 1 sha256 > "$OUT/openssl-speed.txt" 2>/dev/null
  metric other_cpu_openssl "$(other_since $snap)"
  say "micro: bench/hashloop.c over $MICRO_N records"
  snap="$(busy_ticks) $(our_ticks) $(now_ms)"
  "$HASHLOOP" "$MICRO_N" 5 > "$OUT/hashloop.txt" || die "hashloop failed"
  metric other_cpu_hashloop "$(other_since $snap)"
  say "micro: bench/micro.sql over $MICRO_N rows (buffer_hash, position compare and I/O)"
  snap="$(busy_ticks) $(our_ticks) $(now_ms)"
  psql_db -At -F'|' -v N="$MICRO_N" -v RUNS=5 -f "$HERE/micro.sql" > "$OUT/micro.txt" || die "micro.sql failed"
  metric other_cpu_micro "$(other_since $snap)"
fi
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/env.txt"
echo "elapsed: $(( $(date +%s) - T_START )) s" >> "$OUT/env.txt"
cleanup
trap - EXIT
else
  OUT=$REPORT_ONLY
  [ -s "$OUT/results.tsv" ] || { echo "no $OUT/results.tsv"; exit 1; }
  RUNS=$(cut -f4 "$OUT/results.tsv" | sort -n | tail -1)
fi  # REPORT_ONLY

# ---------------------------------------------------------------- reports
MAX_OTHER_CPU=$MAX_OTHER_CPU perl "$HERE/report.pl" "$OUT" || exit 1
if [ "$PUBLISH" = 1 ]; then
  cp "$OUT/latest.md" "$HERE/latest.md" && cp "$OUT/results.svg" "$HERE/results.svg" &&
    cp "$OUT/results-more.svg" "$HERE/results-more.svg"
  say "wrote bench/latest.md, bench/results.svg and bench/results-more.svg"
fi
say "done; raw results in $OUT"
