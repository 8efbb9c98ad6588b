# test/sanitize/common.sh: what sanitize.sh, valgrind.sh and sqlsmith.sh
# share.  Sourced, not run.
#
# Each script works in its own directory $SAN_ROOT/<name> (default
# /tmp/san-pg/<name>), which holds
#
#   pg/     a private, relocatable copy of the system's PostgreSQL 15
#           (bin, lib, share, include; see /work/notes/private-pg.md): the
#           extension is installed there, never into /usr/lib/postgresql
#   src/    a copy of the working tree (no .git, no build output), where the
#           extension is built and the suites run
#   data/   the cluster, sock/ its unix socket (no TCP listener), server.log
#
# Everything server-side runs as the `postgres` OS user when we are root.

san_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
san_srcdir=$(cd "$san_here/../.." && pwd)
source "$san_srcdir/test/lib.sh"

PG_MAJOR=${PG_MAJOR:-15}

say() { printf '\n=== %s\n' "$*"; }

# The arguments, joined with "; ".
san_join() {
	local out=$1 a
	shift
	for a in "$@"; do out+="; $a"; done
	printf '%s' "$out"
}

# The Debian 12 packages every script needs (sog_install_packages installs
# those missing): the build, the server and its contrib modules (amcheck),
# the server headers and PGXS (with pg_regress and pg_isolation_regress),
# pgrep (procps) for san_stop.  Each script adds its own.
SAN_BASE_PKGS=(make gcc binutils procps postgresql-15 postgresql-server-dev-15 postgresql-contrib)

# san_init NAME: set the paths of this script's work directory, fresh.
san_init() {
	SAN_NAME=$1
	SAN_DIR=${SAN_ROOT:-/tmp/san-pg}/$SAN_NAME
	SAN_PG=$SAN_DIR/pg
	SAN_TREE=$SAN_DIR/src
	SAN_DATA=$SAN_DIR/data
	SAN_SOCK=$SAN_DIR/sock
	SAN_LOG=$SAN_DIR/server.log
	SAN_BIN=$SAN_PG/usr/lib/postgresql/$PG_MAJOR/bin
	PG_CONFIG=$SAN_BIN/pg_config
	SAN_MAKEOPTS=(with_llvm=no "PG_CONFIG=$PG_CONFIG")
	SAN_PORT=${SAN_PORT:-$(sog_first_free_port 54470 54499 || echo 54470)}
	export PATH="$SAN_BIN:$PATH"
	SAN_SERVER_PID=
	if [ -f "$SAN_DATA/postmaster.pid" ]; then
		# a cluster left by an earlier run of the same script (killed): stop it
		local old
		old=$(head -1 "$SAN_DATA/postmaster.pid")
		if [ -n "$old" ] && kill -0 "$old" 2>/dev/null; then
			echo "$SAN_NAME: stopping the cluster of an earlier run (pid $old)"
			kill -QUIT "$old" 2>/dev/null || true
			sleep 2
		fi
	fi
	rm -rf "$SAN_DIR"
	mkdir -p "$SAN_DIR" "$SAN_SOCK" "$SAN_DIR/tmp"
}

# The private copy of PostgreSQL: binaries, libraries, share and headers.
san_copy_pg() {
	local sys=/usr/lib/postgresql/$PG_MAJOR
	if [ ! -x "$sys/bin/pg_config" ] || [ ! -d "/usr/include/postgresql/$PG_MAJOR/server" ]; then
		echo "$SAN_NAME: $sys/bin/pg_config or the server headers are missing" >&2
		return 1
	fi
	mkdir -p "$SAN_PG/usr/lib/postgresql" "$SAN_PG/usr/share/postgresql" "$SAN_PG/usr/include/postgresql"
	cp -a "$sys" "$SAN_PG/usr/lib/postgresql/"
	cp -a "/usr/share/postgresql/$PG_MAJOR" "$SAN_PG/usr/share/postgresql/"
	cp -a "/usr/include/postgresql/$PG_MAJOR" "$SAN_PG/usr/include/postgresql/"
	# the copy's pg_config must report paths inside the copy
	case $("$PG_CONFIG" --pkglibdir) in
		"$SAN_PG"/*) ;;
		*) echo "$SAN_NAME: $PG_CONFIG does not report paths inside $SAN_PG" >&2; return 1 ;;
	esac
}

# A copy of the working tree (uncommitted work included), without .git and
# without anything built or written by a test run.
san_copy_tree() {
	local rev changed
	rev=$(git -C "$san_srcdir" rev-parse --short HEAD 2>/dev/null) || rev=
	if [ -n "$rev" ]; then
		changed=$(git -C "$san_srcdir" status --porcelain --untracked-files=no 2>/dev/null | wc -l)
		echo "source: $san_srcdir at commit $rev, $changed tracked files changed since"
	else
		echo "source: $san_srcdir (not a git checkout)"
	fi
	sog_copy_tree "$san_srcdir" "$SAN_TREE"
}

# san_build CFLAGS...: build the copy with these flags added (after
# PostgreSQL's own, so that -O1 wins over -O2) and install it into the
# private PostgreSQL.  Assertions of the extension are on, as in make test.
# No -Werror: make test holds the build to that with gcc -O2; here another
# compiler or optimization level may warn differently, and a warning is not
# what these checks look for.
san_build() {
	make -C "$SAN_TREE" -s "${SAN_MAKEOPTS[@]}" clean >/dev/null 2>&1 || true
	make -C "$SAN_TREE" -s "${SAN_MAKEOPTS[@]}" \
		PG_CFLAGS="-Wall -Wextra -Wno-unused-parameter -DUSE_ASSERT_CHECKING $*" \
		${SAN_LDFLAGS:+PG_LDFLAGS="$SAN_LDFLAGS"} &&
		make -C "$SAN_TREE" -s "${SAN_MAKEOPTS[@]}" install >/dev/null
}

# san_selftest_anchors FILE LINE...: each LINE is a whole line of FILE,
# as it is (the places a self-test patches in the copy); else the
# self-test would patch nothing, so it stops here.
san_selftest_anchors() {
	local f=$1 line
	shift
	for line in "$@"; do
		grep -qxF -- "$line" "$f" || {
			echo "$SAN_NAME: selftest: the anchor \"$line\" is no longer a line of $f; update the selftest" >&2
			return 1
		}
	done
}

# san_asan_build: after san_asan_toolchain and san_copy_tree.  Builds the
# copy with ASan and UBSan, checks the module is instrumented and sets
# SAN_ENV (san_asan_env).
san_asan_build() {
	san_build $SAN_SANFLAGS -O1 -g && san_asan_check_so && san_asan_env
}

# Run a command as the cluster's OS user, with the libpq variables set.
san_as_pg() {
	local envs=(PATH="$PATH" PGHOST="$SAN_SOCK" PGPORT="$SAN_PORT" PGUSER=postgres
		PGDATABASE=postgres TMPDIR="$SAN_DIR/tmp" HOME="$SAN_DIR")
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env "${envs[@]}" "$@"
	else
		env "${envs[@]}" "$@"
	fi
}

# Give the work directory to the cluster's OS user.
san_chown() {
	if [ "$(id -u)" -eq 0 ]; then
		chown -R postgres: "$SAN_DIR"
	fi
}

san_initdb() {
	san_as_pg initdb -D "$SAN_DATA" -A trust -U postgres --locale=C -E UTF8 \
		>"$SAN_DIR/initdb.log" 2>&1 || { cat "$SAN_DIR/initdb.log"; return 1; }
}

# The server's options: a socket in the work directory only, and everything
# a post-mortem needs in the log.
san_server_opts() {
	printf '%s\n' -c "port=$SAN_PORT" -c "listen_addresses=" \
		-c "unix_socket_directories=$SAN_SOCK" \
		-c "log_line_prefix=%m [%p] %q%u@%d " -c log_min_messages=warning \
		-c max_prepared_transactions=10 "$@"
}

# san_start ENV... -- SERVER_OPTION...: start the postmaster in the
# background with the given environment (e.g. LD_PRELOAD) and wait until it
# accepts connections (up to $SAN_START_TIMEOUT s, default 60).  Its PID is
# $SAN_SERVER_PID.  stderr (where the sanitizers and the server write)
# goes to $SAN_LOG.
san_start() {
	local envs=() opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	mapfile -t opts < <(san_server_opts "$@")
	local launcher=()
	[ -n "${SAN_LAUNCHER:-}" ] && read -r -a launcher <<<"$SAN_LAUNCHER"
	san_as_pg env "${envs[@]}" "${launcher[@]}" "$SAN_BIN/postgres" -D "$SAN_DATA" "${opts[@]}" \
		>>"$SAN_LOG" 2>&1 </dev/null &
	SAN_SERVER_PID=$!
	local i limit=${SAN_START_TIMEOUT:-60}
	for ((i = 0; i < limit * 2; i++)); do
		if san_as_pg pg_isready -q -t 1 >/dev/null 2>&1 &&
			san_as_pg psql -X -At -c 'SELECT 1' >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$SAN_SERVER_PID" 2>/dev/null || break
		sleep 0.5
	done
	echo "$SAN_NAME: the server did not start; its log:" >&2
	tail -n 60 "$SAN_LOG" >&2
	return 1
}

# Stop the server we started (fast shutdown, then immediate), by its PID.
# The postmaster runs as `postgres` under runuser (or valgrind); the PID in
# postmaster.pid is the postmaster's own.
san_stop() {
	local pm=
	[ -f "$SAN_DATA/postmaster.pid" ] && pm=$(head -1 "$SAN_DATA/postmaster.pid")
	if [ -n "$pm" ] && kill -0 "$pm" 2>/dev/null; then
		local i
		# After a crash (a sanitizer's abort) the postmaster reinitializes
		# and the startup process replays WAL.  A fast shutdown requested
		# in the middle of that replay sometimes never completes with the
		# ASan runtime preloaded (seen in about one run in four of
		# --selftest-ubsan), so let the server come back first (bounded).
		for ((i = 0; i < 60; i++)); do
			san_as_pg pg_isready -q -t 1 >/dev/null 2>&1 && break
			kill -0 "$pm" 2>/dev/null || break
			sleep 0.5
		done
		kill -INT "$pm" 2>/dev/null || true
		for ((i = 0; i < ${SAN_STOP_TIMEOUT:-120}; i++)); do
			kill -0 "$pm" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "$pm" 2>/dev/null; then
			echo "$SAN_NAME: the server did not stop in ${SAN_STOP_TIMEOUT:-120} s after a fast shutdown request; immediate shutdown" >&2
			kill -QUIT "$pm" 2>/dev/null || true
			sleep 2
		fi
	fi
	if [ -n "$SAN_SERVER_PID" ]; then
		# a postmaster that never wrote postmaster.pid (hung at start):
		# the child of the runuser we started
		local child
		for child in $(pgrep -P "$SAN_SERVER_PID" 2>/dev/null); do
			kill -KILL "$child" 2>/dev/null || true
		done
		wait "$SAN_SERVER_PID" 2>/dev/null || true
		SAN_SERVER_PID=
	fi
}

# One kind of suite from the copy's root: installcheck with the others off.
# Its output also goes to $SAN_DIR/<kind>.out, for san_tally.
#   san_installcheck regress|isolation [make variables...]
san_installcheck() {
	local kind=$1
	shift
	case $kind in
		regress) san_as_pg make -C "$SAN_TREE" --no-print-directory "${SAN_MAKEOPTS[@]}" \
			installcheck ISOLATION= TAP_TESTS= "$@" ;;
		isolation) san_as_pg make -C "$SAN_TREE" --no-print-directory "${SAN_MAKEOPTS[@]}" \
			installcheck REGRESS= TAP_TESTS= "$@" ;;
	esac 2>&1 | tee "$SAN_DIR/$kind.out"
}

# san_tally regress|isolation: "N tests, F failed" from the output of the
# last run of that suite (pg_regress removes its regression.out when all
# passed).
san_tally() {
	awk '/^(test|     ) [a-z_0-9]+ +\.\.\. / { n++ } /\.\.\. FAILED/ { f++ }
		END { printf "%d tests, %d failed\n", n, f }' "$SAN_DIR/$1.out" 2>/dev/null ||
		echo "no tests ran"
}

# Print a file's last $2 lines (default 80) under a heading.
san_show() {
	[ -s "$1" ] || return 0
	echo "----- $1 (last ${2:-80} lines) -----"
	tail -n "${2:-80}" "$1"
}

# Lines of the server log that say a process crashed, failed an assertion
# (the extension's: it is built with USE_ASSERT_CHECKING) or PANICked.  The
# log line prefix (san_server_opts) ends with one space before the level.
SAN_CRASH_RE='terminated by signal|was terminated by exception|^TRAP: | PANIC:  '
san_crash_lines() {
	grep -E "$SAN_CRASH_RE" "$SAN_LOG" || true
}

# --- AddressSanitizer and UndefinedBehaviorSanitizer (sanitize.sh, sqlsmith.sh) ---

# san_asan_toolchain: after san_init.  For $SAN_CC (clang, the default, or
# gcc) sets SAN_SANFLAGS (compile flags), SAN_LDFLAGS, the compiler in
# SAN_MAKEOPTS, SAN_RUNTIME (the ASan runtime to preload), SAN_REPORTS
# (where the sanitizers write) and the runtime options.
san_asan_toolchain() {
	SAN_CC=${SAN_CC:-clang}
	# -fno-wrapv: PostgreSQL's CFLAGS carry -fwrapv, which makes signed
	# overflow defined and so turns UBSan's signed-integer-overflow check
	# off; the extension must not rely on wrapping (it checks its bounds),
	# so here an overflow is a report.
	SAN_SANFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-wrapv"
	SAN_SANFLAGS+=" -fno-omit-frame-pointer"
	case $SAN_CC in
		clang)
			# clang leaves the runtime out of a shared module; its ASan
			# runtime, which holds UBSan's handlers too, is preloaded.
			SAN_RUNTIME=$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)
			SAN_LDFLAGS="-fsanitize=address,undefined -shared-libsan"
			SAN_MAKEOPTS+=(CC=clang-14)
			# PostgreSQL's CFLAGS (pg_config) are gcc's
			SAN_SANFLAGS+=" -Wno-ignored-optimization-argument -Wno-unknown-warning-option"
			SAN_SANFLAGS+=" -Wno-unused-command-line-argument -Wno-ignored-attributes"
			;;
		gcc)
			# gcc links libasan and libubsan into the module (DT_NEEDED); the
			# ASan runtime must still come first in the process: preloaded.
			# UBSan's standalone runtime then starts in the backend that
			# loads the module, too late to read UBSAN_OPTIONS (README.md):
			# its reports go to the server log, without a stack.
			SAN_RUNTIME=$(realpath "$(gcc -print-file-name=libasan.so)")
			SAN_LDFLAGS="-fsanitize=address,undefined"
			# at -O1 with the sanitizers gcc warns that lock_row's `timeout`
			# (src/checkpoint/checkpoint.c) "might be clobbered by longjmp"; it is set
			# before PG_TRY's sigsetjmp and never after, so it is not
			SAN_SANFLAGS+=" -Wno-clobbered"
			;;
		*) echo "$SAN_NAME: SAN_CC must be clang or gcc" >&2; return 2 ;;
	esac
	[ -f "$SAN_RUNTIME" ] || { echo "$SAN_NAME: the ASan runtime $SAN_RUNTIME is missing" >&2; return 1; }
	SAN_SYMBOLIZER=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
	SAN_REPORTS=$SAN_DIR/reports
	mkdir -p "$SAN_REPORTS"
	# detect_leaks=0: PostgreSQL frees by resetting memory contexts and by
	# exiting, so LeakSanitizer would report the server, not the module.
	# abort_on_error=1: a report kills the backend with SIGABRT (the
	# postmaster logs "terminated by signal 6").  log_path: each process
	# writes its reports to reports/asan.<pid> (ubsan.<pid>).
	SAN_ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:disable_coredump=1"
	SAN_ASAN_OPTIONS+=":print_summary=1:log_path=$SAN_REPORTS/asan"
	SAN_UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:print_summary=1"
	SAN_UBSAN_OPTIONS+=":log_path=$SAN_REPORTS/ubsan"
	if [ -n "$SAN_SYMBOLIZER" ]; then
		SAN_ASAN_OPTIONS+=":external_symbolizer_path=$SAN_SYMBOLIZER"
		SAN_UBSAN_OPTIONS+=":external_symbolizer_path=$SAN_SYMBOLIZER"
	fi
}

# san_asan_check_so: the installed module is instrumented for both.
san_asan_check_so() {
	local so syms
	so=$("$PG_CONFIG" --pkglibdir)/stream_offset_guard.so
	syms=$(nm -D "$so")
	if grep -q ' U __asan_report_load' <<<"$syms" && grep -q ' U __ubsan_handle_' <<<"$syms"; then
		echo "built $so ($SAN_CC, instrumented for ASan and UBSan)"
	else
		echo "$SAN_NAME: $so is not instrumented for ASan and UBSan" >&2
		return 1
	fi
}

# san_asan_env: after san_copy_pg.  Sets SAN_ENV, the postmaster's
# environment, and checks that postgres starts with it.
#
# Preloading the runtime is not enough on its own: the dynamic loader runs
# the constructors of postgres's libraries before the preloaded runtime's
# (a preloaded object that nothing depends on is initialized last), and the
# first of them to call malloc, libgpg-error's, does it inside
# bindtextdomain() with glibc's gettext lock held; ASan then initializes
# itself lazily in that malloc, its init calls dlerror(), which takes the
# same lock, and the postmaster hangs before main() (Debian 12, with gcc
# 12's and clang 14's runtime alike).  So every library of postgres's that
# needs nothing but glibc gets a private copy in early-libs/ that also needs
# the runtime (patchelf --add-needed), found first through LD_LIBRARY_PATH:
# the loader then initializes the runtime before any of them.  The system's
# libraries are untouched.
san_asan_env() {
	local early=$SAN_DIR/early-libs rt_soname lib base others n=0
	mkdir -p "$early"
	rt_soname=$(readelf -d "$SAN_RUNTIME" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ -n "$rt_soname" ] || rt_soname=$(basename "$SAN_RUNTIME")
	for lib in $(ldd "$SAN_BIN/postgres" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
		base=$(basename "$lib")
		case $base in
			# glibc's own, the runtime's own dependencies, and ICU's data
			libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*|\
				libgcc_s.so*|libstdc++.so*|libicudata.so*) continue ;;
		esac
		others=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
			grep -vE '^(libc\.so|ld-linux|libm\.so|libpthread\.so|libdl\.so|librt\.so)' || true)
		[ -z "$others" ] || continue
		cp -L "$lib" "$early/$base"
		patchelf --add-needed "$rt_soname" "$early/$base"
		n=$((n + 1))
	done
	SAN_ENV=(LD_LIBRARY_PATH="$early:$(dirname "$SAN_RUNTIME")" LD_PRELOAD="$SAN_RUNTIME"
		ASAN_OPTIONS="$SAN_ASAN_OPTIONS" UBSAN_OPTIONS="$SAN_UBSAN_OPTIONS")
	[ -n "$SAN_SYMBOLIZER" ] && SAN_ENV+=(ASAN_SYMBOLIZER_PATH="$SAN_SYMBOLIZER")
	if ! timeout 30 env "${SAN_ENV[@]}" "$SAN_BIN/postgres" --version >/dev/null; then
		echo "$SAN_NAME: postgres does not start with the ASan runtime preloaded" >&2
		return 1
	fi
	echo "ASan runtime $SAN_RUNTIME preloaded, initialized before $n of postgres's libraries (copies in $early)"
}

# san_asan_maps_check: a backend that loaded the module maps the runtime.
san_asan_maps_check() {
	local maps
	maps=$(san_as_pg psql -X -At -c "LOAD 'stream_offset_guard'" \
		-c "SELECT pg_read_file('/proc/self/maps')")
	if grep -Eq 'libasan|libclang_rt\.asan' <<<"$maps" && grep -q 'stream_offset_guard\.so' <<<"$maps"; then
		echo "a backend maps the ASan runtime and the instrumented module"
	else
		echo "$SAN_NAME: a backend does not map the ASan runtime and the module" >&2
		return 1
	fi
}

# san_asan_reports: print the sanitizers' reports (and those that reached
# the server log); SAN_NREPORTS is their number.
san_asan_reports() {
	local f
	SAN_NREPORTS=0
	for f in "$SAN_REPORTS"/*; do
		[ -s "$f" ] || continue
		SAN_NREPORTS=$((SAN_NREPORTS + 1))
		echo "----- $f -----"
		head -n 80 "$f"
	done
	# a report written to stderr instead (gcc's UBSan, see san_asan_toolchain)
	if grep -nE 'ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer' "$SAN_LOG"; then
		SAN_NREPORTS=$((SAN_NREPORTS + $(grep -cE 'ERROR: AddressSanitizer|runtime error:' "$SAN_LOG")))
	fi
	local summaries
	summaries=$(cat "$SAN_REPORTS"/* 2>/dev/null | grep -E '^SUMMARY: ' | sort | uniq -c | sed 's/^ *//' | paste -sd ';' - || true)
	echo "sanitizer reports: $SAN_NREPORTS${summaries:+ ($summaries)}"
}

# san_suites TOOL RUN_ISOLATION KNOB: the regression suite (REGRESS=...
# narrows it), then the isolation specs (ISOLATION=...) unless
# RUN_ISOLATION is not 1 (KNOB names the variable that said so); appends
# one line per suite to the caller's results array and sets status=1 on a
# failure.  The caller's selftest=1 explains a skipped isolation run.
san_suites() {
	local tool=$1 iso=$2 knob=$3
	say "$tool: regress"
	san_suite regress "$SAN_TREE/test/regression.diffs" ${REGRESS:+REGRESS="$REGRESS"}
	if [ "$iso" = 1 ]; then
		say "$tool: isolation"
		san_suite isolation "$SAN_TREE/test/output_iso/regression.diffs" ${ISOLATION:+ISOLATION="$ISOLATION"}
	elif [ "${selftest:-0}" = 1 ]; then
		results+=("isolation: not run (a selftest needs only the test that parses a position)")
	else
		results+=("isolation: not run ($knob=0)")
	fi
}

# san_suite KIND DIFFS [VAR=...]: one suite through san_installcheck
san_suite() {
	local kind=$1 diffs=$2 ts
	shift 2
	ts=$(date +%s)
	if san_installcheck "$kind" "$@"; then
		results+=("$kind: passed, $(san_tally "$kind") ($(($(date +%s) - ts)) s)")
	else
		san_show "$diffs" 60
		results+=("$kind: failed, $(san_tally "$kind") ($(($(date +%s) - ts)) s)")
		status=1
	fi
}

# san_cleanup_on_exit TOOL: on exit stop the cluster and remove the work
# directory (kept with KEEP_TMP=1), keeping the script's exit status.
san_cleanup_on_exit() {
	SAN_TOOL=$1
	trap san_cleanup EXIT
	trap 'exit 130' INT TERM
}
san_cleanup() {
	local rc=$?
	san_stop
	[ "${KEEP_TMP:-0}" = 1 ] && echo "$SAN_TOOL: KEEP_TMP=1, $SAN_DIR stays" || rm -rf "$SAN_DIR"
	exit "$rc"
}
