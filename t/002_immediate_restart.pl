# 002_immediate_restart.pl: acknowledged (committed) sink transactions survive
# an immediate shutdown ("pg_ctl stop -m immediate": no shutdown checkpoint,
# crash recovery at the next start), and an unacknowledged one does not.
# Then a successor claims, is told to resume from the last acknowledged
# position, verifies the read boundary the old worker recorded, and replays
# from an earlier position (at-least-once redelivery): the already-applied
# events are verified duplicates, the new ones are applied, and the sink ends
# with every position exactly once: no loss, no duplicate.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken this test:
# an immediate shutdown does not crash the operating system, so every WAL
# record a commit wrote reaches the files; what is tested is that PostgreSQL's
# crash recovery restores every acknowledged transaction of the extension and
# none of the unacknowledged one.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = SogTest::crash_node('immediate_restart');
my $cp = SogTest::claim_c1($node);

# Ten acknowledged page transactions of five events each (1..50), each
# moving the provider token on by compare-and-swap.  A checkpoint after the
# fifth, so that recovery replays the last five from WAL only.
my $token = 'NULL';
for my $page (1 .. 10)
{
	my $from = 5 * ($page - 1) + 1;
	my $to = 5 * $page;
	my $out = $node->safe_psql(
		'postgres', "BEGIN;
		 SELECT sink_batch($cp, 1, span($from, $to));
		 SELECT sog.commit_page($cp, 1, $token, 'page-$page');
		 COMMIT;");
	is($out, "{t,t,t,t,t}\n", "page $page ($from..$to) acknowledged");
	$token = "'page-$page'";
	$node->safe_psql('postgres', 'CHECKPOINT') if $page == 5;
}

# w1 has read 51..60 and holds them unapplied; acknowledged.
$node->safe_psql('postgres',
	"SELECT sog.note_read($cp, 1, '60', span_hash(51, 60), 10)");

# An unacknowledged page transaction for 51..55, open at the shutdown.
my $inflight = $node->background_psql('postgres', on_error_stop => 0);
$inflight->query_safe('BEGIN');
is( $inflight->query_safe(
		"SELECT sink_batch($cp, 1, span(51, 55));
		 SELECT sog.commit_page($cp, 1, 'page-10', 'page-11');"),
	"{t,t,t,t,t}\n",
	'51..55 applied inside the open transaction');

# An unrelated commit flushes the WAL written so far, the open
# transaction's records included: recovery replays them, and must still
# leave them invisible.
$node->safe_psql('postgres', 'CREATE TABLE wal_flush_marker ()');

$node->stop('immediate');

SogTest::session_lost($inflight, 'the open transaction');

$node->start;

# Everything acknowledged is there, nothing else.
is( $node->safe_psql(
		'postgres',
		"SELECT generation, owner, state, applied_position, source_cursor,
				read_base, read_hash = span_hash(51, 60), read_count,
				provider_token
		   FROM sog.checkpoint WHERE id = $cp"),
	'1|w1|running|50|60|50|t|10|page-10',
	'checkpoint after the restart: applied 50, read boundary (50, 60], token page-10'
);
is( $node->safe_psql(
		'postgres',
		"SELECT count(*), count(*) FILTER (WHERE r.payload_digest =
					sog.payload_digest(convert_to('p' || r.\"position\"::text, 'UTF8'))),
				min(r.\"position\"::numeric), max(r.\"position\"::numeric)
		   FROM sog.receipts($cp) r"),
	'50|50|1|50',
	'receipts 1..50, each with its digest, and none of 51..55');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*), count(DISTINCT pos), min(pos::numeric), max(pos::numeric) FROM sink}),
	'50|50|1|50',
	'sink rows 1..50, each once, and none of 51..55');

# A successor claims: generation 2, resume from the last acknowledged
# position, verify the recorded read boundary first.
is( $node->safe_psql(
		'postgres',
		"SELECT generation, verdict, resume_from, verify_from, verify_to,
				expected_hash = span_hash(51, 60), expected_count, gap_size,
				provider_token
		   FROM sog.claim($cp, 'w2')"),
	'2|gap_replay_required|50|50|60|t|10|10|page-10',
	'w2 claims generation 2: replay (50, 60] from 50');

# The old worker is fenced, also after the restart.
my ($stdout, $stderr);
my $ret = $node->psql(
	'postgres',
	"\\set VERBOSITY verbose
	 SELECT sink_batch($cp, 1, span(51, 55));",
	stdout => \$stdout,
	stderr => \$stderr);
isnt($ret, 0, 'the old generation cannot apply');
like($stderr, qr/ERROR:  SG001:/, 'the old generation gets SG001');

# w2 re-fetches (50, 60], its hash matches the recorded one.
is( $node->safe_psql(
		'postgres', "SELECT sog.verify_gap($cp, 2, span_hash(51, 60))"),
	't',
	'the replayed range matches the recorded buffer hash');

# w2 replays from 46 (the provider redelivers from an earlier offset): 46..50
# are verified duplicates, 51..60 are new.
is( $node->safe_psql(
		'postgres', "BEGIN;
		 SELECT sink_batch($cp, 2, span(46, 60));
		 SELECT sog.commit_page($cp, 2, 'page-10', 'page-11');
		 COMMIT;"),
	'{f,f,f,f,f,t,t,t,t,t,t,t,t,t,t}' . "\n",
	'replay from 46: 46..50 duplicates, 51..60 applied');

is( $node->safe_psql(
		'postgres',
		"SELECT generation, owner, state, applied_position, source_cursor,
				read_hash IS NULL, provider_token
		   FROM sog.checkpoint WHERE id = $cp"),
	'2|w2|running|60|60|t|page-11',
	'checkpoint after the replay: applied 60');
SogTest::sink_exactly_once($node, 1, 60, $cp);

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
