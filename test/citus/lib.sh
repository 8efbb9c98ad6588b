# test/citus/lib.sh: what test/citus/run.sh and test/citus/bench.sh share.
# Sourced, not run, after test/lib.sh:
#
#   source "$repo/test/lib.sh"; source "$repo/test/citus/lib.sh"
#   citus_setup              # PG_CONFIG's paths; sets $bindir, $pkglibdir, $pgxs_top, ...
#   citus_ensure || exit 0   # Citus installed there (status 1: skipped, with the reason)
#   extension_install DIR    # a copy of the working tree in DIR, built, installed
#
# Environment: PG_CONFIG (default: the system's PostgreSQL 15),
# SOG_CITUS_VENDOR (default: ../shared/vendor/citus beside the repository),
# SOG_CITUS_CACHE (default /tmp/sog-citus-build).

citus_elapsed() { echo "$(($(date +%s) - $1)) s"; }

# PG_CONFIG and what it says.
citus_setup() {
	PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
	citus_vendor=${SOG_CITUS_VENDOR:-$repo/../shared/vendor/citus}
	citus_cache=${SOG_CITUS_CACHE:-/tmp/sog-citus-build}
	if [ ! -x "$PG_CONFIG" ]; then
		if [ "$PG_CONFIG" = /usr/lib/postgresql/15/bin/pg_config ]; then
			sog_install_packages postgresql-15 postgresql-server-dev-15 || true
		fi
		if [ ! -x "$PG_CONFIG" ]; then
			echo "test-citus: $PG_CONFIG not found (set PG_CONFIG)" >&2
			return 1
		fi
	fi
	bindir=$("$PG_CONFIG" --bindir)
	pkglibdir=$("$PG_CONFIG" --pkglibdir)
	sharedir=$("$PG_CONFIG" --sharedir)
	pgxs_top=$(dirname "$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")")
	pg_version=$("$PG_CONFIG" --version)
	pg_major=$(echo "$pg_version" | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
	makeopts=(with_llvm=no "PG_CONFIG=$PG_CONFIG")
}

citus_installed() {
	[ -f "$pkglibdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ]
}

# Citus in PG_CONFIG's PostgreSQL: the installed one, or built from the
# vendor directory (cached) and installed.  Status 1 with a "skipped: ..."
# line when neither is possible, 2 when a build or install failed.
citus_ensure() {
	local tarball="" key build src p t_build
	local build_deps test_deps=(perl libipc-run-perl)
	# test/install-deps.sh's citus set: the server's packages and Citus' build's
	read -ra build_deps <<<"$(PG_MAJOR=$pg_major bash "$repo/test/install-deps.sh" --list citus)"

	if [ -d "$citus_vendor" ]; then
		tarball=$(ls "$citus_vendor"/citus-*.tar.gz 2>/dev/null | sort | tail -n 1 || true)
	fi
	if citus_installed; then
		echo "citus: installed in $pkglibdir ($(sed -n "s/^default_version = '\(.*\)'/\1/p" "$sharedir/extension/citus.control")); using it"
		sog_install_packages make gcc "${test_deps[@]}" || return 2
		return 0
	fi
	if [ -z "$tarball" ]; then
		echo "skipped: Citus is not installed in $pkglibdir, and $citus_vendor holds no citus-*.tar.gz to build it from"
		return 1
	fi
	sog_install_packages "${build_deps[@]}" "${test_deps[@]}" || return 2
	# the key: the source and its patches, and the PostgreSQL built for
	key=$( (sha256sum "$tarball" "$citus_vendor"/*.patch 2>/dev/null | awk '{print $1}'
		echo "$pg_version $("$PG_CONFIG" --includedir-server) $pkglibdir") | sha256sum | cut -c1-16)
	build=$citus_cache/$key
	mkdir -p "$citus_cache"
	exec 9>"$citus_cache/$key.lock"
	flock 9
	if [ -f "$build/built" ]; then
		echo "citus: cached build $build (key: the tarball's and patches' checksums, the PostgreSQL)"
	else
		t_build=$(date +%s)
		echo "citus: building $(basename "$tarball") in $build (with_llvm=no; a minute or two on 2 idle cores)"
		rm -rf "$build" && mkdir -p "$build"
		tar -xzf "$tarball" -C "$build"
		src=$(ls -d "$build"/citus-*/ | head -n 1)
		for p in $(ls "$citus_vendor"/*.patch 2>/dev/null | sort); do
			echo "citus: applying $(basename "$p")"
			patch -d "$src" -p1 -s <"$p" || return 2
		done
		ln -sfn "$src" "$build/src"
		if ! (cd "$src" && ./configure --without-libcurl "PG_CONFIG=$PG_CONFIG" >"$build/configure.log" 2>&1 &&
			make -j"$(nproc)" with_llvm=no >"$build/make.log" 2>&1); then
			echo "test-citus: the Citus build failed; the end of its logs:" >&2
			tail -n 30 "$build/configure.log" "$build/make.log" >&2 || true
			flock -u 9
			return 2
		fi
		touch "$build/built"
		echo "citus: built in $(citus_elapsed "$t_build")"
	fi
	if ! sog_as_root make -C "$build/src" -s with_llvm=no install >"$build/install.log" 2>&1; then
		echo "test-citus: installing Citus into $pkglibdir failed:" >&2
		tail -n 20 "$build/install.log" >&2
		flock -u 9
		return 2
	fi
	flock -u 9
	if ! citus_installed; then
		echo "test-citus: Citus is not in $pkglibdir after make install" >&2
		return 2
	fi
	echo "citus: installed into $pkglibdir"
}

# Strip the installed citus.so (strip --strip-unneeded, as Debian's
# dh_strip does), and check it: no symbol table, so nm finds none of
# Citus' functions (on 15 the exported ones stay in the dynamic table;
# from 16 on Use2PCForCoordinatedTransaction is hidden and is then nowhere).
citus_strip() {
	local lib="$pkglibdir/citus.so"
	sog_install_packages binutils || return 1
	if ! sog_as_root strip --strip-unneeded "$lib"; then
		echo "test-citus: strip --strip-unneeded $lib failed" >&2
		return 1
	fi
	if readelf -S "$lib" | grep '\.symtab' >/dev/null || nm "$lib" 2>/dev/null | grep Use2PCForCoordinatedTransaction >/dev/null; then
		echo "test-citus: $lib still has a symbol table after strip" >&2
		return 1
	fi
	echo "citus: $lib stripped (strip --strip-unneeded): no symbol table; Use2PCForCoordinatedTransaction $(nm -D --defined-only "$lib" | grep ' Use2PCForCoordinatedTransaction$' >/dev/null && echo 'exported (dynamic table)' || echo 'not exported')"
}

# A copy of the working tree (without .git and build products) in $1,
# built and installed into PG_CONFIG's PostgreSQL.
extension_install() {
	local dir=$1 t_ext
	t_ext=$(date +%s)
	sog_copy_tree "$repo" "$dir"
	if ! make -C "$dir" -s -j"$(nproc)" "${makeopts[@]}" >"$dir/../ext-build.log" 2>&1 ||
		! sog_as_root make -C "$dir" -s "${makeopts[@]}" install >>"$dir/../ext-build.log" 2>&1; then
		echo "test-citus: building or installing the extension failed:" >&2
		tail -n 30 "$dir/../ext-build.log" >&2
		return 1
	fi
	echo "extension: built and installed into $pkglibdir in $(citus_elapsed "$t_ext")"
}
