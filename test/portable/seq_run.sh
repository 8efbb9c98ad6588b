#!/usr/bin/env bash
#
# test/portable/seq_run.sh: the stateful differential test (seq_diff.py)
# between two throwaway clusters, A with the C edition and B with the
# portable one (--b-portable, what make test runs), or both with the C
# edition (the default; with --b-conninfo, B can be any database holding
# the other edition).
#
#   test/portable/seq_run.sh [--major N] [--b-portable] [--seed N] [--sequences K]
#                            [--calls M] [--b-conninfo CONNINFO] [--skip CATEGORIES]
#                            [--no-selftest] [--keep]
#
# 1. two clusters (initdb as the postgres OS user, unix socket in a temp
#    dir only, listen_addresses = '', max_prepared_transactions = 10); with
#    --b-portable, B is the private copy of PostgreSQL with pg_tle and
#    without the C edition (test/portable/lib.sh), pg_tle preloaded;
# 2. in database seq of each, CREATE EXTENSION stream_offset_guard: the C
#    edition's in A; in B the portable edition built from the tree,
#    registered with pgtle.install_extension and created by sog_tle_admin,
#    a pgtle_admin role that is not a superuser (--b-portable also leaves
#    out non-canonical position literals, which its domain refuses by
#    design: --skip noncanonical);
# 3. seq_diff.py --require-coverage over both (a difference or a missing
#    verdict/SQLSTATE fails);
# 4. seq_diff.py --selftest on fresh databases: a difference planted in B
#    must be reported (a test that cannot fail is worthless);
# 5. the clusters are stopped and removed (--keep: left running, and said
#    where).
#
# Prints "seq_diff: passed (...)" or the failures; exit status 1 on any.

set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

major=15
seed=${SEQ_SEED:-1}
sequences=
calls=
b_conninfo=
b_portable=0
skip=
selftest=1
keep=0
while [ $# -gt 0 ]; do
	case $1 in
		--major) major=$2; shift 2 ;;
		--seed) seed=$2; shift 2 ;;
		--sequences) sequences=$2; shift 2 ;;
		--calls) calls=$2; shift 2 ;;
		--b-conninfo) b_conninfo=$2; shift 2 ;;
		--b-portable) b_portable=1; shift ;;
		--skip) skip=$2; shift 2 ;;
		--no-selftest) selftest=0; shift ;;
		--keep) keep=1; shift ;;
		*) echo "usage: $0 [--major N] [--b-portable] [--seed N] [--sequences K] [--calls M] [--b-conninfo CONNINFO] [--skip CATEGORIES] [--no-selftest] [--keep]" >&2; exit 2 ;;
	esac
done

t0=$(date +%s)
bindir=/usr/lib/postgresql/$major/bin
failures=()
fail() { echo "seq_diff: FAILED: $*"; failures+=("$*"); }

# psycopg 3 from Debian (python3-psycopg): the system's python3, not a
# pyenv shim in front of it
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import psycopg' 2>/dev/null; then
	echo "seq_diff: installing python3-psycopg"
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-psycopg >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-psycopg >/dev/null 2>&1; }
	else
		sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-psycopg >/dev/null 2>&1
	fi
	"$py" -c 'import psycopg' 2>/dev/null || { echo "seq_diff: FAILED: python3-psycopg is missing (bash test/install-deps.sh server)"; exit 1; }
fi
if [ ! -x "$bindir/initdb" ]; then
	echo "seq_diff: FAILED: PostgreSQL $major is not installed ($bindir)"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-seq.XXXXXX")
chmod 755 "$tmp"
data_dirs=()
cleanup() {
	local rc=$? d
	if [ "$keep" = 1 ]; then
		echo "seq_diff: --keep: clusters stay running in $tmp (stop: pg_ctl -D $tmp/<a|b>-data stop)"
		exit "$rc"
	fi
	for d in "${data_dirs[@]}"; do
		[ -f "$d/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1
	done
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME="$tmp" PATH="$PATH" "$@"
	else
		"$@"
	fi
}

# a port number no server on this machine uses (the socket lives in $tmp,
# so the number only names the socket; 5432 and 5499 are left alone anyway)
free_port() {
	local p
	for p in $(seq "$1" $(($1 + 200))); do
		[ "$p" = 5432 ] || [ "$p" = 5499 ] && continue
		[ -e "/tmp/.s.PGSQL.$p" ] && continue
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && continue
		echo "$p"; return 0
	done
	return 1
}

# seq_cluster NAME PORT [BINDIR [SETTING...]]: initdb and start on a
# socket in $tmp/NAME-sock
seq_cluster() {
	local name=$1 port=$2 data=$tmp/$1-data sock=$tmp/$1-sock bin=${3:-$bindir}
	shift 2
	[ $# -gt 0 ] && shift
	mkdir -p "$sock"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$sock" "$tmp"
	as_pg "$bin/initdb" -D "$data" -A trust -U postgres --locale=C.UTF-8 >"$tmp/$name-initdb.log" 2>&1 ||
		{ cat "$tmp/$name-initdb.log"; return 1; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$sock'"
		echo "port = $port"
		echo "fsync = off"
		echo "synchronous_commit = off"
		echo "max_prepared_transactions = 10"
		echo "max_connections = 40"
		for x in "$@"; do echo "$x"; done
	} >>"$data/postgresql.conf"
	data_dirs+=("$data")
	as_pg "$bin/pg_ctl" -D "$data" -l "$tmp/$name.log" -w start >/dev/null ||
		{ tail -20 "$tmp/$name.log"; return 1; }
}

psql_c() {	# psql_c NAME PORT DB SQL
	as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/$1-sock" -p "$2" -U postgres -d "$3" -c "$4"
}

# --b-portable: the private copy with pg_tle (lib.sh) and the edition
# built from the tree
if [ "$b_portable" = 1 ]; then
	ext=stream_offset_guard
	sysbin=$bindir
	tarball=${PG_TLE_TARBALL:-$srcdir/../shared/vendor/pg_tle/pg_tle-1.5.3.tar.gz}
	server_bins=()
	server_dirs=()
	say() { printf '\n=== %s\n' "$*"; }
	finish() { echo "seq_diff: ${#failures[@]} failure(s) in $(($(date +%s) - t0)) s"; exit 1; }
	source "$srcdir/test/lib.sh"
	source "$here/lib.sh"
	portable_tle
	perl "$srcdir/portable/build.pl" --out "$tmp/portable" >"$tmp/build.log" 2>&1 ||
		{ cat "$tmp/build.log"; fail "portable/build.pl"; exit 1; }
	chmod -R a+rX "$tmp/portable"
	[ -n "$skip" ] || skip=noncanonical
fi

pa=$(free_port 5611) || { fail "no free port"; exit 1; }
seq_cluster a "$pa" || { fail "cluster a"; exit 1; }
pb=$(free_port $((pa + 1))) || { fail "no free port"; exit 1; }
if [ "$b_portable" = 1 ]; then
	seq_cluster b "$pb" "$pbin" "shared_preload_libraries = 'pg_tle'" || { fail "cluster b"; exit 1; }
	# pg_read_all_stats: the owner's 55P03 names a holder's transaction
	# start and state, as the C edition's does (docs/portable.md)
	psql_c b "$pb" postgres "CREATE ROLE sog_tle_admin LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE pg_read_all_stats" ||
		{ fail "cluster b: role sog_tle_admin"; exit 1; }
else
	seq_cluster b "$pb" || { fail "cluster b"; exit 1; }
fi

# fresh_db DB: the database in both clusters, with the extension (in B
# through pg_tle by sog_tle_admin with --b-portable)
fresh_db() {
	local n p
	for n in a b; do
		p=$pa; [ $n = b ] && p=$pb
		psql_c $n "$p" postgres "CREATE DATABASE $1" || return 1
		if [ $n = b ] && [ "$b_portable" = 1 ]; then
			psql_c b "$p" postgres "GRANT CREATE ON DATABASE $1 TO sog_tle_admin" &&
				psql_c b "$p" "$1" "CREATE EXTENSION pg_tle" &&
				psql_c b "$p" "$1" "GRANT pgtle_admin TO sog_tle_admin" &&
				as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/b-sock" -p "$p" -U sog_tle_admin -d "$1" \
					-f "$tmp/portable/pg_tle.sql" >>"$tmp/b-install.log" 2>&1 &&
				as_pg "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$tmp/b-sock" -p "$p" -U sog_tle_admin -d "$1" \
					-c "CREATE EXTENSION stream_offset_guard" >>"$tmp/b-install.log" 2>&1 ||
				{ tail -5 "$tmp/b-install.log"; return 1; }
		else
			psql_c $n "$p" "$1" "CREATE EXTENSION stream_offset_guard" || return 1
		fi
	done
}

ver=$(as_pg "$bindir/psql" -X -At -h "$tmp/a-sock" -p "$pa" -U postgres -d postgres \
	-c "SELECT default_version FROM pg_available_extensions WHERE name = 'stream_offset_guard'")
if [ -z "$ver" ]; then
	fail "stream_offset_guard is not installed for PostgreSQL $major (cd $srcdir && make install)"
	exit 1
fi
echo "seq_diff: PostgreSQL $major, stream_offset_guard $ver, clusters on sockets $tmp/{a,b}-sock ports $pa, $pb; B: $([ "$b_portable" = 1 ] && echo "the portable edition (pg_tle, installed by sog_tle_admin)" || echo "the C edition")"

args=(--seed "$seed" --require-coverage --report "$tmp/report.txt")
[ -n "$sequences" ] && args+=(--sequences "$sequences")
[ -n "$calls" ] && args+=(--calls "$calls")
[ -n "$skip" ] && args+=(--skip "$skip")
[ "$b_portable" = 1 ] && args+=(--portable-b)

conn() { echo "host=$tmp/$1-sock port=$2 user=postgres dbname=$3"; }

fresh_db seq || { fail "CREATE EXTENSION"; exit 1; }
bconn=${b_conninfo:-$(conn b "$pb" seq)}
echo
echo "=== seq_diff.py ${args[*]}"
"$py" "$here/seq_diff.py" --a "$(conn a "$pa" seq)" --b "$bconn" "${args[@]}"
rc=$?
[ $rc -eq 0 ] || fail "seq_diff.py (exit $rc)"
summary=$(grep -E '^(coverage|reached)' "$tmp/report.txt" 2>/dev/null | tr '\n' ' ')

# The self-tests run seed 1 whatever --seed says: each must be reported for
# its own reason (the planted note, the planted grant's 42501), which with
# another seed a consequence of the plant (ids that no longer pair) may
# precede.  They accept what the run accepts (--portable-b's documented
# differences, --skip), so that only the plant can be the difference.
selftest_args=()
[ -n "$skip" ] && selftest_args+=(--skip "$skip")
[ "$b_portable" = 1 ] && selftest_args+=(--portable-b)
if [ "$selftest" = 1 ]; then
	for plant in trigger grant; do
		fresh_db "selftest_$plant" || { fail "CREATE EXTENSION (selftest)"; break; }
		echo
		echo "=== seq_diff.py --selftest --plant $plant (a difference planted in B must be reported)"
		"$py" "$here/seq_diff.py" --a "$(conn a "$pa" "selftest_$plant")" --b "$(conn b "$pb" "selftest_$plant")" \
			--seed 1 --sequences 3 --calls 200 --selftest --plant "$plant" "${selftest_args[@]}" >"$tmp/selftest-$plant.txt" 2>&1
		rc=$?
		sed -n '/^DIFFERENCE/,$p' "$tmp/selftest-$plant.txt"
		[ $rc -eq 0 ] || { tail -5 "$tmp/selftest-$plant.txt"; fail "selftest ($plant): the planted difference was not reported"; }
	done
fi

echo
if [ ${#failures[@]} -eq 0 ]; then
	echo "seq_diff: passed (seed $seed; ${summary% }; selftests $([ "$selftest" = 1 ] && echo 'trigger, grant: reported' || echo skipped); $(($(date +%s) - t0)) s)"
	exit 0
fi
echo "seq_diff: ${#failures[@]} failure(s) in $(($(date +%s) - t0)) s"
exit 1
