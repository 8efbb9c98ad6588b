# 003_kill9_restart.pl: the postmaster itself is killed with SIGKILL while a
# sink transaction is open.  Its children notice the postmaster's death and
# exit; the next start runs crash recovery.  Acknowledged transactions are
# all there, the open one left nothing, and a successor resumes after the
# last acknowledged position with no loss and no duplicate.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken this test:
# the operating system does not crash, so every WAL record a commit wrote
# reaches the files; what is tested is PostgreSQL's crash recovery.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;
use Time::HiRes qw(usleep);

my $node = SogTest::crash_node('kill9_restart');
my $cp = SogTest::claim_c1($node);

# Four acknowledged sink transactions, 1..20.
for my $batch (1 .. 4)
{
	my $from = 5 * ($batch - 1) + 1;
	my $to = 5 * $batch;
	is( $node->safe_psql(
			'postgres', "SELECT sink_batch($cp, 1, span($from, $to))"),
		'{t,t,t,t,t}',
		"batch $batch ($from..$to) acknowledged");
}

# An unacknowledged sink transaction for 21..25, open when the postmaster
# dies; it holds the checkpoint row's lock.
my $inflight = $node->background_psql('postgres', on_error_stop => 0);
$inflight->query_safe('BEGIN');
is($inflight->query_safe("SELECT sink_batch($cp, 1, span(21, 25))"),
	'{t,t,t,t,t}', '21..25 applied inside the open transaction');

# An unrelated commit flushes the WAL written so far, the open
# transaction's records included: recovery replays them, and must still
# leave them invisible.
$node->safe_psql('postgres', 'CREATE TABLE wal_flush_marker ()');

SogTest::kill9_and_wait($node);

SogTest::session_lost($inflight, 'the open transaction');

$node->start;

is( $node->safe_psql(
		'postgres',
		"SELECT generation, owner, state, applied_position, source_cursor
		   FROM sog.checkpoint WHERE id = $cp"),
	'1|w1|running|20|20',
	'checkpoint after the restart: applied 20');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*), count(*) FILTER (WHERE r.payload_digest =
					sog.payload_digest(convert_to('p' || r.\"position\"::text, 'UTF8'))),
				min(r.\"position\"::numeric), max(r.\"position\"::numeric)
		   FROM sog.receipts($cp) r"),
	'20|20|1|20',
	'receipts 1..20, each with its digest, and none of 21..25');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*), count(DISTINCT pos), min(pos::numeric), max(pos::numeric) FROM sink}),
	'20|20|1|20',
	'sink rows 1..20, each once, and none of 21..25');

# A successor claims (no wait: the dead transaction's lock is gone) and is
# told to resume after 20.
is( $node->safe_psql(
		'postgres',
		"SET lock_timeout = '10s';
		 SELECT generation, verdict, resume_from FROM sog.claim($cp, 'w2')"),
	'2|aligned|20',
	'w2 claims generation 2, resume from 20');

# w2 replays from 18: 18..20 are duplicates, 21..25 are new.
is( $node->safe_psql(
		'postgres', "SELECT sink_batch($cp, 2, span(18, 25))"),
	'{f,f,f,t,t,t,t,t}',
	'replay from 18: 18..20 duplicates, 21..25 applied');

is( $node->safe_psql(
		'postgres',
		"SELECT generation, owner, state, applied_position FROM sog.checkpoint WHERE id = $cp"),
	'2|w2|running|25',
	'checkpoint after the replay: applied 25');
SogTest::sink_exactly_once($node, 1, 25);

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
