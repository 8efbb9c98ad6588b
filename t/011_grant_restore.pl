# 011_grant_restore.pl: a grant belongs to the role it was given to, through
# a drop, a dump and a restore into another cluster (issue 20, items 1 and 2).
#
# The source cluster grants consumer roles scoped to "team-a" and "team-b",
# an operator, and a role that is then dropped (its grant row stays).  Its
# database is dumped (pg_dump -Fc) and restored twice into another cluster
# whose next OID was forced (pg_resetwal -o) to the dropped role's OID, so
# that a role that was never granted anything ("intruder") holds it:
#
#   1. into a database of that cluster while one granted role (app_b) is
#      missing: the rows of the roles that exist come back and are in force;
#      the missing role's row is kept, reported (a WARNING in the restore's
#      output, sog.grant_status) and given to no one; sog.refresh_grants()
#      gives back the EXECUTE privileges that PostgreSQL's restore lost with
#      the failed GRANTs to app_b, and once the role is created binds its
#      grant;
#   2. after app_b was created: every named role's grant is in force, and
#      the intruder, which holds the dropped role's OID, gets nothing of its
#      grant, neither from the restore nor from sog.refresh_grants().
#
# Before issue 20 the grant table keyed rows by OID (regrole): restore 1
# loaded no row at all (COPY failed on app_b) and every role got 42501;
# restore 2 gave the dropped role's team-b grant to the intruder.
#
# Then (review of issue 20): 3. a dump of a 1.0 database, whose grant
# table held regrole text, restored into 1.1: the roles whose names need
# quotes keep their grants, the grant of a role dropped before the dump is
# kept as dropped; 4. in one cluster, a role created with a dropped role's
# name and OID (pg_resetwal -o again) gets nothing of its grant, from no
# sog.refresh_grants().

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use lib $FindBin::Bin;
use SogTest;

#
# the source: grants, one of them to a role dropped since
#
my $src = PostgreSQL::Test::Cluster->new('grant_src');
$src->init;
$src->start;
$src->safe_psql('postgres', q{
CREATE ROLE app_a LOGIN;
CREATE ROLE app_b LOGIN;
CREATE ROLE ops LOGIN;
CREATE ROLE gone LOGIN;
CREATE DATABASE src;
});
$src->safe_psql('src', q{
CREATE EXTENSION stream_offset_guard;
SELECT sog.grant_consumer('app_a', 'team-a');
SELECT sog.grant_consumer('app_b', 'team-b');
SELECT sog.grant_operator('ops');
SELECT sog.grant_consumer('gone', 'team-b');
SELECT sog.register('team-a', 'orders', '0');
SELECT sog.register('team-b', 'orders', '0');
SELECT sog.claim(1, 'a1');
SELECT sog.claim(2, 'b1');
});
my $gone_oid = $src->safe_psql('src', q{SELECT oid FROM pg_roles WHERE rolname = 'gone'});
$src->safe_psql('src', 'DROP OWNED BY gone');
$src->safe_psql('postgres', 'DROP ROLE gone');
is($src->safe_psql('src', q{SELECT count(*) FROM sog.role_grant}), '4',
	'the dropped role leaves its grant row in the source');

my $dump = $src->basedir . '/src.dump';
command_ok([ 'pg_dump', '-Fc', '-d', $src->connstr('src'), '-f', $dump ], 'pg_dump of the source database');
$src->stop;

#
# the target: the next OID is the dropped role's, and the intruder gets it
#
my $dst = SogTest::cluster_with_next_oid('grant_dst', $gone_oid);
$dst->safe_psql('postgres', 'CREATE ROLE intruder LOGIN');
is($dst->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'intruder'}),
	$gone_oid, 'in the target the intruder holds the dropped role\'s OID');
$dst->safe_psql('postgres', q{CREATE ROLE app_a LOGIN; CREATE ROLE ops LOGIN;});

sub restore
{
	my ($db) = @_;
	$dst->safe_psql('postgres', "CREATE DATABASE $db");
	my ($out, $err) = ('', '');
	# --verbose: pg_restore shows the server's warnings only then
	IPC::Run::run([ 'pg_restore', '--verbose', '-d', $dst->connstr($db), $dump ], '>', \$out, '2>', \$err);
	return $err;
}

sub state { return SogTest::sqlstate($dst, @_); }

#
# 1. a granted role is missing
#
my $err = restore('partial');
is_deeply(
	[ grep { !/role "app_b" does not exist/ } @{ SogTest::messages($err, 'ERROR') } ], [],
	'restore 1: the only errors are the privileges of the missing role app_b');
is_deeply(
	SogTest::messages($err, 'WARNING'),
	[
		q{WARNING:  role "app_b" does not exist: its grant (consumer 'team-b') is kept but not in force},
		q{WARNING:  role "gone" does not exist: its grant (consumer 'team-b') is kept but not in force},
	],
	'restore 1: the grants of the roles that do not exist are reported, each by name');
is($dst->safe_psql('partial', q{SELECT count(*) FROM sog.role_grant}), '4', 'restore 1: every grant row is back');
is($dst->safe_psql('partial', SogTest::grants_not_in_force_sql()),
	"app_b:consumer:team-b:missing\ngone:consumer:team-b:missing",
	'restore 1: those of app_a and ops are in force, the missing roles\' are kept, not in force');
# PostgreSQL restores a function's privileges in one statement per
# function: where app_b was a grantee too, the GRANTs to app_a and ops
# failed with it.  refresh_grants(), run after every restore, gives them back.
is(state('partial', 'app_a', q{SELECT sog.claim(1, 'a2')}), '42501',
	'restore 1: before refresh_grants, app_a lacks the EXECUTE the failed GRANTs took with them');
$dst->safe_psql('partial', q{SELECT sog.grant_consumer('intruder', 'team-a')});
my ($rc, $out, $refresh_err) = $dst->psql('partial', 'SELECT sog.refresh_grants()');
is($out, '3', 'restore 1: refresh_grants re-applies the three grants in force');
like($refresh_err, qr/WARNING:  role "app_b" does not exist: its grant \(consumer 'team-b'\) is kept but not in force/,
	'restore 1: and reports the missing role app_b');
like($refresh_err, qr/WARNING:  role "gone" does not exist/, 'restore 1: and the dropped role');
is(state('partial', 'app_a', q{SELECT sog.claim(1, 'a2')}), 'ok', 'restore 1: app_a acts on team-a');
is(state('partial', 'app_a', q{SELECT sog.claim(2, 'a2')}), '42501', 'restore 1: and not on team-b');
is(state('partial', 'ops', q{SELECT count(*) FROM sog.unresolved_gaps}), 'ok', 'restore 1: ops watches');
is(state('partial', 'ops', q{SELECT count(*) FROM sog.gaps(2)}), 'ok', 'restore 1: every checkpoint');
is(state('partial', 'intruder', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'restore 1: the intruder is refused team-b');
is(state('partial', 'intruder', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'restore 1: after refresh_grants the intruder is still refused team-b');
is($dst->safe_psql('partial', q{SET ROLE intruder; SELECT sog.may_see('team-b')}), 'f',
	'restore 1: and does not see it');
# once the missing role exists, the owner binds its grant
$dst->safe_psql('postgres', 'CREATE ROLE app_b LOGIN');
is(state('partial', 'app_b', q{SELECT sog.owner_check(2, 1)}), '42501',
	'restore 1: a role created later has no grant until one is made for it');
($rc, $out, $refresh_err) = $dst->psql('partial', 'SELECT sog.refresh_grants()');
is($out, '4', 'restore 1: refresh_grants binds the grant of app_b, now created');
like($refresh_err, qr/WARNING:  the grant \(consumer 'team-b'\) of role "app_b", restored from another cluster, is bound to the role of that name/,
	'restore 1: and says so');
is($dst->safe_psql('partial', SogTest::grants_not_in_force_sql()), 'gone:consumer:team-b:missing',
	'restore 1: only the dropped role\'s grant is out of force');
is(state('partial', 'app_b', q{SELECT sog.claim(2, 'b2')}), 'ok', 'restore 1: app_b acts on team-b');

#
# 2. every named role exists; the intruder holds the dropped role's OID
#
$err = restore('complete');
is_deeply(SogTest::messages($err, 'ERROR'), [], 'restore 2: no error');
is_deeply(
	SogTest::messages($err, 'WARNING'),
	[ q{WARNING:  role "gone" does not exist: its grant (consumer 'team-b') is kept but not in force} ],
	'restore 2: the dropped role\'s grant is reported');
is($dst->safe_psql('complete', SogTest::grants_not_in_force_sql()), 'gone:consumer:team-b:missing',
	'restore 2: every other grant is in force');
is($dst->safe_psql('complete', q{SELECT count(*) FROM sog.role_grant WHERE role_oid = (SELECT oid FROM pg_roles WHERE rolname = 'intruder')}),
	'0', 'restore 2: no grant row is bound to the intruder\'s OID');
$dst->safe_psql('complete', q{SELECT sog.grant_consumer('intruder', 'team-a')});
is(state('complete', 'intruder', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'restore 2: the intruder, holding the dropped role\'s OID, is refused team-b');
$dst->safe_psql('complete', 'SELECT sog.refresh_grants()');
is(state('complete', 'intruder', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'restore 2: also after refresh_grants');
is($dst->safe_psql('complete', q{SET ROLE intruder; SELECT sog.may_see('team-b')}), 'f',
	'restore 2: and does not see team-b');
is(state('complete', 'app_b', q{SELECT sog.claim(2, 'b2')}), 'ok', 'restore 2: app_b acts on team-b');
is(state('complete', 'app_a', q{SELECT sog.claim(1, 'a2')}), 'ok', 'restore 2: app_a on team-a');
is($dst->safe_psql('complete', q{SELECT generation FROM sog.checkpoint WHERE id = 2}), '2',
	'restore 2: the refused claims changed nothing');

#
# 3. a dump of 1.0 restored into 1.1 (what a move to a server with the 1.1
#    package does: pg_dump names no version): its grant table held
#    regrole text, a quoted identifier for a name that needs quotes and the
#    bare OID of a role dropped before the dump (review of issue 20: the
#    quoted names were kept, with their quotes, as roles that do not exist,
#    so those roles lost their grants for good; the OID became a role name
#    that a role created later under that name would have been given)
#
$dst->safe_psql('postgres', q{
CREATE ROLE "Quoted Role" LOGIN;
CREATE ROLE "MixedCase" LOGIN;
CREATE ROLE mixedcase LOGIN;
CREATE ROLE gone10 LOGIN;
CREATE DATABASE v10;
});
$dst->safe_psql('v10', q{
CREATE EXTENSION stream_offset_guard VERSION '1.0';
SELECT sog.grant_consumer('"Quoted Role"', 'team-q');
SELECT sog.grant_consumer('"MixedCase"', 'team-m');
SELECT sog.grant_consumer('gone10', 'team-g');
SELECT sog.register('team-q', 'orders', '0');
SELECT sog.register('team-m', 'orders', '0');
SELECT sog.register('team-g', 'orders', '0');
});
my $gone10_oid = $dst->safe_psql('v10', q{SELECT oid FROM pg_roles WHERE rolname = 'gone10'});
$dst->safe_psql('v10', 'DROP OWNED BY gone10');
$dst->safe_psql('postgres', 'DROP ROLE gone10');
my $dump10 = $dst->basedir . '/v10.dump';
command_ok([ 'pg_dump', '-Fc', '-d', $dst->connstr('v10'), '-f', $dump10 ], 'pg_dump of a 1.0 database');
$dst->safe_psql('postgres', 'CREATE DATABASE v10r');
my ($out10, $err10) = ('', '');
IPC::Run::run([ 'pg_restore', '--verbose', '-d', $dst->connstr('v10r'), $dump10 ], '>', \$out10, '2>', \$err10);
is_deeply(SogTest::messages($err10, 'ERROR'), [], 'restore of 1.0: no error');
is($dst->safe_psql('v10r', q{SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'}), SogTest::default_version(),
	'restore of 1.0: the extension is at the default version');
is_deeply(SogTest::messages($err10, 'WARNING'),
	[ q{WARNING:  the grant (consumer 'team-g') of a role dropped before the dump is kept but never in force} ],
	'restore of 1.0: the grant of the role dropped before the dump is reported');
is($dst->safe_psql('v10r', q{SELECT string_agg(concat_ws(':', coalesce(role, ''), consumer, status), ',' ORDER BY consumer) FROM sog.grant_status}),
	':team-g:dropped,MixedCase:team-m:in_force,Quoted Role:team-q:in_force',
	'restore of 1.0: the roles whose names need quotes have their grants, the dropped role\'s is kept as dropped');
$dst->safe_psql('v10r', 'SELECT sog.refresh_grants()');
is(state('v10r', '"Quoted Role"', q{SELECT sog.claim(1, 'q1')}), 'ok', 'restore of 1.0: "Quoted Role" acts on team-q');
is(state('v10r', '"MixedCase"', q{SELECT sog.claim(2, 'm1')}), 'ok', 'restore of 1.0: "MixedCase" acts on team-m');
is(state('v10r', 'mixedcase', q{SELECT sog.claim(2, 'm2')}), '42501', 'restore of 1.0: and role mixedcase not');
$dst->safe_psql('postgres', qq{CREATE ROLE "$gone10_oid" LOGIN});
$dst->safe_psql('v10r', 'SELECT sog.refresh_grants()');
is(state('v10r', qq{"$gone10_oid"}, q{SELECT sog.claim(3, 'g1')}), '42501',
	'restore of 1.0: a role named after the dropped role\'s OID gets nothing');

SogTest::storage_verifies($dst, $_) for qw(partial complete v10r);
$dst->stop;

#
# 4. one cluster: a role dropped after its grant, and a role of the same
#    name created later at the very same OID (pg_resetwal -o), a member of
#    another consumer's role (so it may EXECUTE): it gets nothing of the
#    dropped role's grant, once sog.refresh_grants() has run after the
#    drop, and neither from a later refresh (review of issue 20: the later
#    refresh bound the row, unbound by the first, to the new role of its
#    name)
#
my $one = PostgreSQL::Test::Cluster->new('grant_one');
$one->init;
$one->start;
$one->safe_psql('postgres', q{
CREATE ROLE team_a_svc LOGIN;
CREATE ROLE reused LOGIN;
CREATE EXTENSION stream_offset_guard;
SELECT sog.grant_consumer('team_a_svc', 'team-a');
SELECT sog.grant_consumer('reused', 'team-b');
SELECT sog.register('team-a', 'orders', '0');
SELECT sog.register('team-b', 'orders', '0');
});
my $reused_oid = $one->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'reused'});
$one->safe_psql('postgres', 'DROP OWNED BY reused; DROP ROLE reused');
# (as after a wraparound, long after the drop: the dead row of pg_authid is
# vacuumed away, else a new OID would skip its OID)
$one->safe_psql('postgres', 'VACUUM pg_authid');
my ($one_rc, $one_out, $one_err) = $one->psql('postgres', 'SELECT sog.refresh_grants()');
like($one_err, qr/WARNING:  role "reused", which the grant \(consumer 'team-b'\) was given to, was dropped or renamed/,
	'one cluster: refresh_grants reports the dropped role\'s grant');
$one->stop;
command_ok([ 'pg_resetwal', '-o', $reused_oid, '-D', $one->data_dir ], "pg_resetwal -o $reused_oid");
$one->start;
$one->safe_psql('postgres', 'CREATE ROLE reused LOGIN IN ROLE team_a_svc');
is($one->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'reused'}), $reused_oid,
	'one cluster: the new role has the dropped role\'s name and OID');
is(SogTest::sqlstate($one, 'postgres', 'reused', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'one cluster: it is refused the dropped role\'s consumer');
is(SogTest::sqlstate($one, 'postgres', 'reused', q{SELECT sog.claim(1, 'member')}), 'ok',
	'one cluster: and acts on its own role\'s');
$one->safe_psql('postgres', 'SELECT sog.refresh_grants()');
is(SogTest::sqlstate($one, 'postgres', 'reused', q{SELECT sog.claim(2, 'intruder')}), '42501',
	'one cluster: also after another refresh_grants');
is($one->safe_psql('postgres', SogTest::grants_not_in_force_sql()), 'consumer:team-b:dropped',
	'one cluster: the dropped role\'s grant is kept as dropped');
is($one->safe_psql('postgres', q{SELECT generation FROM sog.checkpoint WHERE id = 2}), '0',
	'one cluster: the refused claims changed nothing');
SogTest::storage_verifies($one, 'postgres');
$one->stop;
done_testing();
