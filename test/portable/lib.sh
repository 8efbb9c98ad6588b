# test/portable/lib.sh: what the portable edition's suites share (run.sh,
# regress.sh): the postgres runner, throwaway clusters, pg_tle built from
# ../shared/vendor, and a private copy of PostgreSQL with pg_tle and
# without the C edition.  Sourced; the caller sets tmp, major, srcdir, ext,
# sysbin, tarball, t0, server_bins, server_dirs and defines say, fail and
# finish.

as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME="$tmp" PATH="$PATH" "$@"
	else
		"$@"
	fi
}

# start_cluster BINDIR NAME [SETTING...]: initdb and start on a socket in
# $tmp/NAME; sets $sock.
start_cluster() {
	local bindir=$1 name=$2 data
	shift 2
	data=$tmp/$name-data
	sock=$tmp/$name-sock
	mkdir -p "$sock" && chown postgres: "$sock" "$tmp" 2>/dev/null || true
	as_pg "$bindir/initdb" -D "$data" -A trust -U postgres --locale=C.UTF-8 >"$tmp/$name-initdb.log" 2>&1 ||
		{ cat "$tmp/$name-initdb.log"; return 1; }
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$sock'"
		echo "fsync = off"
		for s in "$@"; do echo "$s"; done
	} >>"$data/postgresql.conf"
	server_bins+=("$bindir")
	server_dirs+=("$data")
	as_pg "$bindir/pg_ctl" -D "$data" -l "$tmp/$name.log" -w start >/dev/null ||
		{ tail -20 "$tmp/$name.log"; return 1; }
}

# portable_tle: the packages, pg_tle built (or reused) for $major, and the
# private copy; sets R (its root) and pbin (its bindir).
portable_tle() {
	say "packages"
	# install-deps.sh's server set has them (a root of make test-versions is
	# made with that set: its apt may not reach a current archive later)
	sog_install_packages make gcc libc6-dev perl "postgresql-$major" "postgresql-server-dev-$major" \
		flex bison libkrb5-dev || { fail "packages"; finish; }

	say "pg_tle"
	if [ ! -f "$tarball" ]; then
		fail "pg_tle source $tarball is missing"
		finish
	fi
	# the vendored tarball, as ../shared/vendor/pg_tle/README.md describes it
	local tle_sha256 sum
	tle_sha256=4dc057e12aa161305fbb106039b035fb70bad32e794aba5649207bff8232f636
	sum=$(sha256sum "$tarball" | cut -d' ' -f1)
	if [ "$sum" != "$tle_sha256" ] && [ -z "${PG_TLE_TARBALL:-}" ]; then
		fail "$tarball is not pg_tle 1.5.3 as vendored (sha256 $sum, expected $tle_sha256)"
		finish
	fi
	tle=$srcdir/build/pg_tle/$major-${sum:0:16}
	mkdir -p "$srcdir/build/pg_tle"
	exec 9>"$srcdir/build/pg_tle/.lock"
	flock 9			# one build at a time; the others reuse it
	if [ -f "$tle/.built" ]; then
		echo "pg_tle: reusing $tle"
	else
		rm -rf "$tle"
		mkdir -p "$tle/src" "$tle/stage"
		tar -C "$tle/src" --strip-components=1 -xzf "$tarball"
		if ! (cd "$tle/src" && make -s with_llvm=no PG_CONFIG="$sysbin/pg_config" >"$tle/build.log" 2>&1 &&
			make -s with_llvm=no PG_CONFIG="$sysbin/pg_config" DESTDIR="$tle/stage" install >>"$tle/build.log" 2>&1); then
			tail -30 "$tle/build.log"
			fail "pg_tle does not build against PostgreSQL $major"
		finish
		fi
		touch "$tle/.built"
		echo "pg_tle: built in $tle ($(($(date +%s) - t0)) s)"
	fi

	# The private copy: lib/ and share/ of the system's PostgreSQL without any
	# file of the C edition, with pg_tle's files added.
	R=$tmp/pg
	mkdir -p "$R/usr/lib/postgresql" "$R/usr/share/postgresql"
	cp -a "/usr/lib/postgresql/$major" "$R/usr/lib/postgresql/"
	cp -a "/usr/share/postgresql/$major" "$R/usr/share/postgresql/"
	rm -rf "$R/usr/lib/postgresql/$major/lib/$ext.so" "$R/usr/lib/postgresql/$major/lib/bitcode/$ext"* \
		"$R/usr/share/postgresql/$major/extension/$ext"[.-]*
	cp -a "$tle/stage/usr/." "$R/usr/"
	pbin=$R/usr/lib/postgresql/$major/bin
	if compgen -G "$R/usr/share/postgresql/$major/extension/$ext*" >/dev/null; then
		fail "the private copy still has files of the C edition"
	fi
}
