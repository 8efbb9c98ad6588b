#!/usr/bin/env bash
#
# test/sanitize/valgrind.sh: the regression suite and the isolation specs
# against a private PostgreSQL whose postmaster (and so every backend, which
# it forks) runs under valgrind's memcheck.  See test/sanitize/README.md.
#
#   test/sanitize/valgrind.sh             build, cluster under memcheck, regress,
#                                         isolation, check
#   test/sanitize/valgrind.sh --selftest  the same (regress: setup, position)
#                                         with a deliberate branch on an
#                                         uninitialised stack byte patched into
#                                         the copy (sog.position's input
#                                         function): passes only if memcheck
#                                         reports it in stream_offset_guard and
#                                         the run fails on it
#
# Every process writes its own log (valgrind/<pid>.log).  An error counts
# when any of its stacks (where it happened, where the memory was allocated
# or freed, where an uninitialised value was created: --track-origins) has a
# frame in the extension (its .so or its sources), when a stack was cut
# short, or when it is the server's and of no kind test/sanitize/README.md
# explains; the server's errors of an explained kind are listed, not
# counted.  Benign errors of processes and code paths that cannot have run
# the extension are suppressed by test/sanitize/valgrind.supp.
#
# Exit 0 only if the suites pass, no counted error appears and no backend
# crashed.
#
# Environment:
#   VALGRIND_TRACK_ORIGINS  yes (default) or no (faster; origins unknown,
#                  so an uninitialised value made in the extension and used
#                  in the server is then not attributed)
#   VALGRIND_ISOLATION  1 (default) also runs the isolation specs under
#                  memcheck (about 4.5 more minutes); 0 skips them
#   SAN_ROOT       where the work directory goes (default /tmp/san-pg)
#   KEEP_TMP=1     keep the work directory (cluster, logs)
#   VALGRIND_NUM_CALLERS  frames per stack (default 64)
#   REGRESS=..., ISOLATION=...  run only these tests

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

selftest=0
case ${1:-} in
	--selftest) selftest=1 ;;
	"") ;;
	*) echo "usage: $0 [--selftest]" >&2; exit 2 ;;
esac
KEEP_TMP=${KEEP_TMP:-0}
VALGRIND_TRACK_ORIGINS=${VALGRIND_TRACK_ORIGINS:-yes}
VALGRIND_ISOLATION=${VALGRIND_ISOLATION:-1}
VALGRIND_NUM_CALLERS=${VALGRIND_NUM_CALLERS:-64}
t0=$(date +%s)
# A selftest needs only a test that parses positions (position, after
# setup); the patched defect would fail every test after it anyway.
if [ "$selftest" = 1 ]; then
	REGRESS=${REGRESS:-setup position}
	VALGRIND_ISOLATION=0
fi

say "valgrind: dependencies"
sog_install_packages "${SAN_BASE_PKGS[@]}" valgrind

if [ "$selftest" = 1 ]; then san_init valgrind-selftest; else san_init valgrind; fi
san_cleanup_on_exit valgrind

say "valgrind: private PostgreSQL in $SAN_PG, build"
san_copy_pg
san_copy_tree

if [ "$selftest" = 1 ]; then
	# The deliberate defect: sog.position's input function branches on a
	# byte of a stack array it never wrote.
	f=$SAN_TREE/src/type/position.c
	san_selftest_anchors "$f" 'PG_FUNCTION_INFO_V1(sog_position_in);' \
		'	char	   *str = PG_GETARG_CSTRING(0);'
	awk '
		/^PG_FUNCTION_INFO_V1\(sog_position_in\);$/ {
			print "static int sog_selftest_uninit(const char *s);"
			print "static int"
			print "sog_selftest_uninit(const char *s)"
			print "{"
			print "\tchar\t\tbuf[16];"
			print "\tvolatile int i = 3;"
			print ""
			print "\tif (s == NULL)"
			print "\t\tbuf[0] = 0;"
			print "\tif (buf[i] == (char) 0x5a)\t/* never written */"
			print "\t\telog(DEBUG5, \"selftest\");"
			print "\treturn 0;"
			print "}"
			print ""
			infn = 1
		}
		{ print }
		infn && /^	char	   \*str = PG_GETARG_CSTRING\(0\);$/ {
			print "\tvolatile int sog_selftest_r pg_attribute_unused() = sog_selftest_uninit(str);"
			infn = 0
		}
	' "$f" >"$f.new" && mv "$f.new" "$f"
	echo "selftest: patched sog_position_in in the copy (src/type/position.c) with a branch on an uninitialised stack byte"
fi

# -Og -g: frames and lines that match the source; valgrind needs no
# special build of the module.
san_build -Og -g -fno-omit-frame-pointer
so=$("$PG_CONFIG" --pkglibdir)/stream_offset_guard.so
echo "built $so (-Og -g)"

# --- the cluster under memcheck ---------------------------------------------------

vgdir=$SAN_DIR/valgrind
mkdir -p "$vgdir"
supp=$san_here/valgrind.supp
cp "$supp" "$SAN_DIR/valgrind.supp"
san_chown
san_initdb

# --trace-children=yes: also follow anything the server execs (nothing in
# these tests; backends are forked and followed anyway).  --log-file with
# %p: one file per process, forked children included.  --error-markers:
# each error is delimited, for the classification below.  --fullpath-after=
# (empty): full source paths in frames, so that the extension's sources are
# recognisable.  -v: at exit each process lists the suppressions it used
# (and, after its ERROR SUMMARY, every error context once more: the
# classification below reads a log only up to its first ERROR SUMMARY).
# No leak check: PostgreSQL frees by resetting memory contexts and by
# exiting.
SAN_LAUNCHER="valgrind --tool=memcheck -v --trace-children=yes --leak-check=no
	--track-origins=$VALGRIND_TRACK_ORIGINS --num-callers=$VALGRIND_NUM_CALLERS --error-limit=no
	--read-inline-info=yes --fullpath-after= --gen-suppressions=all
	--suppressions=$SAN_DIR/valgrind.supp
	--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END
	--log-file=$vgdir/%p.log"
SAN_LAUNCHER=$(tr '\n\t' '  ' <<<"$SAN_LAUNCHER")
export SAN_START_TIMEOUT=300 SAN_STOP_TIMEOUT=300
say "valgrind: cluster under memcheck (socket $SAN_SOCK, port $SAN_PORT)"
# autovacuum off: fewer processes to run under valgrind, and no run-to-run
# variation; small shared_buffers: valgrind tracks every byte of it; no JIT:
# LLVM's code generator under memcheck is slow and not what is tested.
san_start -- -c autovacuum=off -c shared_buffers=32MB -c huge_pages=off \
	-c max_connections=20 -c jit=off
echo "server up under valgrind: $(san_as_pg psql -X -At -c 'SELECT version()')"

# --- the suite -------------------------------------------------------------------------

status=0
results=()
san_suites valgrind "$VALGRIND_ISOLATION" VALGRIND_ISOLATION
san_stop

# --- the errors --------------------------------------------------------------------------

say "valgrind: errors"
# Split every log into its errors (error contexts: memcheck prints each
# distinct one once per process) and sort them:
#   ours        one of its frames, in any of its stacks (where it happened,
#               where the memory was allocated or freed, where an
#               uninitialised value was created), is in the module or in
#               the copy's sources: counted
#   cut short   no such frame, but a stack memcheck cut at --num-callers,
#               so one may have been lost: counted (raise
#               VALGRIND_NUM_CALLERS to see the whole stack)
#   explained   no such frame, and one of the two kinds PostgreSQL itself
#               produces under memcheck when built without USE_VALGRIND
#               (README.md: "What valgrind.sh counts"): listed
#                 wal_padding   "Syscall param pwrite64(buf) points to
#                               uninitialised byte(s)" with XLogFlush,
#                               XLogBackgroundFlush or XLogInsertRecord
#                               (the static XLogWrite's callers) on its
#                               stack
#                 sinval_ring   an uninitialised value used with
#                               ReceiveSharedInvalidMessages on its stack
#   unexplained any other error of the server: counted
ours_re="stream_offset_guard\\.so|$SAN_TREE/src/"
for k in ours server truncated unexplained; do : >"$SAN_DIR/errors-$k.txt"; done
nlogs=0 unfinished=0
for log in "$vgdir"/*.log; do
	[ -f "$log" ] || continue
	nlogs=$((nlogs + 1))
	grep -q 'ERROR SUMMARY' "$log" || unfinished=$((unfinished + 1))
	NC=$VALGRIND_NUM_CALLERS OURS=$ours_re LOGF=$log D=$SAN_DIR awk '
		{ sub(/^==[0-9]+== ?/, "") }
		# -v lists every error context again after the first summary
		/^ERROR SUMMARY/ { exit }
		/^VALGRINDERROR-BEGIN/ {
			inerr = 1; block = ""; kind = ""; main = ""; stacks = 0; frames = 0; full = 0
			next
		}
		/^VALGRINDERROR-END/ {
			inerr = 0
			if (frames >= ENVIRON["NC"] + 0) full = 1
			class = ""
			if (kind ~ /^Syscall param pwrite(64)?\(buf\) points to uninitialised byte\(s\)$/ &&
				main ~ /XLogFlush|XLogBackgroundFlush|XLogInsertRecord/)
				class = "wal_padding"
			else if (kind ~ /^(Conditional jump or move depends on uninitialised value\(s\)|Use of uninitialised value of size [0-9]+)$/ &&
				main ~ /ReceiveSharedInvalidMessages/)
				class = "sinval_ring"
			if (block ~ ENVIRON["OURS"]) out = "ours"
			else if (full) out = "truncated"
			else if (class != "") out = "server"
			else out = "unexplained"
			printf "----- %s%s\n%s\n", ENVIRON["LOGF"], (out == "server" ? " [" class "]" : ""), block >>(ENVIRON["D"] "/errors-" out ".txt")
			next
		}
		!inerr { next }
		kind == "" { kind = $0 }
		# a stack starts with "at" and goes on with "by"; one that has
		# --num-callers frames may have been cut short
		/^ +at 0x/ { if (frames >= ENVIRON["NC"] + 0) full = 1; frames = 1; stacks++ }
		/^ +by 0x/ { frames++ }
		stacks == 1 && /^ +(at|by) 0x/ { main = main $0 "\n" }
		{ block = block $0 "\n" }
	' "$log"
done
nours=$(grep -c '^----- ' "$SAN_DIR/errors-ours.txt" || true)
nserver=$(grep -c '^----- ' "$SAN_DIR/errors-server.txt" || true)
ntrunc=$(grep -c '^----- ' "$SAN_DIR/errors-truncated.txt" || true)
nunexp=$(grep -c '^----- ' "$SAN_DIR/errors-unexplained.txt" || true)
# memcheck's own summary lines, over all processes
# "==PID== ERROR SUMMARY: E errors from C contexts (suppressed: S from T)"
# (the first of each log: -v prints it twice)
read -r e c supps < <(for log in "$vgdir"/*.log; do grep -m1 -hE 'ERROR SUMMARY' "$log"; done 2>/dev/null |
	awk '{ gsub(/[()]/, ""); e += $4; c += $7; s += $10 } END { print e + 0, c + 0, s + 0 }')
if [ "$nours" -gt 0 ]; then
	echo "errors in the extension (first 200 lines; all in $SAN_DIR/errors-ours.txt with KEEP_TMP=1):"
	head -n 200 "$SAN_DIR/errors-ours.txt"
fi
if [ "$ntrunc" -gt 0 ]; then
	echo "errors whose stack was cut at $VALGRIND_NUM_CALLERS frames before a frame of the extension could show (counted):"
	head -n 200 "$SAN_DIR/errors-truncated.txt"
fi
if [ "$nunexp" -gt 0 ]; then
	echo "errors of the server of no kind explained in test/sanitize/README.md (counted):"
	head -n 200 "$SAN_DIR/errors-unexplained.txt"
fi
if [ "$nserver" -gt 0 ]; then
	# by class, kind, innermost named server frame, and origin (where known)
	echo "errors of the server without a frame of the extension in any of their stacks, of the kinds explained in test/sanitize/README.md (listed, not counted):"
	awk '
		function flush() { if (kind != "") n[class " " kind " at " where (origin != "" ? "; origin " origin : "")]++ }
		/^----- / { flush(); kind = ""; where = ""; origin = ""; state = 1; class = $NF; next }
		state == 1 { kind = $0; state = 2; next }
		/was created by/ { state = 3; next }
		state == 2 && where == "" && /^   (at|by) / && !/vgpreload|libc\.so|\(io\/|\(libio\/|\(posix\/|\?\?\?/ {
			where = $0; sub(/^ +(at|by) 0x[0-9A-F]+: /, "", where); sub(/ \(.*/, "", where) }
		state == 3 && origin == "" && /^   (at|by) / && !/vgpreload|malloc|realloc|\?\?\?/ {
			origin = $0; sub(/^ +(at|by) 0x[0-9A-F]+: /, "", origin); sub(/ \(.*/, "", origin) }
		END { flush(); for (k in n) printf "  %4d  %s\n", n[k], k }
	' "$SAN_DIR/errors-server.txt" | sort -rn
	echo "  (each in full: $SAN_DIR/errors-server.txt with KEEP_TMP=1)"
fi
# which suppressions matched, and how often (valgrind -v prints them at exit)
used=$(cat "$vgdir"/*.log 2>/dev/null | sed -n 's/^--[0-9]*-- used_suppression: *\([0-9]*\) \([^ ]*\) .*/\2 \1/p' |
	awk '{ n[$1] += $2; p[$1]++ } END { for (k in n) printf "  %6d  %s (in %d processes)\n", n[k], k, p[k] }' | sort -rn)
if [ -n "$used" ]; then
	echo "suppressed by test/sanitize/valgrind.supp:"
	echo "$used"
fi
crashes=$(san_crash_lines)
if [ -n "$crashes" ]; then
	echo "server log: a backend crashed or failed an assertion:"
	echo "$crashes" | sed -n 1,20p
fi
echo "memcheck: $nlogs processes, ERROR SUMMARY: $e errors from $c contexts (after suppressions); $supps suppressed"
[ "$unfinished" = 0 ] || echo "memcheck: $unfinished process logs end without an ERROR SUMMARY (the process did not exit through valgrind)"
echo "memcheck: error contexts: $nours involve stream_offset_guard, $ntrunc are cut short, $nunexp are the server's and unexplained (all counted); $nserver are the server's, of an explained kind (listed)"
printf '%s\n' "${results[@]}"
echo "wall time: $(($(date +%s) - t0)) s"

# The verdict, the same with and without --selftest.
verdict=passed
reasons=()
[ "$status" = 0 ] || reasons+=("a suite failed")
[ "$nours" = 0 ] || reasons+=("$nours error contexts in the extension")
[ "$ntrunc" = 0 ] || reasons+=("$ntrunc error contexts cut short")
[ "$nunexp" = 0 ] || reasons+=("$nunexp unexplained error contexts of the server")
[ -z "$crashes" ] || reasons+=("a backend crashed")
[ ${#reasons[@]} = 0 ] || verdict=failed

if [ "$selftest" = 1 ]; then
	# The check must fail, and for the right reason: memcheck's error names
	# the patched function.
	echo "selftest: without --selftest this run would have $verdict${reasons:+ ($(san_join "${reasons[@]}"))}"
	if [ "$verdict" = failed ] && [ "$nours" -gt 0 ] &&
		grep -q 'Conditional jump or move depends on uninitialised value' "$SAN_DIR/errors-ours.txt" &&
		grep -q 'sog_selftest_uninit' "$SAN_DIR/errors-ours.txt"; then
		echo "selftest: memcheck reported the deliberate uninitialised read in sog_selftest_uninit, and the run fails on it, as it must"
		echo "valgrind selftest: 1 passed, 0 failed"
		exit 0
	fi
	echo "selftest: the deliberate uninitialised read in sog_selftest_uninit was NOT reported as an error of the extension"
	echo "valgrind selftest: 0 passed, 1 failed"
	exit 1
fi

if [ "$verdict" = passed ]; then
	echo "valgrind: 1 passed, 0 failed"
	exit 0
fi
echo "valgrind: failed: $(san_join "${reasons[@]}")"
echo "valgrind: 0 passed, 1 failed"
exit 1
