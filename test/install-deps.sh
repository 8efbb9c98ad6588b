#!/usr/bin/env bash
#
# test/install-deps.sh: install, from Debian 12's own packages, whatever the
# test suite needs and the machine lacks.  Idempotent: it asks dpkg first and
# touches apt only when something is missing.  Runs as root, or as a user
# with sudo.
#
#   test/install-deps.sh          everything `make test` needs
#   test/install-deps.sh fuzz     only what `make fuzz` needs
#
# What each package is for:
#   postgresql-15             the server, initdb, pg_ctl, psql; on Debian 12
#                             it also ships contrib (pgcrypto, the tests'
#                             independent SHA-256 oracle)
#   postgresql-server-dev-15  headers, PGXS, pg_regress, pg_isolation_regress
#                             and PostgreSQL::Test::Cluster for the TAP tests
#   libipc-run-perl           IPC::Run, which the TAP framework needs
#   perl                      prove
#   clang, libclang-rt-14-dev the fuzzer: libFuzzer, ASan and UBSan runtimes
#   llvm-14                   llvm-symbolizer, for readable sanitizer reports
#   make, gcc                 the PGXS build
#   libssl-dev, openssl       the benchmark's plain-C SHA-256 loop (bench/
#                             hashloop.c, also compiled by the bench smoke
#                             test) and `openssl speed`
#   python3, python3-psycopg  the README's Python example
#                             (examples/python/check_sink.py)
#   postgresql-15-cron        pg_cron, for t/007_pg_cron_retention.pl
#   prometheus-postgres-exporter  the exporter t/008_exporter.pl scrapes
#   prometheus                promtool, which checks monitoring/alerts.yml
#                             and runs its unit tests (no server is started:
#                             test/lib.sh keeps services from starting)
# runuser (util-linux) is essential on Debian and always present.

set -euo pipefail

case "${1:-all}" in
	all)
		pkgs=(make gcc perl postgresql-15 postgresql-server-dev-15 libipc-run-perl
			clang libclang-rt-14-dev llvm-14 libssl-dev openssl python3 python3-psycopg
			postgresql-15-cron prometheus-postgres-exporter prometheus spin)
		;;
	fuzz)
		pkgs=(clang libclang-rt-14-dev llvm-14)
		;;
	*)
		echo "usage: $0 [all|fuzz]" >&2
		exit 2
		;;
esac

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sog_install_packages "${pkgs[@]}" || exit 1
