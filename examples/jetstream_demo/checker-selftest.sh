#!/usr/bin/env bash
#
# examples/jetstream_demo/checker-selftest.sh: the checker is tested too.
# Three consumers, three streams, one checker run each:
#
#   clean       the consumer as it is, killed once after note_read and once
#               paused past its InactiveThreshold: the checker must pass
#   duplicates  --ignore-apply-answer (writes every row, whatever apply_run
#               and recovery_event answer), through one expiry: the recovery
#               re-reads the applied position itself, so the checker must
#               report duplicates
#   losses      --resume-own-cursor (never notes a read boundary, and
#               starts after its own read cursor instead of resume_from),
#               killed with a page read and not applied, then a successor
#               with the same flag: the checker must report losses.  The
#               consumer notes nothing, so the guard cannot see the skip: a
#               consumer that noted the page would have it refused (SG004)
#               and its successor replays it (t/013, regression
#               read_boundary)
#
# Succeeds only if all three turn out so.  Same environment as demo.sh
# (PG_CONFIG, KEEP, SOG_SRC); it sets up its own servers.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PAGE=100 INACTIVE_MS=2000 N=2000 SEED=${DEMO_SEED:-1}

say "setup"
install_deps
demo_init
build_all
start_postgres
start_nats
setup_db demo-sink
: >"$tmp/faults.log"
: >"$tmp/expect.log"
for s in selftest_clean selftest_dup selftest_loss; do
	"$tool" create-stream --nats "$nats_url" --stream $s --subject demo.$s >/dev/null
	"$tool" publish --nats "$nats_url" --stream $s --subject demo.$s --count $N \
		--seed "$SEED" --log "$tmp/published.tsv" >/dev/null
done

# pause_until_expired NAME STREAM PID: SIGCONT once the server deleted its consumer.
pause_until_expired() {
	wait_consumer_gone "$2" "$(consumer_of "$1")" || die "$1's consumer was not deleted"
	kill -CONT "$3"
}
run_to_end() {		# NAME STREAM [flags]: a consumer that must finish
	local rc=0
	start_consumer "$@" --until $N
	wait_exit $cpid 60 || rc=$?
	[ $rc = 0 ] || die "$1 exited $rc"
}

say "clean: kill after note_read, one expiry"
start_consumer clean-a selftest_clean --stop-at after_note_read:3
wait_stopped $cpid || die "clean-a did not stop"
kill9 $cpid selftest_clean "after note_read (clean-a)"
start_consumer clean-b selftest_clean --stop-at after_commit:2 --until $N
pid=$cpid
wait_stopped $pid || die "clean-b did not stop"
pause_until_expired clean-b selftest_clean $pid
wait_exit $pid 60 || die "clean-b did not finish"

say "duplicates: --ignore-apply-answer through one expiry"
start_consumer dup-a selftest_dup --ignore-apply-answer --stop-at after_commit:3 --until $N
pid=$cpid
wait_stopped $pid || die "dup-a did not stop"
pause_until_expired dup-a selftest_dup $pid
wait_exit $pid 60 || die "dup-a did not finish"

say "losses: --resume-own-cursor, killed with a page read, then a successor with it"
start_consumer loss-a selftest_loss --resume-own-cursor --stop-at after_note_read:3
wait_stopped $cpid || die "loss-a did not stop"
kill9 $cpid selftest_loss "after note_read (loss-a)"
run_to_end loss-b selftest_loss --resume-own-cursor

say "the checker on each"
passed=0 failed=0
check() {		# STREAM: runs the checker; sets $crc and $cout
	crc=0
	cout=$("$checker" --pg "$admin_conn" --nats "$nats_url" --log "$tmp/published.tsv" \
		--main "$1" --consumer demo-sink) || crc=$?
	printf '%s\n' "$cout" | grep -v '^check ' | sed "s/^/  [$1] /"
}
figure() {		# KEY: from the checker's figures
	printf '%s\n' "$cout" | sed -n "s/^check stream=.* $1=\([0-9]*\).*/\1/p" | head -1
}
verdict() {		# OK WHAT
	if [ "$1" = 0 ]; then
		passed=$((passed + 1))
		echo "  ok: $2"
	else
		failed=$((failed + 1))
		echo "  NOT OK: $2"
	fi
}

check selftest_clean
verdict $((crc != 0)) "clean consumer: the checker passes (exit $crc)"
check selftest_dup
dup=$(figure duplicated)
verdict $((crc != 1 || ${dup:-0} < 1)) "--ignore-apply-answer: the checker reports $dup duplicated and fails (exit $crc)"
check selftest_loss
lost=$(figure lost)
verdict $((crc != 1 || ${lost:-0} < 1)) "--resume-own-cursor: the checker reports $lost lost and fails (exit $crc)"

echo
echo "checker-selftest: $passed passed, $failed failed"
[ $failed = 0 ]
