# test/reliability/faults.sh: the fault loops; each runs in the background until killed.
# Sourced by test/reliability/run.sh (after test/lib.sh), which sets the
# mode's figures (DUR, EVENTS, ...), bindir, RUN_DIR, SOCK and LOAD first.

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
		"REINDEX INDEX CONCURRENTLY sog.receipt_0_pkey"
		"VACUUM FULL sog.receipt"
		"PG_DUMP"
		"REINDEX INDEX CONCURRENTLY sog.checkpoint_pkey"
		"CLUSTER sog.receipt_0 USING receipt_0_pkey"
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

