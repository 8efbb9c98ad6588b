# test/lib.sh: the shell functions every script of the project shares -
# test/run-tests.sh, test/install-deps.sh, bench/run.sh, examples/demo.sh,
# examples/jetstream_demo and test/reliability.  Sourced, not run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"
#
# Servers must not run as root (initdb and postgres refuse), so as root every
# server-side command runs as the `postgres` OS user; as any other user,
# installs go through sudo.

# Run a command as root (directly, or through sudo).
if [ "$(id -u)" -eq 0 ]; then
	sog_as_root() { "$@"; }
else
	sog_as_root() { sudo "$@"; }
fi

# Run a server-side command as the cluster's OS user, keeping PATH and the
# libpq variables the caller exported.
sog_as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env PATH="$PATH" "$@"
	else
		"$@"
	fi
}

# Is TCP port $1 listening on this machine, or its PostgreSQL socket name
# taken in /tmp?
sog_port_in_use() {
	local hex
	hex=$(printf '%04X' "$1")
	[ -e "/tmp/.s.PGSQL.$1" ] && return 0
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { found = 1 } END { exit !found }'
}

# The first port of FROM..TO that is free; status 1 if none is.
sog_first_free_port() {
	local p
	for p in $(seq "$1" "$2"); do
		sog_port_in_use "$p" || { echo "$p"; return 0; }
	done
	return 1
}

# Install the Debian packages given that the machine lacks (asks dpkg
# first; touches apt only for what is missing).  Status 1 if it cannot.
sog_install_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "packages: all $# present"
		return 0
	fi
	if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
		echo "packages: missing ${missing[*]}, and neither root nor sudo is available to install them" >&2
		return 1
	fi
	echo "packages: installing ${missing[*]}"
	# Packages must not start their services (the system's PostgreSQL
	# cluster, the exporter on port 9187): the tests start their own, on
	# loopback or a socket.  Debian asks /usr/sbin/policy-rc.d; exit 101
	# means "do not start".  One already there (containers have one) stays.
	local rc=0 policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\n# test/lib.sh: no service starts while the tests install packages\nexit 101\n' |
			sog_as_root tee "$policy" >/dev/null && sog_as_root chmod 755 "$policy"
	fi
	sog_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
		sog_as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ -z "$policy" ] || sog_as_root rm -f "$policy"
	return $rc
}

# The bindir of PostgreSQL major $1 (default 15), from its pg_config.
sog_pg_bindir() {
	"/usr/lib/postgresql/${1:-15}/bin/pg_config" --bindir
}

# Copy the working tree $1 into directory $2 (created): everything but .git,
# build products, test output, the fuzzer's corpus and build/ (the package
# output and the PostgreSQL roots of make test-versions).  Every script that
# builds the extension from a fresh copy uses this one list.
sog_copy_tree() {
	mkdir -p "$2" &&
		tar -C "$1" -cf - \
			--exclude=./.git --exclude=./build --exclude=./results --exclude=./tmp_check \
			--exclude=./output_iso --exclude=./log --exclude=./regression.diffs \
			--exclude=./regression.out --exclude=./test/results --exclude=./test/output_iso \
			--exclude=./test/regression.diffs --exclude=./test/regression.out \
			--exclude=./bench/results --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude=./test/fuzz/corpus --exclude=./test/fuzz/position_fuzz . |
		tar -C "$2" -xf -
}
