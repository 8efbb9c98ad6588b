#!/usr/bin/env bash
#
# examples/jetstream_demo/demo.sh: the main job on a real broker (`make demo`).
#
# On a throwaway PostgreSQL and a throwaway nats-server with JetStream, both
# on 127.0.0.1 only, the C consumer of examples/jetstream_consumer writes
# three streams into a sink table while this driver injects faults:
#
#   demo_p0     SIGKILL after note_read (before the sink commit), inside the
#               sink transaction, right after the commit; a pause longer than
#               the InactiveThreshold, so the server deletes the consumer
#               (recovery), then SIGKILL between recovery_event and promote;
#               SIGKILL at a random moment
#   demo_p1     a consumer SIGSTOPped after note_read while a replacement
#               claims, then SIGCONT: its writes are refused (SG001); a pause
#               past the InactiveThreshold (recovery), SIGKILL inside the sink
#               transaction, after note_read, at a random moment
#   both        the tail of the stream published live while PostgreSQL is
#               stopped in immediate mode and restarted
#   demo_retention  MaxMsgs 200: the consumer pauses while the stream
#               discards events it never applied; it must report the loss
#               (sog.report_gap) and stop, and a successor must stop too
#
# Then the same consumer with only an offsets-table UPDATE (--offsets-only)
# against the guard (one commit per page, and --two-commit), side by side, and a checker that is not the consumer
# (demo_check.c) verifies the invariants.  The report ends with one line
#   demo: N produced, N in sink, 0 lost, 0 duplicated, N crashes, ...
# and the script exits 0 only if every invariant holds.  It writes
# demo-timeline.svg into the directory it was run from (or $DEMO_OUT).
#
# Environment:
#   DEMO_EVENTS   events on the two main streams together (default 50000;
#                 4000 with DEMO_SHORT=1)
#   DEMO_SEED     seed of the payloads and of the fault points (default: the
#                 clock; printed, so a run can be repeated)
#   DEMO_SHORT=1  a short run for `make test`: few events, every fault, one
#                 throughput round
#   DEMO_BENCH_EVENTS  events of one throughput round per mode, on a stream
#                 of their own (default 250000, a couple of seconds per
#                 mode; as many as a main stream with DEMO_SHORT=1)
#   DEMO_OUT      where demo-timeline.svg goes (default: the current dir)
#   PG_CONFIG     the PostgreSQL to use (default /usr/lib/postgresql/15/bin/pg_config)
#   KEEP=1        leave the servers running afterwards

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

started=$SECONDS
if [ "${DEMO_SHORT:-0}" = 1 ]; then
	EVENTS=${DEMO_EVENTS:-4000} BENCH_ROUNDS=1
else
	EVENTS=${DEMO_EVENTS:-50000} BENCH_ROUNDS=5
fi
SEED=${DEMO_SEED:-$(($(date +%s) % 100000))}
OUT=${DEMO_OUT:-$PWD}
INACTIVE_MS=2000				# InactiveThreshold of the consumers' pull consumers
PG_DOWN=1						# seconds PostgreSQL stays down (then crash recovery)
P0=demo_p0 P1=demo_p1 PR=demo_retention
PER=$((EVENTS / 2))				# events per main stream
PB=demo_bench					# the throughput rounds' stream
if [ "${DEMO_SHORT:-0}" = 1 ]; then
	BENCH_PER=${DEMO_BENCH_EVENTS:-$PER}
else
	BENCH_PER=${DEMO_BENCH_EVENTS:-250000}
fi
HEAD=$((PER * 7 / 10))			# published before the consumers start
TAIL=$((PER - HEAD))			# published live, across the PostgreSQL restart
# Pages of 500, fewer for small runs: the stories need about 24 pages of head.
PAGE=$((HEAD / 24 > 500 ? 500 : HEAD / 24 < 10 ? 10 : HEAD / 24))
[ "$EVENTS" -ge 500 ] || die "DEMO_EVENTS must be at least 500"
RET_MAX=200 RET_HEAD=150 RET_MORE=300 RET_PAGE=50
RANDOM=$SEED

# Fault points (page numbers), drawn now so each run of a seed is the same.
head_pages=$((HEAD / PAGE))
span=$((head_pages / 6 > 1 ? head_pages / 6 : 1))
pick() { echo $((1 + RANDOM % span)); }
K0=($(pick) $(pick) $(pick) $(pick)) K1=($(pick) $(pick) $(pick))
R0=$((50 + RANDOM % 400)) R1=$((50 + RANDOM % 400))	# ms before a random kill

say "setup"
install_deps
demo_init
build_all
start_postgres
start_nats
setup_db demo-sink $(for r in $(seq "$BENCH_ROUNDS"); do echo "bench-guard-$r bench-twocommit-$r"; done)
echo "seed $SEED: $EVENTS events on $P0 and $P1 (pages of $PAGE), $((RET_HEAD + RET_MORE)) on $PR (MaxMsgs $RET_MAX)"

publish() {		# STREAM FIRST_INDEX COUNT [RATE [LOG]]
	"$tool" publish --nats "$nats_url" --stream "$1" --subject "demo.$1" \
		--first-index "$2" --count "$3" --seed "$SEED" --rate "${4:-0}" \
		--log "${5:-$tmp/published.$1.tsv}" >>"$tmp/publish.log"
}
"$tool" create-stream --nats "$nats_url" --stream $P0 --subject demo.$P0 >/dev/null
"$tool" create-stream --nats "$nats_url" --stream $P1 --subject demo.$P1 >/dev/null
"$tool" create-stream --nats "$nats_url" --stream $PR --subject demo.$PR \
	--max-msgs $RET_MAX >/dev/null
publish $P0 1 $HEAD
publish $P1 1 $HEAD
publish $PR 1 $RET_HEAD
echo "published $HEAD on each main stream, $RET_HEAD on $PR; the rest comes later"

# --- the fault stories ------------------------------------------------------------

# kill_at NAME STREAM PART PHASE N WHAT: a consumer that stops itself at the
# Nth PHASE, killed there.
kill_at() {
	local name=$1 stream=$2 part=$3 ph=$4 n=$5 what=$6
	start_consumer "$name" "$stream" --stop-at "$ph:$n"
	if wait_stopped "$cpid"; then
		kill9 "$cpid" "$part" "$what ($name)"
		expect 0 "$part: $name killed $what"
	else
		expect 1 "$part: $name did not reach $ph:$n"
	fi
}

# hold_past_threshold PID NAME STREAM PART: the stopped process stays
# stopped until the server has deleted its pull consumer; then SIGCONT.
hold_past_threshold() {
	local pid=$1 name=$2 stream=$3 part=$4 cons
	cons=$(consumer_of "$name")
	fault pause "$part" "$name held past InactiveThreshold ($INACTIVE_MS ms)"
	if wait_consumer_gone "$stream" "$cons"; then
		expect 0 "$part: the server deleted $name's consumer $cons"
	else
		expect 1 "$part: the server did not delete $name's consumer $cons"
	fi
	kill -CONT "$pid"
	fault resume "$part" "the server deleted $name's consumer $cons; SIGCONT $name"
}

kill_randomly() {	# NAME STREAM PART MS
	start_consumer "$1" "$2"
	sleep "$(printf '0.%03d' "$4")"
	kill9 "$cpid" "$3" "at a random moment, ${4} ms after start ($1)"
}

story_p0() {
	local s=$P0 p=$P0 pid
	kill_at p0-a $s $p after_note_read "${K0[0]}" "after note_read, before the sink commit"
	kill_at p0-b $s $p in_sink_txn "${K0[1]}" "inside the sink transaction"
	kill_at p0-c $s $p after_commit "${K0[2]}" "right after the sink commit"
	start_consumer p0-d $s --stop-at "after_commit:${K0[3]}" --stop-at before_promote:1
	pid=$cpid
	if wait_stopped $pid; then
		hold_past_threshold $pid p0-d $s $p
		if wait_stopped $pid; then
			kill9 $pid $p "between recovery_event and promote (p0-d)"
			expect 0 "$p: p0-d recovered its expired consumer and was killed before promote"
		else
			expect 1 "$p: p0-d did not reach before_promote"
		fi
	else
		expect 1 "$p: p0-d did not reach after_commit:${K0[3]}"
	fi
	start_consumer p0-e $s --stop-at after_commit:1 --stop-at after_commit:3
	pid=$cpid
	if wait_stopped $pid && hold_past_threshold $pid p0-e $s $p && wait_stopped $pid; then
		kill9 $pid $p "two pages after its recovery (p0-e)"
	else
		expect 1 "$p: p0-e did not reach after_commit:1 and :3"
	fi
	kill_randomly p0-f $s $p $R0
}

story_p1() {
	local s=$P1 p=$P1 zombie pid rc=0
	start_consumer p1-a $s --stop-at "after_note_read:${K1[0]}"
	zombie=$cpid
	wait_stopped $zombie || expect 1 "$p: p1-a did not reach after_note_read"
	fault sigstop $p "p1-a stopped after note_read; p1-b claims"
	start_consumer p1-b $s --stop-at after_commit:2 --stop-at "in_sink_txn:$((2 + K1[1]))"
	pid=$cpid
	wait_stopped $pid || expect 1 "$p: p1-b did not reach after_commit:2"
	kill -CONT $zombie
	fault sigcont $p "p1-a continued: a zombie tries to write"
	wait_exit $zombie 30 || rc=$?
	expect $((rc != 3)) "$p: the zombie p1-a was fenced (exit 3; it exited $rc)"
	hold_past_threshold $pid p1-b $s $p
	if wait_stopped $pid; then
		kill9 $pid $p "inside the sink transaction, after a recovery (p1-b)"
	else
		expect 1 "$p: p1-b did not reach in_sink_txn"
	fi
	kill_at p1-c $s $p after_note_read "${K1[2]}" "after note_read, before the sink commit"
	start_consumer p1-d $s --stop-at "after_commit:1" --stop-at "after_promote:1"
	pid=$cpid
	if wait_stopped $pid; then
		hold_past_threshold $pid p1-d $s $p
		if wait_stopped $pid; then
			kill9 $pid $p "right after promote (p1-d)"
		else
			expect 1 "$p: p1-d did not reach after_promote"
		fi
	else
		expect 1 "$p: p1-d did not reach after_commit:1"
	fi
	kill_randomly p1-e $s $p $R1
}

story_retention() {
	local s=$PR p=$PR pid rc=0 info
	start_consumer r-a $s --page $RET_PAGE --stop-at after_commit:2
	pid=$cpid
	wait_stopped $pid || expect 1 "$p: r-a did not reach after_commit:2"
	publish $PR $((RET_HEAD + 1)) $RET_MORE
	info=$("$tool" info --nats "$nats_url" --stream $PR)
	fault retention $p "$RET_MORE more published; MaxMsgs $RET_MAX discarded unapplied events (${info%% *})"
	hold_past_threshold $pid r-a $s $p
	wait_exit $pid 30 || rc=$?
	expect $((rc != 4)) "$p: r-a reported the loss and stopped (exit 4; it exited $rc)"
	grep -q ' GAP_REPORTED ' "$tmp/logs/r-a.log" && rc=0 || rc=1
	expect $rc "$p: r-a logged the gap it reported"
	rc=0
	start_consumer r-b $s --page $RET_PAGE
	wait_exit $cpid 30 || rc=$?
	grep -q ' CLAIM .*verdict=fail_closed' "$tmp/logs/r-b.log" && [ $rc = 4 ] && rc=0 || rc=1
	expect $rc "$p: a successor r-b claims, is told fail_closed and stops too"
}

say "faults (seed $SEED)"
: >"$tmp/faults.log"
: >"$tmp/expect.log"
story_p0 &
s0=$!
story_p1 &
s1=$!
story_retention &
sr=$!
for s in "$s0:$P0" "$s1:$P1" "$sr:$PR"; do
	rc=0
	wait "${s%%:*}" || rc=$?
	expect $rc "${s#*:}: the fault story ran to its end"
done

say "live tail, PostgreSQL immediate stop and restart"
start_consumer p0-final $P0 --until $PER
f0=$cpid
start_consumer p1-final $P1 --until $PER
f1=$cpid
rate=$((TAIL / 3 + 1))
publish $P0 $((HEAD + 1)) $TAIL $rate &
t0=$!
publish $P1 $((HEAD + 1)) $TAIL $rate &
t1=$!
echo "$t0" >>"$tmp/pids"
echo "$t1" >>"$tmp/pids"
sleep 1
as_pg pg_ctl -D "$pg_data" -m immediate -w stop >/dev/null
fault pg_crash all "PostgreSQL stopped in immediate mode (a crash), down ${PG_DOWN}s"
sleep $PG_DOWN
pg_start
fault pg_restart all "PostgreSQL restarted"
rc=0
wait $t0 || rc=1
wait $t1 || rc=1
expect $rc "the tail ($TAIL per stream) was published and acknowledged"
for f in "$f0:p0-final" "$f1:p1-final"; do
	rc=0
	wait_exit "${f%%:*}" 120 || rc=$?
	expect $rc "${f#*:} applied its stream to the end and halted (exit $rc)"
	[ $rc = 0 ] || show_log "${f#*:}"
done

say "throughput: the same consumer with the guard and with an offsets UPDATE only"
# a stream of its own, long enough that a round of one mode takes seconds
# (the checker's publish log leaves it out: it checks the fault stories)
"$tool" create-stream --nats "$nats_url" --stream $PB --subject demo.$PB >/dev/null
publish $PB 1 "$BENCH_PER" 0 "$tmp/bench-published.tsv"
echo "published $BENCH_PER on $PB; $BENCH_ROUNDS rounds of the three modes, each reading all of it"
: >"$tmp/bench.out"
for r in $(seq "$BENCH_ROUNDS"); do
	sql -c "TRUNCATE bench_guard, bench_twocommit, bench_offsets"
	# the order turns from round to round: none always runs first
	modes=(guard offsets twocommit)
	for i in 0 1 2; do
		mode=${modes[$(((i + r) % 3))]}
		case $mode in
			guard) CONSUMER_NAME=bench-guard-$r start_consumer "bench-$mode-$r" $PB \
				--sink-table bench_guard --until $BENCH_PER ;;
			twocommit) CONSUMER_NAME=bench-twocommit-$r start_consumer "bench-$mode-$r" $PB \
				--sink-table bench_twocommit --two-commit --until $BENCH_PER ;;
			offsets) CONSUMER_NAME=bench-offsets-$r start_consumer "bench-$mode-$r" $PB \
				--sink-table bench_offsets --offsets-table consumer_offsets \
				--offsets-only --until $BENCH_PER ;;
		esac
		rc=0
		wait_exit $cpid 300 || rc=$?
		expect $rc "bench round $r, $mode: ran to the end (exit $rc)"
		[ $rc = 0 ] || show_log "bench-$mode-$r"
		awk -v m=$mode -v r="$r" '$3 == "RATE" { print "bench", m, r, $0 }' \
			"$tmp/logs/bench-$mode-$r.log" >>"$tmp/bench.out"
	done
done

say "check (demo_check: publisher log, broker, sink, guard tables)"
cat "$tmp"/published.*.tsv >"$tmp/published.tsv"
rc=0
"$checker" --pg "$admin_conn" --nats "$nats_url" --log "$tmp/published.tsv" \
	--main $P0,$P1 --retention $PR --consumer demo-sink >"$tmp/check.out" || rc=$?
grep -v '^check ' "$tmp/check.out"
[ $rc -le 1 ] || die "the checker could not run (exit $rc)"

say "report"
perl "$demo_here/timeline.pl" --logs "$tmp/logs" --faults "$tmp/faults.log" \
	--streams "$P0,$P1,$PR" --out "$OUT/demo-timeline.svg"
rc=0
perl "$demo_here/report.pl" --check "$tmp/check.out" --faults "$tmp/faults.log" \
	--logs "$tmp/logs" --bench "$tmp/bench.out" --expect "$tmp/expect.log" \
	--main "$P0,$P1" --retention "$PR" --page "$PAGE" \
	--bench-stream "$PB" --bench-events "$BENCH_PER" || rc=$?
echo "timeline: $OUT/demo-timeline.svg; took $((SECONDS - started)) s (seed $SEED)"
exit $rc
