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
like($refresh_err, qr/WARNING:  the grant \(consumer 'team-b'\) of role "app_b" now belongs to the role of that name/,
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

SogTest::storage_verifies($dst, $_) for qw(partial complete);
$dst->stop;
done_testing();
