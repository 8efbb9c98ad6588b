# test/reliability/scenarios.sh: the scenarios: a cluster, the workload, a fault loop for DUR
# seconds, the drain, the dump, amcheck and the checker; and the self-test's
# deliberately broken consumers.
# Sourced by test/reliability/run.sh (after test/lib.sh), which sets the
# mode's figures (DUR, EVENTS, ...), bindir, RUN_DIR, SOCK and LOAD first.

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
	psql_su "$1" postgres -c "CREATE DATABASE rel" >/dev/null || { echo "load_schema: CREATE DATABASE rel failed"; return 1; }
	if [ "$EDITION" = portable ]; then
		install_portable "$1" || return 1
	fi
	psql_su "$1" rel -v parts=6 -v events="$EVENTS" -v portable=$([ "$EDITION" = portable ] && echo on || echo off) \
		-f "$here/setup.sql" >"$SD/setup.out" 2>&1 || { echo "load_schema: setup.sql failed:"; cat "$SD/setup.out"; return 1; }
	HAS_REPORT_GAP=$(psql_su "$1" rel -c "SELECT to_regprocedure('sog.report_gap(bigint,bigint,sog.position,text,text)') IS NOT NULL")
	[ "$MODE" != selftest ] && OP_OPTS=$(trim_opt)
	return 0
}

# The portable edition's plain script (run.sh built it into PORTABLE_DIR),
# as test/portable/run.sh installs it: psql -f by a role that is not a
# superuser and has CREATE on the database only.  Then what it must be: no
# extension in the database, the edition's version row, no C function.
install_portable() {	# install_portable PORT
	local port=$1 got
	psql_su "$port" postgres -c "CREATE ROLE rel_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE" \
		-c "GRANT CREATE ON DATABASE rel TO rel_owner" >/dev/null ||
		{ echo "install_portable: creating the role rel_owner failed"; return 1; }
	"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -U rel_owner -d rel \
		-f "$PORTABLE_DIR/install.sql" >"$SD/portable-install.out" 2>&1 ||
		{ echo "install_portable: psql -f install.sql as rel_owner failed:"; cat "$SD/portable-install.out"; return 1; }
	got=$(psql_su "$port" rel -F ' ' -c "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'stream_offset_guard'),
		(SELECT rolsuper FROM pg_roles WHERE rolname = 'rel_owner'),
		(SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'sog'),
		(SELECT count(*) FROM pg_proc WHERE pronamespace = 'sog'::regnamespace
			AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')),
		(SELECT version FROM sog.portable_version)" 2>&1)
	case $got in
		"0 f rel_owner 0 "?*) echo "$got" >"$SD/portable-installed.txt" ;;
		*) echo "install_portable: not the portable edition as installed by rel_owner (extensions, rel_owner superuser, schema owner, C functions, version: $got)"
		   return 1 ;;
	esac
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
	psql_su "$port" rel -v out="$SD/dump/amcheck.tsv" -v portable=$([ "$EDITION" = portable ] && echo on || echo off) \
		-f "$here/amcheck.sql" >"$SD/amcheck.out" 2>&1 ||
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
	cluster_init "$DATA" "$PORT" -X "$walfs/pg_wal" || return 1
	cat >>"$DATA/postgresql.conf" <<-EOF
	min_wal_size = 32MB
	max_wal_size = 64MB
	EOF
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || { cat "$SD/setup.out"; return 1; }
	mkdir -p "$datafs/ts" && chown postgres "$datafs/ts"
	psql_su "$PORT" rel -c "CREATE TABLESPACE fill LOCATION '$datafs/ts'" \
		-c "ALTER TABLE rel.sink SET TABLESPACE fill" -c "ALTER TABLE sog.receipt_0 SET TABLESPACE fill" \
		-c "ALTER TABLE sog.checkpoint SET TABLESPACE fill" -c "ALTER TABLE rel.optag SET TABLESPACE fill" \
		-c "ALTER INDEX sog.receipt_0_pkey SET TABLESPACE fill" >/dev/null || return 1
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

selftest_scenario() {	# NAME MODE [CONSUMERS PER PARTITION, default 2]
	local name=$1 mode=$2 per=${3:-2}
	new_cluster "$name" || return 1
	CLUSTERS+=("$DATA")
	pg_start "$DATA" && load_schema "$PORT" || return 1
	start_consumers "$per" --mode "$mode" --lease 200,1200 --idle 50,600
	sleep "$DUR"
	finish "$name" "$PORT" "$DATA"
}

