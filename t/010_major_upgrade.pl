# 010_major_upgrade.pl: a database moves from an older PostgreSQL major to
# this one and keeps every part of its state (issue 19).
#
# A cluster of the older major (SOG_OLD_INSTALL, its installation directory
# with this tree's extension installed in it) is filled the way a year of
# use fills it (SogTest::fill_state: checkpoints in every state, receipts,
# open and resolved gaps, manifests, recovery attempts promoted, lost,
# failed and open, a provider, a reconfiguration, a retention policy and
# grants to three roles).  Then, the two ways PostgreSQL documents:
#
#   1. pg_dumpall --roles-only and pg_dump, both of this (the newer) major
#      as PostgreSQL advises, restored into a cluster of this major;
#   2. pg_upgrade from the stopped older cluster into a new one of this
#      major (--copy).
#
# Each time: every table's rows are the same (fingerprints), every role may
# do exactly what it could, and the state behaves: a replayed event is
# answered false, the old generation is fenced (SG001), the open gap of the
# failed-closed checkpoint still blocks (SG004), the replaying checkpoint
# verifies its gap, the open recovery attempt verifies and promotes, the
# scoped role is refused other consumers (42501).
#
# make test-versions runs this in the 17 and 18 roots with 15's
# installation beside theirs (test/versions/run.sh); elsewhere it is
# skipped, saying why.

use strict;
use warnings;

use Cwd;
use FindBin;
use File::Temp qw(tempdir);

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $old_install = $ENV{SOG_OLD_INSTALL};
plan skip_all => 'needs an older PostgreSQL major beside this one (SOG_OLD_INSTALL); '
  . 'make test-versions provides 15 in the 17 and 18 roots'
  unless $old_install && -x "$old_install/bin/postgres";

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_install);
my $new = PostgreSQL::Test::Cluster->new('restored');
my $old_major = $old->pg_version->major;
my $new_major = $new->pg_version->major;
cmp_ok($old_major, '<', $new_major, "moving from $old_major to $new_major");
$old->init;
$old->append_conf('postgresql.conf', 'jit = off');
$old->start;
$old->safe_psql('postgres', 'CREATE DATABASE src');
$old->safe_psql('src', 'CREATE EXTENSION stream_offset_guard');
SogTest::fill_state($old, 'src', 'mv');
$old->safe_psql('src', q{SELECT sog.set_retention(consumer => 'mv-a', keep_positions => 100)});

my $cp_columns = SogTest::checkpoint_columns($old, 'src');
my $fingerprint = SogTest::fingerprint_sql($cp_columns,
	q{UNION ALL SELECT 'retention', count(*), md5(string_agg(x::text, '|' ORDER BY x::text)) FROM sog.retention x});
my $privileges = SogTest::privileges_sql('mv');
my $before = $old->safe_psql('src', $fingerprint);
my $privileges_before = $old->safe_psql('src', $privileges);
is($old->safe_psql('src', SogTest::states_sql()), SogTest::filled('states'),
	"$old_major holds a checkpoint in every state");
like($privileges_before, qr/^mv_app sog\.claim\(bigint,text,text\) EXECUTE$/m, 'and its grants');
like($before, qr/^receipts\|330\|/m, 'and 330 receipts');

# The state behaves as it did: checked in every copy of the database.
my %was = (fingerprint => $fingerprint, before => $before,
	privileges => $privileges, privileges_before => $privileges_before);
sub behaves { my ($node, $db, $how) = @_; SogTest::moved_state_behaves($node, $db, $how, \%was); return; }

#
# 1. pg_dump and restore, with this major's pg_dumpall and pg_dump
#
$new->init;
$new->start;
my $roles = $new->basedir . '/roles.sql';
my $dump = $new->basedir . '/src.dump';
$new->command_ok([ 'pg_dumpall', '--roles-only', '-d', $old->connstr('postgres'), '-f', $roles ],
	"pg_dumpall --roles-only of $new_major from $old_major");
$new->command_ok([ 'pg_dump', '-Fc', '-d', $old->connstr('src'), '-f', $dump ],
	"pg_dump of $new_major from $old_major");
my ($rc, $out, $err) = $new->psql('postgres', undef, extra_params => [ '-f', $roles ]);
is_deeply([ map { s/^psql:[^:]+:\d+: //r } grep { /ERROR/ } split /\n/, $err ],
	['ERROR:  role "postgres" already exists'],
	'the roles are created (all but the bootstrap superuser, which exists)');
$new->safe_psql('postgres', 'CREATE DATABASE src');
$new->command_ok([ 'pg_restore', '--exit-on-error', '-d', $new->connstr('src'), $dump ],
	'pg_restore into an empty database');
behaves($new, 'src', "dump of $old_major restored into $new_major");
$new->stop;

#
# 2. pg_upgrade
#
$old->stop;
my $up = PostgreSQL::Test::Cluster->new('upgraded');
# 18's initdb turns data checksums on; the older cluster has none, and
# pg_upgrade needs both the same
$up->init($new_major >= 18 ? (extra => ['--no-data-checksums']) : ());
my $cwd = getcwd();
my $work = tempdir(CLEANUP => 1);
chdir $work or die "chdir $work: $!";
{
	# the older binaries' own libraries (an older ICU, OpenLDAP, libxml2)
	local $ENV{LD_LIBRARY_PATH} = "$old_install/lib" . ($ENV{LD_LIBRARY_PATH} ? ":$ENV{LD_LIBRARY_PATH}" : '');
	$up->command_ok(
		[
			'pg_upgrade', '--no-sync',
			'-d', $old->data_dir, '-D', $up->data_dir,
			'-b', "$old_install/bin", '-B', $up->config_data('--bindir'),
			'-s', $up->host, '-p', $old->port, '-P', $up->port, '--copy'
		],
		"pg_upgrade from $old_major to $new_major");
}
chdir $cwd;
$up->start;
behaves($up, 'src', "pg_upgrade from $old_major to $new_major");
$up->stop;

done_testing();
