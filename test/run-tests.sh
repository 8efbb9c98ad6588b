#!/usr/bin/env bash
#
# test/run-tests.sh: the whole test suite on a throwaway server; what
# `make test` (and so .ci/run) runs.
#
#  1. installs missing Debian packages (test/install-deps.sh);
#  2. copies the working tree (without .git and build or test output) to a
#     fresh temp dir, builds it there with -Werror and assertions, and
#     installs it into the system's PostgreSQL $PG_MAJOR (root, or sudo);
#  3. starts a private cluster in the temp dir (unix socket only, no TCP);
#  4. runs the suites one at a time, so that a failing one does not hide
#     the next: pg_regress (REGRESS), isolation (ISOLATION) and TAP (prove
#     on t/*.pl, which start their own clusters), each through PGXS's
#     `make installcheck`; the alert rules, the spin model, the benchmark's
#     scripts, the short soak (its own cluster with pg_cron), the short
#     demo on a real broker, the short reliability
#     loops, the README's Python example, the complete Python consumer on
#     a real Redis under faults, and finally the fuzzer
#     (test/fuzz.sh), whose corpus is then fed to the server as
#     sog.position text;
#  5. prints the diffs and logs of what failed, and ends with the line
#     `make test: N passed, M failed` counting the suites (each suite's line
#     gives the seconds it took).
#
# initdb and postgres refuse to run as root, so as root every server-side
# step runs as the `postgres` OS user (runuser), in the temp dir it owns.
# As another user, everything runs as that user and installs go through sudo.
#
# Environment:
#   SOG_TEST_PORT  port of the throwaway server (default: first free of
#                  54390-54399; it only names the socket, no TCP listener)
#   SKIP_FUZZ=1    skip the fuzzer and the corpus feed
#   SKIP_DEMO=1    skip the short JetStream demo and its checker self-test
#   SKIP_RELIABILITY=1  skip the short reliability loops and their checker
#                  self-test
#   FUZZ_SECONDS   how long to fuzz (default 60)
#   KEEP_TMP=1     keep the temp dir (cluster data, logs, results) for a look
#   PG_MAJOR       PostgreSQL major version to test against (default 15)
#   SOG_SUITES     the suites to run, by name (default: all of them, in
#                  the order of all_suites below; also `corpus`, the fuzz
#                  corpus fed to the server without the fuzzer)
#   SOG_DEPS       which set of test/install-deps.sh to install (default
#                  all; make test-versions uses `server`)
#   SOG_RUN_LABEL  what the last line calls the run (default "make test")
# Make variables given to `make test` (e.g. `make test REGRESS=position`)
# reach the inner `make installcheck` through MAKEFLAGS as usual.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
srcdir=$(pwd)

PG_MAJOR=${PG_MAJOR:-15}
SKIP_FUZZ=${SKIP_FUZZ:-0}
KEEP_TMP=${KEEP_TMP:-0}
export FUZZ_SECONDS=${FUZZ_SECONDS:-60}

# --- helpers ---------------------------------------------------------------

say() { printf '\n=== %s\n' "$*"; }

passed=0
failed=0
summary=()
suite_started=$SECONDS
suite_result() {		# suite_result NAME passed|failed|skipped [why]
	local line="$1: $2${3:+ ($3)} [$((SECONDS - suite_started)) s]"
	suite_started=$SECONDS
	summary+=("$line")
	case $2 in
		passed) passed=$((passed + 1)) ;;
		failed) failed=$((failed + 1)) ;;
	esac
	echo "$line"
}

# run_suite NAME NEEDS [SKIP_VAR] -- CMD...: NAME passed when CMD exits 0.
# NEEDS is build (not run, and failed, when the build failed), server (the
# same when the test server is down) or none; SKIP_VAR names a variable
# that, set to 1, skips the suite.
run_suite() {
	local name=$1 needs=$2 skip=
	shift 2
	if [ "$1" != -- ]; then
		skip=$1
		shift
	fi
	shift
	if [ "$needs" = build ] && [ "$built" != 1 ]; then
		suite_result "$name" failed "not run: the build failed"
	elif [ "$needs" = server ] && [ "$server_up" != 1 ]; then
		suite_result "$name" failed "not run: $no_server"
	elif [ -n "$skip" ] && [ "${!skip:-0}" = 1 ]; then
		suite_result "$name" skipped "$skip=1"
	elif "$@"; then
		suite_result "$name" passed
	else
		suite_result "$name" failed
	fi
}

# Print a file, at most $2 lines of it (default 2000), under a heading.
show() {
	local f=$1 max=${2:-2000} n
	[ -s "$f" ] || return 0
	n=$(wc -l <"$f")
	echo "----- $f ($n lines) -----"
	head -n "$max" "$f"
	if [ "$n" -gt "$max" ]; then
		echo "----- ($((n - max)) more lines; KEEP_TMP=1 keeps the file) -----"
	fi
}

source "$srcdir/test/lib.sh"
as_root() { sog_as_root "$@"; }

# --- 1. dependencies ----------------------------------------------------------

say "dependencies"
PG_MAJOR=$PG_MAJOR bash test/install-deps.sh "${SOG_DEPS:-all}"

# The real PostgreSQL bindir first in PATH, for us and for everything we start
# (some machines put their own initdb in /usr/local/bin).
pgbin=/usr/lib/postgresql/$PG_MAJOR/bin
if [ ! -x "$pgbin/pg_config" ]; then
	echo "run-tests: $pgbin/pg_config not found; is postgresql-server-dev-$PG_MAJOR installed?" >&2
	exit 1
fi
pgbin=$("$pgbin/pg_config" --bindir)
export PATH="$pgbin:$PATH"
PG_CONFIG=$pgbin/pg_config
makeopts=(with_llvm=no "PG_CONFIG=$PG_CONFIG")

# Pick the port: the first of 54390..54399 with neither a TCP listener nor a
# socket in /tmp, unless SOG_TEST_PORT says which.
port=${SOG_TEST_PORT:-$(sog_first_free_port 54390 54399 || echo 54390)}

# --- the temp dir, and cleanup ------------------------------------------------

tmp=$(mktemp -d /tmp/sog-test.XXXXXX)
tree=$tmp/src					# the copy of the working tree we build and test
data=$tmp/data
sock=$tmp/sock
serverlog=$tmp/server.log
server_up=0

# Run a command as the server's OS user, with the test environment.
as_pg() {
	local envs=(PATH="$PATH" PGHOST="$sock" PGPORT="$port" PGUSER=postgres
		PGDATABASE=postgres TMPDIR="$tmp/tmp")
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME="$tmp" "${envs[@]}" "$@"
	else
		env "${envs[@]}" "$@"
	fi
}

cleanup() {
	local rc=$?
	if [ -f "$tmp/python-consumer/redis.pid" ]; then
		kill "$(cat "$tmp/python-consumer/redis.pid")" 2>/dev/null || true
	fi
	if [ -f "$data/postmaster.pid" ]; then
		as_pg pg_ctl -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ "$KEEP_TMP" != 1 ]; then
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The regression tests load the contract's vectors from test/contract-v1.json,
# a copy of the shared contract-v1.json kept in the repository so that a clone
# is self-contained.  Where the shared original sits beside the clone (as in
# CI), the copy must be identical to it.
say "contract vectors"
shared_vectors=$srcdir/../shared/testvectors/contract-v1.json
if [ ! -f "$shared_vectors" ]; then
	echo "vectors: no ../shared/testvectors/contract-v1.json beside the clone; using test/contract-v1.json"
elif cmp -s "$shared_vectors" "$srcdir/test/contract-v1.json"; then
	echo "vectors: test/contract-v1.json is identical to ../shared/testvectors/contract-v1.json"
else
	echo "vectors: test/contract-v1.json differs from ../shared/testvectors/contract-v1.json:"
	diff "$shared_vectors" "$srcdir/test/contract-v1.json" | head -20
	suite_result vectors failed "the copy is stale: cp ../shared/testvectors/contract-v1.json test/"
fi

# --- 2. build and install -------------------------------------------------------

say "build (copy of the working tree in $tree)"
if [ "$KEEP_TMP" = 1 ]; then
	echo "run-tests: KEEP_TMP=1, $tmp stays after the run (server log: $serverlog)"
fi
mkdir -p "$tree" "$sock" "$tmp/tmp" "$tmp/fuzz-inputs"
# A fresh copy, so that stale objects of an earlier build without -Werror
# cannot hide warnings, and test output never lands in the working tree.
sog_copy_tree "$srcdir" "$tree"

# -DUSE_ASSERT_CHECKING: Debian's server is built without assertions, but
# Assert() in our own code still works: it calls ExceptionalCondition(),
# which the server exports in every build (checked on Debian's 15: the module
# links, loads, and a failing Assert aborts the backend with a TRAP line).
built=0
if make -C "$tree" "${makeopts[@]}" \
	PG_CFLAGS="-Wall -Wextra -Werror -Wno-unused-parameter -DUSE_ASSERT_CHECKING" &&
	as_root make -C "$tree" "${makeopts[@]}" install; then
	built=1
else
	echo "run-tests: the build or install failed (see above)"
fi

if [ "$(id -u)" -eq 0 ]; then
	chown -R postgres: "$tmp"
fi

# --- 3. the throwaway cluster -----------------------------------------------------

# initdb and start a server that listens only on a socket in the temp dir.
start_cluster() {
	as_pg initdb -D "$data" -A trust -U postgres --locale=C -E UTF8 >"$tmp/initdb.log" 2>&1 || return 1
	as_pg pg_ctl -D "$data" -l "$serverlog" -w \
		-o "-c port=$port -c listen_addresses='' -c unix_socket_directories='$sock'" \
		start >/dev/null || return 1
	server_up=1
}

no_server="the build failed"
if [ "$built" = 1 ]; then
	say "cluster (port $port, socket in $sock)"
	if start_cluster; then
		echo "server up: $(as_pg psql -X -At -c 'SELECT version()')"
	else
		no_server="the cluster did not start"
		echo "run-tests: $no_server"
		show "$tmp/initdb.log" 50
		show "$serverlog" 50
	fi
fi

# --- 4. the suites ------------------------------------------------------------------

# What the Makefile (and any make variables given to `make test`) set.
makevar() {
	make -s --no-print-directory -C "$tree" -f Makefile -f - "${makeopts[@]}" \
		"print-$1" <<'EOF'
print-%:
	@echo '$($*)'
EOF
}

# One suite: installcheck with the two other kinds switched off.
installcheck() {
	as_pg make -C "$tree" --no-print-directory "${makeopts[@]}" installcheck "$@"
}

# pg_regress stops at the first test without an expected file; show what
# such tests printed, so that whoever writes them can review and adopt it.
missing_expected() {		# missing_expected RESULTS_DIR "TEST..."
	local t
	for t in $2; do
		if [ ! -f "$tree/test/expected/$t.out" ] && [ -f "$1/$t.out" ]; then
			echo "run-tests: test/expected/$t.out does not exist; what the test printed:"
			show "$1/$t.out" 300
		fi
	done
}

# Each suite is a function that ends with one suite_result line; the list
# below is the order they run in.  SOG_SUITES (space-separated names) runs
# only those: make test-versions runs the ones that need a server and no
# broker against each PostgreSQL major (test/versions/run.sh says which).
all_suites="released-scripts docs getting-started regress isolation tap alerts model portable portable-regress seq-diff bench-smoke bench-soak demo reliability reliability-portable reliability-checker python-example python-consumer fuzz"

# A released version's install script is never edited again (CHANGELOG):
# test/released.sha256 holds the checksum of each as released.
suite_released_scripts() {
	if (cd "$srcdir" && sha256sum --check --strict test/released.sha256); then
		suite_result released-scripts passed
	else
		echo "run-tests: a released install script changed; put the change in the next version's upgrade script"
		suite_result released-scripts failed
	fi
}

# The README and docs/ against the tree and the installed extension: every
# path they name exists, every function of the SQL reference has the
# signature it gives, nothing callable is left out, every SQLSTATE named is
# raised, no reference to a document outside the repository
# (test/docs-check.pl).
suite_docs() {
	if [ "$server_up" != 1 ]; then
		suite_result docs failed "not run: $no_server"
	elif as_pg psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sog_docs' &&
		as_pg psql -X -q -v ON_ERROR_STOP=1 -d sog_docs -c 'CREATE EXTENSION stream_offset_guard' &&
		as_pg env PGDATABASE=sog_docs perl "$tree/test/docs-check.pl" "$tree"; then
		suite_result docs passed
	else
		suite_result docs failed
	fi
}

# The README's getting-started session: examples/getting-started.sql run in
# a fresh database with psql as a reader pastes it must print exactly
# examples/getting-started.out, and the README must quote that output
# verbatim (the block after its "<!-- getting-started -->" line).
suite_getting_started() {
	local out=$tmp/getting-started.out
	if [ "$server_up" != 1 ]; then
		suite_result getting-started failed "not run: $no_server"
		return
	fi
	as_pg psql -X -q -v ON_ERROR_STOP=0 -c 'CREATE DATABASE sog_start' &&
		as_pg psql -X -a -q -d sog_start <"$tree/examples/getting-started.sql" >"$out" 2>&1
	# the fencing detail says when the new generation took over: not compared
	local mask='s/took the checkpoint over at [0-9][-0-9 :.+]*\./took the checkpoint over at (time)./'
	if ! diff -u <(sed "$mask" "$tree/examples/getting-started.out") <(sed "$mask" "$out"); then
		echo "run-tests: examples/getting-started.sql no longer prints examples/getting-started.out (the diff above)"
		suite_result getting-started failed
	elif ! awk '/^<!-- getting-started -->$/{f=1; next} f && /^```/{if (++n == 2) exit; next} f && n == 1' "$tree/README.md" |
		cmp -s - "$tree/examples/getting-started.out"; then
		echo "run-tests: README.md's getting-started block is not examples/getting-started.out verbatim"
		suite_result getting-started failed
	else
		suite_result getting-started passed
	fi
}

suite_regress() {
	local regress_tests problems
	regress_tests=$(makevar REGRESS 2>/dev/null || true)
	if [ "$server_up" != 1 ]; then
		suite_result regress failed "not run: $no_server"
	elif [ -z "${regress_tests// /}" ]; then
		suite_result regress skipped "REGRESS is empty"
	elif installcheck ISOLATION= TAP_TESTS=; then
		# amcheck over everything the regression tests left in the extension's
		# relations (the isolation specs and TAP tests check their own)
		problems=$(as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d contrib_regression \
			-c 'SET client_min_messages = warning' -c 'CREATE EXTENSION IF NOT EXISTS amcheck' \
			-c "SELECT coalesce(string_agg(relation || ': ' || problem, E'\n'), '') FROM sog.verify_storage()" 2>&1) ||
			problems=${problems:-"sog.verify_storage() failed"}
		if [ -z "$problems" ]; then
			echo "amcheck: verify_heapam and bt_index_check (heapallindexed) find nothing in the extension's relations"
			suite_result regress passed
		else
			echo "amcheck after the regression tests:"
			echo "$problems"
			suite_result regress failed "amcheck"
		fi
	else
		show "$tree/test/regression.diffs"
		missing_expected "$tree/test/results" "$regress_tests"
		suite_result regress failed
	fi
}

suite_isolation() {
	local isolation_tests
	isolation_tests=$(makevar ISOLATION 2>/dev/null || true)
	if [ "$server_up" != 1 ]; then
		suite_result isolation failed "not run: $no_server"
	elif [ -z "${isolation_tests// /}" ]; then
		suite_result isolation skipped "ISOLATION is empty"
	elif installcheck REGRESS= TAP_TESTS=; then
		suite_result isolation passed
	else
		show "$tree/test/output_iso/regression.diffs"
		missing_expected "$tree/test/output_iso/results" "$isolation_tests"
		suite_result isolation failed
	fi
}

suite_tap() {
	local tap_enabled f
	tap_enabled=$(makevar TAP_TESTS 2>/dev/null || true)
	if [ "$built" != 1 ]; then
		suite_result tap failed "not run: the build failed"
	elif [ -z "$tap_enabled" ]; then
		suite_result tap skipped "TAP_TESTS is not set"
	elif ! compgen -G "$tree/t/*.pl" >/dev/null; then
		suite_result tap skipped "no t/*.pl"
	elif installcheck REGRESS= ISOLATION=; then
		suite_result tap passed
	else
		for f in "$tree"/tmp_check/log/*; do
			[ -f "$f" ] || continue
			echo "----- tail of $f -----"
			tail -n 60 "$f"
		done
		suite_result tap failed
	fi
}

# The example alert rules: promtool (Debian's prometheus) checks their
# syntax and runs their unit tests (monitoring/alerts_test.yml).
suite_alerts() {
	if ! command -v promtool >/dev/null 2>&1; then
		suite_result alerts failed "promtool is missing: test/install-deps.sh installs prometheus"
	elif (cd "$srcdir/monitoring" && promtool check rules alerts.yml && promtool test rules alerts_test.yml); then
		suite_result alerts passed
	else
		suite_result alerts failed
	fi
}

# The protocol, model-checked (model/README.md): spin must verify the
# model of the C code's protocol, must find the counterexample when the
# bug issue 8 fixed is restored, and must catch a broken variant of each
# property (--mutants).  About 4 minutes; no server needed.
suite_model() {
	run_suite model none -- bash "$srcdir/model/run.sh"
	say "model bug flag"
	if bash "$srcdir/model/run.sh" --bug; then
		suite_result model-bug passed
	else
		suite_result model-bug failed "spin did not find the restored bug"
	fi
	say "model mutants"
	if bash "$srcdir/model/run.sh" --mutants; then
		suite_result model-mutants passed
	else
		suite_result model-mutants failed "a broken variant of a property was not caught"
	fi
}

# The portable edition (docs/portable.md; test/portable/run.sh): built from
# the tree, installed through pg_tle by a role that is not a superuser and
# by the plain script, checked against the contract's vectors and, answer by
# answer, against the C edition installed above.  Its own clusters, on
# sockets of their own.  So far the 1.0 script up to sog.register
# (positions, hashes, halt evaluation, the tables and their guard trigger).
suite_portable() {
	run_suite portable build -- bash "$srcdir/test/portable/run.sh" --major "${PG_MAJOR:-15}"
}

# The C edition's regression files and isolation specs, with their expected
# files (test/portable/expected/ where a domain over text or PL/pgSQL must
# answer otherwise, each kind explained there), against the portable
# edition installed through pg_tle by a role that is not a superuser; and
# t/015, a database moved from the C edition to the portable one and back
# by pg_dump and pg_restore (test/portable/regress.sh).
suite_portable_regress() {
	run_suite portable-regress build -- bash "$srcdir/test/portable/regress.sh" --major "${PG_MAJOR:-15}"
}

# The stateful differential (test/portable/seq_README.md): about 10,000
# random calls, right and wrong, sent to two databases side by side and
# every answer, error and state compared, with invariants checked on the
# first (no effect twice, no noted record lost without a gap row) and every
# verdict and SQLSTATE reached; two self-tests plant a difference that must
# be reported.  A is the C edition, B the portable edition installed
# through pg_tle by a role that is not a superuser (--b-portable; only the
# differences docs/portable.md lists are accepted, and counted).
suite_seq_diff() {
	run_suite seq-diff build -- bash "$srcdir/test/portable/seq_run.sh" --b-portable --major "${PG_MAJOR:-15}"
}

# The benchmark's scripts, once each for about a second against the test
# cluster: they must not rot.  No timing is asserted.
suite_bench_smoke() {
	run_suite bench-smoke server -- as_pg bash "$tree/test/bench-smoke.sh"
}

# The soak (bench/soak.sh, make bench-soak) in its short mode: every run
# (one checkpoint with retention, several checkpoints, retention off), the
# sampler, the pruner, the report and its plots, all on a few million
# events.  It starts its own cluster (pg_cron preloaded) on a socket of its
# own, with the extension installed above (SOAK_INSTALL=0), and stops it.
# No timing is asserted; docs/ is not written (SOAK_PUBLISH=0).
suite_bench_soak() {
	local soak_port
	if [ "$built" != 1 ]; then
		suite_result bench-soak failed "not run: the build failed"
		return
	fi
	soak_port=$(sog_first_free_port 54460 54469) || {
		suite_result bench-soak failed "no free port in 54460-54469"
		return
	}
	run_suite bench-soak none -- env SOAK_SHORT=1 SOAK_INSTALL=0 SOAK_PUBLISH=0 PG_MAJOR="$PG_MAJOR" \
		SOAK_DIR="$tmp/soak" SOAK_PORT="$soak_port" SOAK_OUT="$tmp/soak-results" bash "$tree/bench/soak.sh"
}

# The main job on a real broker, short: the JetStream consumer under every
# fault of `make demo` (a few thousand events), the checker's invariants;
# then the checker itself, shown to catch a consumer that writes every row
# (duplicates) and one that resumes from its own cursor (losses).  They
# start their own PostgreSQL and nats-server on 127.0.0.1.
suite_demo() {
	run_suite demo build SKIP_DEMO -- env DEMO_SHORT=1 SOG_SRC="$tree" PG_CONFIG="$PG_CONFIG" \
		DEMO_OUT="$tmp" bash "$tree/examples/jetstream_demo/demo.sh"
	say "demo checker self-test"
	run_suite demo-checker build SKIP_DEMO -- env SOG_SRC="$tree" PG_CONFIG="$PG_CONFIG" \
		bash "$tree/examples/jetstream_demo/checker-selftest.sh"
}

# Reliability under faults (test/reliability/): the short version of every
# fault loop (backend and postmaster kills, zombies, timeouts and cancels,
# racing recoveries, a standby failover, concurrent DDL and pg_dump, disk
# full), fsync on, the offline checker at zero anomalies.  They start their
# own clusters on private sockets.
suite_reliability() {
	run_suite reliability build SKIP_RELIABILITY -- env PG_CONFIG="$PG_CONFIG" \
		bash "$tree/test/reliability/run.sh" --short
}

# The same loops against the portable edition (docs/portable.md): its plain
# script built from the tree and installed in each scenario's database by
# a role that is not a superuser; five scenarios (baseline, backend-kill,
# zombie, recovery-race, standby-failover), about 2 minutes
# (test/reliability/README.md, "The portable edition").  SKIP_RELIABILITY=1
# skips it too.
suite_reliability_portable() {
	run_suite reliability-portable build SKIP_RELIABILITY -- env PG_CONFIG="$PG_CONFIG" \
		bash "$tree/test/reliability/run.sh" --short --portable
}

# The offline checker of the reliability loops, shown to catch broken
# consumers (what it checks does not depend on the major).
suite_reliability_checker() {
	run_suite reliability-checker build SKIP_RELIABILITY -- env PG_CONFIG="$PG_CONFIG" \
		bash "$tree/test/reliability/run.sh" --selftest
}

# The short Python example (examples/python/sink.py), run against the test
# cluster, and the documents quoting what was run verbatim: the README's
# python block is a run of at least 20 whole lines of the complete example,
# examples/python/consumer.py (its core loop; the suite python-consumer
# runs it), and docs/consumer.md quotes the whole of sink.py.
readme_quotes_python() {
	python3 - "$tree/README.md" "$tree/examples/python/consumer.py" "$tree/docs/consumer.md" "$tree/examples/python/sink.py" <<'PY'
import re, sys
readme, complete = (open(f).read() for f in sys.argv[1:3])
sink = open(sys.argv[4]).read()
blocks = re.findall(r"^```python\n(.*?)^```$", readme, re.M | re.S)
ok = len(blocks) == 1 and blocks[0].count("\n") >= 20 and ("\n" + blocks[0]) in ("\n" + complete)
# docs/consumer.md quotes the whole file
guide = open(sys.argv[3]).read()
whole = [b for b in re.findall(r"^```python\n(.*?)^```$", guide, re.M | re.S) if b.startswith('"""A consumer\'s sink')]
ok = ok and len(whole) == 1 and whole[0] == sink
sys.exit(0 if ok else 1)
PY
}
suite_python_example() {
	if [ "$server_up" != 1 ]; then
		suite_result python-example failed "not run: $no_server"
	elif ! readme_quotes_python; then
		echo "run-tests: README.md's python block is not whole lines of examples/python/consumer.py, or docs/consumer.md's is not the whole of examples/python/sink.py, verbatim"
		suite_result python-example failed
	elif as_pg psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sog_python' &&
		as_pg psql -X -q -v ON_ERROR_STOP=1 -d sog_python -c 'CREATE EXTENSION stream_offset_guard' &&
		as_pg env PGDATABASE=sog_python /usr/bin/python3 "$tree/examples/python/check_sink.py"; then
		suite_result python-example passed
	else
		suite_result python-example failed
	fi
}

# The complete Python consumer (examples/python/consumer.py) on a real Redis
# under faults: drive_consumer.py produces into three streams while it kills
# the workers, terminates their backends, expires their page tokens, runs
# zombies, trims and deletes records while a worker is down and replaces a
# stream, acting as operator too (it resolves each gap); check_consumer.py,
# sharing no code with the consumer, proves that every produced event is in
# the sink once or inside exactly one gap row, and that every verdict and
# fault was met.  Debian's redis-server, started here as the test user on a
# unix socket in the temp dir (no TCP), and stopped.  About 30 s; no timing
# is asserted.
suite_python_consumer() {
	local dir=$tmp/python-consumer ok=0 f
	local url=unix://$dir/redis.sock
	if [ "$server_up" != 1 ]; then
		suite_result python-consumer failed "not run: $no_server"
		return
	fi
	if ! sog_install_packages redis-server python3-redis python3-psycopg; then
		suite_result python-consumer failed "could not install redis-server, python3-redis"
		return
	fi
	mkdir -p "$dir"
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$dir"
	fi
	if as_pg redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --dir "$dir" --pidfile "$dir/redis.pid" \
		--logfile "$dir/redis.log" --daemonize yes &&
		for _ in $(seq 50); do [ -S "$dir/redis.sock" ] && break; sleep 0.1; done &&
		as_pg psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sog_redis' &&
		as_pg psql -X -q -v ON_ERROR_STOP=1 -d sog_redis -c 'CREATE EXTENSION stream_offset_guard' &&
		as_pg env PGDATABASE=sog_redis /usr/bin/python3 "$tree/examples/python/drive_consumer.py" \
			--redis "$url" --out "$dir" >"$dir/drive.out" 2>&1; then
		tail -n 1 "$dir/drive.out"
		as_pg env PGDATABASE=sog_redis /usr/bin/python3 "$tree/examples/python/check_consumer.py" \
			--redis "$url" --out "$dir" && ok=1
	else
		show "$dir/drive.out" 200
		for f in $(ls -t "$dir"/worker-*.log 2>/dev/null | head -n 4); do
			echo "----- tail of $f -----"
			tail -n 30 "$f"
		done
		show "$dir/redis.log" 30
	fi
	if [ -f "$dir/redis.pid" ]; then
		kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
		rm -f "$dir/redis.pid"
	fi
	if [ "$ok" = 1 ]; then
		suite_result python-consumer passed
	else
		suite_result python-consumer failed
	fi
}

# The fuzzer, then its corpus through the server's input function.  A
# corpus input that is valid UTF-8 without a NUL byte (what text can hold)
# must either be accepted, with the canonical text a reference in SQL
# computes, or be rejected with 22P02; any other error, a disagreement, or
# a crashed backend fails the suite.
feed_corpus() {
	local out
	cp -r "$srcdir/test/fuzz/seeds/." "$tmp/fuzz-inputs/"
	if [ -d "$srcdir/test/fuzz/corpus" ]; then
		cp -r "$srcdir/test/fuzz/corpus/." "$tmp/fuzz-inputs/"
	fi
	if [ "$(id -u)" -eq 0 ]; then
		chown -R postgres: "$tmp/fuzz-inputs"
	fi
	as_pg psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE sog_fuzz' || return 1
	out=$(as_pg psql -X -q -At -F ' ' -v ON_ERROR_STOP=1 -d sog_fuzz \
		-v dir="$tmp/fuzz-inputs" -f "$tree/test/fuzz/corpus_oracle.sql") || return 1
	local acc rej skip bad
	read -r acc rej skip bad <<<"$out"
	echo "fuzz: fed $((acc + rej)) corpus inputs to the server as sog.position: $acc accepted, $rej rejected with 22P02, $bad wrong; $skip skipped (not UTF-8 text or a NUL byte)"
	[ "$bad" = 0 ]
}

# The server answers, and its log, from byte $1 on (default: all of it),
# shows no crashed backend and no failed assertion.
server_healthy() {
	local from=${1:-0} ok=0
	as_pg psql -X -At -c 'SELECT 1' >/dev/null || { echo "run-tests: the server does not answer"; ok=1; }
	if tail -c +"$((from + 1))" "$serverlog" | grep -E 'terminated by signal|TRAP:'; then
		echo "run-tests: a backend crashed (lines above, from $serverlog)"
		ok=1
	fi
	return $ok
}

suite_fuzz() {
	local logstart
	if [ "$SKIP_FUZZ" = 1 ]; then
		suite_result fuzz skipped "SKIP_FUZZ=1"
	elif ! bash test/fuzz.sh; then
		suite_result fuzz failed
	elif [ "$server_up" != 1 ]; then
		suite_result fuzz failed "the fuzzer passed, but the corpus feed did not run: $no_server"
	else
		logstart=$(stat -c %s "$serverlog")
		if feed_corpus && server_healthy "$logstart"; then
			suite_result fuzz passed
		else
			show "$serverlog" 200
			suite_result fuzz failed
		fi
	fi
}

# Only the server's side of the fuzzer: the committed seeds (and the corpus,
# where an earlier `make fuzz` left one) through the input function.  What
# make test-versions runs on each major, where there is no clang.
suite_corpus() {
	local logstart
	if [ "$server_up" != 1 ]; then
		suite_result corpus failed "not run: $no_server"
		return
	fi
	logstart=$(stat -c %s "$serverlog")
	if feed_corpus && server_healthy "$logstart"; then
		suite_result corpus passed
	else
		show "$serverlog" 200
		suite_result corpus failed
	fi
}

SOG_SUITES=${SOG_SUITES:-$all_suites}
for suite in $SOG_SUITES; do
	fn=suite_${suite//-/_}
	if ! declare -F "$fn" >/dev/null; then
		suite_result "$suite" failed "no such suite (SOG_SUITES names: $all_suites corpus)"
		continue
	fi
	say "$suite"
	suite_started=$SECONDS
	"$fn"
done

# A backend that crashed at any point fails the run, even where the suite
# that made it crash did not notice.
if [ "$server_up" = 1 ] && ! server_healthy >/dev/null; then
	server_healthy || true
	suite_result server failed "a backend crashed or the server is down"
fi

# --- 5. summary -------------------------------------------------------------------

say "summary"
printf '%s\n' "${summary[@]}"
echo "${SOG_RUN_LABEL:-make test}: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
