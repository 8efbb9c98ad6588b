# test/versions/lib.sh: the Debian roots of make test-versions, one per
# PostgreSQL major.  Sourced after test/lib.sh, as root:
#
#   versions_root_ensure 17   # build/roots/pg17 made or reused; sets $root
#   versions_mount "$root"    # /proc, /dev and the shared /xfer in it
#   versions_chroot "$root" CMD...   # run CMD inside, with a clean environment
#   versions_umount_all       # undo every mount this shell made (also on EXIT)
#
# A root is the distribution a user of that major runs: its suite's own
# packages of PostgreSQL, its headers and PGXS, from deb.debian.org, made by
# debootstrap (minbase) and apt inside.  It is cached under build/roots and
# reused while its key (suite, packages, this file's recipe version) is the
# same; a changed key rebuilds it.

versions_repo=${versions_repo:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VERSIONS_DIR=${VERSIONS_DIR:-$versions_repo/build/roots}
VERSIONS_MIRROR=${VERSIONS_MIRROR:-http://deb.debian.org/debian}
# Bump when the recipe below changes in a way the package lists do not show.
versions_recipe=1

# The Debian suite of a major.
versions_suite() {
	case $1 in
		15) echo bookworm ;;
		17) echo trixie ;;
		18) echo sid ;;
		19) echo sid+experimental ;;
		*) return 1 ;;
	esac
}

# The packages a major's root holds: what test/install-deps.sh's server set
# names for that major; 17 its citus set (make test-citus runs there too);
# 19 (from experimental) only what its regression suite needs.
versions_packages() {
	case $1 in
		15 | 18)
			PG_MAJOR=$1 bash "$versions_repo/test/install-deps.sh" --list server ;;
		17)
			PG_MAJOR=17 bash "$versions_repo/test/install-deps.sh" --list citus ;;
		19)
			echo make gcc libc6-dev perl ;;
	esac
}

# The packages a major's root takes from the suite after the "+" (for 19:
# experimental), installed after the others so that only these and what
# they need come from there.
versions_extra_packages() {
	case $1 in
		19) echo postgresql-19 postgresql-server-dev-19 ;;
	esac
}

versions_key() {
	printf 'recipe %s\nsuite %s\nmirror %s\npackages %s\nextra %s\n' "$versions_recipe" \
		"$(versions_suite "$1")" "$VERSIONS_MIRROR" "$(versions_packages "$1")" \
		"$(versions_extra_packages "$1")" | sha256sum | cut -c1-16
}

# Mount points under a root that this shell mounted, newest last.
versions_mounted=()

# Is anything mounted at or below $1?  (Never delete a root that is.)
versions_has_mounts() {
	awk -v p="$1" '$2 == p || index($2, p "/") == 1 { found = 1 } END { exit !found }' /proc/self/mounts
}

versions_mount() {
	local r=$1
	mkdir -p "$r/proc" "$r/dev" "$r/xfer" "$VERSIONS_DIR/xfer"
	chmod 1777 "$VERSIONS_DIR/xfer"
	if ! mountpoint -q "$r/proc"; then
		mount -t proc proc "$r/proc" && versions_mounted+=("$r/proc")
	fi
	if ! mountpoint -q "$r/dev"; then
		# rslave: nothing unmounted in the root can propagate to the host's /dev
		mount --rbind /dev "$r/dev" && mount --make-rslave "$r/dev" && versions_mounted+=("$r/dev")
	fi
	if ! mountpoint -q "$r/xfer"; then
		mount --bind "$VERSIONS_DIR/xfer" "$r/xfer" && versions_mounted+=("$r/xfer")
	fi
}

# Unmount what this shell mounted in root $1 (default: in every root).
versions_umount_all() {
	local i m keep=()
	for ((i = ${#versions_mounted[@]} - 1; i >= 0; i--)); do
		m=${versions_mounted[$i]}
		if [ -n "${1:-}" ] && [ "${m#"$1"/}" = "$m" ]; then
			keep=("$m" "${keep[@]}")
			continue
		fi
		umount -R "$m" 2>/dev/null || umount -R -l "$m" 2>/dev/null || true
	done
	versions_mounted=("${keep[@]}")
}

# Run a command inside root $1 as root, with a clean environment plus the
# variables given as NAME=VALUE before the command.
versions_chroot() {
	local r=$1
	shift
	chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# apt inside a root, services kept from starting.  The archive's
# experimental (and at times sid's) Release file is past its Valid-Until
# date here, so the check is off: these roots are for tests, from the one
# mirror named above.
versions_apt() {
	local r=$1
	shift
	versions_chroot "$r" apt-get -q -y -o Acquire::Check-Valid-Until=false \
		-o APT::Install-Recommends=false -o Dpkg::Use-Pty=0 "$@"
}

# Make the root of major $1 in $2 (which must not exist); its logs go to
# build/roots/pg$1.log.
versions_root_build() {
	local major=$1 r=$2 suite pkgs extra base log=$VERSIONS_DIR/pg$1.log
	suite=$(versions_suite "$major")
	pkgs=$(versions_packages "$major")
	base=${suite%%+*}
	if [ "$major" = 19 ] && [ -f "$VERSIONS_DIR/pg18/.sog-root-key" ] && ! versions_has_mounts "$VERSIONS_DIR/pg18"; then
		# the same sid base as 18's root, copied: quicker than debootstrap
		echo "roots: 19: copying the sid root of 18"
		cp -a "$VERSIONS_DIR/pg18" "$r" >"$log" 2>&1 || return 1
		rm -f "$r/.sog-root-key"
	else
		echo "roots: $major: debootstrap --variant=minbase $base ($VERSIONS_MIRROR)"
		debootstrap --variant=minbase "$base" "$r" "$VERSIONS_MIRROR" >"$log" 2>&1 || {
			tail -n 20 "$log"
			return 1
		}
	fi
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d" && chmod 755 "$r/usr/sbin/policy-rc.d"
	echo "deb $VERSIONS_MIRROR $base main" >"$r/etc/apt/sources.list"
	if [ "$suite" != "$base" ]; then
		echo "deb $VERSIONS_MIRROR ${suite#*+} main" >"$r/etc/apt/sources.list.d/${suite#*+}.list"
	fi
	versions_mount "$r" || return 1
	echo "roots: $major: apt-get install $pkgs"
	local rc=0
	extra=$(versions_extra_packages "$major")
	versions_apt "$r" update >>"$log" 2>&1 || rc=1
	[ "$rc" = 0 ] && { versions_apt "$r" install $pkgs >>"$log" 2>&1 || rc=1; }
	if [ "$rc" = 0 ] && [ -n "$extra" ]; then
		echo "roots: $major: apt-get -t ${suite#*+} install $extra"
		versions_apt "$r" -t "${suite#*+}" install $extra >>"$log" 2>&1 || rc=1
	fi
	versions_apt "$r" clean >/dev/null 2>&1 || true
	versions_umount_all "$r"
	if [ "$rc" != 0 ]; then
		tail -n 20 "$log"
		return 1
	fi
}

# build/roots/pg$1, made unless present with the same key; sets $root.
versions_root_ensure() {
	local major=$1 key t0=$SECONDS
	key=$(versions_key "$major")
	root=$VERSIONS_DIR/pg$major
	if [ -f "$root/.sog-root-key" ] && [ "$(cat "$root/.sog-root-key")" = "$key" ]; then
		echo "roots: $major: reusing $root ($(versions_suite "$major"), key $key)"
		return 0
	fi
	mkdir -p "$VERSIONS_DIR"
	for d in "$root" "$root.new"; do
		if [ -e "$d" ]; then
			if versions_has_mounts "$d"; then
				echo "roots: $d has something mounted in it (an earlier run killed?); unmount it first" >&2
				return 1
			fi
			rm -rf "$d"
		fi
	done
	versions_root_build "$major" "$root.new" || {
		echo "roots: $major: making the root failed" >&2
		return 1
	}
	echo "$key" >"$root.new/.sog-root-key"
	mv "$root.new" "$root"
	echo "roots: $major: made $root in $((SECONDS - t0)) s"
}

# The full version of the PostgreSQL major $2 in root $1 (e.g. 17.12).
versions_pg_version() {
	versions_chroot "$1" "/usr/lib/postgresql/$2/bin/pg_config" --version | awk '{print $2}'
}

# Put the PostgreSQL $2 installation of root $1 (with whatever extension was
# installed into it) into root $3 at the same paths, with the shared
# libraries it needs that $3's distribution does not carry (an older ICU,
# OpenLDAP or libxml2) in its lib directory, so that the newer root runs both
# majors side by side: what pg_upgrade and a dump taken by the newer pg_dump
# need.  Its JIT provider is left out (it would need the older LLVM).
versions_copy_install() {
	local src=$1 major=$2 dst=$3 lib round missing so f
	lib=/usr/lib/postgresql/$major/lib
	rm -rf "$dst/usr/lib/postgresql/$major" "$dst/usr/share/postgresql/$major"
	mkdir -p "$dst/usr/lib/postgresql" "$dst/usr/share/postgresql"
	cp -a "$src/usr/lib/postgresql/$major" "$dst/usr/lib/postgresql/" || return 1
	cp -a "$src/usr/share/postgresql/$major" "$dst/usr/share/postgresql/" || return 1
	rm -rf "$dst$lib/llvmjit.so" "$dst$lib/llvmjit_types.bc" "$dst$lib/bitcode"
	for round in 1 2 3 4 5; do
		missing=$(for f in "$dst/usr/lib/postgresql/$major"/bin/* "$dst$lib"/*.so*; do
			[ -f "$f" ] || continue
			versions_chroot "$dst" LD_LIBRARY_PATH="$lib" ldd "${f#"$dst"}" 2>/dev/null
		done | awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u)
		[ -n "$missing" ] || return 0
		for so in $missing; do
			f=$(find "$src/usr/lib/x86_64-linux-gnu" "$src/lib/x86_64-linux-gnu" -maxdepth 1 -name "$so" 2>/dev/null | head -n 1)
			if [ -z "$f" ]; then
				echo "roots: $so, which PostgreSQL $major needs, is not in $src" >&2
				return 1
			fi
			cp -L "$f" "$dst$lib/$so"
		done
		echo "roots: PostgreSQL $major in $(basename "$dst"): copied $(echo $missing | wc -w) libraries it needs ($(echo $missing))"
	done
	echo "roots: PostgreSQL $major in $(basename "$dst"): libraries still missing after 5 rounds" >&2
	return 1
}
