#!/usr/bin/env bash
#
# test/install-deps.sh: install, from Debian's own packages, whatever the
# test suite needs and the machine lacks.  Idempotent: it asks dpkg first and
# touches apt only when something is missing.  Runs as root, or as a user
# with sudo.
#
#   test/install-deps.sh          everything `make test` needs (Debian 12)
#   test/install-deps.sh server   what the suites that need a server and no
#                                 broker need, for PG_MAJOR (default 15): the
#                                 packages of each root of make test-versions
#   test/install-deps.sh regress  what the regression suite alone needs, for
#                                 PG_MAJOR (the root of a release candidate)
#   test/install-deps.sh fuzz     only what `make fuzz` needs
#   test/install-deps.sh portable what test/portable/run.sh needs (the
#                                 server set: pg_tle's build too), for PG_MAJOR
#   test/install-deps.sh citus    what building Citus from source and its
#                                 tests need (test/citus; with PG_MAJOR's
#                                 server set)
#   test/install-deps.sh --list SET   print SET's packages, install nothing
#
# What each package is for:
#   postgresql-N              the server, initdb, pg_ctl, psql; on Debian it
#                             also ships contrib (pgcrypto, the tests'
#                             independent SHA-256 oracle; amcheck)
#   postgresql-server-dev-N   headers, PGXS, pg_regress, pg_isolation_regress
#                             and PostgreSQL::Test::Cluster for the TAP tests
#   libipc-run-perl           IPC::Run, which the TAP framework needs
#   perl                      prove
#   make, gcc, libc6-dev      the PGXS build
#   libssl-dev, openssl       the benchmark's plain-C SHA-256 loop (bench/
#                             hashloop.c, also compiled by the bench smoke
#                             test) and `openssl speed`
#   python3, python3-psycopg  the README's Python example
#                             (examples/python/check_sink.py)
#   redis-server, python3-redis  the complete Python consumer on a real
#                             Redis (examples/python/consumer.py; the suite
#                             python-consumer starts its own redis-server)
#   postgresql-N-cron         pg_cron, for t/007_pg_cron_retention.pl
#   prometheus-postgres-exporter  the exporter t/008_exporter.pl scrapes
#   procps                    ps and pkill, which the fault loops use
#   clang, libclang-rt-14-dev the fuzzer: libFuzzer, ASan and UBSan runtimes
#   llvm-14                   llvm-symbolizer, for readable sanitizer reports
#   prometheus                promtool, which checks monitoring/alerts.yml
#                             and runs its unit tests (no server is started:
#                             test/lib.sh keeps services from starting)
#   spin                      the model checker of model/
#   patch, lib*-dev           Citus' build (its configure's libraries; ICU's
#                             headers for PostgreSQL's pg_locale.h)
#   flex, bison, libkrb5-dev  pg_tle's build from ../shared/vendor, for the
#                             portable edition's suite (test/portable), a
#                             server suite: in the server set, so every
#                             root of make test-versions has them
# runuser (util-linux) is essential on Debian and always present.

set -euo pipefail

M=${PG_MAJOR:-15}
server=(make gcc libc6-dev perl postgresql-$M postgresql-server-dev-$M libipc-run-perl
	libssl-dev openssl python3 python3-psycopg postgresql-$M-cron
	prometheus-postgres-exporter procps flex bison libkrb5-dev)
fuzz=(clang libclang-rt-14-dev llvm-14)
citus=(patch libicu-dev libcurl4-openssl-dev liblz4-dev libzstd-dev
	libselinux1-dev libxslt1-dev libpam0g-dev libreadline-dev)

list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi
case "${1:-all}" in
	all) pkgs=("${server[@]}" "${fuzz[@]}" prometheus spin redis-server python3-redis) ;;
	server) pkgs=("${server[@]}") ;;
	regress) pkgs=(make gcc libc6-dev perl postgresql-$M postgresql-server-dev-$M) ;;
	fuzz) pkgs=("${fuzz[@]}") ;;
	portable) pkgs=("${server[@]}") ;;
	citus) pkgs=("${server[@]}" "${citus[@]}") ;;
	*)
		echo "usage: $0 [--list] [all|server|regress|fuzz|portable|citus]" >&2
		exit 2
		;;
esac
if [ "$list" = 1 ]; then
	echo "${pkgs[*]}"
	exit 0
fi

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sog_install_packages "${pkgs[@]}" || exit 1
