# 006_upgrade.pl: ALTER EXTENSION stream_offset_guard UPDATE from 1.0 with
# live state (issue 12).
#
# A database installs 1.0 and is filled the way a year of use fills it:
# checkpoints in every state (running, replaying, failed_closed, never
# claimed), receipts, open and resolved gaps, manifests, recovery attempts
# open, promoted and failed, a reconfiguration, a user-added provider, and
# grants to a consumer role, a consumer role scoped to one consumer and an
# operator role.  After the update:
#   - every row is as it was (fingerprints of each table);
#   - every role can do what it could, and nothing more (privileges on every
#     1.0 object), and the operator also watches the 1.1 objects;
#   - the state behaves: replays are duplicates, the fence holds, the
#     replaying checkpoint verifies its gap, the open recovery attempt
#     verifies and promotes, the failed-closed one refuses to advance, the
#     scoped role is still refused other consumers;
#   - the upgraded database and a fresh 1.1 install (given the same grants)
#     have the same extension objects: definitions, columns, constraints,
#     indexes, triggers, ACLs and comments, compared from the catalogs.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE ROLE up_app LOGIN;
CREATE ROLE up_scoped LOGIN;
CREATE ROLE up_ops LOGIN;
CREATE ROLE up_nobody LOGIN;
CREATE DATABASE old;
CREATE DATABASE fresh;
});

#
# 1.0, with state
#
$node->safe_psql('old', q{CREATE EXTENSION stream_offset_guard VERSION '1.0'});
is($node->safe_psql('old', q{SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'}),
	'1.0', 'installed at 1.0');

my $d = SogTest::digest_sql('%s');
my $hash_16_20 = SogTest::hash_16_20();
SogTest::fill_state($node, 'old', 'up');
# a user's table, index, constraint and view on the position operators,
# named bare (1.0 and 1.1 created them in pg_catalog)
$node->safe_psql('old', q{
CREATE TABLE public.user_events (pos sog.position PRIMARY KEY CHECK (pos > '0'), body text);
CREATE INDEX user_events_late ON public.user_events (pos DESC) WHERE pos >= '2';
INSERT INTO public.user_events SELECT g::bigint::sog.position, 'e' || g FROM generate_series(1, 9) g;
CREATE VIEW public.user_late AS SELECT pos FROM public.user_events WHERE pos > '5';
});

# the state, as fingerprints of every table of 1.0
# (sog.checkpoint by its 1.0 columns: 1.1 adds applied_at)
my $tables = SogTest::fingerprint_sql(SogTest::checkpoint_columns($node, 'old'));
my $states = SogTest::states_sql();
is($node->safe_psql('old', $states), SogTest::filled('states'), '1.0 holds a checkpoint in every state');
is($node->safe_psql('old', SogTest::recovery_states_sql()),
	SogTest::filled('recovery'), 'and recovery attempts promoted, lost, failed and open');
is($node->safe_psql('old', SogTest::gap_states_sql()), SogTest::filled('gaps'), 'and gaps open and resolved');

# what every role may do with every object of 1.0, beyond what PUBLIC may
my $privileges = SogTest::privileges_sql('up');
my $privileges_before = $node->safe_psql('old', $privileges);
like($privileges_before, qr/up_ops sog.status SELECT/, 'the operator may read the views');
unlike($privileges_before, qr/up_nobody/, 'a role without grants may do nothing');
my $before = $node->safe_psql('old', $tables);

# Before the update this module runs 1.0's SECURITY DEFINER functions,
# under which the role that calls cannot be known: inside a maintenance
# command it refuses them all, reads too (a scoped role's index expression
# reading another consumer's gaps during a superuser's ANALYZE)
$node->safe_psql('old', q{
GRANT CREATE ON SCHEMA public TO up_scoped;
SET ROLE up_scoped;
CREATE FUNCTION public.up_trap(i int) RETURNS int LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN coalesce(current_setting('up.trap', true), '') <> 'on' THEN i
	            ELSE (SELECT count(*) FROM sog.gaps(3))::int END $$;
CREATE TABLE public.up_trap (i int);
CREATE INDEX ON public.up_trap (public.up_trap(i));
INSERT INTO public.up_trap VALUES (1), (2);
});
is(SogTest::sqlstate($node, 'old', 'NONE', q{SET up.trap = on; ANALYZE public.up_trap}), '42501',
	'before the update, a read inside a maintenance command is refused');
$node->safe_psql('old', q{DROP TABLE public.up_trap; DROP FUNCTION public.up_trap(int);
	REVOKE CREATE ON SCHEMA public FROM up_scoped});

#
# the update
#
my ($update_rc, $update_out, $update_err) = $node->psql('old', 'ALTER EXTENSION stream_offset_guard UPDATE');
is($update_rc, 0, 'ALTER EXTENSION UPDATE succeeds');
like($update_err, qr/WARNING:  roles granted before the update do not have the functions 1\.1 adds yet\nHINT:  Run SELECT sog\.refresh_grants\(\);/,
	'and tells the owner to refresh the grants');
like($update_err, qr/WARNING:  consumer roles granted before the update do not have the functions 1\.2 adds yet\nDETAIL:  sog\.apply_run_page and sog\.apply_batch_page .*\nHINT:  Run SELECT sog\.refresh_grants\(\);/,
	'and again for the page calls of 1.2');
like($update_err, qr/WARNING:  operator roles granted before the update do not have what 1\.2 adds yet\nDETAIL:  sog\.rotate_receipts\(\), .*sog\.receipt_storage\.\nHINT:  Run SELECT sog\.refresh_grants\(\);/,
	'and for the receipt ring\'s function and view');
is($node->safe_psql('old', q{SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'}),
	SogTest::default_version(), 'updated through 1.1 to the default version');
is($node->safe_psql('old', $tables), $before, 'every row of every table is as it was');
is($node->safe_psql('old', $states), SogTest::filled('states'), 'every state is as it was');

my $privileges_after = $node->safe_psql('old', $privileges);
my %after = map { $_ => 1 } split /\n/, $privileges_after;
my @lost = grep { !$after{$_} } split /\n/, $privileges_before;
is_deeply(\@lost, [], 'no role lost a privilege');
my %old = map { $_ => 1 } split /\n/, $privileges_before;
my @gained = grep { !$old{$_} } split /\n/, $privileges_after;
is_deeply(\@gained, [], 'the update itself grants no role anything (pg_dump would not carry it)');
# sog.refresh_grants(): what each role's grant function gives now, as
# ordinary grants
is($node->safe_psql('old', 'SELECT sog.refresh_grants()'), '3', 'refresh_grants refreshes the three grants');
$privileges_after = $node->safe_psql('old', $privileges);
%after = map { $_ => 1 } split /\n/, $privileges_after;
@lost = grep { !$after{$_} } split /\n/, $privileges_before;
is_deeply(\@lost, [], 'no role lost a privilege');
@gained = grep { !$old{$_} } split /\n/, $privileges_after;
is_deeply(\@gained, [
		'up_app sog.apply_batch_int8(bigint,bigint,bigint[],bytea[]) EXECUTE',
		'up_app sog.apply_batch_page(bigint,bigint,sog."position"[],bytea[],sog."position",text,bigint,text,text) EXECUTE',
		'up_app sog.apply_run(bigint,bigint,bigint,bytea) EXECUTE',
		'up_app sog.apply_run_page(bigint,bigint,bigint,bytea,sog."position",text,bigint,text,text) EXECUTE',
		'up_ops sog.checkpoint_metrics SELECT',
		'up_ops sog.grant_status SELECT',
		'up_ops sog.prune_due() EXECUTE',
		'up_ops sog.prune_due(bigint,bigint) EXECUTE',
		'up_ops sog.receipt_storage SELECT',
		'up_ops sog.retention_due SELECT',
		'up_ops sog.retention_horizon(bigint) EXECUTE',
		'up_ops sog.rotate_receipts() EXECUTE',
		'up_ops sog.set_retention(text,bigint,numeric,interval) EXECUTE',
		'up_scoped sog.apply_batch_int8(bigint,bigint,bigint[],bytea[]) EXECUTE',
		'up_scoped sog.apply_batch_page(bigint,bigint,sog."position"[],bytea[],sog."position",text,bigint,text,text) EXECUTE',
		'up_scoped sog.apply_run(bigint,bigint,bigint,bytea) EXECUTE',
		'up_scoped sog.apply_run_page(bigint,bigint,bigint,bytea,sog."position",text,bigint,text,text) EXECUTE',
	],
	'then the operator has the 1.1 objects and the receipt ring\'s, the consumers apply_batch_int8, apply_run and the page calls of 1.2, and no one anything else');
is($node->safe_psql('old', 'SELECT sog.refresh_grants()'), '3', 'a second refresh is harmless');
is($node->safe_psql('old', $privileges), $privileges_after, 'and changes nothing');
is($node->psql('old', 'SET ROLE up_app; SELECT sog.refresh_grants()'), 3, 'a consumer may not refresh grants');
# a role dropped after its grant (its privileges revoked by DROP OWNED):
# its row stays in sog.role_grant, out of force, and refresh_grants skips
# it, saying so, and keeps it as dropped (role NULL: a role created later
# with its name never gets it)
$node->safe_psql('old', q{CREATE ROLE up_gone; SELECT sog.grant_consumer('up_gone');
	DROP OWNED BY up_gone; DROP ROLE up_gone});
is($node->safe_psql('old', q{SELECT count(*) FROM sog.role_grant}), '4', 'a dropped role leaves its grant row');
is($node->safe_psql('old', SogTest::grants_not_in_force_sql()), 'up_gone:consumer:dropped', 'out of force');
my ($refresh_rc, $refresh_out, $refresh_err) = $node->psql('old', 'SELECT sog.refresh_grants()');
is($refresh_out, '3', 'refresh_grants skips it');
like($refresh_err, qr/WARNING:  role "up_gone", which the grant \(every consumer\) was given to, was dropped or renamed: the grant is kept as dropped, never in force/,
	'and reports it');
is($node->safe_psql('old', q{SELECT count(*) FROM sog.role_grant WHERE role IS NULL AND kind = 'consumer'}), '1',
	'and keeps it as dropped');
$node->safe_psql('old', q{DELETE FROM sog.role_grant r WHERE r.role IS NULL});

# 1.2 moves the operators into sog with their OIDs: the user's objects
# keep working; a query names them with sog on its search_path, or as
# OPERATOR(sog.>)
is($node->safe_psql('old', q{SELECT string_agg(o.oprname, ' ' ORDER BY o.oprname) FROM pg_operator o
	WHERE o.oprleft = 'sog.position'::regtype AND o.oprnamespace = 'sog'::regnamespace}),
	'< <= <> = > >=', 'the six operators are in sog');
is($node->safe_psql('old', q{SELECT count(*) FROM pg_operator o
	WHERE o.oprleft = 'sog.position'::regtype AND o.oprnamespace = 'pg_catalog'::regnamespace}),
	'0', 'and none is left in pg_catalog');
is($node->safe_psql('old', q{SELECT string_agg(pos::text, ',' ORDER BY pos) FROM public.user_late}),
	'6,7,8,9', 'a view built on them works');
is(SogTest::sqlstate($node, 'old', 'NONE', q{INSERT INTO public.user_events VALUES ('0', 'x')}),
	'23514', 'a CHECK constraint built on them still refuses');
is($node->safe_psql('old', q{SET enable_seqscan = off; SELECT string_agg(pos::text, ',') FROM
	(SELECT pos FROM public.user_events WHERE pos OPERATOR(sog.>=) '7' ORDER BY pos DESC) x}),
	'9,8,7', 'an index built on them is used and ordered');
is(SogTest::sqlstate($node, 'old', 'NONE', q{SELECT '1'::sog.position > '0'}),
	'42883', 'a bare operator without sog on the search_path is not found');
is($node->safe_psql('old', q{SET search_path = public, sog; SELECT '1'::sog.position > '0'}),
	't', 'with sog on the search_path it is');

#
# behaviour after the update
#
sub sqlstate { return SogTest::sqlstate($node, @_); }

is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.apply_batch(1, 3, ARRAY['5', '300', '301']::sog.position[],
	ARRAY[@{[sprintf($d, "'5'")]}, @{[sprintf($d, "'300'")]}, @{[sprintf($d, "'301'")]}])}),
	'{f,f,t}', 'replays are duplicates, the next position applies');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.apply_batch_int8(1, 3, ARRAY[300, 301],
	ARRAY[@{[sprintf($d, "'300'")]}, @{[sprintf($d, "'301'")]}])}),
	'{f,f}', 'a consumer of 1.0 may call the new apply_batch_int8 (duplicates: nothing changes)');
is(sqlstate('old', 'up_app', qq{SELECT sog.apply(1, 2, '302', @{[sprintf($d, "'302'")]})}),
	'SG001', 'the fence still holds against the old generation');
is(sqlstate('old', 'up_app', qq{SELECT sog.apply(3, 2, '41', @{[sprintf($d, "'41'")]})}),
	'SG004', 'the failed-closed checkpoint does not advance');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.verify_gap(2, 2, $hash_16_20)}),
	't', 'the replaying checkpoint verifies its gap with the predecessor\'s hash');
is($node->safe_psql('old', q{SELECT state FROM sog.checkpoint WHERE id = 2}), 'running', 'and runs again');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT string_agg(DISTINCT sog.recovery_event(4, g::sog.position, @{[sprintf($d, 'g')]}), ',') FROM generate_series(250, 301) g}),
	'verified', 'the open recovery attempt verifies its page from receipts');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT promoted, reason FROM sog.promote(4, 'T5', '301')}),
	't|promoted', 'and promotes');
is(sqlstate('old', 'up_scoped', q{SELECT sog.claim(3, 'w3')}),
	'42501', 'the scoped role is still refused other consumers');
is(sqlstate('old', 'up_scoped', q{SELECT sog.owner_check(1, 3)}), 'ok', 'and may act on its own');
is(sqlstate('old', 'up_ops', q{SELECT sog.apply(1, 3, '400', '\x00')}), '42501', 'the operator cannot apply');
is(sqlstate('old', 'up_app', q{SELECT sog.set_retention(keep_positions => 10)}), '42501',
	'a consumer cannot set retention');
is(sqlstate('old', 'up_ops', q{SELECT sog.set_retention(consumer => 'up-a', keep_positions => 100)}), 'ok',
	'the operator can');
is($node->safe_psql('old', q{SET ROLE up_ops; SELECT sog.prune_due(1)}), '201',
	'and prunes the upgraded receipts by the policy (1..201 of 1..301)');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.apply(1, 4, '7', @{[sprintf($d, "'7'")]})}),
	'f', 'a pruned position is still a duplicate');
is($node->safe_psql('old', q{SELECT count(*) FROM sog.receipt WHERE created_at IS NULL}), '0',
	'receipts written before the update have a created_at');
# 1.2's receipt ring: the receipts from before the update stay in
# sog.receipt_0 (pruned by DELETE); the retention job puts the checkpoint
# whose consumer has a policy in the ring, where its next receipts go
is($node->safe_psql('old', q{SELECT string_agg(DISTINCT ring::text, ',') FROM sog.receipt}), '0',
	'the receipts from before the update are in sog.receipt_0');
$node->safe_psql('old', q{SET ROLE up_ops; CALL sog.prune_due()});
is($node->safe_psql('old', q{SELECT string_agg(id || ':' || receipt_ring, ' ' ORDER BY id) FROM sog.checkpoint}),
	'1:1 2:0 3:0 4:0 5:0', 'CALL sog.prune_due() puts the checkpoint with a policy in the ring');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.apply_batch(1, 4, ARRAY['302', '303']::sog.position[],
	ARRAY[@{[sprintf($d, "'302'")]}, @{[sprintf($d, "'303'")]}])}), '{t,t}', 'it applies');
is($node->safe_psql('old', q{SELECT string_agg(ring || ':' || first_position || '-' || last_position, ' ' ORDER BY last_position)
	FROM sog.receipt WHERE checkpoint_id = 1 AND last_position OPERATOR(sog.>) '301'}),
	'1:302-303', 'and its receipts go to sog.receipt_1');
is($node->safe_psql('old', qq{SET ROLE up_app; SELECT sog.apply(1, 4, '303', @{[sprintf($d, "'303'")]})}),
	'f', 'where a replay finds them');
is($node->safe_psql('old', q{SELECT string_agg(id || ':' || (applied_at IS NOT NULL), ' ' ORDER BY id) FROM sog.checkpoint}),
	'1:true 2:true 3:true 4:false 5:true', 'checkpoints that applied anything have an applied_at');

#
# the same objects as a fresh install
#
$node->safe_psql(
	'fresh', q{
CREATE EXTENSION stream_offset_guard;
SELECT sog.grant_consumer('up_app');
SELECT sog.grant_consumer('up_scoped', 'up-a');
SELECT sog.grant_operator('up_ops');
});

# one line per extension object: its identity and its definition, with its
# ACL and comment; tables add columns, constraints, indexes and triggers
my $objects = q{
WITH m AS (
	SELECT d.classid, d.objid, pg_describe_object(d.classid, d.objid, 0) AS what
	  FROM pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'stream_offset_guard'))
SELECT m.what || ' | ' || coalesce(
	CASE m.classid
	WHEN 'pg_proc'::regclass THEN
		(SELECT CASE WHEN p.prokind = 'a' THEN (SELECT format('aggregate %s %s %s %s %s %s', a.aggkind, a.aggtransfn::regproc, a.aggfinalfn::regproc, a.aggcombinefn::regproc, a.aggsortop::regoperator, a.aggtranstype::regtype) FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
		             ELSE pg_get_functiondef(p.oid) END || ' acl ' || coalesce(p.proacl::text, '-')
		   FROM pg_proc p WHERE p.oid = m.objid)
	WHEN 'pg_class'::regclass THEN
		(SELECT c.relkind::text || ' acl ' || coalesce(c.relacl::text, '-') || ' ' ||
		        coalesce(pg_get_viewdef(c.oid), '') ||
		        coalesce((SELECT string_agg(format('%s %s %s %s %s', a.attname, format_type(a.atttypid, a.atttypmod),
		                                           a.attnotnull, a.attidentity, pg_get_expr(ad.adbin, ad.adrelid)),
		                                    ', ' ORDER BY a.attnum)
		                    FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') || ' ' ||
		        coalesce((SELECT string_agg(x.conname || ' ' || pg_get_constraintdef(x.oid), ', ' ORDER BY x.conname)
		                    FROM pg_constraint x WHERE x.conrelid = c.oid), '') || ' ' ||
		        coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY 1)
		                    FROM pg_index i WHERE i.indrelid = c.oid), '') || ' ' ||
		        coalesce((SELECT string_agg(pg_get_triggerdef(t.oid), ', ' ORDER BY t.tgname)
		                    FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal), '')
		   FROM pg_class c WHERE c.oid = m.objid)
	WHEN 'pg_type'::regclass THEN
		(SELECT t.typtype::text || ' ' || coalesce((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
		                                        FROM pg_enum e WHERE e.enumtypid = t.oid), '')
		   FROM pg_type t WHERE t.oid = m.objid)
	ELSE '' END, '') || ' | ' || coalesce(obj_description(m.objid, m.classid::regclass::name), '-')
  FROM m ORDER BY m.what};
my $fresh = $node->safe_psql('fresh', $objects);
my $upgraded = $node->safe_psql('old', $objects);
cmp_ok(scalar(split /\n/, $fresh), '>', 100, 'the catalog comparison sees the extension\'s objects');
# objects are separated by the line "|| <what> ||" so that a difference names them
my %fresh = map { $_ => 1 } split /\n(?=[a-z ]+ sog\.|[a-z ]+ "?[a-z_]+"? of )/, $fresh;
my %upgraded = map { $_ => 1 } split /\n(?=[a-z ]+ sog\.|[a-z ]+ "?[a-z_]+"? of )/, $upgraded;
is_deeply([ sort grep { !$fresh{$_} } keys %upgraded ], [], 'an upgraded 1.0 has no object a fresh 1.1 lacks or defines otherwise');
is_deeply([ sort grep { !$upgraded{$_} } keys %fresh ], [], 'and lacks none: the same definitions, ACLs and comments');
is($node->safe_psql('old', $privileges), $node->safe_psql('fresh', $privileges),
	'and every role has the same privileges in both');
# pg_dump of the upgraded database restores into a fresh 1.1
my $dump = $node->basedir . '/old.dump';
command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('old'), '-f', $dump ], 'pg_dump of the upgraded database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ],
	'restores into a new database (the extension created at 1.1)');
is($node->safe_psql('restored', $tables), $node->safe_psql('old', $tables), 'with the same rows');
is($node->safe_psql('restored', q{SELECT count(*) FROM sog.retention}), '1', 'and the retention policy');
my $ring = q{SELECT (SELECT string_agg(id || ':' || receipt_ring, ' ' ORDER BY id) FROM sog.checkpoint) || ' / ' ||
	(SELECT string_agg(ring || ':' || n, ' ' ORDER BY ring) FROM (SELECT ring, sum(n) AS n FROM sog.receipt GROUP BY ring) x) || ' / ' ||
	(SELECT string_agg(current::text, ',') FROM sog.receipt_ring)};
is($node->safe_psql('restored', $ring), $node->safe_psql('old', $ring),
	'and the receipt ring: where each checkpoint writes, the receipts in each partition, the current one');
is($node->safe_psql('restored', q{SELECT string_agg(pos::text, ',' ORDER BY pos) FROM public.user_late}),
	'6,7,8,9', 'and the user\'s view on the operators');
is($node->safe_psql('restored', $privileges), $node->safe_psql('old', $privileges),
	'and every role has the privileges it had, the refreshed ones too');

SogTest::storage_verifies($node, $_) for qw(old fresh restored);
$node->stop;
done_testing();
