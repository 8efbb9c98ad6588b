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
# runuser (util-linux) is essential on Debian and always present.

set -euo pipefail

case "${1:-all}" in
	all)
		pkgs=(make gcc perl postgresql-15 postgresql-server-dev-15 libipc-run-perl
			clang libclang-rt-14-dev llvm-14 libssl-dev openssl python3 python3-psycopg)
		;;
	fuzz)
		pkgs=(clang libclang-rt-14-dev llvm-14)
		;;
	*)
		echo "usage: $0 [all|fuzz]" >&2
		exit 2
		;;
esac

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "install-deps: missing ${missing[*]}, and neither root nor sudo is available to install them" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
