# 015_edition_move.pl: a database moves from the C edition to the portable
# edition and back by pg_dump and pg_restore (a team that moves onto a
# managed service, or leaves one), and keeps every part of its state
# (issue 29; docs/portable.md).
#
# A cluster with the C edition is filled the way a year of use fills it
# (SogTest::fill_state, as t/010: checkpoints in every state, receipts,
# open and resolved gaps, manifests, recovery attempts, a provider, a
# reconfiguration, a retention policy, grants to three roles).  Then:
#
#   1. its roles (pg_dumpall --roles-only) and its database (pg_dump) are
#      restored into a cluster of the portable edition, installed through
#      pg_tle (the edition registered with pgtle.install_extension by a
#      pgtle_admin role that is not a superuser, which the dump's CREATE
#      EXTENSION then finds);
#   2. that database, dumped again, is restored into a new cluster with the
#      C edition (pg_tle's own entries left out of the restore: a cluster
#      off the managed service has no pg_tle).
#
# Each time SogTest::moved_state_behaves: every table's rows, every role's
# privileges and every state are as they were, a replay is answered false,
# the old generation is fenced (SG001), the open gap still blocks (SG004),
# the replaying checkpoint verifies, the open recovery attempt verifies and
# promotes, the scoped role is refused (42501), the retention policy
# prunes.
#
# Needs the portable edition's install tree (SOG_PORTABLE_INSTALL: a copy
# of this major's installation with pg_tle and without the C edition) and
# its pg_tle script (SOG_PORTABLE_TLE_SQL); test/portable/regress.sh runs it
# with both.  Elsewhere it is skipped, saying why.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $portable_install = $ENV{SOG_PORTABLE_INSTALL};
my $tle_sql = $ENV{SOG_PORTABLE_TLE_SQL};
plan skip_all => 'needs the portable edition (SOG_PORTABLE_INSTALL, SOG_PORTABLE_TLE_SQL); '
  . 'test/portable/regress.sh provides them'
  unless $portable_install && -x "$portable_install/bin/postgres" && $tle_sql && -r $tle_sql;

# --- the C edition, filled ---------------------------------------------------------

my $c = PostgreSQL::Test::Cluster->new('c_edition');
$c->init;
$c->start;
$c->safe_psql('postgres', 'CREATE DATABASE src');
$c->safe_psql('src', 'CREATE EXTENSION stream_offset_guard');
SogTest::fill_state($c, 'src', 'mv');
$c->safe_psql('src', q{SELECT sog.set_retention(consumer => 'mv-a', keep_positions => 100)});

my $cp_columns = SogTest::checkpoint_columns($c, 'src');
my %was = (
	fingerprint => SogTest::fingerprint_sql($cp_columns,
		q{UNION ALL SELECT 'retention', count(*), md5(string_agg(x::text, '|' ORDER BY x::text)) FROM sog.retention x}),
	privileges => SogTest::privileges_sql('mv'));
$was{before} = $c->safe_psql('src', $was{fingerprint});
$was{privileges_before} = $c->safe_psql('src', $was{privileges});
is($c->safe_psql('src', SogTest::states_sql()), SogTest::filled('states'),
	'the C edition holds a checkpoint in every state');
like($was{before}, qr/^receipts\|330\|/m, 'and 330 receipts');

my $roles = $c->basedir . '/roles.sql';
my $dump = $c->basedir . '/c.dump';
$c->command_ok([ 'pg_dumpall', '--roles-only', '-d', $c->connstr('postgres'), '-f', $roles ],
	'pg_dumpall --roles-only of the C edition\'s cluster');
$c->command_ok([ 'pg_dump', '-Fc', '-d', $c->connstr('src'), '-f', $dump ],
	'pg_dump of the C edition\'s database');

# the roles of a dump, created in another cluster
sub roles_restored
{
	my ($node) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', undef, extra_params => [ '-f', $roles ]);
	is_deeply([ map { s/^psql:[^:]+:\d+: //r } grep { /ERROR/ } split /\n/, $err ],
		['ERROR:  role "postgres" already exists'],
		$node->name . ': the roles are created (all but the bootstrap superuser)');
	return;
}

# --- 1. into the portable edition --------------------------------------------------

my $p = PostgreSQL::Test::Cluster->new('portable', install_path => $portable_install);
$p->init;
$p->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'");
$p->start;
roles_restored($p);
$p->safe_psql('postgres', q{
CREATE ROLE sog_tle_admin LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
CREATE DATABASE src;
CREATE DATABASE pristine;
GRANT CREATE ON DATABASE src, pristine TO sog_tle_admin;
});
for my $db (qw(src pristine))
{
	$p->safe_psql($db, 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO sog_tle_admin;');
	my ($rc, $out, $err) = $p->psql($db, undef,
		extra_params => [ '-U', 'sog_tle_admin', '-v', 'ON_ERROR_STOP=1', '-f', $tle_sql ]);
	is($rc, 0, "$db: the portable edition registered with pg_tle by sog_tle_admin") or diag $err;
	$p->command_ok([ 'pg_restore', '--exit-on-error', '-d', $p->connstr($db), $dump ],
		"$db: the C edition's dump restored into the portable edition");
}
is($p->safe_psql('src', q{SELECT extversion || ' ' || (SELECT count(*) FROM pgtle.available_extensions() WHERE name = 'stream_offset_guard') FROM pg_extension WHERE extname = 'stream_offset_guard'}),
	SogTest::default_version() . ' 1', 'the restore installed the portable edition (a pg_tle extension)');
is($p->safe_psql('src', q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'sog'::regnamespace AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')}),
	'0', 'no function of it is in C');
SogTest::moved_state_behaves($p, 'src', 'C edition -> portable edition', \%was);

# --- 2. back to the C edition --------------------------------------------------------

my $dump2 = $p->basedir . '/portable.dump';
$p->command_ok([ 'pg_dump', '-Fc', '-d', $p->connstr('pristine'), '-f', $dump2 ],
	'pg_dump of the portable edition\'s database');
# pg_tle's entries left out: the cluster the database moves to has none
my ($rc, $list) = (0, '');
$list = `pg_restore -l '$dump2'`;
my $kept = join("\n", grep { !/\bpg_tle\b|\bpgtle\b/ } split /\n/, $list) . "\n";
my $list_file = $p->basedir . '/restore.list';
open(my $fh, '>', $list_file) or die "$list_file: $!";
print $fh $kept;
close $fh;
isnt($kept, $list, 'the portable dump holds pg_tle\'s entries, which the move leaves out');

my $c2 = PostgreSQL::Test::Cluster->new('c_again');
$c2->init;
$c2->start;
roles_restored($c2);
$c2->safe_psql('postgres', 'CREATE DATABASE src');
$c2->command_ok([ 'pg_restore', '--exit-on-error', '-L', $list_file, '-d', $c2->connstr('src'), $dump2 ],
	'the portable edition\'s dump restored into the C edition');
is($c2->safe_psql('src', q{SELECT count(*) > 0 FROM pg_proc WHERE pronamespace = 'sog'::regnamespace AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')}),
	't', 'the restore installed the C edition');
SogTest::moved_state_behaves($c2, 'src', 'portable edition -> C edition', \%was);

done_testing();
