#!/usr/bin/env bash
# bench/soak.sh - `make bench-soak`: stream_offset_guard over a hundred
# million events, with receipt retention pruning from pg_cron and autovacuum
# on, on a throwaway cluster with the durable settings of `make bench`
# (fsync=on, synchronous_commit=on; bench/lib.sh).  Does throughput stay
# flat, and the receipt table bounded, as the table grows, is pruned and
# vacuumed, and its index deepens?
#
#   make bench-soak                   # the full runs (the full sizes)
#   bash bench/soak.sh --short        # everything with tiny sizes, ~1 min
#   SOAK_RUNS=C SOAK_EVENTS_C=20000000 bash bench/soak.sh   # one run
#
# Runs (SOAK_RUNS picks; each on empty sink and receipt tables):
#   A  SOAK_EVENTS events through one checkpoint (one client process), its
#      consumer's policy keeping SOAK_KEEP_POSITIONS positions;
#   B  SOAK_EVENTS_EACH events through each of SOAK_PARTITIONS checkpoints,
#      from SOAK_CLIENTS client processes, each cycling over its share of the
#      partitions (one transaction each in turn), keeping
#      SOAK_KEEP_POSITIONS_B positions per checkpoint;
#   C  SOAK_EVENTS_C events through one checkpoint with no retention: how fast
#      the table grows, and the apply's latency against receipts stored.
# The client is bench/client.c (libpq pipeline mode, binary parameters,
# client-side SHA-256 of 100-byte payloads), SOAK_BATCH events per
# transaction, variant SOAK_VARIANT (h: sog.apply_batch_int8), each
# transaction logged (end time, latency, events).  The pruner is a pg_cron
# job `CALL sog.prune_due()` as an operator role every SOAK_PRUNE_EVERY
# seconds (a cron schedule for whole minutes; 'N seconds' where pg_cron is
# 1.5 or later); where pg_cron cannot run that often (Debian 12's 1.4: every
# minute at most), the script itself calls it, as that role, every
# SOAK_PRUNE_EVERY seconds after the previous call ended, and the report
# says so.  A sampler session records every SOAK_SAMPLE seconds: WAL
# position, sog.receipt's table and index sizes, events applied and receipts
# stored, autovacuum's counters for sog.receipt, and the CPU used by
# processes other than ours.  The server logs every autovacuum
# (log_autovacuum_min_duration=0) and checkpoint.
#
# Steps: installs missing Debian packages, builds a copy of the working tree
# into a private copy of PostgreSQL (bench/lib.sh; SOAK_INSTALL), starts a
# cluster in SOAK_DIR (unix socket only, port SOAK_PORT; pg_cron preloaded,
# connecting through that socket), runs the runs, stops and removes the
# cluster, then bench/soak-report.pl writes the report and the plots.  As
# root, the server runs as the postgres OS user (runuser).
#
# Output: raw results in bench/results/soak-<timestamp>/ (git-ignored):
# env.txt, per run <run>/ with run.txt, txlog.* (one line per transaction),
# samples.tsv, prunes.tsv, client.log; server.log; and soak.md and
# soak-*.svg, which SOAK_PUBLISH=1 copies to docs/.
#
# Environment (defaults in brackets; --short or SOAK_SHORT=1 for the
# figures after the slash):
#   SOAK_HOUR [0]  1 (or --hour): the hour-long mode, below
#   SOAK_SECONDS ['']  SOAK_SECONDS_C [SOAK_SECONDS]   run length; hour: 3600 / 900
#   SOAK_RATE [0]  events/s in all (split among a run's client processes;
#                  0: as fast as they can); hour: 60000
#   SOAK_RUNS ["A B C"]
#   SOAK_EVENTS [100000000 / 2000000]          run A
#   SOAK_PARTITIONS [16 / 4] SOAK_EVENTS_EACH [10000000 / 500000]   run B
#   SOAK_CLIENTS [4 / 2]                       run B's client processes
#   SOAK_EVENTS_C [SOAK_EVENTS / 1000000]      run C
#   SOAK_KEEP_POSITIONS [10000000 / 200000]    run A's policy
#   SOAK_KEEP_POSITIONS_B [1000000 / 50000]    run B's, per checkpoint
#   SOAK_KEEP_INTERVAL ['']                    e.g. '10 minutes', with both
#   SOAK_PRUNE_EVERY [60 / 1]  SOAK_SAMPLE [5 / 0.5]   seconds
#   SOAK_NAPTIME [1min / 1s]  autovacuum_naptime (short: so that autovacuum
#                             can run within the seconds of a short run)
#   SOAK_VACUUM [0]  1 = VACUUM sog.receipt (as the superuser) right after
#                    each prune run: the pruner is then the script's loop
#                    (a VACUUM cannot run in pg_cron's one-statement job
#                    with the CALL); a line of vacuums.tsv per VACUUM
#   SOAK_BATCH [1000]  SOAK_VARIANT [h]
#   SOAK_DIR [/tmp/sog-soak]  SOAK_PORT [54460]
#   SOAK_INSTALL [private]  private, system or 0 (bench/lib.sh); make test
#                           passes 0 (it has installed the extension)
#   SOAK_KEEP [0]           1 = keep the stopped cluster in SOAK_DIR
#   SOAK_PUBLISH [1 / 0]    copy soak.md and the plots to docs/
#   SOAK_OUT [bench/results/soak-<timestamp>]
#   SOAK_REPORT_ONLY=<results dir>: rebuild the report from an earlier run
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
source "$HERE/lib.sh"

[ "${1:-}" = --short ] && SOAK_SHORT=1
[ "${1:-}" = --hour ] && SOAK_HOUR=1
SOAK_SHORT=${SOAK_SHORT:-0}
SOAK_HOUR=${SOAK_HOUR:-0}
# The hour-long mode (make bench-soak-hour): each run lasts SOAK_SECONDS
# (run C SOAK_SECONDS_C) at SOAK_RATE events/s in all, the rate split among
# its client processes: at full speed an hour would be a billion events,
# whose sink rows the disk cannot hold.
if [ "$SOAK_HOUR" = 1 ]; then
  SOAK_SECONDS=${SOAK_SECONDS:-3600}
  SOAK_SECONDS_C=${SOAK_SECONDS_C:-900}
  SOAK_RATE=${SOAK_RATE:-60000}
fi
SOAK_SECONDS=${SOAK_SECONDS:-}
SOAK_SECONDS_C=${SOAK_SECONDS_C:-$SOAK_SECONDS}
SOAK_RATE=${SOAK_RATE:-0}
short() { if [ "$SOAK_SHORT" = 1 ]; then echo "$2"; else echo "$1"; fi; }
PG_MAJOR=${PG_MAJOR:-15}
SOAK_RUNS=${SOAK_RUNS:-"A B C"}
SOAK_EVENTS=${SOAK_EVENTS:-$(short 100000000 2000000)}
SOAK_PARTITIONS=${SOAK_PARTITIONS:-$(short 16 4)}
SOAK_EVENTS_EACH=${SOAK_EVENTS_EACH:-$(short 10000000 500000)}
SOAK_CLIENTS=${SOAK_CLIENTS:-$(short 4 2)}
SOAK_EVENTS_C=${SOAK_EVENTS_C:-$(short "$SOAK_EVENTS" 1000000)}
SOAK_KEEP_POSITIONS=${SOAK_KEEP_POSITIONS:-$(short 10000000 200000)}
SOAK_KEEP_POSITIONS_B=${SOAK_KEEP_POSITIONS_B:-$(short 1000000 50000)}
SOAK_KEEP_INTERVAL=${SOAK_KEEP_INTERVAL:-}
SOAK_PRUNE_EVERY=${SOAK_PRUNE_EVERY:-$(short 60 1)}
SOAK_SAMPLE=${SOAK_SAMPLE:-$(short 5 0.5)}
SOAK_NAPTIME=${SOAK_NAPTIME:-$(short 1min 1s)}
SOAK_VACUUM=${SOAK_VACUUM:-0}
SOAK_BATCH=${SOAK_BATCH:-1000}
SOAK_VARIANT=${SOAK_VARIANT:-h}
SOAK_DIR=${SOAK_DIR:-/tmp/sog-soak}
SOAK_PORT=${SOAK_PORT:-54460}
SOAK_INSTALL=${SOAK_INSTALL:-private}
SOAK_KEEP=${SOAK_KEEP:-0}
SOAK_PUBLISH=${SOAK_PUBLISH:-$(short 1 0)}
SOAK_REPORT_ONLY=${SOAK_REPORT_ONLY:-}
SOAK_OUT=${SOAK_OUT:-$HERE/results/soak-$(date +%Y%m%d-%H%M%S)}
DB=soak

T_START=$(date +%s)
say() { printf '[%4ds] %s\n' $(( $(date +%s) - T_START )) "$*"; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- one run
# The pieces of a run, each a function of the run's directory $RD.

# A line of samples.tsv: time, WAL position (bytes), sog.receipt's table and
# index sizes, events applied and receipts stored on the run's checkpoints,
# live and dead tuples, autovacuum runs so far and the last one's time,
# whether a vacuum of it is in progress, how many sessions other than the
# pruner's wait for a lock (the applies: for the checkpoint's row, which
# each of prune_due's chunks holds until it commits); then the machine's
# busy CPU ticks and ours (the server's processes, and this script's with
# the client's).
sample() {
  local row
  # sog.receipt's partitions (1.2), or the table itself (before)
  row=$(psql_db -tA -F$'\t' -c "
    WITH parts AS (
      SELECT i.inhrelid AS relid FROM pg_inherits i WHERE i.inhparent = 'sog.receipt'::regclass
      UNION ALL
      SELECT 'sog.receipt'::regclass WHERE NOT EXISTS (
        SELECT FROM pg_inherits i WHERE i.inhparent = 'sog.receipt'::regclass))
    SELECT extract(epoch FROM clock_timestamp()), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
           (SELECT sum(pg_relation_size(p.relid)) FROM parts p)::bigint,
           (SELECT sum(pg_indexes_size(p.relid)) FROM parts p)::bigint, c.applied, c.receipts,
           s.live, s.dead, s.autovacuums, s.last_autovacuum,
           (SELECT count(*) FROM pg_stat_progress_vacuum v WHERE v.relid IN (SELECT p.relid FROM parts p)),
           (SELECT count(*) FROM pg_stat_activity a WHERE a.wait_event_type = 'Lock'
                AND a.query NOT LIKE '%prune_due%')
      FROM (SELECT sum(t.n_live_tup)::bigint AS live, sum(t.n_dead_tup)::bigint AS dead,
                   sum(t.autovacuum_count)::bigint AS autovacuums,
                   coalesce(extract(epoch FROM max(t.last_autovacuum)), 0) AS last_autovacuum
              FROM pg_stat_user_tables t WHERE t.relid IN (SELECT p.relid FROM parts p)) s,
           (SELECT coalesce(sum(coalesce(sog.position_to_numeric(applied_position), 0)), 0) AS applied,
                   coalesce(sum(coalesce(sog.position_to_numeric(applied_position), 0)
                                - coalesce(sog.position_to_numeric(prune_horizon), 0)), 0) AS receipts
              FROM sog.checkpoint WHERE consumer = 'soak-$RUN') c") || return 1
  printf '%s\t%s\t%s\n' "$row" "$(bench_busy_ticks)" \
    "$(bench_tree_ticks "$(head -1 "$DATA/postmaster.pid" 2>/dev/null)" $$)"
}

sampler() {
  while [ ! -e "$RD/stop" ]; do
    sample >> "$RD/samples.tsv" || say "warning: a sample failed"
    sleep "$SOAK_SAMPLE"
  done
}

# The pruner where pg_cron cannot run often enough: CALL sog.prune_due() as
# sog_retention, every SOAK_PRUNE_EVERY s after the previous call ended; a
# line of prunes.tsv per call: start, end, status, receipts pruned.
prune_loop() {
  local out t0 t1 n
  while [ ! -e "$RD/stop" ]; do
    sleep "$SOAK_PRUNE_EVERY"
    [ -e "$RD/stop" ] && break
    t0=$(date +%s.%N)
    out=$("$PGBIN/psql" -h "$SOAK_DIR" -p "$SOAK_PORT" -U sog_retention -X -q -d "$DB" \
      -c 'CALL sog.prune_due()' 2>&1)
    t1=$(date +%s.%N)
    n=$(sed -n 's/.*NOTICE: *\([0-9]*\) receipts pruned.*/\1/p' <<<"$out")
    # what the receipt ring did (1.2): a line of ring.log per NOTICE
    sed -n "s/.*NOTICE: *receipt ring: \(.*\)/$t0\t\1/p" <<<"$out" >> "$RD/ring.log"
    if [ -n "$n" ]; then printf '%s\t%s\tsucceeded\t%s\n' "$t0" "$t1" "$n"
    else printf '%s\t%s\tfailed\tNA\n' "$t0" "$t1"; say "prune failed: $out"; fi >> "$RD/prunes.tsv"
    if [ "$SOAK_VACUUM" = 1 ]; then
      t0=$(date +%s.%N)
      psql_db -q -c 'VACUUM sog.receipt' >/dev/null || say "VACUUM sog.receipt failed"
      t1=$(date +%s.%N)
      printf '%s\t%s\n' "$t0" "$t1" >> "$RD/vacuums.tsv"
    fi
  done
}

# How the pruner runs: sets PRUNER (cron or loop), SCHEDULE and PRUNER_NOTE.
choose_pruner() {
  local every=$SOAK_PRUNE_EVERY v
  v=$(psql_admin -tAc "SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'")
  PRUNER=cron
  if [ "$SOAK_VACUUM" = 1 ]; then
    PRUNER=loop SCHEDULE=
    PRUNER_NOTE="the script, every $every s after the previous run ended, each run followed by VACUUM sog.receipt (SOAK_VACUUM=1)"
  elif [ $((every % 60)) = 0 ] && [ "$every" -lt 3600 ]; then
    SCHEDULE="*/$((every / 60)) * * * *"; [ "$every" = 60 ] && SCHEDULE="* * * * *"
    PRUNER_NOTE="pg_cron $v job '$SCHEDULE'"
  elif printf '%s\n1.5\n' "$v" | sort -V -C && [ "$v" != 1.5 ]; then   # v < 1.5
    PRUNER=loop SCHEDULE=
    PRUNER_NOTE="the script, every $every s after the previous run ended, in place of pg_cron (pg_cron $v schedules jobs at most every minute)"
  elif [ "$every" -lt 60 ]; then
    SCHEDULE="$every seconds"
    PRUNER_NOTE="pg_cron $v job '$SCHEDULE'"
  else
    die "SOAK_PRUNE_EVERY=$every: whole minutes (below an hour) or under 60 seconds"
  fi
}

start_pruner() {
  if [ "$PRUNER" = cron ]; then
    JOBID=$(psql_admin -tAc "SELECT cron.schedule_in_database('soak-$RUN', '$SCHEDULE',
                             'CALL sog.prune_due()', '$DB', 'sog_retention')") || die "cron.schedule failed"
  else
    prune_loop & PRUNER_PID=$!
  fi
}

# After the client: no new job runs, the running one finishes, and the
# job's runs go to prunes.tsv.
stop_pruner() {
  if [ "$PRUNER" = cron ]; then
    psql_admin -c "SELECT cron.alter_job($JOBID, active => false)" >/dev/null
    local i
    for i in $(seq 600); do
      [ "$(psql_admin -tAc "SELECT count(*) FROM cron.job_run_details
                            WHERE jobid = $JOBID AND status IN ('starting', 'running')")" = 0 ] && break
      sleep 1
    done
    psql_admin -tA -F$'\t' -c "SELECT extract(epoch FROM start_time), extract(epoch FROM end_time), status, 'NA'
                                FROM cron.job_run_details WHERE jobid = $JOBID ORDER BY start_time" \
      > "$RD/prunes.tsv"
    psql_admin -c "SELECT cron.unschedule($JOBID)" >/dev/null
  else
    wait "$PRUNER_PID"
  fi
  PRUNER_PID=
}

# run_soak RUN FIRST_PART PARTITIONS CLIENTS EVENTS_EACH KEEP_POSITIONS [SECONDS]
# (with SECONDS, the run lasts that long, EVENTS_EACH unused)
run_soak() {
  RUN=$1; local first=$2 parts=$3 clients=$4 each=$5 keep=$6 secs=${7:-} kint=$SOAK_KEEP_INTERVAL
  local length=(-N "$each")
  [ -n "$secs" ] && length=(-T "$secs" -N 0)
  [ "$SOAK_RATE" != 0 ] && length+=(-R "$(awk -v r="$SOAK_RATE" -v c="$clients" 'BEGIN { print r / c }')")
  RD=$SOAK_OUT/$RUN; mkdir -p "$RD" || die "cannot create $RD"
  [ -z "$keep" ] && kint=
  [ $((parts % clients)) = 0 ] || die "run $RUN: $parts partitions do not divide among $clients clients"
  local pace=; [ "$SOAK_RATE" != 0 ] && pace=", at most $SOAK_RATE events/s in all"
  local what="$each events"; [ -n "$secs" ] && what="$secs s"
  say "run $RUN: $what through each of $parts checkpoint(s) from $clients client process(es), B=$SOAK_BATCH$pace;" \
      "retention: ${keep:-none}${keep:+ positions}${kint:+ and $kint}"
  psql_db -v run="$RUN" -v first="$first" -v n="$parts" -v keep_positions="$keep" -v keep_interval="$kint" \
    -f "$HERE/soak-setup.sql" >/dev/null || die "soak-setup.sql failed"
  rm -f "$RD/stop"
  : > "$RD/samples.tsv"; : > "$RD/prunes.tsv"
  sample >> "$RD/samples.tsv" || die "the first sample failed"
  [ -n "$keep" ] && start_pruner
  local t0; t0=$(date +%s.%N)
  "$CLIENT" -d "host=$SOAK_DIR port=$SOAK_PORT user=postgres dbname=$DB" -v "$SOAK_VARIANT" -B "$SOAK_BATCH" \
    -c "$clients" -P $((parts / clients)) "${length[@]}" -p "$first" -o "$RD/txlog" > "$RD/client.log" 2>&1 &
  CLIENT_PID=$!
  sampler & SAMPLER_PID=$!
  wait "$CLIENT_PID"; local rc=$?; CLIENT_PID=
  local t1; t1=$(date +%s.%N)
  touch "$RD/stop"
  wait "$SAMPLER_PID"; SAMPLER_PID=
  [ -n "$keep" ] && stop_pruner
  sample >> "$RD/samples.tsv"          # after the last prune run: what it pruned counts
  rm -f "$RD/stop"
  [ "$rc" = 0 ] || { cat "$RD/client.log"; die "run $RUN: the client failed"; }
  {
    echo "run=$RUN"; echo "partitions=$parts"; echo "clients=$clients"
    echo "events_each=$([ -n "$secs" ] && echo 0 || echo "$each")"; echo "seconds=$secs"; echo "rate=$SOAK_RATE"
    echo "batch=$SOAK_BATCH"; echo "variant=$SOAK_VARIANT"; echo "keep_positions=$keep"; echo "keep_interval=$kint"
    echo "pruner=${keep:+$PRUNER_NOTE}"; echo "prune_every=${keep:+$SOAK_PRUNE_EVERY}"; echo "sample_every=$SOAK_SAMPLE"
    echo "vacuum_after_prune=$SOAK_VACUUM"
    echo "t_start=$t0"; echo "t_end=$t1"; echo "client=$(tail -1 "$RD/client.log")"
  } > "$RD/run.txt"
  say "run $RUN: $(awk '{printf "%d events in %.1f s, %.0f events/s", $6, $4, $7}' "$RD/client.log");" \
      "$(wc -l < "$RD/prunes.tsv") prune run(s)"
}

# Disk the largest run needs: the sink (about 150 bytes per event), the
# receipts (35, all of them without retention) and max_wal_size.
check_disk() {
  local most=0 r n need avail
  for r in $SOAK_RUNS; do
    case $r in A) n=$SOAK_EVENTS ;; B) n=$((SOAK_PARTITIONS * SOAK_EVENTS_EACH)) ;; C) n=$SOAK_EVENTS_C ;; esac
    [ "$n" -gt "$most" ] && most=$n
  done
  need=$(( most * 185 + 8 * 1024 * 1024 * 1024 ))
  avail=$(( $(df -Pk "$SOAK_DIR" | awk 'NR==2{print $4}') * 1024 ))
  say "disk: the largest run needs about $((need >> 30)) GiB; $((avail >> 30)) GiB free in $SOAK_DIR"
  [ "$avail" -gt "$need" ] || die "not enough disk in $SOAK_DIR"
}

# ---------------------------------------------------------------- main
if [ -z "$SOAK_REPORT_ONLY" ]; then
  for r in $SOAK_RUNS; do case $r in A|B|C) ;; *) die "SOAK_RUNS: A, B or C, not $r" ;; esac; done
  mkdir -p "$SOAK_OUT" || exit 1
  exec > >(tee -a "$SOAK_OUT/run.log") 2>&1

  sog_install_packages make gcc perl postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR \
    libssl-dev libpq-dev postgresql-$PG_MAJOR-cron || die "cannot install the soak's packages"
  PGBIN=${PGBIN:-$(sog_pg_bindir "$PG_MAJOR")}
  DATA=$SOAK_DIR/data
  STARTED=0 CLIENT_PID= SAMPLER_PID= PRUNER_PID=
  PSQL=()
  psql_db() { "${PSQL[@]}" -d "$DB" "$@"; }
  psql_admin() { "${PSQL[@]}" -d postgres "$@"; }
  cleanup() {
    local p
    for p in $CLIENT_PID $SAMPLER_PID $PRUNER_PID; do
      kill $(pgrep -P "$p") "$p" 2>/dev/null
    done
    if [ "$STARTED" = 1 ]; then
      say "stopping the cluster"
      bench_stop_cluster "$DATA"
      STARTED=0
    fi
    [ -f "$DATA/server.log" ] && cp "$DATA/server.log" "$SOAK_OUT/server.log"
    [ "$SOAK_KEEP" = 1 ] || rm -rf "$SOAK_DIR"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM

  bench_fresh_dir "$SOAK_DIR"
  check_disk
  bench_build_extension "$SOAK_DIR" "$SOAK_INSTALL" "" "$SOAK_OUT"
  PSQL=("$PGBIN/psql" -h "$SOAK_DIR" -p "$SOAK_PORT" -U postgres -X -q -v ON_ERROR_STOP=1)
  CLIENT=$SOAK_DIR/client
  bench_compile_client "$CLIENT" "$SOAK_OUT/client-build.log" "$(sog_pg_bindir "$PG_MAJOR")/pg_config"
  [ -e "$("$PGBIN/pg_config" --pkglibdir)/pg_cron.so" ] \
    || die "pg_cron is not in $("$PGBIN/pg_config" --pkglibdir) (postgresql-$PG_MAJOR-cron)"

  bench_start_cluster "$DATA" "$SOAK_PORT" "$SOAK_DIR" "$SOAK_OUT" "$BENCH_SERVER_OPTS \
    -c autovacuum=on -c autovacuum_naptime=$SOAK_NAPTIME -c log_autovacuum_min_duration=0 -c log_timezone=UTC -c log_line_prefix='%m [%p] ' \
    -c shared_preload_libraries=pg_cron -c cron.database_name=postgres -c cron.host='$SOAK_DIR'"
  STARTED=1
  psql_admin -c "CREATE DATABASE $DB" -c "CREATE EXTENSION pg_cron" -c "CREATE ROLE sog_retention LOGIN" \
    >/dev/null || die "cannot create the database, pg_cron or the role"
  psql_db -f "$HERE/schema.sql" >/dev/null || die "schema.sql failed"
  psql_db -f "$HERE/setup_sog.sql" >/dev/null || die "setup_sog.sql failed"
  psql_db -c "SELECT sog.grant_operator('sog_retention')" >/dev/null || die "grant_operator failed"
  choose_pruner
  {
    bench_describe "$SOAK_DIR"
    echo "extension: built from $(paste -sd" " "$SOAK_OUT/build-rev.txt" 2>/dev/null)"
    echo "soak: runs=[$SOAK_RUNS] short=$SOAK_SHORT hour=$SOAK_HOUR seconds=[$SOAK_SECONDS] seconds_c=[$SOAK_SECONDS_C] rate=$SOAK_RATE events=$SOAK_EVENTS partitions=$SOAK_PARTITIONS events_each=$SOAK_EVENTS_EACH clients=$SOAK_CLIENTS events_c=$SOAK_EVENTS_C keep_positions=$SOAK_KEEP_POSITIONS keep_positions_b=$SOAK_KEEP_POSITIONS_B keep_interval=[$SOAK_KEEP_INTERVAL] prune_every=$SOAK_PRUNE_EVERY sample=$SOAK_SAMPLE batch=$SOAK_BATCH variant=$SOAK_VARIANT naptime=$SOAK_NAPTIME clk_tck=$(getconf CLK_TCK)"
    echo "pg_cron: $(psql_admin -tAc "SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'")"
    EXTRA_SETTINGS="'autovacuum_naptime','autovacuum_vacuum_scale_factor','autovacuum_vacuum_cost_limit','autovacuum_vacuum_cost_delay','log_autovacuum_min_duration'" \
      bench_pg_settings psql_db
  } > "$SOAK_OUT/env.txt"
  sed 's/^/  /' "$SOAK_OUT/env.txt"

  for r in $SOAK_RUNS; do
    case $r in
      A) run_soak A 1000 1 1 "$SOAK_EVENTS" "$SOAK_KEEP_POSITIONS" "$SOAK_SECONDS" ;;
      B) run_soak B 2000 "$SOAK_PARTITIONS" "$SOAK_CLIENTS" "$SOAK_EVENTS_EACH" "$SOAK_KEEP_POSITIONS_B" "$SOAK_SECONDS" ;;
      C) run_soak C 3000 1 1 "$SOAK_EVENTS_C" "" "$SOAK_SECONDS_C" ;;
    esac
  done
  echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$SOAK_OUT/env.txt"
  echo "elapsed: $(( $(date +%s) - T_START )) s" >> "$SOAK_OUT/env.txt"
  cleanup
  trap - EXIT
else
  SOAK_OUT=$SOAK_REPORT_ONLY
fi

# ---------------------------------------------------------------- report
perl "$HERE/soak-report.pl" "$SOAK_OUT" || die "soak-report.pl failed"
if [ "$SOAK_PUBLISH" = 1 ]; then
  cp "$SOAK_OUT"/soak.md "$SOAK_OUT"/soak-*.svg "$ROOT/docs/" || die "cannot copy the report to docs/"
  say "wrote docs/soak.md and docs/soak-*.svg"
fi
say "done; raw results in $SOAK_OUT"
