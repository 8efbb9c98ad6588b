# examples/jetstream_demo/lib.sh: what demo.sh and checker-selftest.sh share:
# dependencies, the build, the throwaway servers, consumers and faults.
# Sourced, not run.  Everything lives in one temp dir, removed at exit with
# the servers and every process this script started (KEEP=1 keeps them).
#
# Environment:
#   PG_CONFIG    pg_config of the PostgreSQL to build against and run
#                (default /usr/lib/postgresql/15/bin/pg_config)
#   KEEP=1       leave the servers and the temp dir behind, for a look
#   SOG_SRC      the extension tree to build (default: this checkout)

demo_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
demo_src=$(cd "$demo_here/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
SOG_SRC=${SOG_SRC:-$demo_src}
KEEP=${KEEP:-0}

die() {
	echo "demo: FAILED: $*" >&2
	exit 1
}
say() { printf '\n=== %s\n' "$*"; }
now() { date +%s.%3N; }

# as root, sudo, ports, packages: the project's shell library
source "$demo_src/test/lib.sh"
as_root() { sog_as_root "$@"; }
as_pg() { sog_as_pg "$@"; }

# --- dependencies ------------------------------------------------------------

# Debian 12 packages: the server and its headers (PGXS), the broker, the two
# client libraries, and the compiler.  Only what is missing is installed.
install_deps() {
	sog_install_packages postgresql-15 postgresql-server-dev-15 nats-server libnats-dev \
		libpq-dev libssl-dev pkg-config gcc make perl || die "cannot install the demo's packages"
}

# --- the temp dir and cleanup -------------------------------------------------

nats_pid=
pg_data=

demo_cleanup() {
	local rc=$? pid
	trap - EXIT
	if [ "$KEEP" = 1 ]; then
		echo "KEEP=1: servers left running; files in $tmp"
		echo "  psql -h $tmp/sock -p $pg_port -U postgres demo; nats on $nats_url (pid $nats_pid)"
		echo "  stop: kill $nats_pid; pg_ctl -D $pg_data -m fast stop; rm -rf $tmp"
		exit "$rc"
	fi
	if [ -f "$tmp/pids" ]; then	# every background process we started
		while read -r pid; do
			kill -KILL "$pid" 2>/dev/null || true
		done <"$tmp/pids"
	fi
	[ -n "$nats_pid" ] && kill "$nats_pid" 2>/dev/null || true
	if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
		as_pg pg_ctl -D "$pg_data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	wait 2>/dev/null || true
	rm -rf "$tmp"
	exit "$rc"
}

demo_init() {
	tmp=$(mktemp -d /tmp/sog-jetstream.XXXXXX)
	mkdir -p "$tmp/logs" "$tmp/build"
	trap demo_cleanup EXIT
	trap 'exit 130' INT TERM
}

# --- build -----------------------------------------------------------------------

# The extension from a copy of the tree (nothing is written into the
# checkout), installed where PG_CONFIG says; then the consumer and the
# demo's tools.
build_all() {
	local ext=$tmp/build/ext dest
	[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found (set PG_CONFIG)"
	pgbin=$("$PG_CONFIG" --bindir)
	export PATH="$pgbin:$PATH"
	mkdir -p "$ext"
	tar -C "$SOG_SRC" -cf - --exclude=.git --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' --exclude=results --exclude=tmp_check --exclude=output_iso . |
		tar -C "$ext" -xf -
	make -C "$ext" -j2 with_llvm=no PG_CONFIG="$PG_CONFIG" >"$tmp/build/ext.log" 2>&1 ||
		{ tail -30 "$tmp/build/ext.log"; die "building the extension failed"; }
	dest=$("$PG_CONFIG" --pkglibdir)
	if [ -w "$dest" ]; then
		make -C "$ext" with_llvm=no PG_CONFIG="$PG_CONFIG" install >>"$tmp/build/ext.log" 2>&1
	else
		as_root make -C "$ext" with_llvm=no PG_CONFIG="$PG_CONFIG" install >>"$tmp/build/ext.log" 2>&1
	fi || { tail -30 "$tmp/build/ext.log"; die "installing the extension failed"; }
	echo "extension: built and installed into $dest"
	cp -r "$demo_src/examples/jetstream_consumer" "$tmp/build/consumer"
	cp -r "$demo_src/examples/jetstream_demo" "$tmp/build/tools"
	# libpq and libnats through pkg-config (libpq-dev), whatever PG_CONFIG says
	make -C "$tmp/build/consumer" PG_CONFIG= >"$tmp/build/consumer.log" 2>&1 ||
		{ cat "$tmp/build/consumer.log"; die "building the consumer failed"; }
	make -C "$tmp/build/tools" >"$tmp/build/tools.log" 2>&1 ||
		{ cat "$tmp/build/tools.log"; die "building the demo tools failed"; }
	consumer_bin=$tmp/build/consumer/sog_jetstream_consumer
	tool=$tmp/build/tools/demo_tool
	checker=$tmp/build/tools/demo_check
	echo "consumer: $consumer_bin"
}

# --- servers ------------------------------------------------------------------------

first_free_port() {		# FROM TO
	sog_first_free_port "$1" "$2" || die "no free port in $1-$2"
}

# A throwaway cluster on 127.0.0.1 and a private socket.  Roles log in over
# TCP with a password (one for the whole throwaway cluster); the checker and
# the set-up use the socket as the superuser.
start_postgres() {
	pg_port=$(first_free_port 55400 55449)
	pg_data=$tmp/pg/data
	mkdir -p "$tmp/pg" "$tmp/sock"
	PGPASSWORD=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	export PGPASSWORD
	printf '%s\n' "$PGPASSWORD" >"$tmp/pg/pw"
	if [ "$(id -u)" -eq 0 ]; then
		chmod 711 "$tmp"
		chown -R postgres: "$tmp/pg" "$tmp/sock"
	fi
	as_pg initdb -D "$pg_data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
		--pwfile="$tmp/pg/pw" --locale=C -E UTF8 >"$tmp/pg/initdb.log" 2>&1 ||
		{ cat "$tmp/pg/initdb.log"; die "initdb failed"; }
	cat >>"$pg_data/postgresql.conf" <<-EOF
		listen_addresses = '127.0.0.1'
		port = $pg_port
		unix_socket_directories = '$tmp/sock'
		track_commit_timestamp = on		# the checker proves fencing with it
		recovery_init_sync_method = syncfs	# a faster restart after the crash
		max_connections = 50
	EOF
	pg_start
	admin_conn="host=$tmp/sock port=$pg_port user=postgres dbname=demo"
	psql -X -q -h "$tmp/sock" -p "$pg_port" -U postgres -d postgres -c 'CREATE DATABASE demo'
	echo "postgres: $(psql -X -At -d "$admin_conn" -c 'SHOW server_version') on 127.0.0.1:$pg_port"
}
pg_start() {
	as_pg pg_ctl -D "$pg_data" -l "$tmp/pg/server.log" -w start >/dev/null ||
		{ tail -20 "$tmp/pg/server.log"; die "PostgreSQL did not start"; }
}
sql() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$admin_conn" "$@"; }

# nats-server with JetStream, loopback only, its store in the temp dir.
start_nats() {
	local i
	nats_port=$(first_free_port 14222 14239)
	nats_url=nats://127.0.0.1:$nats_port
	mkdir -p "$tmp/nats"
	: >"$tmp/nats/server.log"
	nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$tmp/nats" \
		>"$tmp/nats/server.log" 2>&1 &
	nats_pid=$!
	echo "$nats_pid" >"$tmp/nats/pid"
	for i in $(seq 100); do
		grep -q 'Server is ready' "$tmp/nats/server.log" && break
		sleep 0.05
	done
	grep -q 'Server is ready' "$tmp/nats/server.log" ||
		{ cat "$tmp/nats/server.log"; die "nats-server did not start"; }
	echo "nats: $(nats-server --version) with JetStream on 127.0.0.1:$nats_port"
}

# The extension, the sink, the offsets table of the baseline, and a role
# that may run consumers (scoped to the consumer names, where the installed
# version supports it) and write the sink.
setup_db() {
	sql <<-'EOF'
		CREATE EXTENSION stream_offset_guard;
		CREATE TABLE sink_events (stream text NOT NULL, seq bigint NOT NULL,
		                          gen bigint NOT NULL, body bytea NOT NULL);
		CREATE INDEX ON sink_events (stream, seq);
		CREATE TABLE bench_guard (LIKE sink_events);
		CREATE TABLE bench_twocommit (LIKE sink_events);
		CREATE TABLE bench_offsets (LIKE sink_events);
		CREATE TABLE consumer_offsets (consumer text, stream text, "partition" text,
		                               last_seq bigint NOT NULL,
		                               PRIMARY KEY (consumer, stream, "partition"));
	EOF
	sql -v pw="$PGPASSWORD" <<-'EOF'
		CREATE ROLE js_sink LOGIN PASSWORD :'pw';
		GRANT SELECT, INSERT ON sink_events, bench_guard, bench_twocommit, bench_offsets TO js_sink;
		GRANT SELECT, INSERT, UPDATE ON consumer_offsets TO js_sink;
	EOF
	local scoped
	scoped=$(sql -c "SELECT count(*) FROM pg_proc WHERE oid::regprocedure::text =
		'sog.grant_consumer(regrole,text)'")
	if [ "$scoped" = 1 ]; then
		local name
		for name in "$@"; do
			sql -c "SELECT sog.grant_consumer('js_sink', '$name')" >/dev/null
		done
		echo "role js_sink: sog.grant_consumer scoped to: $*"
	else
		sql -c "SELECT sog.grant_consumer('js_sink')" >/dev/null
		echo "role js_sink: sog.grant_consumer (this version has no scoped grant)"
	fi
	export PGHOST=127.0.0.1 PGPORT=$pg_port PGUSER=js_sink PGDATABASE=demo
}

# --- consumers and faults --------------------------------------------------------------

# start_consumer NAME STREAM [flags...]: in the background, its log in
# $tmp/logs/NAME.log; sets $cpid.
start_consumer() {
	local name=$1 stream=$2
	shift 2
	"$consumer_bin" --nats "$nats_url" --stream "$stream" --owner "$name" \
		--consumer "${CONSUMER_NAME:-demo-sink}" --page "$PAGE" \
		--inactive-ms "$INACTIVE_MS" --fetch-wait-ms 250 \
		--cursor-file "$tmp/cursor.$stream" "$@" >"$tmp/logs/$name.log" 2>&1 &
	cpid=$!
	echo "$cpid" >>"$tmp/pids"
}

# wait_stopped PID [SECONDS]: 0 once the process stopped itself (--stop-at),
# 1 if it exited, 2 on timeout.
wait_stopped() {
	local pid=$1 deadline=$((SECONDS + ${2:-60})) st
	while [ "$SECONDS" -lt "$deadline" ]; do
		st=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
		case $st in
			T) return 0 ;;
			Z) return 1 ;;
		esac
		sleep 0.02
	done
	return 2
}

# wait_exit PID [SECONDS]: the exit status (124 on timeout, then killed).
wait_exit() {
	local pid=$1 deadline=$((SECONDS + ${2:-60})) rc=0
	while kill -0 "$pid" 2>/dev/null; do
		[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
		if [ "$SECONDS" -ge "$deadline" ]; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null || true
			return 124
		fi
		sleep 0.05
	done
	wait "$pid" || rc=$?
	return "$rc"
}

# fault KIND PARTITION WHAT: one line of the fault log (for report and SVG).
fault() {
	printf '%s %s %s %s\n' "$(now)" "$1" "$2" "$3" >>"$tmp/faults.log"
	printf '  fault: %-8s %-8s %s\n' "$1" "$2" "$3"
}

# kill9 PID PARTITION WHAT: SIGKILL, then reap.
kill9() {
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	fault kill "$2" "$3"
}

# expect OK WHAT: a check of the driver's own (the story went as planned).
expect() {
	if [ "$1" = 0 ]; then
		echo "ok $2" >>"$tmp/expect.log"
	else
		echo "FAILED $2" >>"$tmp/expect.log"
		echo "  [FAILED] $2"
	fi
}

# show_log NAME: the last lines of a consumer's log that are not page traffic.
show_log() {
	grep -v ' READ \| APPLIED ' "$tmp/logs/$1.log" | tail -n 8 | cut -c1-240 | sed 's/^/      /'
}

# The JetStream consumer a process reads from (its last CONSUMER line).
consumer_of() {
	awk '$3 == "CONSUMER" { sub("name=", "", $4); n = $4 } END { print n }' "$tmp/logs/$1.log"
}

# wait_consumer_gone STREAM NAME: until the server has deleted it.
wait_consumer_gone() {
	local i
	for i in $(seq 400); do
		"$tool" consumer --nats "$nats_url" --stream "$1" --name "$2" && { sleep 0.05; continue; }
		[ $? = 1 ] && return 0
		sleep 0.05
	done
	return 1
}
