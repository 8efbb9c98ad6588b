#!/usr/bin/env bash
#
# examples/demo.sh: what `make demo` runs.  The main job end to end, on a
# throwaway PostgreSQL server that listens on 127.0.0.1 only:
#
#   a. worker A reads a batch from a stream, applies half of it, and stalls;
#   b. worker B claims the partition: it resumes from the applied position
#      (not the read cursor), verifies the gap by hash and replays it;
#      receipts turn the events A had already applied into no-ops;
#   c. A wakes up as a zombie and tries to write: fenced (SG001);
#   d. a committed batch is delivered again: every event is a duplicate;
#   e. on partition 1 a worker without buffer hashes is killed mid-write:
#      its successor fails closed, an operator resolves the gap, the
#      successor re-reads from the applied position;
#   f. a claim against an in-flight sink transaction waits for its outcome;
#   g. proof: every source event is in the sink exactly once.
#
# The "stream" is a table standing in for a Kafka topic; the workers are psql
# sessions connected over TCP (127.0.0.1), each running the SQL a real
# consumer runs (docs/consumer.md, "The sink transaction in SQL").  Every claim
# made in the output is computed from the database and checked; the last line
# is `demo: OK (N events, 0 lost, 0 duplicated)`, or the script exits non-zero
# saying what failed.
#
# Steps before the story: installs missing Debian packages
# (test/install-deps.sh), builds a copy of the working tree and installs it
# into the system's PostgreSQL 15 (as root, or through sudo), and starts the
# cluster as a non-root OS user (`postgres` when run as root).  The cluster
# and its temp dir are removed at exit.
#
# Environment:
#   DEMO_PORT   TCP port on 127.0.0.1 (default: the first free of 54310-54319)
#   KEEP=1      leave the cluster running afterwards, for a look (the script
#               prints how to connect and how to stop it)
#   PG_MAJOR    PostgreSQL major version (default 15)

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
srcdir=$(pwd)

PG_MAJOR=${PG_MAJOR:-15}
KEEP=${KEEP:-0}
EVENTS_PER_PARTITION=1000
BATCH=100

# --- output and checks -----------------------------------------------------

bold=''
off=''
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	bold=$'\e[1m'
	off=$'\e[0m'
fi

say() { printf '\n%s=== %s%s\n' "$bold" "$*" "$off"; }
step() { printf '\n%s--- %s%s\n' "$bold" "$*" "$off"; }
note() { printf '%s\n' "$*" | fold -s -w 78 | sed 's/ *$//; s/^/  /'; }
indent() { sed "s/^/${1:-    }/"; }

checks=0
failures=()
check() {			# check "what" ACTUAL EXPECTED
	checks=$((checks + 1))
	if [ "$2" == "$3" ]; then
		printf '  [ok] %s\n' "$1"
	else
		printf '  [FAILED] %s: got "%s", expected "%s"\n' "$1" "$2" "$3"
		failures+=("$1: got \"$2\", expected \"$3\"")
	fi
}
die() {
	echo "demo: FAILED: $*" >&2
	exit 1
}

# --- 1. dependencies, build, install -----------------------------------------

say "setup: dependencies, build, install"
bash test/install-deps.sh

pgbin=/usr/lib/postgresql/$PG_MAJOR/bin
[ -x "$pgbin/pg_config" ] ||
	die "$pgbin/pg_config not found; is postgresql-server-dev-$PG_MAJOR installed?"
pgbin=$("$pgbin/pg_config" --bindir)
export PATH="$pgbin:$PATH"
PG_CONFIG=$pgbin/pg_config

as_root() { sog_as_root "$@"; }
if [ "$(id -u)" -eq 0 ]; then run_as=postgres; else run_as=$(id -un); fi

source test/lib.sh
if [ -n "${DEMO_PORT:-}" ]; then
	port=$DEMO_PORT
	! sog_port_in_use "$port" || die "port $port (DEMO_PORT) is in use"
else
	port=$(sog_first_free_port 54310 54319) || die "ports 54310-54319 are all in use; set DEMO_PORT"
fi

tmp=$(mktemp -d /tmp/sog-demo.XXXXXX)		# mode 700
tree=$tmp/src
data=$tmp/data
sock=$tmp/sock
sess=$tmp/sessions
serverlog=$tmp/server.log
mkdir -p "$tree" "$sock" "$sess"
chmod 700 "$sock"		# the socket is trust; only its owner (and root) may use it

# One password for the throwaway cluster's roles: TCP needs one (only the
# private socket is trust), and psql finds it in PGPASSWORD.
PGPASSWORD=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export PGPASSWORD
printf '%s\n' "$PGPASSWORD" >"$tmp/pwfile"
export PGHOST=127.0.0.1 PGPORT=$port PGDATABASE=demo PGCONNECT_TIMEOUT=10
unset PGSERVICE PGOPTIONS PGUSER PGSSLMODE

# Run a server-side command as the cluster's OS user.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME="$tmp" PATH="$PATH" "$@"
	else
		env PATH="$PATH" "$@"
	fi
}

declare -A S_FD=() S_PID=() S_OFF=() S_N=() S_WHO=()

cleanup() {
	local rc=$? name fd
	trap - EXIT
	for name in "${!S_PID[@]}"; do
		fd=${S_FD[$name]}
		exec {fd}>&- 2>/dev/null || true
		kill "${S_PID[$name]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "$KEEP" = 1 ] && [ -f "$data/postmaster.pid" ]; then
		echo
		echo "KEEP=1: the cluster is still running; its files are in $tmp"
		echo "  connect: PGPASSWORD=$PGPASSWORD psql -h 127.0.0.1 -p $port -U postgres demo"
		echo "       or: $( [ "$(id -u)" -eq 0 ] && echo 'runuser -u postgres -- ')psql -h $sock -p $port -U postgres demo"
		echo "  stop:    $( [ "$(id -u)" -eq 0 ] && echo 'runuser -u postgres -- ')$pgbin/pg_ctl -D $data stop && rm -rf $tmp"
		exit "$rc"
	fi
	if [ -f "$data/postmaster.pid" ]; then
		as_pg pg_ctl -D "$data" -m fast -w stop >/dev/null 2>&1 ||
			as_pg pg_ctl -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build a fresh copy of what the build needs (no stale objects, nothing
# written into the working tree), then install it: other builds may have been
# installed into the system directory since the last run.
tar -C "$srcdir" -cf - --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	Makefile ./*.control src sql | tar -C "$tree" -xf -
makeopts=(with_llvm=no "PG_CONFIG=$PG_CONFIG")
if ! make -C "$tree" "${makeopts[@]}" >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log"
	die "the build failed (above)"
fi
if ! as_root make -C "$tree" "${makeopts[@]}" install >>"$tmp/build.log" 2>&1; then
	tail -n 20 "$tmp/build.log"
	die "make install failed (above)"
fi
echo "built and installed stream_offset_guard into $("$PG_CONFIG" --pkglibdir)"

# --- 2. the throwaway cluster -------------------------------------------------

say "setup: a throwaway PostgreSQL $PG_MAJOR on 127.0.0.1:$port"
if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$tmp"
fi
as_pg initdb -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
	--pwfile="$tmp/pwfile" --locale=C -E UTF8 >"$tmp/initdb.log" 2>&1 ||
	{ cat "$tmp/initdb.log"; die "initdb failed"; }
rm -f "$tmp/pwfile"
as_pg pg_ctl -D "$data" -l "$serverlog" -w \
	-o "-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories='$sock'" \
	start >/dev/null || { tail -n 30 "$serverlog"; die "the server did not start"; }
echo "server: $(psql -X -At -U postgres -d postgres -c 'SELECT version()')"
echo "running as OS user $run_as, data in $data, socket dir $sock, TCP 127.0.0.1:$port only"

# SQL as the superuser: the set-up and the proof.
admin() { psql -X -q -v ON_ERROR_STOP=1 -U postgres "$@"; }
# One value (first column of the first row).
val() { psql -X -q -At -v ON_ERROR_STOP=1 -U postgres -c "$1"; }
# A query result shown to the reader.
show() { admin -P footer=off -c "$1" | indent; }

admin -d postgres -c 'CREATE DATABASE demo' >/dev/null

# --- 3. the stream, the sink, the roles ---------------------------------------------

say "setup: a stream, a sink, a consumer role and an operator role"
admin -v n="$EVENTS_PER_PARTITION" -v pw="$PGPASSWORD" <<'SQL'
CREATE EXTENSION stream_offset_guard;

-- The source: a Kafka topic "orders" with two partitions, offsets 0..n-1.
-- The bytes of an event are fixed, so a re-fetch returns the same bytes.
CREATE TABLE source_events (
	part int NOT NULL,
	pos bigint NOT NULL,
	payload bytea NOT NULL,
	PRIMARY KEY (part, pos)
);
INSERT INTO source_events
SELECT part, pos,
	   convert_to(format('{"order_id": "ord-%s-%s", "customer": %s, "amount_cents": %s}',
						 part, pos, (pos * 7919 + part) % 500, 100 + (pos * 104729 + part * 31) % 99900),
				  'UTF8')
  FROM generate_series(0, 1) AS part, generate_series(0, :n - 1) AS pos;

-- The sink.  Deliberately no unique key: a double write would be a second
-- row, so count(*) = count(DISTINCT (part, pos)) proves exactly once.
CREATE TABLE orders (
	part int NOT NULL,
	pos bigint NOT NULL,
	payload bytea NOT NULL,
	written_by text NOT NULL,
	written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The consumer's role may run a consumer and write the sink, nothing else;
-- the on-call operator may watch and resolve gaps.
CREATE ROLE orders_sink LOGIN PASSWORD :'pw';
CREATE ROLE oncall LOGIN PASSWORD :'pw';
SELECT sog.grant_consumer('orders_sink') \g /dev/null
SELECT sog.grant_operator('oncall') \g /dev/null
GRANT SELECT ON source_events TO orders_sink;
GRANT SELECT, INSERT ON orders TO orders_sink;
GRANT SELECT ON orders, source_events TO oncall;

SELECT id FROM sog.register('orders-sink', 'orders', '0') \g /dev/null
SELECT id FROM sog.register('orders-sink', 'orders', '1') \g /dev/null
SQL
CP0=$(val "SELECT id FROM sog.checkpoint WHERE stream = 'orders' AND \"partition\" = '0'")
CP1=$(val "SELECT id FROM sog.checkpoint WHERE stream = 'orders' AND \"partition\" = '1'")
note "source_events: $(val 'SELECT count(*) FROM source_events') events ($EVENTS_PER_PARTITION on each of partitions 0 and 1), offsets 0..$((EVENTS_PER_PARTITION - 1))."
note "orders: the sink, no unique key.  Roles: orders_sink (sog.grant_consumer), oncall (sog.grant_operator)."
note "sog.register: checkpoint $CP0 for (orders-sink, orders, 0), $CP1 for partition 1."

# --- worker sessions ------------------------------------------------------------------
#
# Each worker is one long-lived psql session over TCP, fed through a FIFO, so
# that it can hold state (its buffer, in a temp table: the worker's memory)
# and keep a transaction open while another session acts.  Lines the session
# prints that start with "@@" are values for this script, not for the reader.

session_open() {		# session_open NAME ROLE
	local name=$1 fd
	mkfifo "$sess/$name.in"
	: >"$sess/$name.out"
	# The new psql must not inherit the other sessions' FIFO ends: a FIFO
	# with a writer left over would never give its reader end-of-file.
	(
		for fd in "${S_FD[@]}"; do
			exec {fd}>&-
		done
		PGOPTIONS='-c client_min_messages=warning' \
			exec psql -X -q -v ON_ERROR_STOP=0 -v VERBOSITY=default -v SHOW_CONTEXT=never \
			-P footer=off -U "$2"
	) <"$sess/$name.in" >"$sess/$name.out" 2>&1 &
	S_PID[$name]=$!
	exec {fd}>"$sess/$name.in"
	S_FD[$name]=$fd
	S_OFF[$name]=0
	S_N[$name]=0
	S_WHO[$name]=$name
}

session_send() {		# session_send NAME SQL: send, do not wait
	local name=$1
	kill -0 "${S_PID[$name]}" 2>/dev/null || die "session $name is gone"
	S_N[$name]=$((S_N[$name] + 1))
	printf '%s\n\\echo @@end-%s\n' "$2" "${S_N[$name]}" >&"${S_FD[$name]}"
}

# Wait for what was sent last; OUT := what the session printed for it.
session_wait() {		# session_wait NAME [TIMEOUT]
	local name=$1 limit=${2:-30} marker="@@end-${S_N[$1]}" file="$sess/$1.out"
	local start=$SECONDS at
	while ! grep -qx -- "$marker" "$file"; do
		if ! kill -0 "${S_PID[$name]}" 2>/dev/null; then
			cat "$file" | indent
			die "session $name ended unexpectedly"
		fi
		((SECONDS - start < limit)) || die "session $name: no answer within ${limit}s"
		sleep 0.05
	done
	at=$(grep -m 1 -bx -- "$marker" "$file" | cut -d: -f1)
	OUT=$(head -c "$at" "$file" | tail -c +"$((S_OFF[$name] + 1))")
	S_OFF[$name]=$((at + ${#marker} + 1))
}

# Show OUT as printed by session NAME, without the @@ lines.
session_print() {
	local text
	text=$(printf '%s\n' "$OUT" | grep -v '^@@' || true)
	[ -n "$text" ] && printf '%s\n' "$text" | sed "s/^/    ${S_WHO[$1]} | /"
	return 0
}

# Run SQL in a session, print what it printed, fail on any error.
run() {			# run NAME SQL
	session_send "$1" "$2"
	session_wait "$1"
	session_print "$1"
	if grep -qE '^(ERROR|FATAL|psql:.*(ERROR|FATAL))' <<<"$OUT"; then
		die "unexpected error in session $1 (above)"
	fi
}

# Run SQL whose last statement is meant to fail; SQLSTATE := the SQLSTATE it
# got (00000 for success), for the caller to check.
try() {			# try NAME SQL
	session_send "$1" "$2
\\echo @@sqlstate=:SQLSTATE"
	session_wait "$1"
	session_print "$1"
	SQLSTATE=$(get sqlstate)
}

get() {			# get KEY: value of a "@@KEY=value" line of OUT
	printf '%s\n' "$OUT" | sed -n "s/^@@$1=//p" | tail -n 1
}

session_close() {		# session_close NAME
	local fd=${S_FD[$1]}
	exec {fd}>&-
	wait "${S_PID[$1]}" 2>/dev/null || true
	unset "S_PID[$1]"
}

# --- the consumer's SQL ------------------------------------------------------------
#
# Each function prints the SQL a worker sends; bash only fills in values.

# Take over a checkpoint; keep the resume plan in the session.
sql_claim() {			# CHECKPOINT OWNER
	cat <<SQL
DROP TABLE IF EXISTS plan;
CREATE TEMP TABLE plan AS SELECT * FROM sog.claim($1, '$2');
SELECT generation, verdict, coalesce(resume_from::text, 'NULL') AS resume_from,
	   coalesce(verify_from::text, 'NULL') AS verify_from, coalesce(verify_to::text, 'NULL') AS verify_to,
	   coalesce(expected_count::text, 'NULL') AS expected_count, coalesce(gap_size::text, 'NULL') AS gap_size,
	   coalesce(gap_id::text, 'NULL') AS gap_id
  FROM plan \\gset p_
\\echo 'sog.claim($1, ''$2'') ->' generation :p_generation, verdict :p_verdict, resume_from :p_resume_from
\\echo @@gen=:p_generation
\\echo @@verdict=:p_verdict
\\echo @@resume_from=:p_resume_from
\\echo @@verify_from=:p_verify_from
\\echo @@verify_to=:p_verify_to
\\echo @@expected_count=:p_expected_count
\\echo @@gap_size=:p_gap_size
\\echo @@gap_id=:p_gap_id
SQL
}

# After a claim: the plan's fields as P_GEN, P_VERDICT, P_RESUME_FROM, ...
plan_vars() {
	P_GEN=$(get gen)
	P_VERDICT=$(get verdict)
	P_RESUME_FROM=$(get resume_from)
	P_VERIFY_FROM=$(get verify_from)
	P_VERIFY_TO=$(get verify_to)
	P_EXPECTED_COUNT=$(get expected_count)
	P_GAP_SIZE=$(get gap_size)
	P_GAP_ID=$(get gap_id)
}

# Fetch from the source into the worker's buffer: LIMIT events after AFTER
# (AFTER empty: from the beginning), or (AFTER, UPTO] when UPTO is given.
# Digest each record and hash the buffer as the client does while buffering.
sql_fetch() {			# PART AFTER LIMIT [UPTO]
	local after=${2:--1} cond="true" limit=$3
	[ -n "${4:-}" ] && cond="pos <= $4" && limit=ALL
	cat <<SQL
CREATE TEMP TABLE IF NOT EXISTS buf (pos bigint PRIMARY KEY, payload bytea, digest bytea);
TRUNCATE buf;
INSERT INTO buf
SELECT pos, payload, sog.payload_digest(payload)
  FROM source_events WHERE part = $1 AND pos > $after AND $cond ORDER BY pos LIMIT $limit;
SELECT min(pos) AS lo, max(pos) AS hi, count(*) AS n,
	   sog.buffer_hash(pos::sog.position, digest ORDER BY pos) AS hash FROM buf \\gset b_
\\echo @@lo=:b_lo
\\echo @@hi=:b_hi
\\echo @@n=:b_n
\\echo @@hash=:b_hash
SQL
}

# Tell the guard what is read but not applied: (applied, hi], with its hash
# (HASH=NULL: an old client that does not hash its buffer).
sql_note_read() {		# CHECKPOINT GEN [NULL]
	local hash=":'b_hash'"
	[ "${3:-}" = NULL ] && hash=NULL
	echo "SELECT sog.note_read($1, $2, :'b_hi', $hash, :b_n) \\g /dev/null"
}

# The sink transaction's statement for the buffered events in [LO, HI]: one
# apply_batch call decides each event; only the fresh ones are written.
sql_sink() {			# CHECKPOINT GEN PART WORKER LO HI
	cat <<SQL
WITH decided AS (
	SELECT d.pos, d.is_new
	  FROM (SELECT array_agg(pos ORDER BY pos) AS p, array_agg(digest ORDER BY pos) AS g
			  FROM buf WHERE pos BETWEEN $5 AND $6) AS batch,
		   unnest(batch.p, sog.apply_batch($1, $2, batch.p::sog.position[], batch.g)) AS d(pos, is_new)
), written AS (
	INSERT INTO orders (part, pos, payload, written_by)
	SELECT $3, buf.pos, buf.payload, '$4'
	  FROM decided JOIN buf USING (pos) WHERE decided.is_new
	RETURNING pos
)
SELECT count(*) FILTER (WHERE is_new) AS fresh, count(*) FILTER (WHERE NOT is_new) AS dup,
	   (SELECT count(*) FROM written) AS written
  FROM decided \\gset s_
\\echo @@fresh=:s_fresh
\\echo @@dup=:s_dup
\\echo @@written=:s_written
SQL
}

# A whole sink transaction: BEGIN, the statement, COMMIT.
sink_tx() {			# SESSION CHECKPOINT GEN PART WORKER LO HI
	run "$1" "BEGIN;
$(sql_sink "$2" "$3" "$4" "$5" "$6" "$7")
COMMIT;"
}

# Fetch the next batch, note_read it, apply it; one line of output.
batch() {			# SESSION CHECKPOINT GEN PART WORKER AFTER
	run "$1" "$(sql_fetch "$4" "$6" "$BATCH")
$(sql_note_read "$2" "$3")"
	local lo hi n
	lo=$(get lo)
	hi=$(get hi)
	n=$(get n)
	sink_tx "$1" "$2" "$3" "$4" "$5" "$lo" "$hi"
	printf '    %s | read %s..%s (%s events), note_read, sink transaction: %s new, %s duplicates\n' \
		"${S_WHO[$1]}" "$lo" "$hi" "$n" "$(get fresh)" "$(get dup)"
	[ "$(get fresh)" = "$n" ] || die "batch $lo..$hi: expected $n new events, got $(get fresh)"
	LAST=$hi
}

status() {			# status CHECKPOINT
	show "SELECT checkpoint_id AS cp, \"partition\" AS part, state, owner, generation AS gen,
				 applied_position AS applied, source_cursor AS cursor, lag, buffered_count AS buffered,
				 open_gaps
			FROM sog.status WHERE checkpoint_id = $1"
}
col() {			# col CHECKPOINT COLUMN: a column of sog.checkpoint, as text
	val "SELECT coalesce($2::text, 'NULL') FROM sog.checkpoint WHERE id = $1"
}
sink_count() {			# sink_count PART [WHERE]: "rows distinct"
	val "SELECT count(*) || ' ' || count(DISTINCT pos) FROM orders WHERE part = $1 ${2:+AND $2}"
}

say "the sink transaction every worker runs (docs/consumer.md)"
note "Per batch: fetch from the source, digest each record (sog.payload_digest) and hash the buffer (sog.buffer_hash); in a real client both are computed client-side.  Then note_read, then one sink transaction:"
{
	echo "BEGIN;"
	sql_sink '<checkpoint>' '<generation>' '<partition>' '<worker>' '<lo>' '<hi>' |
		grep -v '^\\echo' | sed 's/ \\gset s_/;/'
	echo "COMMIT;"
} | expand -t 4 | indent

# --- a. worker A ---------------------------------------------------------------------

say "a. worker A claims partition 0, applies 1.5 batches, and stalls"
session_open A orders_sink
S_WHO[A]="worker-A"
run A "$(sql_claim "$CP0" worker-A)"
GEN_A=$(get gen)
check "A: first claim is aligned, generation 1, start from the beginning" \
	"$(get verdict) $GEN_A $(get resume_from)" "aligned 1 NULL"

batch A "$CP0" "$GEN_A" 0 worker-A ""
check "after the first batch, applied = read cursor = $LAST" \
	"$(col "$CP0" applied_position) $(col "$CP0" source_cursor)" "$LAST $LAST"

run A "$(sql_fetch 0 "$LAST" "$BATCH")
$(sql_note_read "$CP0" "$GEN_A")"
A_LO=$(get lo)
A_HI=$(get hi)
A_HASH=$(get hash)
A_MID=$(((A_LO + A_HI) / 2))
printf '    worker-A | read %s..%s (%s events), buffer hash %s...\n' "$A_LO" "$A_HI" "$(get n)" "${A_HASH:0:16}"
printf '    worker-A | sog.note_read(%s, %s, '"'"'%s'"'"', <hash>, %s)\n' "$CP0" "$GEN_A" "$A_HI" "$(get n)"
sink_tx A "$CP0" "$GEN_A" 0 worker-A "$A_LO" "$A_MID"
printf '    worker-A | sink transaction for %s..%s: %s new, committed\n' "$A_LO" "$A_MID" "$(get fresh)"
note "Then worker A stops responding (a crash, a long GC pause, a network partition: from outside they look alike).  It holds $A_LO..$A_HI in memory; $((A_MID + 1))..$A_HI were never applied."
status "$CP0"
check "applied position is $A_MID, read cursor $A_HI: the guard knows $((A_HI - A_MID)) events are in flight" \
	"$(col "$CP0" applied_position) $(col "$CP0" source_cursor)" "$A_MID $A_HI"
check "the guard holds A's buffer hash of ($((A_LO - 1)), $A_HI]" \
	"$(col "$CP0" read_base) $(col "$CP0" read_hash)" "$((A_LO - 1)) $A_HASH"
check "the sink holds exactly 0..$A_MID of partition 0" \
	"$(sink_count 0)" "$((A_MID + 1)) $((A_MID + 1))"

# --- b. worker B ---------------------------------------------------------------------

say "b. worker B claims partition 0: resume from applied, verify the gap, replay"
session_open B orders_sink
S_WHO[B]="worker-B"
run B "$(sql_claim "$CP0" worker-B)"
plan_vars
GEN_B=$P_GEN
VERIFY_FROM=$P_VERIFY_FROM
VERIFY_TO=$P_VERIFY_TO
run B "SELECT generation AS gen, verdict, resume_from, verify_from, verify_to, expected_count, gap_size,
	   left(expected_hash, 12) || '...' AS expected_hash, left(manifest_digest, 12) || '...' AS manifest_digest
  FROM plan;"
check "B: generation $((GEN_A + 1)), gap_replay_required" "$GEN_B $P_VERDICT" "$((GEN_A + 1)) gap_replay_required"
check "B resumes from the applied position $A_MID, not from the read cursor $A_HI" "$P_RESUME_FROM" "$A_MID"
check "B must verify ($((A_LO - 1)), $A_HI], the $BATCH events A had read" \
	"$VERIFY_FROM $VERIFY_TO $P_EXPECTED_COUNT" "$((A_LO - 1)) $A_HI $BATCH"
check "the gap is $((A_HI - A_MID)) events" "$P_GAP_SIZE" "$((A_HI - A_MID))"

note "A consumer that resumed at its read cursor (Kafka's committed offset, say) would skip the gap; the plan's manifest refuses it:"
run B "SELECT admissible, message FROM plan,
	   sog.verify_resume((plan.verdict, plan.resume_from, plan.gap_size, plan.manifest_digest)::sog.manifest,
						 plan.verify_to);"
check "resuming at the read cursor is refused" \
	"$(grep -o 'CURSOR_SKIP: .*' <<<"$OUT")" \
	"CURSOR_SKIP: Requested $A_HI exceeds safe $A_MID. Replay gap of $((A_HI - A_MID))."

note "B applies nothing newer until the gap is verified; an attempt is refused:"
try B "$(sql_fetch 0 "$VERIFY_TO" 1)
BEGIN;
$(sql_sink "$CP0" "$GEN_B" 0 worker-B 0 999999999)"
run B "ROLLBACK;"
check "applying $((VERIFY_TO + 1)) before verify_gap is SG004" "$SQLSTATE" SG004

note "B re-fetches ($VERIFY_FROM, $VERIFY_TO] from the source, hashes it and calls sog.verify_gap:"
run B "$(sql_fetch 0 "$VERIFY_FROM" ALL "$VERIFY_TO")
SELECT sog.verify_gap($CP0, $GEN_B, :'b_hash') AS verified \\gset
\\echo sog.verify_gap($CP0, $GEN_B, <hash of $VERIFY_FROM..$VERIFY_TO re-fetched>) -> :verified
\\echo @@verified=:verified"
check "B's hash of the re-fetched range equals A's recorded hash" "$(get hash)" "$A_HASH"
check "verify_gap -> true, checkpoint back to running" \
	"$(get verified) $(col "$CP0" state)" "t running"

note "B applies its whole re-fetched buffer: the events A already applied come back false (receipts), the rest true."
sink_tx B "$CP0" "$GEN_B" 0 worker-B "$A_LO" "$VERIFY_TO"
printf '    worker-B | sink transaction for %s..%s: %s new, %s duplicates (skipped)\n' \
	"$A_LO" "$VERIFY_TO" "$(get fresh)" "$(get dup)"
check "$((A_MID - A_LO + 1)) duplicates (A's half), $((VERIFY_TO - A_MID)) new" \
	"$(get dup) $(get fresh)" "$((A_MID - A_LO + 1)) $((VERIFY_TO - A_MID))"
check "partition 0 sink: 0..$VERIFY_TO, each once (rows, distinct positions)" \
	"$(sink_count 0)" "$((VERIFY_TO + 1)) $((VERIFY_TO + 1))"
status "$CP0"

# --- c. the zombie ------------------------------------------------------------------

say "c. zombie A wakes up and writes the rest of its buffer"
note "A still believes it owns partition 0 (generation $GEN_A) and holds $((A_MID + 1))..$A_HI.  It writes its sink rows, then calls the guard in the same transaction:"
try A "BEGIN;
INSERT INTO orders (part, pos, payload, written_by)
SELECT 0, pos, payload, 'worker-A' FROM buf WHERE pos BETWEEN $((A_MID + 1)) AND $A_HI;
SELECT count(*) AS rows_in_a_transaction FROM orders WHERE written_by = 'worker-A' AND pos > $A_MID;
SELECT sog.apply_batch($CP0, $GEN_A, array_agg(pos::sog.position ORDER BY pos), array_agg(digest ORDER BY pos))
  FROM buf WHERE pos BETWEEN $((A_MID + 1)) AND $A_HI;"
run A "ROLLBACK;"
check "zombie A is fenced with SG001" "$SQLSTATE" SG001
check "none of zombie A's rows landed" \
	"$(val "SELECT count(*) FROM orders WHERE written_by = 'worker-A' AND pos > $A_MID")" 0
check "partition 0 sink unchanged: 0..$VERIFY_TO, each once" \
	"$(sink_count 0)" "$((VERIFY_TO + 1)) $((VERIFY_TO + 1))"
session_close A

# --- d. duplicate delivery -------------------------------------------------------------

say "d. B carries on; the source delivers a committed batch again"
LAST=$VERIFY_TO
for _ in 1 2 3; do
	batch B "$CP0" "$GEN_B" 0 worker-B "$LAST"
done
DUP_LO=$((LAST - 2 * BATCH + 1))
DUP_HI=$((LAST - BATCH))
note "At-least-once delivery (a rebalance, a retried fetch): $DUP_LO..$DUP_HI arrives again, and B runs it through the same sink transaction."
before=$(sink_count 0)
run B "$(sql_fetch 0 "$((DUP_LO - 1))" ALL "$DUP_HI")"
sink_tx B "$CP0" "$GEN_B" 0 worker-B "$DUP_LO" "$DUP_HI"
printf '    worker-B | sink transaction for %s..%s again: %s new, %s duplicates (skipped)\n' \
	"$DUP_LO" "$DUP_HI" "$(get fresh)" "$(get dup)"
check "all $BATCH events are duplicates, nothing written" \
	"$(get dup) $(get fresh) $(get written)" "$BATCH 0 0"
check "partition 0 sink unchanged" "$(sink_count 0)" "$before"
check "applied position did not move back" "$(col "$CP0" applied_position)" "$LAST"
while [ "$LAST" -lt $((EVENTS_PER_PARTITION - BATCH - 1)) ]; do
	batch B "$CP0" "$GEN_B" 0 worker-B "$LAST"
done

# --- e. partition 1: a worker without a hash ---------------------------------------------

say "e. partition 1: an old client without buffer hashes is killed mid-write"
session_open OPS oncall
S_WHO[OPS]="oncall"
run OPS "LISTEN sog_gap;"
session_open C orders_sink
S_WHO[C]="worker-C"
run C "$(sql_claim "$CP1" worker-C)"
GEN_C=$(get gen)
check "C: aligned, generation 1" "$(get verdict) $GEN_C" "aligned 1"
note "C is an older client build: it reports its read cursor (note_read) but no buffer hash."
run C "$(sql_fetch 1 "" "$BATCH")
$(sql_note_read "$CP1" "$GEN_C" NULL)"
sink_tx C "$CP1" "$GEN_C" 1 worker-C "$(get lo)" "$(get hi)"
printf '    worker-C | read 0..%s, note_read without a hash, sink transaction: %s new\n' "$((BATCH - 1))" "$(get fresh)"
run C "$(sql_fetch 1 "$((BATCH - 1))" "$BATCH")
$(sql_note_read "$CP1" "$GEN_C" NULL)"
C_LO=$(get lo)
C_HI=$(get hi)
C_MID=$((C_LO + 29))
sink_tx C "$CP1" "$GEN_C" 1 worker-C "$C_LO" "$C_MID"
printf '    worker-C | read %s..%s, note_read without a hash; sink transaction for %s..%s: %s new\n' \
	"$C_LO" "$C_HI" "$C_LO" "$C_MID" "$(get fresh)"
run C "BEGIN;
$(sql_sink "$CP1" "$GEN_C" 1 worker-C "$((C_MID + 1))" "$C_HI")
SELECT pg_backend_pid() AS pid \\gset
\\echo @@pid=:pid"
C_PID=$(get pid)
printf '    worker-C | sink transaction for %s..%s: %s rows written, not yet committed ...\n' \
	"$((C_MID + 1))" "$C_HI" "$(get written)"
val "SELECT pg_terminate_backend($C_PID)" >/dev/null
for _ in $(seq 1 200); do
	[ "$(val "SELECT count(*) FROM pg_stat_activity WHERE pid = $C_PID")" = 0 ] && break
	sleep 0.05
done
note "... and C's backend is killed (pg_terminate_backend($C_PID)): the transaction dies with its rows and receipts."
# C's psql notices at its next statement and exits (a write to its FIFO after
# that would be a broken pipe: only a subshell that ignores SIGPIPE tries).
(trap '' PIPE; printf 'SELECT 1;\n' >&"${S_FD[C]}") 2>/dev/null || true
for _ in $(seq 1 200); do
	kill -0 "${S_PID[C]}" 2>/dev/null || break
	sleep 0.05
done
! kill -0 "${S_PID[C]}" 2>/dev/null || die "worker C's session did not end after its backend was killed"
session_close C
check "C's uncommitted rows are gone; partition 1 holds 0..$C_MID once" \
	"$(sink_count 1)" "$((C_MID + 1)) $((C_MID + 1))"
status "$CP1"

session_open D orders_sink
S_WHO[D]="worker-D"
run D "$(sql_claim "$CP1" worker-D)"
GEN_D=$(get gen)
GAP=$(get gap_id)
check "D: fail_closed (no hash over the read gap), resume_from = applied $C_MID" \
	"$(get verdict) $(get resume_from)" "fail_closed $C_MID"
check "a gap row ($C_MID, $C_HI] no_buffer_hash, checkpoint failed_closed" \
	"$(val "SELECT from_position || ' ' || to_position || ' ' || reason FROM sog.gap WHERE id = '$GAP'") $(col "$CP1" state)" \
	"$C_MID $C_HI no_buffer_hash failed_closed"
note "D tries to go on anyway, from the applied position:"
try D "$(sql_fetch 1 "$C_MID" "$BATCH")
BEGIN;
$(sql_sink "$CP1" "$GEN_D" 1 worker-D "$((C_MID + 1))" 999999999)"
run D "ROLLBACK;"
check "nothing beyond the applied position is accepted (SG004)" "$SQLSTATE" SG004
check "partition 1 sink unchanged" "$(sink_count 1)" "$((C_MID + 1)) $((C_MID + 1))"

note "The on-call operator was notified (LISTEN sog_gap) and looks at sog.unresolved_gaps:"
run OPS "SELECT gap_id, consumer, stream, \"partition\", criticality, from_position, to_position, reason
  FROM sog.unresolved_gaps;"
check "the operator sees the gap" \
	"$(grep -c 'Asynchronous notification "sog_gap"' <<<"$OUT") $(val "SELECT count(*) FROM sog.unresolved_gaps WHERE gap_id = '$GAP'")" "1 1"
note "Kafka still retains offsets $((C_MID + 1))..$C_HI, so the records can be re-delivered: the operator resolves the gap as 'replayed' and the consumer re-reads from the applied position $C_MID."
run OPS "SELECT sog.resolve_gap($GAP, 'replayed', 'INC-1042: offsets $((C_MID + 1))..$C_HI still retained by Kafka; worker-D re-reads from $C_MID') \\g /dev/null
\\echo 'sog.resolve_gap($GAP, ''replayed'', ''INC-1042: ...'')'"
check "gap resolved, checkpoint running, read cursor back at applied" \
	"$(val "SELECT resolution FROM sog.gap WHERE id = $GAP") $(col "$CP1" state) $(col "$CP1" source_cursor)" \
	"replayed running $C_MID"
note "D re-reads from $C_MID (with a client build that hashes) and finishes the partition:"
LAST=$C_MID
while [ "$LAST" -lt $((EVENTS_PER_PARTITION - 1)) ]; do
	batch D "$CP1" "$GEN_D" 1 worker-D "$LAST"
done
note "D hands the partition over gracefully (sog.halt):"
run D "SELECT verdict, resume_from FROM sog.halt($CP1, $GEN_D, NULL, NULL, NULL);"
check "D halts cleanly: aligned at $LAST" \
	"$(val "SELECT verdict || ' ' || resume_from FROM sog.manifest_log WHERE checkpoint_id = $CP1 ORDER BY id DESC LIMIT 1")" \
	"aligned $LAST"
session_close D
session_close OPS
status "$CP1"

# --- f. a claim against an in-flight sink transaction ---------------------------------------

say "f. a claim waits for an in-flight sink transaction"
run B "$(sql_fetch 0 "$(col "$CP0" applied_position)" "$BATCH")
$(sql_note_read "$CP0" "$GEN_B")"
F_LO=$(get lo)
F_HI=$(get hi)
run B "SELECT pg_backend_pid() AS pid \\gset
\\echo @@pid=:pid"
B_PID=$(get pid)
run B "BEGIN;
$(sql_sink "$CP0" "$GEN_B" 0 worker-B "$F_LO" "$F_HI")"
printf '    worker-B | read %s..%s, note_read; sink transaction: %s rows written, not yet committed\n' \
	"$F_LO" "$F_HI" "$(get written)"
note "Worker E is told to take over partition 0 right now, while B's transaction is open:"
session_open E orders_sink
S_WHO[E]="worker-E"
run E "SELECT pg_backend_pid() AS pid \\gset
\\echo @@pid=:pid"
E_PID=$(get pid)
session_send E "$(sql_claim "$CP0" worker-E)"
waiting=
for _ in $(seq 1 200); do
	waiting=$(val "SELECT wait_event_type || ' ' || ($B_PID = ANY (pg_blocking_pids($E_PID)))
					 FROM pg_stat_activity WHERE pid = $E_PID")
	[ "$waiting" = "Lock true" ] && break
	sleep 0.05
done
show "SELECT pid, usename, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS blocked_by,
			 left(regexp_replace(query, '\\s+', ' ', 'g'), 48) AS query
		FROM pg_stat_activity WHERE pid IN ($B_PID, $E_PID) ORDER BY pid = $E_PID"
check "E's claim waits on a lock held by B's transaction" "$waiting" "Lock true"
note "B commits:"
run B "COMMIT;"
session_wait E
session_print E
check "E's claim saw the committed outcome: aligned at $F_HI, generation $((GEN_B + 1))" \
	"$(get verdict) $(get resume_from) $(get gen)" "aligned $F_HI $((GEN_B + 1))"
GEN_E=$(get gen)
note "(Had B rolled back instead, E would have been told to verify and replay ($((F_LO - 1)), $F_HI]; specs/claim_inflight.spec tests both outcomes.)"
try B "SELECT sog.note_read($CP0, $GEN_B, '$F_HI', NULL, 0);"
check "B, now superseded, is fenced" "$SQLSTATE" SG001
session_close B
note "E hands the partition over gracefully (sog.halt):"
run E "SELECT verdict, resume_from FROM sog.halt($CP0, $GEN_E, NULL, NULL, NULL);"
session_close E

# --- g. the proof -------------------------------------------------------------------------

say "g. proof"
step "per partition: the source against the sink"
show "SELECT s.part,
			 count(*) AS source_events,
			 (SELECT count(*) FROM orders o WHERE o.part = s.part) AS sink_rows,
			 (SELECT count(DISTINCT pos) FROM orders o WHERE o.part = s.part) AS distinct_positions,
			 count(*) FILTER (WHERE NOT EXISTS (SELECT FROM orders o WHERE o.part = s.part AND o.pos = s.pos)) AS missing,
			 count(*) FILTER (WHERE (SELECT count(*) FROM orders o WHERE o.part = s.part AND o.pos = s.pos) > 1) AS doubled,
			 count(*) FILTER (WHERE EXISTS (SELECT FROM orders o WHERE o.part = s.part AND o.pos = s.pos
												AND o.payload <> s.payload)) AS wrong_bytes
		FROM source_events s GROUP BY s.part ORDER BY s.part"
step "who wrote what"
show "SELECT part, written_by, count(*) AS events, min(pos) AS first, max(pos) AS last
		FROM orders GROUP BY part, written_by ORDER BY part, min(pos)"
step "sog.status"
show "SELECT checkpoint_id AS cp, \"partition\" AS part, state, owner, generation AS gen,
			 applied_position AS applied, source_cursor AS cursor, lag, buffered_count AS buffered,
			 open_gaps, open_recoveries
		FROM sog.status ORDER BY checkpoint_id"
step "sog.manifest_log"
show "SELECT m.id, c.\"partition\" AS part, m.generation AS gen, m.kind, m.owner, m.source_cursor AS cursor,
			 m.applied_position AS applied, m.verdict, m.resume_from, m.gap_size, m.gap_id,
			 left(m.manifest_digest, 12) AS digest
		FROM sog.manifest_log m JOIN sog.checkpoint c ON c.id = m.checkpoint_id ORDER BY m.id"
step "sog.gap"
show "SELECT g.id, c.\"partition\" AS part, g.from_position AS \"from\", g.to_position AS \"to\", g.reason,
			 g.resolution, g.note
		FROM sog.gap g JOIN sog.checkpoint c ON c.id = g.checkpoint_id ORDER BY g.id"

step "checks"
src=$(val "SELECT count(*) FROM source_events")
rows=$(val "SELECT count(*) FROM orders")
distinct=$(val "SELECT count(*) FROM (SELECT DISTINCT part, pos FROM orders) d")
lost=$(val "SELECT count(*) FROM source_events s WHERE NOT EXISTS (SELECT FROM orders o WHERE o.part = s.part AND o.pos = s.pos)")
extra=$(val "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT FROM source_events s WHERE s.part = o.part AND s.pos = o.pos AND s.payload = o.payload)")
dups=$((rows - distinct))
for part in 0 1; do
	cp=$CP0
	[ "$part" = 1 ] && cp=$CP1
	check "partition $part: count(*) = count(DISTINCT pos) = $EVENTS_PER_PARTITION" \
		"$(sink_count "$part")" "$EVENTS_PER_PARTITION $EVENTS_PER_PARTITION"
	check "partition $part: one receipt per source event, with the source's digest" \
		"$(val "SELECT count(*) FROM sog.receipts($cp) r JOIN source_events s
				  ON s.part = $part AND s.pos::sog.position OPERATOR(sog.=) r.\"position\"
				 AND sog.payload_digest(s.payload) = r.payload_digest")" "$EVENTS_PER_PARTITION"
	check "partition $part: running, applied = cursor = $((EVENTS_PER_PARTITION - 1)), no open gap" \
		"$(val "SELECT state || ' ' || applied_position || ' ' || source_cursor || ' ' || open_gaps FROM sog.status WHERE checkpoint_id = $cp")" \
		"running $((EVENTS_PER_PARTITION - 1)) $((EVENTS_PER_PARTITION - 1)) 0"
done
check "every source event in the sink" "$lost" 0
check "no sink row that is not a source event with its bytes" "$extra" 0
check "no duplicate" "$dups" 0
check "events in the sink = events in the source" "$distinct" "$src"
check "no unresolved gap" "$(val 'SELECT count(*) FROM sog.unresolved_gaps')" 0
check "no crashed backend in the server log" \
	"$(grep -cE 'terminated by signal|TRAP:' "$serverlog" || true)" 0

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "demo: FAILED (${#failures[@]} of $checks checks):"
	printf '  %s\n' "${failures[@]}"
	exit 1
fi
echo "all $checks checks passed"
echo "demo: OK ($distinct events, $lost lost, $dups duplicated)"
