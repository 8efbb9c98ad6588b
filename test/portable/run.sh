#!/usr/bin/env bash
#
# test/portable/run.sh: the portable edition (docs/portable.md) installed
# the way a managed service's user installs it, and compared with the C
# edition (make test's suite portable; regress.sh and seq_run.sh run the
# C edition's tests and random call sequences against it):
#
#   1. pg_tle 1.5.3 from ../shared/vendor (test/portable/vendor path below),
#      built against this machine's PostgreSQL into build/pg_tle/<major>/
#      (seconds; reused while the tarball and the major are the same);
#   2. a private copy of PostgreSQL with pg_tle and without the C edition
#      (pg_tle refuses an extension name a file-based extension has), a
#      throwaway cluster with shared_preload_libraries = pg_tle;
#   3. the whole edition built by portable/build.pl; as a role that is not
#      a superuser and holds pgtle_admin: pg_tle.sql
#      (pgtle.install_extension), then CREATE EXTENSION; as a role with
#      CREATE on its database only: psql -f install.sql, twice (the second
#      run finds it installed), and the plain script's refusals;
#   4. the contract's vectors (test/contract-v1.json) against both installs;
#   5. the differential: test/portable/pure_diff.sql over the inputs of
#      test/portable/gen_inputs.pl, against the C edition (installed on the
#      system's PostgreSQL by make install, in its own throwaway cluster) and
#      the portable one; every answer must be the same;
#      the rows of sog.receipt the C edition writes for runs of receipts
#      (test/portable/receipt_runs.sql) against sog.receipt_rows, and read
#      back;
#   6. the catalog (test/portable/catalog.sql): every function, type,
#      operator, table, column, constraint, index, trigger and grant of the
#      C edition at its default version, described the same in both
#      installs; the C functions portable/ omits (@omit) absent, nothing of
#      the C edition missing;
#   7. an upgrade in place (test/portable/upgrade.sh): a next version made
#      from this tree, installed over this one by its plain script and by
#      ALTER EXTENSION UPDATE through pg_tle's update path, must equal a
#      fresh install of it, function bodies included, with its rows kept.
#
#   test/portable/run.sh [--major N] [--bless]
#
# --bless writes what the portable edition installs beyond the C edition
# (its own objects, described) to test/portable/portable_only.txt, after a
# change to portable/ that adds or changes them: review its diff.
#
# Prints "portable: passed (...)" or the failures; exit status 1 on any.

set -uo pipefail
export LC_ALL=C		# sort, join and comm agree on one order
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
source "$srcdir/test/lib.sh"

major=15
bless=0
while [ $# -gt 0 ]; do
	case $1 in
		--major) major=$2; shift 2 ;;
		--bless) bless=1; shift ;;
		*) echo "usage: $0 [--major N] [--bless]" >&2; exit 2 ;;
	esac
done

t0=$(date +%s)
say() { printf '\n=== %s\n' "$*"; }
failures=()
fail() { echo "portable: FAILED: $*"; failures+=("$*"); }
finish() {
	if [ ${#failures[@]} -eq 0 ]; then
		echo "portable: passed ($*; $(($(date +%s) - t0)) s)"
		exit 0
	fi
	echo "portable: ${#failures[@]} failure(s) in $(($(date +%s) - t0)) s"
	exit 1
}

ext=stream_offset_guard
tarball=${PG_TLE_TARBALL:-$srcdir/../shared/vendor/pg_tle/pg_tle-1.5.3.tar.gz}
sysbin=/usr/lib/postgresql/$major/bin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sog-portable.XXXXXX")
chmod 755 "$tmp"
umask 022
server_bins=()		# the bindir and data directory of each cluster
server_dirs=()		# started (registered before pg_ctl start)
cleanup() {
	local rc=$? i
	for i in "${!server_dirs[@]}"; do
		if [ -f "${server_dirs[$i]}/postmaster.pid" ]; then
			as_pg "${server_bins[$i]}/pg_ctl" -D "${server_dirs[$i]}" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
	if [ "${KEEP_TMP:-0}" = 1 ]; then echo "portable: KEEP_TMP=1, $tmp stays"; else rm -rf "$tmp"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

source "$here/lib.sh"

# --- 1. packages and pg_tle ----------------------------------------------------------

portable_tle

# --- 2. the whole edition, built from the tree -------------------------------------------

say "build (portable/build.pl)"
out_dir=$tmp/portable
perl "$srcdir/portable/build.pl" --self-test || fail "portable/build.pl --self-test"
if ! perl "$srcdir/portable/build.pl" --out "$out_dir"; then
	fail "portable/build.pl"
	finish
fi
chmod -R a+rX "$out_dir"

# --- 3. installs as roles that are not superusers ----------------------------------------

say "cluster with pg_tle (PostgreSQL $major, private copy, no C edition)"
start_cluster "$pbin" tle "shared_preload_libraries = 'pg_tle'" || { fail "cluster"; finish; }
tsock=$sock
psql_t() { as_pg "$pbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$tsock" "$@"; }
psql_t -U postgres -d postgres <<'EOF' || fail "cluster setup"
CREATE DATABASE tle;
CREATE DATABASE plain;
CREATE ROLE sog_tle_admin LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
CREATE ROLE sog_plain_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
GRANT CREATE ON DATABASE tle TO sog_tle_admin;
GRANT CREATE ON DATABASE plain TO sog_plain_owner;
\c tle
CREATE EXTENSION pg_tle;
GRANT pgtle_admin TO sog_tle_admin;
EOF

say "pg_tle: install_extension and CREATE EXTENSION as sog_tle_admin (pgtle_admin, not a superuser)"
if psql_t -U sog_tle_admin -d tle -f "$out_dir/pg_tle.sql" >"$tmp/tle-install.log" 2>&1 &&
	psql_t -U sog_tle_admin -d tle -c "CREATE EXTENSION $ext" >>"$tmp/tle-install.log" 2>&1; then
	psql_t -U sog_tle_admin -d tle -At -c "SELECT 'installed ' || extname || ' ' || extversion || ' by ' || extowner::regrole || ', superuser: ' || (SELECT rolsuper FROM pg_roles WHERE oid = extowner) FROM pg_extension WHERE extname = '$ext'"
else
	cat "$tmp/tle-install.log"
	fail "install through pg_tle as a pgtle_admin role"
fi

say "plain script: psql -f as sog_plain_owner (CREATE on the database only), twice"
if psql_t -U sog_plain_owner -d plain -f "$out_dir/install.sql" >"$tmp/plain-install.log" 2>&1 &&
	psql_t -U sog_plain_owner -d plain -f "$out_dir/install.sql" >>"$tmp/plain-install.log" 2>&1; then
	grep -h "already installed" "$tmp/plain-install.log" || fail "the second run of the plain script did not find it installed"
	psql_t -U sog_plain_owner -d plain -At -c "SELECT 'installed portable ' || version || ', schema owner ' || (SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'sog') FROM sog.portable_version"
else
	cat "$tmp/plain-install.log"
	fail "install with the plain script as a role with CREATE on the database"
fi

say "plain script: its refusals"
psql_t -U postgres -d postgres -c "CREATE DATABASE bare" -c "GRANT CREATE ON DATABASE bare TO sog_plain_owner" >/dev/null
psql_t -U sog_plain_owner -d bare -c "CREATE SCHEMA sog" >/dev/null
refused() {		# refused DB ROLE PATTERN WHAT
	local out
	if out=$(psql_t -U "$2" -d "$1" -f "$out_dir/install.sql" 2>&1); then
		fail "the plain script ran where it must refuse: $4"
	elif printf '%s\n' "$out" | grep -q "$3"; then
		echo "refused ($4): $(printf '%s\n' "$out" | grep -m1 "$3" | sed 's/^psql:[^ ]* //')"
	else
		printf '%s\n' "$out" | tail -3
		fail "the plain script failed otherwise than expected: $4"
	fi
}
refused tle sog_tle_admin "installed as an extension" "the extension is installed in the database"
refused bare sog_plain_owner 'schema "sog" exists but holds no portable edition' "a schema sog of something else"
installed_version=$(psql_t -At -U sog_plain_owner -d plain -c "SELECT version FROM sog.portable_version")
psql_t -U sog_plain_owner -d plain -c "UPDATE sog.portable_version SET version = '0.9'" >/dev/null
refused plain sog_plain_owner "cannot upgrade the portable edition installed here" "a version it has no path from"
psql_t -U sog_plain_owner -d plain -c "UPDATE sog.portable_version SET version = '$installed_version'" >/dev/null
again=$(psql_t -U sog_plain_owner -d plain -f "$out_dir/install.sql" 2>&1)
grep -q "is already installed" <<<"$again" || fail "the plain script does not find its version installed again after the refusal"

# --- 4. the contract's vectors ----------------------------------------------------------------

say "contract vectors"
for db in tle plain; do
	res=$(cd "$srcdir" && psql_t -U postgres -d "$db" -At -v vectors="$(cat test/contract-v1.json)" \
		-f test/portable/contract.sql 2>&1)
	printf '%s\n' "$res" | sed "s/^/$db: /" | grep -v ' ok$' || true
	printf '%s\n' "$res" | grep -qE '^vectors: ([0-9]+) of \1 checked, 0 failed$' || fail "contract vectors ($db)"
done

# --- 5. the differential against the C edition ---------------------------------------------------

say "differential: the same questions to the C edition and the portable one"
if [ ! -f "/usr/share/postgresql/$major/extension/$ext.control" ]; then
	fail "the C edition is not installed for PostgreSQL $major (make install first)"
	finish
fi
for f in "$srcdir"/sql/"$ext"--*.sql "$srcdir/$ext.control"; do
	cmp -s "$f" "/usr/share/postgresql/$major/extension/$(basename "$f")" ||
		fail "the installed C edition is not this tree's: $(basename "$f") differs (make install first)"
done
start_cluster "$sysbin" c || { fail "C edition cluster"; finish; }
csock=$sock
as_pg "$sysbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$csock" -U postgres -d postgres \
	-c "CREATE EXTENSION $ext" >/dev/null || fail "CREATE EXTENSION $ext (C edition)"
perl "$here/gen_inputs.pl" "${PORTABLE_DIFF_N:-2000}" >"$tmp/inputs.txt" || { fail "gen_inputs.pl"; finish; }
chmod a+r "$tmp/inputs.txt"
as_pg "$sysbin/psql" -X -q -At -h "$csock" -U postgres -d postgres \
	-f "$here/pure_diff.sql" <"$tmp/inputs.txt" >"$tmp/c.out" 2>&1 || { tail -5 "$tmp/c.out"; fail "pure_diff.sql on the C edition"; }
for db in tle plain; do
	psql_t -At -U postgres -d "$db" -f "$here/pure_diff.sql" <"$tmp/inputs.txt" >"$tmp/$db.out" 2>&1 ||
		{ tail -5 "$tmp/$db.out"; fail "pure_diff.sql on the portable edition ($db)"; continue; }
	if [ "$(wc -l <"$tmp/c.out")" -lt 20000 ] || grep -q '^psql:' "$tmp/c.out"; then
		fail "the C edition's answers are too few or hold psql errors ($(wc -l <"$tmp/c.out") lines)"
	elif cmp -s "$tmp/c.out" "$tmp/$db.out"; then
		echo "$db: $(wc -l <"$tmp/c.out") answers, all the same as the C edition's"
	else
		diff "$tmp/c.out" "$tmp/$db.out" | cut -c1-300 | head -40
		fail "the portable edition ($db) answers $(diff "$tmp/c.out" "$tmp/$db.out" | grep -c '^>') question(s) differently"
	fi
done

say "receipts: the rows of sog.receipt the C edition writes, and the portable edition's"
as_pg "$sysbin/psql" -X -q -At -h "$csock" -U postgres -d postgres -f "$here/receipts_c.sql" >"$tmp/c.rcpt" 2>&1 ||
	{ tail -5 "$tmp/c.rcpt"; fail "receipts_c.sql on the C edition"; }
for db in tle plain; do
	psql_t -At -U postgres -d "$db" -f "$here/receipts_portable.sql" >"$tmp/$db.rcpt" 2>&1 ||
		{ tail -5 "$tmp/$db.rcpt"; fail "receipts_portable.sql ($db)"; continue; }
	if [ "$(grep -c ' row ' "$tmp/c.rcpt")" -lt 12 ]; then
		fail "the C edition wrote too few receipt rows ($(grep -c ' row ' "$tmp/c.rcpt"))"
	elif cmp -s "$tmp/c.rcpt" "$tmp/$db.rcpt"; then
		echo "$db: $(grep -c ' row ' "$tmp/c.rcpt") rows of $(grep -c ' reads ' "$tmp/c.rcpt") runs, byte for byte the C edition's, read back the same"
	else
		diff "$tmp/c.rcpt" "$tmp/$db.rcpt" | cut -c1-300 | head -20
		fail "the portable edition ($db) stores or reads receipts otherwise"
	fi
done

# --- 6. the catalog: the same surface ------------------------------------------------------

say "catalog: every object of the C edition described the same in the portable edition"
as_pg "$sysbin/psql" -X -q -h "$csock" -U postgres -d postgres -c "CREATE DATABASE cdefault" >/dev/null &&
	as_pg "$sysbin/psql" -X -q -h "$csock" -U postgres -d cdefault -c "CREATE EXTENSION $ext" >/dev/null ||
	fail "the C edition at its default version"
as_pg "$sysbin/psql" -X -q -At -h "$csock" -U postgres -d cdefault -f "$here/catalog.sql" >"$tmp/c.cat" 2>&1 ||
	fail "catalog.sql on the C edition"
# the signatures portable/*.sql omits (@omit), flattened as catalog lines are
grep -ho '^-- @omit [^:]*' "$srcdir"/portable/*.sql | sed 's/^-- @omit /function /; s/[ "]//g' | sort >"$tmp/omitted"
[ -s "$tmp/omitted" ] || fail "no @omit line found in portable/*.sql (the omission checks would see nothing)"
# key: the object's identity (what comes before its first attribute)
key() { sed -E 's/ (args|comment|function|kind|type|def|grants)=.*//' "$1"; }
# the C edition's lines the portable edition may describe otherwise, each
# with the portable line it must then be (catalog_differences.txt)
grep -v '^#' "$here/catalog_differences.txt" | grep . | sort >"$tmp/differences"
# compare_catalog DB: the checks below for the install in DB; each problem
# through $on_fail (fail, or the mutants' recorder)
on_fail=fail
compare_catalog() {
	local db=$1 unexpected public definer unpinned
	psql_t -At -U postgres -d "$db" -f "$here/catalog.sql" >"$tmp/$db.cat" 2>&1 || { $on_fail "catalog.sql ($db)"; return; }
	paste -d'\t' <(key "$tmp/c.cat") "$tmp/c.cat" | sort -t$'\t' -k1,1 >"$tmp/c.keyed"
	paste -d'\t' <(key "$tmp/$db.cat") "$tmp/$db.cat" | sort -t$'\t' -k1,1 >"$tmp/$db.keyed"
	join -t$'\t' -j1 "$tmp/c.keyed" "$tmp/$db.keyed" | awk -F'\t' '$2 != $3 { print $3 }' | sort >"$tmp/$db.differs"
	nshared=$(join -t$'\t' -j1 "$tmp/c.keyed" "$tmp/$db.keyed" | wc -l)
	unexpected=$(comm -23 "$tmp/$db.differs" "$tmp/differences")
	if [ -n "$unexpected" ]; then
		join -t$'\t' -j1 "$tmp/c.keyed" "$tmp/$db.keyed" | awk -F'\t' '$2 != $3 { print "  C:        " $2; print "  portable: " $3 }' |
			grep -F -A0 -B1 -f <(printf '%s\n' "$unexpected" | sed 's/^/  portable: /') | grep -v '^--$' | cut -c1-400 | head -40
		$on_fail "the portable edition ($db) describes $(printf '%s\n' "$unexpected" | grep -c .) object(s) otherwise than the C edition (and catalog_differences.txt)"
	fi
	# what the C edition has and the portable one lacks: the omitted
	# functions only (compared without spaces and quotes)
	join -t$'\t' -v1 -j1 "$tmp/c.keyed" "$tmp/$db.keyed" | cut -f1 | tr -d ' "' | sort >"$tmp/$db.c_only"
	if ! cmp -s "$tmp/$db.c_only" "$tmp/omitted"; then
		diff "$tmp/omitted" "$tmp/$db.c_only" | grep '^[<>]' | sed 's/^</  omitted, yet installed:/; s/^>/  missing from the portable edition:/' | head -20
		$on_fail "$db: the C edition's objects missing from the portable edition are not exactly the omitted ones"
	fi
	# what only the portable edition has, described whole (grants, row
	# security, settings): exactly portable_only.txt (the plain script's
	# install has its version table too)
	join -t$'\t' -v2 -j1 "$tmp/c.keyed" "$tmp/$db.keyed" | cut -f2 | sort >"$tmp/$db.only"
	if [ "$db" = plain ] && [ "$bless" = 1 ]; then
		{
			echo "# test/portable/portable_only.txt: every object the portable edition installs"
			echo "# beyond the C edition's, as test/portable/catalog.sql describes it (the plain"
			echo "# script's install); run.sh fails on any difference.  Written by"
			echo "# 'bash test/portable/run.sh --bless' after a change to portable/: review its diff."
			cat "$tmp/$db.only"
		} >"$here/portable_only.txt"
		echo "portable: --bless: wrote test/portable/portable_only.txt ($(wc -l <"$tmp/$db.only") objects)"
	fi
	grep -v '^#' "$here/portable_only.txt" | sort >"$tmp/only.expected"
	[ "$db" = tle ] && sed -i '/sog\.portable_version/d' "$tmp/only.expected"
	if ! cmp -s "$tmp/only.expected" "$tmp/$db.only"; then
		diff "$tmp/only.expected" "$tmp/$db.only" | grep '^[<>]' | sed 's/^</  expected:  /; s/^>/  installed: /' | cut -c1-300 | head -30
		$on_fail "$db: the portable edition's own objects differ from test/portable/portable_only.txt (after an intended change: run.sh --bless, and review the diff)"
	fi
	# what PUBLIC may use of them: each listed with its reason
	public=$(grep -E 'grants=([^ ]*,)?PUBLIC:' "$tmp/$db.only" | sed -E 's/ (args|kind)=.*//' |
		grep -vxF -f "$here/public_helpers.txt" || true)
	if [ -n "$public" ]; then
		printf '%s\n' "$public" | sed 's/^/  /' | head -20
		$on_fail "$db: portable-only objects open to PUBLIC that test/portable/public_helpers.txt does not list"
	fi
	# and a SECURITY DEFINER one open to PUBLIC is an entry (its first step
	# checks the caller's key), nothing else; every SECURITY DEFINER
	# function pins its search_path
	definer=$(grep -E ' definer .*grants=([^ ]*,)?PUBLIC:' "$tmp/$db.only" | grep -vE '^function sog\.[a-z_0-9]+_entry\(uuid' || true)
	if [ -n "$definer" ]; then
		printf '%s\n' "$definer" | cut -c1-200 | sed 's/^/  /' | head -20
		$on_fail "$db: a SECURITY DEFINER function of the portable edition open to PUBLIC is not an entry"
	fi
	unpinned=$(grep -E '^function .* definer ' "$tmp/$db.cat" | grep -vF ' config=search_path=pg_catalog, pg_temp ' || true)
	if [ -n "$unpinned" ]; then
		printf '%s\n' "$unpinned" | cut -c1-200 | sed 's/^/  /' | head -20
		$on_fail "$db: a SECURITY DEFINER function without search_path = pg_catalog, pg_temp"
	fi
	echo "$db: $nshared objects described as in the C edition, grants included ($(grep -c . "$tmp/$db.differs") as catalog_differences.txt says); $(wc -l <"$tmp/omitted") omitted, as listed; $(wc -l <"$tmp/$db.only") of its own, as portable_only.txt says"
}
for db in plain tle; do		# plain first: --bless writes from it
	compare_catalog "$db"
done

# The checks can fail: an install changed the ways a review found the
# earlier checks blind to must be refused, each change on its own.
mutant_problems=()
record() { mutant_problems+=("$*"); }
psql_t -U postgres -d postgres -c "CREATE DATABASE mutant" -c "GRANT CREATE ON DATABASE mutant TO sog_plain_owner" >/dev/null &&
	psql_t -U sog_plain_owner -d mutant -f "$out_dir/install.sql" >/dev/null 2>&1 || fail "the mutants' install"
nmutants=0
while IFS='|' read -r what change undo; do
	nmutants=$((nmutants + 1))
	psql_t -U postgres -d mutant -c "$change" >/dev/null </dev/null || { fail "mutant ($what): $change"; continue; }
	mutant_problems=()
	on_fail=record
	compare_catalog mutant >/dev/null </dev/null
	on_fail=fail
	psql_t -U postgres -d mutant -c "$undo" >/dev/null </dev/null || fail "mutant ($what): $undo"
	if [ ${#mutant_problems[@]} -eq 0 ]; then
		fail "the catalog comparison does not see a mutant: $what"
	fi
done <<'MUTANTS'
a policy opening sog.caller_key|CREATE POLICY open ON sog.caller_key FOR SELECT USING (true)|DROP POLICY open ON sog.caller_key
row security off on sog.caller_key|ALTER TABLE sog.caller_key DISABLE ROW LEVEL SECURITY|ALTER TABLE sog.caller_key ENABLE ROW LEVEL SECURITY
TRUNCATE on sog.caller_key for PUBLIC|GRANT TRUNCATE ON sog.caller_key TO PUBLIC|REVOKE TRUNCATE ON sog.caller_key FROM PUBLIC
a column of sog.checkpoint readable by PUBLIC|GRANT SELECT (provider_token) ON sog.checkpoint TO PUBLIC|REVOKE SELECT (provider_token) ON sog.checkpoint FROM PUBLIC
a SECURITY DEFINER entry without its search_path|ALTER FUNCTION sog.claim_entry(uuid, bigint, text, text) RESET search_path|ALTER FUNCTION sog.claim_entry(uuid, bigint, text, text) SET search_path = pg_catalog, pg_temp
a column added to sog.checkpoint|ALTER TABLE sog.checkpoint ADD COLUMN mutant text|ALTER TABLE sog.checkpoint DROP COLUMN mutant
the status view without its security barrier|ALTER VIEW sog.status RESET (security_barrier)|ALTER VIEW sog.status SET (security_barrier = true)
a helper made SECURITY DEFINER|ALTER FUNCTION sog.cut(text) SECURITY DEFINER|ALTER FUNCTION sog.cut(text) SECURITY INVOKER
MUTANTS
compare_catalog mutant >/dev/null		# undone: as installed
echo "mutants: $nmutants changes to an install, each seen by the comparison"

# --- 7. an update in place -------------------------------------------------------------------

source "$here/upgrade.sh"

finish "pg_tle and plain installs as roles that are not superusers, contract vectors, $(wc -l <"$tmp/c.out") answers compared with the C edition, the catalog with its grants, an update in place by each install equal to a fresh install"
