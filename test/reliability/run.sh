#!/usr/bin/env bash
#
# test/reliability/run.sh: the reliability suite (make reliability).
#
#   bash test/reliability/run.sh            the full run (about 25 minutes),
#                                           writes test/reliability/results.md
#   bash test/reliability/run.sh --short    every scenario, shortened (about 4
#                                           minutes; make test); writes
#                                           test/reliability/results-short.md
#   bash test/reliability/run.sh --selftest deliberately broken consumers: the
#                                           checker must see each breakage
#   options: --only a,b (scenarios by name), --list, --keep (keep the run
#   directory), --seconds N (fault time per scenario, overrides the mode)
#
# Each scenario runs on its own throwaway cluster (unix socket only, ports
# 55500-55549, as the postgres OS user when run as root): a workload of
# consumers (test/reliability/sogload.c) on six partitions, a monitor and an
# operator, a fault loop for the scenario's time, then a drain that applies
# what is left, a dump of the final database, amcheck on every relation of
# the extension, and the checker (check.pl).  One line per scenario, the
# markdown table, and a non-zero exit status if any invariant fails.
#
# Environment:
#   PG_CONFIG     the PostgreSQL to build against and run (default: Debian's
#                 /usr/lib/postgresql/15/bin/pg_config; the extension is
#                 installed into it, so as root or with sudo)
#   FSYNC         on (default) or off for the clusters
#   REL_RUN_DIR   where clusters and logs go (default: a new /tmp/sog-rel.*)
#   REL_SOURCE    worktree (default: the working tree, as make test does),
#                 head (git archive HEAD) or any commit (git archive <commit>)
#   KEEP=1        keep the run directory (it is kept anyway when a scenario
#                 fails)

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

MODE=full
ONLY=""
KEEP=${KEEP:-0}
SECONDS_OVERRIDE=""
ALL_SCENARIOS="baseline backend-kill postmaster-crash zombie timeouts recovery-race standby-failover ddl disk-full"
SELF_SCENARIOS="selftest-ignore-answer selftest-own-cursor selftest-nofence"
while [ $# -gt 0 ]; do
	case $1 in
		--short) MODE=short ;;
		--full) MODE=full ;;
		--selftest) MODE=selftest ;;
		--only) ONLY=${2//,/ }; shift ;;
		--keep) KEEP=1 ;;
		--seconds) SECONDS_OVERRIDE=$2; shift ;;
		--list) echo "$ALL_SCENARIOS"; echo "$SELF_SCENARIOS"; exit 0 ;;
		-h|--help) sed -n '2,32p' "$0"; exit 0 ;;
		*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

FSYNC=${FSYNC:-on}
case $MODE in
	short)
		DUR=12; EVENTS=15000; RACE_ROUNDS=150; FAILOVERS=1; PACE=30 ;;
	selftest)
		DUR=12; EVENTS=10000; RACE_ROUNDS=0; FAILOVERS=0; PACE=30 ;;
	full)
		DUR=120; EVENTS=150000; RACE_ROUNDS=1000000; FAILOVERS=8; PACE=30 ;;
esac
[ -n "$SECONDS_OVERRIDE" ] && DUR=$SECONDS_OVERRIDE
if [ -n "$ONLY" ]; then
	SCENARIOS=$ONLY
elif [ "$MODE" = selftest ]; then
	SCENARIOS=$SELF_SCENARIOS
else
	SCENARIOS=$ALL_SCENARIOS
fi

say() { printf '=== %s\n' "$*"; }
now_us() { date +%s%6N; }

if [ "$(id -u)" -eq 0 ]; then
	as_root() { "$@"; }
	as_pg() { runuser -u postgres -- "$@"; }
	IS_ROOT=1
else
	as_root() { sudo "$@"; }
	as_pg() { "$@"; }
	IS_ROOT=0
fi

# --- dependencies -------------------------------------------------------------

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
need=()
[ -x "$PG_CONFIG" ] || need+=(postgresql-15 postgresql-server-dev-15)
[ -f /usr/include/postgresql/libpq-fe.h ] || [ -f "$("$PG_CONFIG" --includedir 2>/dev/null)/libpq-fe.h" ] || need+=(libpq-dev)
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v perl >/dev/null || need+=(perl)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null || {
		echo "run.sh: apt-get install ${need[*]} failed" >&2; exit 1; }
fi
bindir=$("$PG_CONFIG" --bindir)
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/amcheck.control" ]; then
	echo "run.sh: amcheck is missing from $("$PG_CONFIG" --sharedir) (postgresql-contrib)" >&2
	exit 1
fi

# --- run directory, build -------------------------------------------------------

RUN_DIR=${REL_RUN_DIR:-$(mktemp -d /tmp/sog-rel.XXXXXX)}
mkdir -p "$RUN_DIR"
chmod 755 "$RUN_DIR"
SOCK=$RUN_DIR/sock
mkdir -p "$SOCK"
[ $IS_ROOT -eq 1 ] && chown postgres "$RUN_DIR" "$SOCK"

say "build ($PG_CONFIG) in $RUN_DIR/build"
mkdir -p "$RUN_DIR/build/ext" "$RUN_DIR/build/driver"
REL_SOURCE=${REL_SOURCE:-worktree}
if [ "$REL_SOURCE" != worktree ]; then
	rev=$REL_SOURCE
	[ "$rev" = head ] && rev=HEAD
	git -C "$srcdir" archive "$rev" | tar -C "$RUN_DIR/build/ext" -xf - || {
		echo "run.sh: git archive $rev failed" >&2; exit 1; }
else
	tar -C "$srcdir" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude=results --exclude=tmp_check --exclude=output_iso -cf - . | tar -C "$RUN_DIR/build/ext" -xf -
fi
if ! make -C "$RUN_DIR/build/ext" -s with_llvm=no PG_CONFIG="$PG_CONFIG" >"$RUN_DIR/build/ext.log" 2>&1 ||
   ! as_root make -C "$RUN_DIR/build/ext" -s with_llvm=no PG_CONFIG="$PG_CONFIG" install >>"$RUN_DIR/build/ext.log" 2>&1; then
	cat "$RUN_DIR/build/ext.log"; echo "run.sh: building the extension failed" >&2; exit 1
fi
# SHA-256 is the JetStream consumer's (examples/jetstream_consumer/sha256.c)
cp "$here"/sogload.c "$here"/Makefile "$srcdir"/examples/jetstream_consumer/sha256.c \
	"$srcdir"/examples/jetstream_consumer/sha256.h "$RUN_DIR/build/driver/"
if ! make -C "$RUN_DIR/build/driver" -s PG_CONFIG="$PG_CONFIG" >"$RUN_DIR/build/driver.log" 2>&1; then
	cat "$RUN_DIR/build/driver.log"; echo "run.sh: building the driver failed" >&2; exit 1
fi
LOAD=$RUN_DIR/build/driver/sogload
"$LOAD" hashcheck >/dev/null || { echo "run.sh: the driver's SHA-256 is wrong" >&2; exit 1; }
if [ "$REL_SOURCE" = worktree ]; then
	HEAD=$(git -C "$srcdir" log -1 --format='%h %s' 2>/dev/null || echo unknown)
	DIRTY=$(git -C "$srcdir" status --porcelain -- src sql 2>/dev/null | wc -l)
else
	HEAD=$(git -C "$srcdir" log -1 --format='%h %s' "$rev" 2>/dev/null || echo "$rev")
	DIRTY=0
fi

# --- bookkeeping for cleanup -----------------------------------------------------

CLUSTERS=()			# data directories started
WORKLOAD=()			# pids of driver processes
BGLOOPS=()			# pids of fault loops
MOUNTS=()			# tmpfs mounts

cleanup() {
	local p m d
	for p in "${BGLOOPS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	for p in "${WORKLOAD[@]:-}"; do [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
	for d in "${CLUSTERS[@]:-}"; do
		[ -n "$d" ] && [ -f "$d/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- clusters ---------------------------------------------------------------------

# cluster_init DATADIR PORT: a fresh cluster with the suite's settings.
cluster_init() {
	local d=$1 port=$2
	mkdir -p "$(dirname "$d")"
	[ $IS_ROOT -eq 1 ] && chown postgres "$(dirname "$d")"
	as_pg "$bindir/initdb" -D "$d" -A trust -U postgres --no-sync >/dev/null || return 1
	cat >>"$d/postgresql.conf" <<-EOF
	listen_addresses = ''
	unix_socket_directories = '$SOCK'
	port = $port
	fsync = $FSYNC
	synchronous_commit = on
	restart_after_crash = on
	track_commit_timestamp = on
	max_connections = 80
	shared_buffers = 64MB
	wal_level = replica
	max_wal_senders = 6
	hot_standby = on
	max_wal_size = 256MB
	checkpoint_timeout = 30s
	deadlock_timeout = 200ms
	autovacuum_naptime = 5s
	log_line_prefix = '%m [%p] %a %e '
	log_min_messages = warning
	EOF
}

pg_start() {	# pg_start DATADIR
	as_pg "$bindir/pg_ctl" -D "$1" -l "$1/../server-$(basename "$1").log" -w -t 120 start >/dev/null 2>&1
}

pg_up() {		# pg_up PORT: accepts connections
	"$bindir/pg_isready" -q -h "$SOCK" -p "$1" -t 1
}

wait_up() {		# wait_up PORT [SECONDS]
	local i
	for ((i = 0; i < ${2:-60} * 10; i++)); do pg_up "$1" && return 0; sleep 0.1; done
	return 1
}

psql_su() {		# psql_su PORT DB args...
	local port=$1 db=$2
	shift 2
	"$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U postgres -d "$db" "$@"
}

# the pids of every process of the cluster in DATADIR (their cwd is it)
cluster_pids() {
	local d p
	d=$(readlink -f "$1")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$d" ] && echo "${p#/proc/}"
	done
}

# ensure the cluster in DATADIR on PORT runs (start it if the postmaster died)
ensure_running() {
	local d=$1 port=$2 i p
	for i in 1 2 3 4 5; do
		pg_up "$port" && return 0
		if as_pg "$bindir/pg_ctl" -D "$d" status >/dev/null 2>&1; then
			# alive: crash recovery or start-up in progress
			wait_up "$port" 30 && return 0
		else
			for p in $(cluster_pids "$d"); do kill -KILL "$p" 2>/dev/null; done
			sleep 0.2
			pg_start "$d" && wait_up "$port" 30 && return 0
			sleep 1
		fi
	done
	wait_up "$port" 30
}

# --- the workload -----------------------------------------------------------------

fault() {		# fault KIND DETAIL...: one line in faults.log
	echo "$(now_us) $*" >>"$SD/faults.log"
}

start_proc() {	# start_proc NAME command...
	local name=$1
	shift
	"$@" >>"$SD/logs/$name.out" 2>&1 &
	WORKLOAD+=($!)
	echo $! >"$SD/pids/$name"
}

CONN=""; OPCONN=""; MONCONN=""

# start_consumers PER_PART EXTRA_OPTIONS...: consumers on partitions 0-4
# (0 and 1 paged with expired-token recovery, 4 telemetry), a monitor, an
# operator.
start_consumers() {
	local per=$1 part k opts name
	shift
	for part in 0 1 2 3 4; do
		for k in a b c d; do
			[ "$k" = a ] || [ "$k" = b -a "$per" -ge 2 ] || [ "$k" = c -a "$per" -ge 3 ] || [ "$k" = d -a "$per" -ge 4 ] || continue
			name=c$part$k
			opts=(--part "$part" --pace "$PACE" --batch-max 30)
			case $part in
				0|1) opts+=(--paged --recovery 40) ;;
				4) opts+=(--telemetry) ;;
			esac
			start_proc "$name" "$LOAD" consumer --conn "$CONN application_name=rel-$name" \
				--opconn "$OPCONN" --name "$name" --log "$SD/logs/$name.log" --seconds "$DUR" \
				--seed "$RANDOM$part" "${opts[@]}" "$@"
		done
	done
	start_proc monitor "$LOAD" monitor --conn "$MONCONN application_name=rel-monitor" --name monitor \
		--log "$SD/logs/monitor.log" --seconds "$DUR" --interval 40 ${MON_OPTS:-}
	start_proc operator "$LOAD" operator --conn "$OPCONN application_name=rel-operator" --name operator \
		--log "$SD/logs/operator.log" --seconds "$DUR" --interval 150 ${OP_OPTS:-}
}

# wait for the workload to end by itself (deadline), then stop stragglers
stop_workload() {
	local p i alive f
	for f in "$SD"/pids/*; do [ -f "$f" ] && WORKLOAD+=("$(cat "$f")"); done
	for p in "${WORKLOAD[@]:-}"; do [ -n "$p" ] && kill -CONT "$p" 2>/dev/null; done
	for ((i = 0; i < 600; i++)); do
		alive=0
		for p in "${WORKLOAD[@]:-}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 0 ] && break
		[ $i -eq 300 ] && for p in "${WORKLOAD[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
		sleep 0.1
	done
	for p in "${WORKLOAD[@]:-}"; do
		if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
			kill -KILL "$p" 2>/dev/null
			echo "$(now_us) harness anomaly ok what=workload_process_hung pid=$p" >>"$SD/logs/harness.log"
		fi
	done
	wait 2>/dev/null
	WORKLOAD=()
}

stop_loops() {
	local p
	for p in "${BGLOOPS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	for p in "${BGLOOPS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
	BGLOOPS=()
}

rsleep() {		# rsleep MIN_MS MAX_MS
	local ms=$(($1 + RANDOM % ($2 - $1 + 1)))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
}

# --- fault loops (each runs in the background until killed) --------------------

# SIGKILL a random client backend of the workload; the postmaster then
# restarts every backend (restart_after_crash = on).
loop_backend_kill() {	# PORT MIN_MS MAX_MS
	local port=$1 pid
	while :; do
		rsleep "$2" "$3"
		pid=$(psql_su "$port" rel -c "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'rel-%'
			AND backend_type = 'client backend' ORDER BY random() LIMIT 1" 2>/dev/null) || continue
		[ -n "$pid" ] || continue
		kill -KILL "$pid" 2>/dev/null && fault backend_kill "pid=$pid"
		wait_up "$port" 30
	done
}

# Alternately SIGKILL the postmaster and all its processes, and stop it with
# pg_ctl -m immediate; restart either way.
loop_postmaster() {	# DATADIR PORT MIN_MS MAX_MS
	local d=$1 port=$2 n=0 pm pids
	while :; do
		rsleep "$3" "$4"
		n=$((n + 1))
		if [ $((n % 2)) -eq 1 ]; then
			pm=$(head -1 "$d/postmaster.pid" 2>/dev/null) || continue
			pids=$(cluster_pids "$d")
			kill -KILL "$pm" 2>/dev/null
			for p in $pids; do kill -KILL "$p" 2>/dev/null; done
			fault postmaster_kill9 "pid=$pm processes=$(echo $pids | wc -w)"
			sleep 0.3
			for p in $(cluster_pids "$d"); do kill -KILL "$p" 2>/dev/null; done
		else
			as_pg "$bindir/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
			fault immediate_stop ""
		fi
		rsleep 100 800
		ensure_running "$d" "$port"
	done
}

# SIGSTOP a consumer (preferably one inside a sink transaction), let
# another worker claim its partition past it, SIGCONT it.
loop_zombie() {	# PORT
	local port=$1 name pid part stealer=0 intx
	while :; do
		rsleep 300 1500
		intx=0
		name=$(psql_su "$port" rel -c "SELECT substr(application_name, 5) FROM pg_stat_activity
			WHERE application_name ~ '^rel-c[0-9][a-d]$' AND state = 'idle in transaction'
			ORDER BY random() LIMIT 1" 2>/dev/null)
		if [ -n "$name" ] && [ $((RANDOM % 3)) -ne 0 ]; then
			intx=1
		else
			name=$(ls "$SD/pids" | grep -E '^c[0-9][a-d]$' | shuf -n 1)
		fi
		[ -n "$name" ] && [ -f "$SD/pids/$name" ] || continue
		pid=$(cat "$SD/pids/$name")
		part=${name:1:1}
		kill -STOP "$pid" 2>/dev/null || continue
		fault sigstop "consumer=$name pid=$pid in_sink_tx=$intx"
		stealer=$((stealer + 1))
		local opts=(--part "$part" --oneshot --lease 50,300 --idle 0,0 --claim-timeout 700)
		case $part in 0|1) opts+=(--paged --recovery 0) ;; 4) opts+=(--telemetry) ;; esac
		"$LOAD" consumer --conn "$CONN application_name=rel-s$stealer" --opconn "$OPCONN" \
			--name "s$stealer" --log "$SD/logs/s$stealer.log" --seconds 8 "${opts[@]}" \
			>>"$SD/logs/s$stealer.out" 2>&1 &
		echo $! >"$SD/pids/s$stealer"
		rsleep 800 2500
		kill -CONT "$pid" 2>/dev/null
		fault sigcont "consumer=$name pid=$pid"
	done
}

# pg_cancel_backend of a random workload backend that is running apply_batch,
# claim, promote, recovery_event or note_read.
loop_cancel() {	# PORT
	local port=$1 what
	while :; do
		rsleep 40 300
		what=$(psql_su "$port" rel -c "SELECT pid || ' ' || substring(query from 'sog\.([a-z_]+)')
			FROM pg_stat_activity WHERE application_name ~ '^rel-c' AND state = 'active'
			AND query ~ 'sog\.(apply_batch|claim|promote|recovery_event|note_read|begin_recovery)'
			ORDER BY random() LIMIT 1" 2>/dev/null)
		[ -n "$what" ] || continue
		psql_su "$port" rel -c "SELECT pg_cancel_backend(${what%% *})" >/dev/null 2>&1 &&
			fault cancel "pid=${what%% *} op=${what#* }"
	done
}

# An operator's DDL on the extension's tables while consumers run, and
# pg_dump with a restore whose receipts and sink rows must agree.
loop_ddl() {	# PORT
	local port=$1 n=0 stmt out st dumps=0
	local stmts=(
		"REINDEX INDEX CONCURRENTLY sog.receipt_pkey"
		"VACUUM FULL sog.receipt"
		"PG_DUMP"
		"REINDEX INDEX CONCURRENTLY sog.checkpoint_pkey"
		"CLUSTER sog.receipt USING receipt_pkey"
		"REINDEX TABLE CONCURRENTLY sog.checkpoint"
		"VACUUM FULL sog.checkpoint"
		"REINDEX INDEX CONCURRENTLY sog.checkpoint_key"
		"CLUSTER sog.checkpoint USING checkpoint_pkey"
		"REINDEX TABLE CONCURRENTLY sog.gap"
		"VACUUM FULL sog.gap"
		"REINDEX TABLE CONCURRENTLY sog.manifest_log"
		"VACUUM FULL sog.manifest_log"
		"REINDEX TABLE CONCURRENTLY sog.recovery"
		"CLUSTER sog.recovery USING recovery_pkey"
		"PG_DUMP"
		"REINDEX TABLE CONCURRENTLY sog.receipt"
		"VACUUM FULL sog.recovery"
	)
	while :; do
		rsleep 300 1200
		stmt=${stmts[$((n % ${#stmts[@]}))]}
		n=$((n + 1))
		if [ "$stmt" = PG_DUMP ]; then
			dumps=$((dumps + 1))
			ddl_dump "$port" "$dumps"
			continue
		fi
		out=$("$bindir/psql" -X -q -At -h "$SOCK" -p "$port" -U postgres -d rel \
			-v VERBOSITY=sqlstate -c "$stmt" 2>&1)
		st=$?
		fault ddl "$(echo "$stmt" | tr ' ' _)"
		if [ $st -eq 0 ]; then
			echo "$(now_us) ddl ddl ok what=$(echo "$stmt" | tr ' ' _)" >>"$SD/logs/ddl.log"
		else
			echo "$(now_us) ddl ddl failed what=$(echo "$stmt" | tr ' ' _) msg=$(echo "$out" | tr '\n' ' ')" >>"$SD/logs/ddl.log"
			echo "$(now_us) ddl anomaly ok what=ddl_failed stmt=$(echo "$stmt" | tr ' ' _) msg=$(echo "$out" | tr '\n' ' ')" >>"$SD/logs/ddl.log"
		fi
	done
}

# pg_dump while consumers run; restore it into a new database and check that
# the snapshot's receipts and sink rows agree one to one.
ddl_dump() {	# PORT N
	local port=$1 k=$2 f=$SD/dump-$2.fc db=restore_$2 out bad
	if ! out=$("$bindir/pg_dump" -h "$SOCK" -p "$port" -U postgres -Fc -f "$f" rel 2>&1); then
		echo "$(now_us) ddl anomaly ok what=pg_dump_failed msg=$(echo "$out" | tr '\n' ' ')" >>"$SD/logs/ddl.log"
		return
	fi
	fault pg_dump "n=$k"
	psql_su "$port" postgres -c "CREATE DATABASE $db" >/dev/null 2>&1
	if ! out=$("$bindir/pg_restore" -h "$SOCK" -p "$port" -U postgres -d "$db" --exit-on-error "$f" 2>&1); then
		echo "$(now_us) ddl anomaly ok what=pg_restore_failed n=$k msg=$(echo "$out" | tr '\n' ' ' | cut -c1-300)" >>"$SD/logs/ddl.log"
	else
		bad=$(psql_su "$port" "$db" -c "
			CREATE TEMP TABLE r AS SELECT substr(c.\"partition\", 2)::int AS part, (r.\"position\"::text)::bigint AS pos
			  FROM sog.checkpoint c, LATERAL sog.receipts(c.id) r;
			CREATE TEMP TABLE h AS SELECT substr(\"partition\", 2)::int AS part,
			       coalesce(prune_horizon::text, '0')::bigint AS horizon FROM sog.checkpoint;
			SELECT (SELECT count(*) FROM rel.sink s JOIN h USING (part)
			         WHERE s.pos > h.horizon AND NOT EXISTS (SELECT 1 FROM r WHERE r.part = s.part AND r.pos = s.pos))
			     + (SELECT count(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM rel.sink s WHERE r.part = s.part AND r.pos = s.pos))
			     + (SELECT count(*) FROM (SELECT part, pos FROM rel.sink GROUP BY 1, 2 HAVING count(*) > 1) d)" 2>&1 | tail -1)
		if [ "$bad" = 0 ]; then
			echo "$(now_us) ddl restore ok n=$k consistent=1" >>"$SD/logs/ddl.log"
		else
			echo "$(now_us) ddl anomaly ok what=dump_inconsistent n=$k mismatches=$bad" >>"$SD/logs/ddl.log"
		fi
	fi
	psql_su "$port" postgres -c "DROP DATABASE $db" >/dev/null 2>&1
	rm -f "$f"
}

# Fill the WAL file system, then the one of the tablespace holding the sink
# and the extension's tables, with a ballast file; hold; free; restart the
# server if it gave up.
loop_disk_full() {	# DATADIR PORT WALFS DATAFS
	local d=$1 port=$2 walfs=$3 datafs=$4 n=0 fs
	while :; do
		rsleep 1000 2500
		n=$((n + 1))
		if [ $((n % 2)) -eq 1 ]; then fs=$datafs; else fs=$walfs; fi
		dd if=/dev/zero of="$fs/ballast" bs=256k >/dev/null 2>&1
		fault disk_full "fs=$(basename "$fs") free_kb=$(df -k --output=avail "$fs" | tail -1 | tr -d ' ')"
		if [ "$fs" = "$walfs" ]; then
			# WAL goes into preallocated segments: switch until a new one is needed
			for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
				psql_su "$port" rel -c "SELECT pg_switch_wal()" >/dev/null 2>&1 || break
				sleep 0.1
			done
		fi
		rsleep 1000 3000
		rm -f "$fs/ballast"
		fault disk_freed "fs=$(basename "$fs")"
		ensure_running "$d" "$port"
	done
}

# --- scenarios ---------------------------------------------------------------------

SCEN_INDEX=0
declare -A RES			# scenario -> result line
RESULT_ROWS=()
FAILED=0

new_cluster() {		# new_cluster NAME -> sets SD PORT DATA CONN OPCONN MONCONN
	SD=$RUN_DIR/$1
	PORT=$((55500 + 2 * SCEN_INDEX))
	rm -rf "$SD"
	mkdir -p "$SD/logs" "$SD/dump" "$SD/pids"
	[ $IS_ROOT -eq 1 ] && chown postgres "$SD"
	DATA=$SD/data
	cluster_init "$DATA" "$PORT" || return 1
	OP_OPTS=""; MON_OPTS=""
	CONN="host=$SOCK port=$PORT dbname=rel user=rel_consumer connect_timeout=5"
	OPCONN="host=$SOCK port=$PORT dbname=rel user=rel_operator connect_timeout=5"
	MONCONN=$OPCONN
}

load_schema() {		# load_schema PORT; sets HAS_REPORT_GAP
	psql_su "$1" postgres -c "CREATE DATABASE rel" >/dev/null &&
	psql_su "$1" rel -v parts=6 -v events="$EVENTS" -f "$here/setup.sql" >"$SD/setup.out" 2>&1 || return 1
	HAS_REPORT_GAP=$(psql_su "$1" rel -c "SELECT to_regprocedure('sog.report_gap(bigint,bigint,sog.position,text,text)') IS NOT NULL")
	[ "$MODE" != selftest ] && OP_OPTS=$(trim_opt)
	return 0
}

# --trim for the operator only when the server has report_gap (1.1): without
# it a consumer has no way to record records the source lost
trim_opt() {
	[ "${HAS_REPORT_GAP:-f}" = t ] && echo --trim
}

# after the faults: the drain, the dump, amcheck, the checker
finish() {		# finish NAME PORT DATADIR
	local name=$1 port=$2 d=$3
	stop_loops
	ensure_running "$d" "$port"
	stop_workload
	"$LOAD" drain --conn "$CONN application_name=rel-drain" --opconn "$OPCONN" --name drain \
		--log "$SD/logs/drain.log" --parts 0:p,1:p,2,3,4:t,5:p --seconds 240 >>"$SD/logs/drain.out" 2>&1
	(cd "$SD/dump" && psql_su "$port" rel -f "$here/dump.sql") >"$SD/dump.out" 2>&1 ||
		echo "$(now_us) harness anomaly ok what=dump_failed" >>"$SD/logs/harness.log"
	psql_su "$port" rel -v out="$SD/dump/amcheck.tsv" -f "$here/amcheck.sql" >"$SD/amcheck.out" 2>&1 ||
		echo "$(now_us) harness anomaly ok what=amcheck_failed msg=$(tr '\n' ' ' <"$SD/amcheck.out")" >>"$SD/logs/harness.log"
	# what the server logged that nobody should see
	# (a PANIC on ENOSPC, and the abort of that process, belong to disk-full)
	awk '/PANIC:.*No space left on device/ { if (match($0, /\[[0-9]+\]/)) enospc[substr($0, RSTART + 1, RLENGTH - 2)] = 1; next }
		/PANIC|TRAP:|terminated by signal 11|terminated by signal 6/ {
			if (match($0, /PID [0-9]+/) && (substr($0, RSTART + 4, RLENGTH - 4) in enospc)) next
			print }' "$SD"/server-*.log 2>/dev/null | head -5 | while read -r l; do
			echo "$(now_us) harness anomaly ok what=server_log msg=$l" >>"$SD/logs/harness.log"
		done
	as_pg "$bindir/pg_ctl" -D "$d" -m fast stop >/dev/null 2>&1
}

# run_check NAME SECONDS_TAKEN EXPECT: the checker's line; EXPECT names the
# counts that must be non-zero (self-test), else all must be zero.
run_check() {
	local name=$1 took=$2 expect=${3:-} line st ok verdict k v
	line=$(perl "$here/check.pl" "$SD" "$name" 2>"$SD/check.err")
	st=$?
	echo "$line" >"$SD/check.txt"
	line=$(head -1 "$SD/check.txt")
	if [ -z "$line" ]; then
		line="scenario=$name checker_failed=1"
		cat "$SD/check.err"
	fi
	declare -A R=()
	while IFS=$'\t' read -r k v; do R[$k]=$v; done <"$SD/result.tsv" 2>/dev/null
	if [ -n "$expect" ]; then
		ok=1
		for k in $expect; do [ "${R[$k]:-0}" -gt 0 ] || ok=0; done
		if [ $ok -eq 1 ]; then verdict="caught ($expect > 0)"; else verdict="NOT CAUGHT ($expect)"; FAILED=$((FAILED + 1)); fi
	else
		if [ $st -eq 0 ]; then verdict=ok; else verdict=FAILED; FAILED=$((FAILED + 1)); fi
	fi
	printf '%-18s %s faults=%s wall=%ss -> %s\n' "$name" "ops=${R[ops]:-?}" "${R[faults]:-?} (${R[fault_kinds]:-})" "$took" "$verdict"
	printf '%-18s lost=%s dup=%s regressions=%s zombie=%s double_promotions=%s unrecorded_gaps=%s unknown_resolved=%s/%s amcheck=%s/%s anomalies=%s%s\n' "" \
		"${R[lost]:-?}" "${R[dup]:-?}" "${R[regressions]:-?}" "${R[zombie]:-?}" "${R[double_promotions]:-?}" \
		"${R[unrecorded_gaps]:-?}" "${R[resolved]:-?}" "${R[unknown]:-?}" "${R[amcheck]:-?}" "${R[amcheck_relations]:-?}" \
		"${R[anomalies]:-?}" "$([ "${R[anomaly_kinds]:-none}" != none ] && echo " (${R[anomaly_kinds]})")"
	if [ "$verdict" != ok ] && [ -z "$expect" ]; then sed -n '2,40p' "$SD/check.txt" | sed 's/^/    /'; fi
	RESULT_ROWS+=("| $name | ${R[faults]:-?} (${R[fault_kinds]:-}) | ${R[ops]:-?} | ${R[acked_events]:-?} | ${R[lost]:-?} | ${R[dup]:-?} | ${R[regressions]:-?} | ${R[zombie]:-?} | ${R[double_promotions]:-?} | ${R[unrecorded_gaps]:-?} | ${R[resolved]:-?}/${R[unknown]:-?} | ${R[amcheck]:-?} of ${R[amcheck_relations]:-?} | ${R[anomalies]:-?}$([ "${R[anomaly_kinds]:-none}" != none ] && echo " (${R[anomaly_kinds]})") | ${took}s | $verdict |")
}

# The usual scenario: consumers, a fault loop, finish, check.
# plain_scenario NAME PER_PART "CONSUMER OPTIONS" LOOP_FUNCTION [LOOP ARGS...]
plain_scenario() {
	local name=$1 per=$2 copts=$3 loop=$4
	shift 4
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || { echo "$name: setup failed"; cat "$SD/setup.out"; return 1; }
	# shellcheck disable=SC2086
	start_consumers "$per" $copts
	if [ "$loop" != none ]; then
		"$loop" "$@" &
		BGLOOPS+=($!)
	fi
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

scenario_baseline() {
	plain_scenario baseline 2 "" none
}

scenario_backend_kill() {
	plain_scenario backend-kill 2 "" loop_backend_kill_p
}
loop_backend_kill_p() { loop_backend_kill "$PORT" 1000 3000; }

scenario_postmaster_crash() {
	plain_scenario postmaster-crash 2 "" loop_postmaster_p
}
loop_postmaster_p() { loop_postmaster "$DATA" "$PORT" 2000 5000; }

scenario_zombie() {
	# a third of the sink transactions sleep inside; half the sessions have
	# idle_in_transaction_session_timeout, so a stopped worker is cut off
	local name=zombie
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || return 1
	start_consumers 1 --tx-sleep 1500,330 --claim-timeout 1000
	local part
	for part in 0 1 2 3 4; do
		local opts=(--part "$part" --pace "$PACE" --batch-max 30 --tx-sleep 1500,330 --iit 900)
		case $part in 0|1) opts+=(--paged --recovery 40) ;; 4) opts+=(--telemetry) ;; esac
		start_proc "c${part}b" "$LOAD" consumer --conn "$CONN application_name=rel-c${part}b" \
			--opconn "$OPCONN" --name "c${part}b" --log "$SD/logs/c${part}b.log" --seconds "$DUR" \
			--seed "$RANDOM" "${opts[@]}"
	done
	loop_zombie "$PORT" &
	BGLOOPS+=($!)
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

scenario_timeouts() {
	local name=timeouts
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || return 1
	start_consumers 2 --timeouts --recovery 150 --tx-sleep 800,150 --iit 400 --claim-timeout 200
	# promotes that wait on each other's row locks, under the same timeouts
	start_proc race "$LOAD" race --conn "$CONN application_name=rel-c-race" --opconn "$OPCONN" \
		--name race --logdir "$SD/logs" --part 5 --paged --contenders 4 --rounds "$RACE_ROUNDS" \
		--seconds "$DUR" --timeouts
	loop_cancel "$PORT" &
	BGLOOPS+=($!)
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

scenario_recovery_race() {
	local name=recovery-race
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || return 1
	start_consumers 1
	start_proc race "$LOAD" race --conn "$CONN application_name=rel-race" --opconn "$OPCONN" \
		--name race --logdir "$SD/logs" --part 5 --paged --contenders 8 --rounds "$RACE_ROUNDS" \
		--seconds "$DUR"
	loop_backend_kill "$PORT" 1000 4000 &
	BGLOOPS+=($!)
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

scenario_ddl() {
	plain_scenario ddl 2 "" loop_ddl_p
}
loop_ddl_p() { loop_ddl "$PORT"; }

scenario_disk_full() {
	local name=disk-full
	if [ $IS_ROOT -ne 1 ]; then
		echo "disk-full: skipped (mounting a tmpfs needs root)"
		RESULT_ROWS+=("| disk-full | skipped: mounting a tmpfs needs root | | | | | | | | | | | | | |")
		return 0
	fi
	new_cluster "$name" || return 1
	local walfs=$SD/walfs datafs=$SD/datafs
	mkdir -p "$walfs" "$datafs"
	# the WAL file system: 3 segments beyond what min_wal_size keeps
	local datamb=$((EVENTS * 6 * 400 / 1048576 + 48))
	mount -t tmpfs -o size=256m,mode=0755 tmpfs "$walfs" && MOUNTS+=("$walfs") &&
	mount -t tmpfs -o size=${datamb}m,mode=0755 tmpfs "$datafs" && MOUNTS+=("$datafs") || {
		echo "disk-full: skipped (tmpfs mount failed)"
		RESULT_ROWS+=("| disk-full | skipped: tmpfs mount failed | | | | | | | | | | | | | |")
		return 0
	}
	chown postgres "$walfs" "$datafs"
	rm -rf "$DATA"
	as_pg "$bindir/initdb" -D "$DATA" -X "$walfs/pg_wal" -A trust -U postgres --no-sync >/dev/null || return 1
	cat >>"$DATA/postgresql.conf" <<-EOF
	listen_addresses = ''
	unix_socket_directories = '$SOCK'
	port = $PORT
	fsync = $FSYNC
	restart_after_crash = on
	track_commit_timestamp = on
	max_connections = 80
	shared_buffers = 64MB
	min_wal_size = 32MB
	max_wal_size = 64MB
	checkpoint_timeout = 30s
	log_line_prefix = '%m [%p] %a %e '
	EOF
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || { cat "$SD/setup.out"; return 1; }
	mkdir -p "$datafs/ts" && chown postgres "$datafs/ts"
	psql_su "$PORT" rel -c "CREATE TABLESPACE fill LOCATION '$datafs/ts'" \
		-c "ALTER TABLE rel.sink SET TABLESPACE fill" -c "ALTER TABLE sog.receipt SET TABLESPACE fill" \
		-c "ALTER TABLE sog.checkpoint SET TABLESPACE fill" -c "ALTER TABLE rel.optag SET TABLESPACE fill" \
		-c "ALTER INDEX sog.receipt_pkey SET TABLESPACE fill" >/dev/null || return 1
	start_consumers 2
	loop_disk_full "$DATA" "$PORT" "$walfs" "$datafs" &
	BGLOOPS+=($!)
	sleep "$DUR"
	stop_loops
	rm -f "$walfs/ballast" "$datafs/ballast"
	finish "$name" "$PORT" "$DATA"
	umount "$walfs" "$datafs" 2>/dev/null
}

# synchronous streaming standby; the primary is stopped (immediate), the
# standby promoted, a new standby built; consumers reconnect to whichever
# node is read-write.
scenario_standby_failover() {
	local name=standby-failover
	new_cluster "$name" || return 1
	local A=$SD/node0 B=$SD/node1 PA=$PORT PB=$((PORT + 1)) round
	rm -rf "$DATA"
	cluster_init "$A" "$PA" || return 1
	echo "synchronous_commit = remote_apply" >>"$A/postgresql.conf"
	CLUSTERS+=("$A" "$B")
	pg_start "$A" && load_schema "$PA" || return 1
	make_standby "$A" "$PA" "$B" "$PB" || return 1
	CONN="host=$SOCK,$SOCK port=$PA,$PB dbname=rel user=rel_consumer connect_timeout=3 target_session_attrs=read-write"
	OPCONN="host=$SOCK,$SOCK port=$PA,$PB dbname=rel user=rel_operator connect_timeout=3 target_session_attrs=read-write"
	# The monitor reads the primary: there a commit becomes visible only once
	# the synchronous standby has applied it, so no acknowledged state is
	# lost at failover.  A hot standby's reads lag (a just-built one by
	# seconds) and would show "regressions" that are replication lag.
	MONCONN=$OPCONN
	start_consumers 2
	failover_loop "$A" "$PA" "$B" "$PB" &
	BGLOOPS+=($!)
	sleep "$DUR"
	stop_loops
	# the primary is whichever node is not in recovery
	local prim=$A pp=$PA
	if [ "$(psql_su "$PB" postgres -c 'SELECT NOT pg_is_in_recovery()' 2>/dev/null)" = t ]; then prim=$B; pp=$PB; fi
	finish "$name" "$pp" "$prim"
	as_pg "$bindir/pg_ctl" -D "$A" -m immediate stop >/dev/null 2>&1
	as_pg "$bindir/pg_ctl" -D "$B" -m immediate stop >/dev/null 2>&1
}

# make_standby PRIMARY_DIR PRIMARY_PORT STANDBY_DIR STANDBY_PORT
make_standby() {
	local a=$1 pa=$2 b=$3 pb=$4 i
	as_pg "$bindir/pg_ctl" -D "$b" -m immediate stop >/dev/null 2>&1
	rm -rf "$b"
	as_pg "$bindir/pg_basebackup" -h "$SOCK" -p "$pa" -U postgres -D "$b" -R -X stream -c fast >/dev/null 2>&1 || return 1
	cat >>"$b/postgresql.auto.conf" <<-EOF
	port = $pb
	cluster_name = 'rel_standby'
	synchronous_standby_names = ''
	synchronous_commit = remote_apply
	EOF
	pg_start "$b" || return 1
	psql_su "$pa" postgres -c "ALTER SYSTEM SET synchronous_standby_names = 'rel_standby'" -c "SELECT pg_reload_conf()" >/dev/null
	# synchronous, and caught up with everything committed before it was
	for ((i = 0; i < 600; i++)); do
		[ "$(psql_su "$pa" postgres -c "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'rel_standby'
			AND sync_state = 'sync' AND replay_lsn >= '$(psql_su "$pa" postgres -c 'SELECT pg_current_wal_lsn()')'" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

failover_loop() {	# A PA B PB: the roles swap at each failover
	local p=$1 pp=$2 s=$3 sp=$4 t n=0
	while [ $n -lt "$FAILOVERS" ]; do
		rsleep $((DUR * 1000 / (FAILOVERS + 1) / 2)) $((DUR * 1000 / (FAILOVERS + 1)))
		n=$((n + 1))
		# a write on the hot standby is refused (25006)
		"$LOAD" probe-ro --conn "host=$SOCK port=$sp dbname=rel user=rel_consumer application_name=rel-probe" \
			--name probe --log "$SD/logs/probe-$n.log" >/dev/null 2>&1
		fault probe_ro "standby=$sp"
		as_pg "$bindir/pg_ctl" -D "$p" -m immediate stop >/dev/null 2>&1
		fault primary_immediate_stop "port=$pp"
		as_pg "$bindir/pg_ctl" -D "$s" -w -t 60 promote >/dev/null 2>&1
		fault standby_promoted "port=$sp"
		# the old primary becomes the new standby
		if ! make_standby "$s" "$sp" "$p" "$pp"; then
			echo "$(now_us) harness anomaly ok what=standby_rebuild_failed" >>"$SD/logs/harness.log"
			psql_su "$sp" postgres -c "ALTER SYSTEM SET synchronous_standby_names = ''" -c "SELECT pg_reload_conf()" >/dev/null 2>&1
			return
		fi
		fault standby_rebuilt "port=$pp"
		t=$p; p=$s; s=$t
		t=$pp; pp=$sp; sp=$t
	done
}

# --- self-test: deliberately broken consumers -----------------------------------

selftest_scenario() {	# NAME MODE EXPECT LOOP
	local name=$1 mode=$2
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || return 1
	start_consumers 2 --mode "$mode" --lease 200,1200 --idle 50,600
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

# --- main ---------------------------------------------------------------------------

say "mode $MODE: $DUR s of faults per scenario, $EVENTS events per partition, fsync=$FSYNC, $("$bindir/postgres" --version)"
say "code: $HEAD$([ "$DIRTY" -gt 0 ] && echo " (+ uncommitted changes in src/ or sql/)")"
T0=$(date +%s)
for s in $SCENARIOS; do
	t1=$(date +%s)
	SCEN_INDEX=$((SCEN_INDEX + 1))
	case $s in
		baseline) scenario_baseline; expect="" ;;
		backend-kill) scenario_backend_kill; expect="" ;;
		postmaster-crash) scenario_postmaster_crash; expect="" ;;
		zombie) scenario_zombie; expect="" ;;
		timeouts) scenario_timeouts; expect="" ;;
		recovery-race) scenario_recovery_race; expect="" ;;
		standby-failover) scenario_standby_failover; expect="" ;;
		ddl) scenario_ddl; expect="" ;;
		disk-full) scenario_disk_full; expect="" ;;
		selftest-ignore-answer) selftest_scenario "$s" ignore-answer; expect="dup" ;;
		selftest-own-cursor) selftest_scenario "$s" own-cursor; expect="lost unrecorded_gaps" ;;
		selftest-nofence) selftest_scenario "$s" nofence; expect="zombie" ;;
		*) echo "unknown scenario $s" >&2; exit 2 ;;
	esac
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$s: the harness failed (see $SD)"
		FAILED=$((FAILED + 1))
		RESULT_ROWS+=("| $s | harness failed | | | | | | | | | | | | | FAILED |")
		stop_loops; stop_workload
		continue
	fi
	if [ -f "$SD/dump/sink.tsv" ]; then
		run_check "$s" $(($(date +%s) - t1)) "$expect"
	elif [ "$s" != disk-full ] || [ $IS_ROOT -eq 1 ]; then
		echo "$s: no dump of the final database (see $SD)"
		FAILED=$((FAILED + 1))
		RESULT_ROWS+=("| $s | no final dump | | | | | | | | | | | | | FAILED |")
	fi
	# the data directories are large: keep logs and dumps only
	rm -rf "$SD/data" "$SD/node0" "$SD/node1" 2>/dev/null
done
TOTAL=$(($(date +%s) - T0))

# --- the table --------------------------------------------------------------------

case $MODE in
	full) out=$here/results.md ;;
	short) out=$here/results-short.md ;;
	selftest) out=$here/results-selftest.md ;;
esac
[ -n "$ONLY" ] && out=$RUN_DIR/results.md
{
	echo "# Reliability results ($MODE run)"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr);"
	echo "$("$bindir/postgres" --version); fsync=$FSYNC, synchronous_commit on (remote_apply with the standby);"
	echo "$DUR s of faults per scenario, $EVENTS source events on each of 6 partitions; code $HEAD$([ "$DIRTY" -gt 0 ] && echo ' plus uncommitted changes')."
	echo "Total wall time ${TOTAL}s. Single host; process crashes and stops, not power loss."
	echo
	echo "| scenario | faults | ops | acked events | lost | dup | regressions | zombie commits | double promotions | unrecorded gaps | unknown resolved | amcheck | other anomalies | wall | result |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |"
	printf '%s\n' "${RESULT_ROWS[@]}"
} >"$out"
say "table: $out"
say "total ${TOTAL}s; $FAILED scenario(s) failed"
if [ "$FAILED" -gt 0 ] || [ "$KEEP" = 1 ]; then
	say "run directory kept: $RUN_DIR"
else
	rm -rf "$RUN_DIR"
fi
[ "$FAILED" -eq 0 ]
