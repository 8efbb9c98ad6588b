#!/usr/bin/env bash
#
# test/sanitize/sanitize.sh: the regression suite (and the isolation specs)
# against the extension built with AddressSanitizer and
# UndefinedBehaviorSanitizer, in a private PostgreSQL whose postmaster runs
# with the ASan runtime preloaded (PostgreSQL itself is Debian's, not
# instrumented).  See test/sanitize/README.md.
#
#   test/sanitize/sanitize.sh             build, cluster, regress, isolation, check
#   test/sanitize/sanitize.sh --selftest  the same (regress: setup, position)
#                                         with a deliberate stack out-of-bounds
#                                         read patched into the copy
#                                         (sog.position's input function):
#                                         passes only if ASan reports it and
#                                         the run fails on it
#   test/sanitize/sanitize.sh --selftest-ubsan
#                                         the same read as an out-of-bounds
#                                         array index: passes only if UBSan
#                                         reports it and the run fails on it
#
# Exit 0 only if the suites pass and neither sanitizer wrote a report (nor
# did any backend crash, fail an assertion or PANIC).
#
# Environment:
#   SAN_CC         clang (default: clang 14, whose ASan runtime holds
#                  UBSan's too) or gcc (gcc 12: libasan and libubsan; UBSan's
#                  runtime then starts in a backend and misses UBSAN_OPTIONS:
#                  its reports reach the server log without a stack, and the
#                  backend exits with status 1, which the postmaster does not
#                  log; they are still counted)
#   SAN_ISOLATION  1 (default) also runs the isolation specs; 0 skips them
#   SAN_ROOT       where the work directory goes (default /tmp/san-pg);
#                  this script uses $SAN_ROOT/sanitize (sanitize-selftest-asan,
#                  sanitize-selftest-ubsan)
#   KEEP_TMP=1     keep the work directory (cluster, logs, reports)
#   REGRESS=..., ISOLATION=...  run only these tests

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

selftest=0
case ${1:-} in
	--selftest) selftest=1 kind=asan ;;
	--selftest-ubsan) selftest=1 kind=ubsan ;;
	"") ;;
	*) echo "usage: $0 [--selftest|--selftest-ubsan]" >&2; exit 2 ;;
esac

SAN_ISOLATION=${SAN_ISOLATION:-1}
KEEP_TMP=${KEEP_TMP:-0}
t0=$(date +%s)
# A selftest needs only a test that parses positions (position, after
# setup); the patched defect would fail every test after it anyway.
if [ "$selftest" = 1 ]; then
	REGRESS=${REGRESS:-setup position}
	SAN_ISOLATION=0
fi

say "sanitize: dependencies"
pkgs=("${SAN_BASE_PKGS[@]}" patchelf llvm-14)
[ "${SAN_CC:-clang}" = clang ] && pkgs+=(clang-14 libclang-rt-14-dev)
sog_install_packages "${pkgs[@]}"

if [ "$selftest" = 1 ]; then san_init "sanitize-selftest-$kind"; else san_init sanitize; fi
san_cleanup_on_exit sanitize

# --- the compiler and its runtime ---------------------------------------------

san_asan_toolchain

# --- private PostgreSQL, copy, build -------------------------------------------

say "sanitize: private PostgreSQL in $SAN_PG, build with $SAN_CC"
san_copy_pg
san_copy_tree

if [ "$selftest" = 1 ]; then
	# The deliberate defect: sog.position's input function reads one byte
	# past an 8-byte stack array (an index the compiler cannot see through);
	# through a pointer for ASan (UBSan's bounds check sees only array
	# indexing, and the pointer goes through a volatile so that its
	# object-size check cannot see it either), as an array index for UBSan.
	f=$SAN_TREE/src/type/position.c
	san_selftest_anchors "$f" 'PG_FUNCTION_INFO_V1(sog_position_in);' \
		'	char	   *str = PG_GETARG_CSTRING(0);'
	awk -v kind="$kind" '
		/^PG_FUNCTION_INFO_V1\(sog_position_in\);$/ {
			print "static char sog_selftest_oob(const char *s);"
			print "static char"
			print "sog_selftest_oob(const char *s)"
			print "{"
			print "\tchar\t\tbuf[8];"
			print "\tvolatile int i = 8;\t/* one past the end */"
			print ""
			print "\tstrlcpy(buf, s, sizeof(buf));"
			if (kind == "asan") {
				print "\t{"
				print "\t\tconst char *volatile p = buf;"
				print ""
				print "\t\treturn p[i];"
				print "\t}"
			} else
				print "\treturn buf[i];"
			print "}"
			print ""
			infn = 1
		}
		{ print }
		infn && /^	char	   \*str = PG_GETARG_CSTRING\(0\);$/ {
			print "\tvolatile char sog_selftest_c pg_attribute_unused() = sog_selftest_oob(str);"
			infn = 0
		}
	' "$f" >"$f.new" && mv "$f.new" "$f"
	oob_line=$(grep -nE '^	+return (p|buf)\[i\];$' "$f" | sed -n 1p | cut -d: -f1)
	echo "selftest ($kind): patched sog_position_in in the copy (src/type/position.c) with a stack read one past an 8-byte array"
fi

san_asan_build

# --- the cluster ----------------------------------------------------------------

san_chown
san_initdb
say "sanitize: cluster (socket $SAN_SOCK, port $SAN_PORT), postmaster with LD_PRELOAD=$SAN_RUNTIME"
san_start "${SAN_ENV[@]}" -- -c autovacuum=off
san_asan_maps_check

# --- the suites --------------------------------------------------------------------

status=0
results=()
san_suites sanitize "$SAN_ISOLATION" SAN_ISOLATION

san_stop

# --- the sanitizers' reports --------------------------------------------------------

say "sanitize: reports"
san_asan_reports
nreports=$SAN_NREPORTS
crashes=$(san_crash_lines)
if [ -n "$crashes" ]; then
	echo "server log: a backend crashed or failed an assertion:"
	echo "$crashes" | sed -n 1,20p
fi
printf '%s\n' "${results[@]}"
echo "wall time: $(($(date +%s) - t0)) s"

# The verdict, the same with and without --selftest.
verdict=passed
reasons=()
[ "$status" = 0 ] || reasons+=("a suite failed")
[ "$nreports" = 0 ] || reasons+=("$nreports sanitizer reports")
[ -z "$crashes" ] || reasons+=("a backend crashed or failed an assertion")
[ ${#reasons[@]} = 0 ] || verdict=failed

if [ "$selftest" = 1 ]; then
	# The check must fail, and for the right reason: the sanitizer's report
	# names the patched function.
	case $kind in
		asan) want='ERROR: AddressSanitizer: stack-buffer-overflow' ;;
		ubsan) want='runtime error: index 8 out of bounds' ;;
	esac
	echo "selftest: without --selftest this run would have $verdict${reasons:+ ($(san_join "${reasons[@]}"))}"
	all=$(cat "$SAN_REPORTS"/* "$SAN_LOG" 2>/dev/null || true)
	# the stack names the function; gcc's UBSan writes no stack, only the
	# file and line of the read
	if [ "$verdict" = failed ] && [ "$nreports" -gt 0 ] && grep -q "$want" <<<"$all" &&
		grep -Eq "in sog_selftest_oob|src/type/position\.c:$oob_line:" <<<"$all"; then
		echo "selftest: the sanitizer reported the deliberate out-of-bounds read in sog_selftest_oob ($want), and the run fails on it, as it must"
		echo "sanitize selftest: 1 passed, 0 failed"
		exit 0
	fi
	echo "selftest: the deliberate out-of-bounds read was NOT reported as '$want' in sog_selftest_oob"
	echo "sanitize selftest: 0 passed, 1 failed"
	exit 1
fi

if [ "$verdict" = passed ]; then
	echo "sanitize: 1 passed, 0 failed"
	exit 0
fi
echo "sanitize: failed: $(san_join "${reasons[@]}")"
echo "sanitize: 0 passed, 1 failed"
exit 1
