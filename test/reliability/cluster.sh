# test/reliability/cluster.sh: the throwaway clusters of a scenario and the workload of consumers, monitor
# and operator (sogload) on them.
# Sourced by test/reliability/run.sh (after test/lib.sh), which sets the
# mode's figures (DUR, EVENTS, ...), bindir, RUN_DIR, SOCK and LOAD first.

# --- clusters ---------------------------------------------------------------------

# cluster_init DATADIR PORT [INITDB_ARG...]: a fresh cluster with the
# suite's settings (a caller appends its own to postgresql.conf: the last
# setting of a name wins).
cluster_init() {
	local d=$1 port=$2
	shift 2
	mkdir -p "$(dirname "$d")"
	[ $IS_ROOT -eq 1 ] && chown postgres "$(dirname "$d")"
	as_pg "$bindir/initdb" -D "$d" -A trust -U postgres --no-sync "$@" >/dev/null || return 1
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

