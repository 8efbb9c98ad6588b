#!/usr/bin/env bash
#
# test/versions/run.sh: the extension on every PostgreSQL major users run
# (`make test-versions`).
#
# For each major, a Debian root of the suite that carries it (15 bookworm,
# 17 trixie, 18 sid; 19, a release candidate, sid with experimental), made
# by debootstrap and cached under build/roots (test/versions/lib.sh), then
# inside it, as a user of that distribution builds it: a fresh copy of the
# working tree built with -Wall -Wextra -Werror against that major's
# postgresql-server-dev-N and PGXS, installed, and test/run-tests.sh's
# suites that need a server and no broker run against it:
#
#   released-scripts docs getting-started regress isolation tap portable
#   portable-regress seq-diff bench-smoke python-example reliability
#   reliability-portable corpus
#
# (the TAP suite holds the crash, restart, dump and restore, 1.0 -> 1.1
# upgrade, pg_cron, exporter and standby tests; the spin model, the alert
# rules and the fuzzer do not depend on the server and run in make test;
# the demo needs a broker.)  In the 17 and 18 roots the 15 installation of
# the 15 root is put beside theirs, so t/010_major_upgrade.pl moves a
# database with every kind of state from 15 to that major, by pg_dump and
# restore and by pg_upgrade.  On 17, test/citus (make test-citus) runs too.
# 19 runs the regression suite only; its line is reported and never fails
# the run while 19 is a release candidate.
#
# Prints one line per major and a last line
#   test-versions: N passed, M failed
# and exits non-zero if a counted major failed.
#
#   test/versions/run.sh            15 17 18 19
#   test/versions/run.sh 17 18      those majors only
#
# Environment:
#   VERSIONS_SUITES   the suites per major (default: the list above)
#   VERSIONS_CITUS    majors to run test/citus on (default 17; "" for none)
#   VERSIONS_DIR      where the roots are cached (default build/roots)
#   KEEP_TMP=1        passed on: keep each run's temp dir inside its root
#
# Needs root (debootstrap, chroot, mount); installs debootstrap if missing.

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
versions_repo=$repo
source "$repo/test/lib.sh"
source "$here/lib.sh"

say() { printf '\n=== %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "test-versions: needs root (debootstrap, chroot and mount)" >&2
	exit 2
fi
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(15 17 18 19)
suites=${VERSIONS_SUITES:-released-scripts docs getting-started regress isolation tap portable portable-regress seq-diff bench-smoke python-example reliability reliability-portable corpus}
citus_majors=${VERSIONS_CITUS-17}
counted=" 15 17 18 "				# majors whose failure fails the run

trap 'versions_umount_all' EXIT
trap 'exit 130' INT TERM

sog_install_packages debootstrap || exit 1

passed=0
failed=0
lines=()
result() {		# result COUNTED(0|1) STATUS LINE
	lines+=("$3")
	echo "$3"
	if [ "$1" = 1 ]; then
		case $2 in
			passed) passed=$((passed + 1)) ;;
			*) failed=$((failed + 1)) ;;
		esac
	fi
}

# The working tree (and the vendored sources: Citus for make test-citus,
# pg_tle for the portable edition's suite) inside root $1.
stage_tree() {
	local r=$1
	rm -rf "$r/sog"
	sog_copy_tree "$repo" "$r/sog/src" || return 1
	local v
	for v in citus pg_tle; do
		if [ -d "$repo/../shared/vendor/$v" ]; then
			mkdir -p "$r/sog/shared/vendor"
			cp -a "$repo/../shared/vendor/$v" "$r/sog/shared/vendor/"
		fi
	done
}

run_major() {
	local major=$1 t0=$SECONDS r version status count=0 last out suite_list=$suites env=()
	[ "${counted/ $major /}" != "$counted" ] && count=1
	say "PostgreSQL $major ($(versions_suite "$major"))"
	if ! versions_root_ensure "$major"; then
		result "$count" failed "test-versions $major: failed (the root could not be made) [$((SECONDS - t0)) s]"
		return
	fi
	r=$root
	stage_tree "$r" || { result "$count" failed "test-versions $major: failed (copying the tree)"; return; }
	versions_mount "$r" || { result "$count" failed "test-versions $major: failed (mounting /proc, /dev)"; return; }
	version=$(versions_pg_version "$r" "$major")
	local deps=server
	if [ "$major" = 19 ]; then
		suite_list=regress
		deps=regress
	fi
	# the older major beside this one, for t/010_major_upgrade.pl
	if [ "$major" -gt 15 ] && [ "$major" -lt 19 ] && old_install_ready &&
		versions_copy_install "$VERSIONS_DIR/pg15" 15 "$r"; then
		env+=(SOG_OLD_INSTALL=/usr/lib/postgresql/15)
	fi
	out=$r/sog/run-tests.log
	versions_chroot "$r" PG_MAJOR="$major" SOG_DEPS="$deps" SOG_SUITES="$suite_list" \
		SOG_RUN_LABEL="make test on $version" SKIP_FUZZ=1 KEEP_TMP="${KEEP_TMP:-0}" "${env[@]}" \
		bash /sog/src/test/run-tests.sh 2>&1 | tee "$out"
	status=${PIPESTATUS[0]}
	last=$(grep -E "^make test on $version: " "$out" | tail -n 1)
	[ -n "$last" ] || last="no summary line (see above)"
	if [ "$major" = 15 ] && [ -f "$r/usr/lib/postgresql/15/lib/stream_offset_guard.so" ] &&
		! grep -q '^run-tests: the build or install failed' "$out"; then
		old_ready=1			# run-tests.sh installed this tree there
	fi
	if [ "$status" = 0 ]; then
		result "$count" passed "test-versions $major: passed on PostgreSQL $version ($(versions_suite "$major")): ${last#make test on $version: } ($suite_list) [$((SECONDS - t0)) s]"
	elif [ "$count" = 1 ]; then
		result 1 failed "test-versions $major: FAILED on PostgreSQL $version ($(versions_suite "$major")): ${last#make test on $version: } [$((SECONDS - t0)) s]"
	else
		result 0 failed "test-versions $major: FAILED on PostgreSQL $version ($(versions_suite "$major")): ${last#make test on $version: }; reported only, 19 is a release candidate [$((SECONDS - t0)) s]"
	fi
	if [ "${citus_majors/$major/}" != "$citus_majors" ]; then
		run_citus "$major" "$r" "$version"
	fi
	versions_umount_all "$r"
}

# The 15 root with this tree built and installed into its PostgreSQL (what
# 15's own run leaves; made here when 15 is not among the majors run).
old_ready=0
old_install_ready() {
	local r
	[ "$old_ready" = 1 ] && return 0
	say "PostgreSQL 15 beside the newer majors (for t/010_major_upgrade.pl)"
	versions_root_ensure 15 || return 1
	r=$root
	stage_tree "$r" && versions_mount "$r" &&
		versions_chroot "$r" make -C /sog/src -s with_llvm=no PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install &&
		old_ready=1
	versions_umount_all "$r"
	[ "$old_ready" = 1 ]
}

run_citus() {
	local major=$1 r=$2 version=$3 t0=$SECONDS status last
	say "Citus on PostgreSQL $version"
	versions_chroot "$r" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" \
		SOG_CITUS_VENDOR=/sog/shared/vendor/citus SOG_CITUS_CACHE=/var/cache/sog-citus \
		KEEP_TMP="${KEEP_TMP:-0}" \
		bash /sog/src/test/citus/run.sh 2>&1 | tee "$r/sog/citus.log"
	status=${PIPESTATUS[0]}
	last=$(grep -E '^(Result|Files=)' "$r/sog/citus.log" | tr '\n' ' ')
	if grep -q '^skipped:' "$r/sog/citus.log"; then
		result 1 failed "test-citus $major: not run ($(grep '^skipped:' "$r/sog/citus.log"))"
	elif [ "$status" = 0 ]; then
		result 1 passed "test-citus $major: passed on PostgreSQL $version: ${last% } [$((SECONDS - t0)) s]"
	else
		result 1 failed "test-citus $major: FAILED on PostgreSQL $version: ${last% } [$((SECONDS - t0)) s]"
	fi
}

t_all=$SECONDS
for m in "${majors[@]}"; do
	if ! versions_suite "$m" >/dev/null; then
		result 1 failed "test-versions $m: no Debian suite is known for PostgreSQL $m"
		continue
	fi
	run_major "$m"
done

say "summary"
printf '%s\n' "${lines[@]}"
echo "test-versions: $passed passed, $failed failed [$((SECONDS - t_all)) s]"
[ "$failed" -eq 0 ]
