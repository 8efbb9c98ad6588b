# test/portable/upgrade.sh: the portable edition updated in place (run.sh's
# step 7; sourced: uses its tmp, srcdir, here, ext, out_dir, tsock, psql_t,
# say, fail).
#
# There is one portable version so far, so a next one is made from this
# tree, as a release would make it: an update script of the C edition
# (a table, and a C function whose portable counterpart is a new file), a
# portable body changed (sog.cp_token's) with the @update file that carries
# it, and the control file's default_version.  Then, for the plain script
# and for pg_tle, as roles that are not superusers:
#   - this version installed, with state (upgrade_state.sql); the next
#     version's script run over it (the plain script updates in place;
#     pg_tle.sql adds the version and the update path, then ALTER
#     EXTENSION ... UPDATE); run again, it finds it current;
#   - every row kept (upgrade_rows.sql), a replay still answers false, the
#     new function answers;
#   - the catalog (catalog.sql -v bodies=1: function bodies and settings
#     too) the same as a fresh install of the next version;
# and the check can fail: without the @update file, the plain update must
# differ from the fresh install in sog.cp_token's body alone.

say "update in place: a next version made from this tree"
cur=$(sed -nE "s/^default_version *= *'([^']+)'.*/\1/p" "$srcdir/$ext.control")
nv=$cur.900
next=$tmp/next
mkdir -p "$next"
cp -a "$srcdir/sql" "$srcdir/portable" "$srcdir/$ext.control" "$next/"
sed -i "s/^default_version *=.*/default_version = '$nv'/" "$next/$ext.control"
cat >"$next/sql/$ext--$cur--$nv.sql" <<SQL
/* $ext--$cur--$nv.sql: a next version made by test/portable/upgrade.sh */
CREATE TABLE sog.upgrade_probe (id integer PRIMARY KEY, note text NOT NULL DEFAULT 'probe');
COMMENT ON TABLE sog.upgrade_probe IS 'made by the update to $nv';
GRANT SELECT ON TABLE sog.upgrade_probe TO PUBLIC;
CREATE FUNCTION sog.upgrade_probe(x text) RETURNS text
	AS 'MODULE_PATHNAME', 'sog_upgrade_probe'
	LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION sog.upgrade_probe(text) IS 'a C function the update to $nv adds';
SQL
cat >"$next/portable/zz_upgrade_probe.sql" <<'SQL'
-- the portable counterpart of the next version's new C function
CREATE FUNCTION sog.upgrade_probe(x text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT upper(x) $$;
SQL
# sog.cp_token's body changed, and the @update file that carries it
perl -0pi -e 's/(CREATE FUNCTION sog\.cp_token\(.*?)\$\$;/$1 \/* changed in the next version *\/\$\$;/s or die "no sog.cp_token in store.sql\n"' \
	"$next/portable/store.sql" || fail "the next version: sog.cp_token not found in portable/store.sql"
{
	echo "-- @update $cur--$nv"
	perl -0ne 'print "CREATE OR REPLACE $1\n" if /CREATE (FUNCTION sog\.cp_token\(.*?\$\$;)/s' "$next/portable/store.sql"
} >"$next/portable/zz_update.sql"
grep -q 'changed in the next version' "$next/portable/zz_update.sql" || fail "the next version's @update file lacks the changed body"
perl "$next/portable/build.pl" --out "$tmp/next-out" || fail "portable/build.pl of the next version"
# without the @update file: the check must see the body left behind
rm "$next/portable/zz_update.sql"
perl "$next/portable/build.pl" --out "$tmp/next-forgot" >/dev/null || fail "portable/build.pl of the next version without its @update file"
chmod -R a+rX "$tmp/next-out" "$tmp/next-forgot"
grep -q "updating $cur to $nv" "$tmp/next-out/install.sql" || fail "the next version's plain script has no update from $cur"

up_db() {		# up_db DB ROLE [pg_tle]
	psql_t -U postgres -d postgres -c "CREATE DATABASE $1" -c "GRANT CREATE ON DATABASE $1 TO $2" >/dev/null || fail "database $1"
	if [ "${3:-}" = pg_tle ]; then
		psql_t -U postgres -d "$1" -c "CREATE EXTENSION pg_tle" >/dev/null || fail "pg_tle in $1"
	fi
}
# what an update must keep and do: rows, a replay, the new function
up_check() {		# up_check DB ROWS_BEFORE WHAT OWNER
	local db=$1 before=$2 what=$3 owner=$4
	psql_t -At -U postgres -d "$db" -f "$here/upgrade_rows.sql" >"$tmp/$db.rows.after" 2>&1 || fail "$what: rows after"
	if cmp -s "$before" "$tmp/$db.rows.after"; then
		echo "$what: $(wc -l <"$before") tables, every row kept"
	else
		diff "$before" "$tmp/$db.rows.after" | head -10
		fail "$what: the update changed rows"
	fi
	[ "$(psql_t -At -U "$owner" -d "$db" -c "SELECT sog.apply(1, 1, '2', sog.payload_digest('two'))" 2>&1)" = f ] ||
		fail "$what: a replay does not answer false after the update"
	[ "$(psql_t -At -U postgres -d "$db" -c "SELECT sog.upgrade_probe('probe')" 2>&1)" = PROBE ] ||
		fail "$what: the new function does not answer"
	[ "$(psql_t -At -U postgres -d "$db" -c "SELECT count(*) FROM sog.gap WHERE resolution IS NULL" 2>&1)" = 1 ] ||
		fail "$what: the open gap is gone"
}
same_catalog() {	# same_catalog DB_UPDATED DB_FRESH WHAT
	psql_t -At -U postgres -d "$1" -v bodies=1 -f "$here/catalog.sql" >"$tmp/$1.bcat" 2>&1 || fail "$3: catalog of $1"
	psql_t -At -U postgres -d "$2" -v bodies=1 -f "$here/catalog.sql" >"$tmp/$2.bcat" 2>&1 || fail "$3: catalog of $2"
	if cmp -s "$tmp/$1.bcat" "$tmp/$2.bcat"; then
		echo "$3: $(wc -l <"$tmp/$1.bcat") objects the same as a fresh install of $nv, bodies included"
	else
		diff "$tmp/$1.bcat" "$tmp/$2.bcat" | cut -c1-300 | head -20
		fail "$3: the updated install differs from a fresh install of $nv"
	fi
}

# Each way of installing: install (this version, a DB), update (to the
# next, a DB), version (SQL: the version the DB is at), again (what the
# next version's script says when run again), and the role that installs.
plain_install() { psql_t -U sog_plain_owner -d "$1" -f "$2/install.sql" >/dev/null 2>&1; }
plain_update() { psql_t -U sog_plain_owner -d "$1" -f "$tmp/next-out/install.sql"; }
plain_version="SELECT version FROM sog.portable_version"
plain_again="$nv (portable) is already installed"
tle_install() {
	psql_t -U sog_tle_admin -d "$1" -f "$2/pg_tle.sql" >/dev/null 2>&1 &&
		psql_t -U sog_tle_admin -d "$1" -c "CREATE EXTENSION $ext" >/dev/null
}
tle_update() {
	psql_t -U sog_tle_admin -d "$1" -f "$tmp/next-out/pg_tle.sql" &&
		psql_t -U sog_tle_admin -d "$1" -c "ALTER EXTENSION $ext UPDATE"
}
tle_version="SELECT extversion FROM pg_extension WHERE extname = '$ext'"
tle_again="$nv is already installed through pg_tle"

# update_way WAY ROLE [pg_tle]: this version installed with state in
# <way>_up, updated, run again, checked, and compared with a fresh install
# of the next version in <way>_fresh
update_way() {
	local way=$1 role=$2 version_sql again_msg again
	eval "version_sql=\$${way}_version again_msg=\$${way}_again"
	up_db "${way}_up" "$role" ${3:-}
	up_db "${way}_fresh" "$role" ${3:-}
	"${way}_install" "${way}_up" "$out_dir" || fail "$way: this version ($cur)"
	psql_t -U "$role" -d "${way}_up" -f "$here/upgrade_state.sql" >/dev/null || fail "$way: state"
	psql_t -At -U postgres -d "${way}_up" -f "$here/upgrade_rows.sql" >"$tmp/${way}_up.rows" 2>&1 || fail "$way: rows before"
	if "${way}_update" "${way}_up" >"$tmp/$way-up.log" 2>&1; then
		[ "$(psql_t -At -U postgres -d "${way}_up" -c "$version_sql")" = "$nv" ] || fail "$way: the update did not reach $nv"
	else
		tail -5 "$tmp/$way-up.log"
		fail "$way: the next version's update of $cur"
	fi
	again=$("${way}_update" "${way}_up" 2>&1)
	grep -q "$again_msg" <<<"$again" || fail "$way: run again, the next version's script does not find $nv installed"
	up_check "${way}_up" "$tmp/${way}_up.rows" "$way $cur -> $nv" "$role"
	"${way}_install" "${way}_fresh" "$tmp/next-out" || fail "$way: a fresh install of $nv"
	same_catalog "${way}_up" "${way}_fresh" "$way $cur -> $nv"
}

update_way plain sog_plain_owner
grep -q "updating $cur to $nv" "$tmp/plain-up.log" || fail "plain: the next script did not say it updates"
# without the @update file: the old body stays, and the comparison sees it
up_db plain_forgot sog_plain_owner
plain_install plain_forgot "$out_dir" || fail "plain_forgot: this version"
psql_t -U sog_plain_owner -d plain_forgot -f "$tmp/next-forgot/install.sql" >/dev/null 2>&1 || fail "plain: the update without its @update file"
psql_t -At -U postgres -d plain_forgot -v bodies=1 -f "$here/catalog.sql" >"$tmp/plain_forgot.bcat" 2>&1
forgot=$(diff "$tmp/plain_forgot.bcat" "$tmp/plain_fresh.bcat" | grep '^[<>]' | sed -E 's/ args=.*//' | sort -u)
if [ "$forgot" = "$(printf '< function sog.cp_token(bigint)\n> function sog.cp_token(bigint)')" ]; then
	echo "plain: without its @update file, the update leaves sog.cp_token's old body, and the comparison sees it"
else
	printf '%s\n' "$forgot" | head -10
	fail "plain: without its @update file the comparison must see sog.cp_token's body alone"
fi
# an update by another role: refused unless it may act as the owner of
# schema sog, whose objects the update's then are (a superuser's too)
psql_t -U postgres -d postgres -c "CREATE ROLE sog_other LOGIN" >/dev/null || fail "role sog_other"
up_db plain_other sog_plain_owner
psql_t -U postgres -d postgres -c "GRANT CREATE ON DATABASE plain_other TO sog_other" >/dev/null
plain_install plain_other "$out_dir" || fail "plain_other: the plain script of $cur"
refusal=$(psql_t -U sog_other -d plain_other -f "$tmp/next-out/install.sql" 2>&1)
if grep -q "only the owner of schema sog may update the portable edition" <<<"$refusal" &&
	[ "$(psql_t -At -U postgres -d plain_other -c "SELECT version FROM sog.portable_version")" = "$cur" ]; then
	echo "plain: an update by a role that is not the owner is refused, and changes nothing"
else
	printf '%s\n' "$refusal" | tail -3
	fail "plain: an update by a role that is not the owner of schema sog was not refused"
fi
psql_t -U postgres -d plain_other -f "$tmp/next-out/install.sql" >/dev/null 2>&1 || fail "plain: an update by a superuser"
owners=$(psql_t -At -U postgres -d plain_other -c "SELECT string_agg(DISTINCT r::text, ',') FROM (SELECT relowner::regrole AS r FROM pg_class WHERE relnamespace = 'sog'::regnamespace UNION ALL SELECT proowner::regrole FROM pg_proc WHERE pronamespace = 'sog'::regnamespace) o")
[ "$owners" = sog_plain_owner ] || fail "plain: after a superuser's update, sog's objects belong to $owners (sog_plain_owner expected)"


update_way tle sog_tle_admin pg_tle
# the older pg_tle.sql run again leaves the default at the newer version
psql_t -U sog_tle_admin -d tle_up -f "$out_dir/pg_tle.sql" >/dev/null 2>&1 || fail "pg_tle: the $cur pg_tle.sql run again"
[ "$(psql_t -At -U postgres -d tle_up -c "SELECT default_version FROM pgtle.available_extensions() WHERE name = '$ext'")" = "$nv" ] ||
	fail "pg_tle: the $cur pg_tle.sql run again moved the default version back"
