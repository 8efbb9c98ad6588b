#!/usr/bin/env bash
#
# test/versions/bench.sh: one cell of the benchmark on each PostgreSQL major
# (`make bench-versions`), side by side in one run.
#
# For each major (default 15 17 18), in its Debian root (test/versions/lib.sh;
# made or reused as make test-versions does), bench/run.sh runs the real
# client's cells B=100 and B=1000 with 1 and 4 clients: the baselines (b)
# offsets table and (c) inbox, the guard's calls (g) apply_batch, (h)
# apply_batch_int8 and (r) apply_run, and the whole protocol (w) two commits
# per page and (p) pipelined, RUNS paired runs of DURATION s per cell (the
# pgbench variants, the scale check and the micro-figures are left out; the
# receipts phase runs on BENCH_RECEIPTS events).  The majors run one after
# another on the same machine, with the same settings; each root builds the
# client against its own libpq.  28 cells x RUNS x (DURATION + about 0.5 s)
# per major: about 11 minutes each with the defaults.
#
# Output: the raw results in bench/results/versions-<timestamp>/pgN/ (git
# ignored), and docs/versions-bench.md: issue 22's targets met or missed on
# each major (computed by bench/report.pl's code), the events/s and ratios,
# the backends' CPU per transaction, and where each miss goes.
#
#   bash test/versions/bench.sh            # 15 17 18, RUNS=5 DURATION=4
#   RUNS=3 bash test/versions/bench.sh 17 18
#
# Needs root (chroot, mount).  Nothing else should run on the machine.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
versions_repo=$repo
source "$repo/test/lib.sh"
source "$here/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "bench-versions: needs root (chroot and mount)" >&2; exit 2; }
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(15 17 18)
RUNS=${RUNS:-5}
DURATION=${DURATION:-4}
out=$repo/bench/results/versions-$(date +%Y%m%d-%H%M%S)
page=${BENCH_VERSIONS_PAGE:-$repo/docs/versions-bench.md}
trap 'versions_umount_all' EXIT
trap 'exit 130' INT TERM
sog_install_packages debootstrap || exit 1
mkdir -p "$out"

for m in "${majors[@]}"; do
	echo "=== PostgreSQL $m"
	versions_root_ensure "$m" || exit 1
	r=$root
	rm -rf "$r/sog" && sog_copy_tree "$repo" "$r/sog/src" || exit 1
	versions_mount "$r" || exit 1
	versions_chroot "$r" PG_MAJOR="$m" RUNS="$RUNS" DURATION="$DURATION" BATCHES="100 1000" CLIENTS="1 4" \
		VARIANTS="" CLIENT_VARIANTS="cb cc cg ch cr cw cp" SCALE=0 MICRO=0 RECEIPTS_N="${BENCH_RECEIPTS:-100000}" \
		PUBLISH=0 INSTALL=system OUT=/sog/bench-out bash /sog/src/bench/run.sh || exit 1
	cp -a "$r/sog/bench-out" "$out/pg$m"
	versions_umount_all "$r"
done

# The targets, ratios and CPU figures of each major, from its raw results
# (bench/report.pl's load_run and issue22_targets).
perl "$here/bench-report.pl" "$out" "${majors[@]}" >"$page" || exit 1
echo "bench-versions: wrote $page (raw results in $out)"
cat "$page"
