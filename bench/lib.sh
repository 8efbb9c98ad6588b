# bench/lib.sh: what bench/run.sh (`make bench`) and bench/soak.sh (`make
# bench-soak`) share: the durable server settings, the extension built into a
# private copy of PostgreSQL, the throwaway cluster, the description of the
# machine, and the CPU accounting that tells a disturbed run.  Sourced, not
# run; it sources test/lib.sh.  The caller defines say and die (a message;
# a message and exit) and sets ROOT (the working tree) and PGBIN (the bindir
# of the system's PostgreSQL) before calling the functions.

source "$(dirname "${BASH_SOURCE[0]}")/../test/lib.sh"

# Durable settings, explicit (the same as ../shared/bench/run-baseline.sh).
BENCH_SERVER_OPTS="-c listen_addresses='' -c unix_socket_permissions=0700 \
 -c shared_buffers=2GB -c max_wal_size=8GB -c min_wal_size=1GB -c checkpoint_timeout=30min \
 -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c wal_level=replica \
 -c max_replication_slots=16 -c max_connections=50 -c jit=off -c log_checkpoints=on"

# The settings env.txt lists (bench_pg_settings).
BENCH_SETTINGS="'shared_buffers','max_wal_size','min_wal_size','checkpoint_timeout','fsync','synchronous_commit',
 'full_page_writes','wal_level','wal_sync_method','wal_buffers','wal_writer_delay','commit_delay','jit','autovacuum'"

# bench_fresh_dir DIR: stop a cluster an earlier run left in DIR/data, then
# an empty DIR.
bench_fresh_dir() {
  local data=$1/data
  if [ -f "$data/postmaster.pid" ] && sog_as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    say "a cluster is running in $data: stopping it"
    sog_as_pg "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || die "cannot stop $data"
  fi
  rm -rf "$1" && mkdir -p "$1" || die "cannot create $1"
}

# bench_build_extension DIR INSTALL SRC_REV OUT: build the extension in
# DIR/src, from a copy of the working tree $ROOT or, with SRC_REV, from that
# git revision, and install it as INSTALL says:
#   private  into a private copy of the PostgreSQL installation in DIR/pg
#            (DESTDIR); the system's PostgreSQL is not touched, no root needed
#   system   into the system's PostgreSQL (root or sudo)
#   0        nothing: use the extension the system's PostgreSQL has
# Writes OUT/build-rev.txt and OUT/build.log; for private, points PGBIN into
# the copy (relocatable: it finds its lib and share dirs under DIR/pg).
bench_build_extension() {
  local dir=$1 install=$2 rev=$3 out=$4 src=$1/src
  case $install in
    private|system) ;;
    0) echo "installed (INSTALL=0)" > "$out/build-rev.txt"; return 0 ;;
    *) die "INSTALL must be private, system or 0" ;;
  esac
  mkdir -p "$src"
  if [ -n "$rev" ]; then
    say "building $rev of $ROOT ($install install)"
    (cd "$ROOT" && git archive "$rev") | tar -C "$src" -xf - || die "git archive $rev failed"
    (cd "$ROOT" && git rev-parse --short "$rev") > "$out/build-rev.txt"
  else
    say "building a copy of the working tree $ROOT ($install install)"
    sog_copy_tree "$ROOT" "$src" || die "copy failed"
    (cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null &&
      { git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo "+ uncommitted changes"; true; }) \
      > "$out/build-rev.txt" 2>/dev/null
  fi
  make -C "$src" with_llvm=no PG_CONFIG="$PGBIN/pg_config" >"$out/build.log" 2>&1 \
    || { tail -30 "$out/build.log"; die "build failed (see $out/build.log)"; }
  if [ "$install" = private ]; then
    local priv=$dir/pg pglib pgshare
    pglib=$(dirname "$PGBIN")            # e.g. /usr/lib/postgresql/15 (bin, lib)
    pgshare=$("$PGBIN/pg_config" --sharedir)
    mkdir -p "$priv$(dirname "$pglib")" "$priv$(dirname "$pgshare")" || die "cannot create $priv"
    cp -a "$pglib" "$priv$(dirname "$pglib")/" && cp -a "$pgshare" "$priv$(dirname "$pgshare")/" \
      || die "cannot copy the PostgreSQL installation to $priv"
    make -C "$src" with_llvm=no PG_CONFIG="$PGBIN/pg_config" DESTDIR="$priv" install \
      >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; die "install into $priv failed"; }
    PGBIN=$priv$PGBIN
  else
    sog_as_root make -C "$src" with_llvm=no PG_CONFIG="$PGBIN/pg_config" install \
      >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; die "install failed (see $out/build.log)"; }
  fi
}

# bench_compile_client BINARY LOG PG_CONFIG: bench/client.c (libpq, OpenSSL),
# with the headers of the system's PG_CONFIG (a private copy has none).
bench_compile_client() {
  cc -O2 -Wall -o "$1" "$ROOT/bench/client.c" -I"$("$3" --includedir)" -lpq -lcrypto \
    2>"$2" || { cat "$2"; die "cannot compile bench/client.c (libpq-dev, libssl-dev?)"; }
}

# bench_start_cluster DATA PORT SOCKDIR OUT OPTIONS: initdb DATA (as the
# postgres OS user when root; trust on the socket only) and start it with
# OPTIONS on PORT, its socket in SOCKDIR, its log in DATA/server.log.
bench_start_cluster() {
  local data=$1 port=$2 sock=$3 out=$4 opts=$5
  [ "$(id -u)" = 0 ] && chown -R postgres: "$(dirname "$data")"
  say "initdb $data"
  sog_as_pg "$PGBIN/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=reject \
    -E UTF8 --locale=C --no-instructions >"$out/initdb.log" 2>&1 || die "initdb failed (see $out/initdb.log)"
  say "starting the cluster (port $port, socket in $sock, no TCP)"
  sog_as_pg "$PGBIN/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-p $port -k $sock $opts" start >/dev/null \
    || { tail -20 "$data/server.log"; die "pg_ctl start failed"; }
}

# bench_stop_cluster DATA: a fast shutdown, whatever state it is in.
bench_stop_cluster() {
  sog_as_pg "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null 2>&1 || true
}

# bench_describe DIR: the machine, as the first lines of env.txt (DIR is
# where the cluster's files are, for the disk line).
bench_describe() {
  echo "date: $(date -Is)"
  echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "memory: $(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "disk: $(df -PT "$1" | awk 'NR==2{print $2 " on " $1}')"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_pg_settings PSQL...: the server's version and its settings named in
# BENCH_SETTINGS (and EXTRA_SETTINGS, a quoted, comma-separated list), one
# name=value a line, through the psql command given.
bench_pg_settings() {
  "$@" -tAc "SELECT version()"
  "$@" -tAF= -c "SELECT name, current_setting(name) FROM pg_settings
                  WHERE name IN ($BENCH_SETTINGS${EXTRA_SETTINGS:+,$EXTRA_SETTINGS}) ORDER BY name"
}

# CPU accounting, in clock ticks: the busy time of the whole machine, and
# that of processes and their descendants (ours), so that a caller can tell
# how much CPU others used meanwhile.
bench_busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat; }
# utime, stime and the waited-for children's of PID
bench_proc_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# bench_tree_ticks PID...: each PID and its descendants, from one pass over
# /proc (a walk by pgrep would count the subshells it forks, and recurse)
bench_tree_ticks() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
    { rest = $0; sub(/^.*\) /, "", rest); split(rest, f, " ")   # f[2] ppid, f[12..15] ticks
      ppid[$1] = f[2]; ticks[$1] = f[12] + f[13] + f[14] + f[15] }
    END { n = split(roots, r, " "); for (i = 1; i <= n; i++) root[r[i]] = 1
          for (p in ticks) for (q = p; q > 1; q = ppid[q]) if (q in root) { t += ticks[p]; break }
          print t + 0 }'
}
