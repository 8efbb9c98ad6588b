#!/usr/bin/env bash
#
# test/fuzz.sh: fuzz the position codec (src/type/position_codec.c) with libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer.  Needs no server; this is
# what `make fuzz` runs, and test/run-tests.sh runs it as part of `make test`.
#
#   test/fuzz.sh              build, seed the corpus, fuzz for FUZZ_SECONDS
#   test/fuzz.sh FILE...      build and run the target once on each FILE
#                             (to reproduce a crash-* artifact)
#
# Environment:
#   FUZZ_SECONDS   how long to fuzz (default 60); 0 only replays the corpus
#   CC             the compiler (default clang)
#
# The target, test/fuzz/position_fuzz.c, says what it checks.  The corpus
# lives in test/fuzz/corpus/ (git-ignored, kept between runs so it grows); it
# is seeded from the positions of test/contract-v1.json and from the committed
# hand seeds in test/fuzz/seeds/.  Crash inputs are saved as
# test/fuzz/crash-* (also git-ignored).  Exits non-zero on any crash.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
CC=${CC:-clang}
fuzzdir=test/fuzz
bin=$fuzzdir/position_fuzz
corpus=$fuzzdir/corpus
seeds=$fuzzdir/seeds

if ! [[ $FUZZ_SECONDS =~ ^[0-9]+$ ]]; then
	echo "fuzz: FUZZ_SECONDS must be a whole number of seconds, not '$FUZZ_SECONDS'" >&2
	exit 2
fi

# The compiler and libFuzzer's runtime (Debian: clang, libclang-rt-14-dev).
if ! command -v "$CC" >/dev/null 2>&1 ||
	! echo 'int main(void){return 0;}' | "$CC" -x c -fsanitize=fuzzer-no-link,address,undefined -o /dev/null - >/dev/null 2>&1; then
	bash test/install-deps.sh fuzz
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sog-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Build.  -O1 keeps the sanitizers' reports readable.
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror -Isrc \
	-o "$bin" "$fuzzdir/position_fuzz.c" src/type/position_codec.c

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for s in llvm-symbolizer llvm-symbolizer-14; do
	if command -v "$s" >/dev/null 2>&1; then
		export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v "$s")}
		break
	fi
done

# Reproduce mode: run the given inputs once each.
if [ $# -gt 0 ]; then
	exec "$bin" "$@"
fi

# Seed the corpus with every position string of the contract's test vectors
# (values of the keys below, and the strings of the "order" array), and with
# each pair of neighbours in "order" joined by 0xFF, the byte at which the
# target splits an input into the two positions it compares.  A small sed
# rather than a JSON parser, so nothing beyond coreutils is needed; strings
# with JSON escapes are skipped (the file has none today).
mkdir -p "$corpus"
vectors=test/contract-v1.json
contract_strings() {
	sed -n -E 's/^[[:space:]]*"(input|canonical|position|source_cursor|sink_commit|requested|resume_from)":[[:space:]]*"([^"\\]*)",?[[:space:]]*$/\2/p' "$vectors"
}
order_strings() {
	awk '/"order":[[:space:]]*\[/ { inside = 1; next } inside && /\]/ { inside = 0 } inside' "$vectors" |
		sed -n -E 's/^[[:space:]]*"([^"\\]*)",?[[:space:]]*$/\1/p'
}
nseeds=0
if [ -f "$vectors" ]; then
	while IFS= read -r s; do
		printf '%s' "$s" >"$corpus/contract-$nseeds"
		nseeds=$((nseeds + 1))
	done < <(contract_strings; order_strings)
	prev=
	while IFS= read -r s; do
		if [ -n "$prev" ]; then
			printf '%s\377%s' "$prev" "$s" >"$corpus/contract-$nseeds"
			printf '%s\377%s' "$s" "$prev" >"$corpus/contract-$((nseeds + 1))"
			nseeds=$((nseeds + 2))
		fi
		prev=$s
	done < <(order_strings)
else
	echo "fuzz: $vectors not found; seeding from $seeds only"
fi
echo "fuzz: $nseeds seeds from $vectors, $(find "$seeds" -type f | wc -l) from $seeds/"

# A dictionary of the tokens the grammar cares about.
cat >"$work/position.dict" <<'EOF'
dash="-"
space=" "
tab="\x09"
vtab="\x0b"
cr="\x0d"
lf="\x0a"
ff="\x0c"
zero="0"
nine="9"
split="\xff"
nul="\x00"
version="\x01"
u64max="18446744073709551615"
EOF

if [ "$FUZZ_SECONDS" -eq 0 ]; then
	limit=(-runs=0)
	echo "fuzz: FUZZ_SECONDS=0, replaying the corpus only"
else
	limit=(-max_total_time="$FUZZ_SECONDS")
	echo "fuzz: fuzzing for $FUZZ_SECONDS s (libFuzzer output in the log; summary below)"
fi

log=$work/fuzz.log
set +e
"$bin" "${limit[@]}" -max_len=2048 -print_final_stats=1 -timeout=10 \
	-dict="$work/position.dict" -artifact_prefix="$fuzzdir/" \
	"$corpus" "$seeds" >"$log" 2>&1
rc=$?
set -e

# libFuzzer's own closing lines: "Done N runs in S second(s)" and the stats.
grep -E '^(Done [0-9]+ runs|stat::)' "$log" || true
runs=$(sed -n -E 's/^stat::number_of_executed_units:[[:space:]]*([0-9]+).*/\1/p' "$log" | tail -n 1)
size=$(find "$corpus" -type f | wc -l)

if [ "$rc" -ne 0 ]; then
	echo "fuzz: FAILED (libFuzzer exit $rc); the end of its log:"
	tail -n 80 "$log"
	for f in "$fuzzdir"/crash-* "$fuzzdir"/leak-* "$fuzzdir"/timeout-*; do
		if [ -e "$f" ]; then
			echo "fuzz: saved input $f (reproduce: bash test/fuzz.sh $f):"
			od -An -c "$f" | head -n 20
		fi
	done
	exit 1
fi
echo "fuzz: ${runs:-0} runs, no crash (corpus: $size inputs in $corpus/)"
