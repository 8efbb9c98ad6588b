# 016_receipt_ring.pl: real crashes around the receipt ring (1.2;
# docs/receipt-rotation.md).  Retention prunes the ring by raising the
# prune horizon; sog.rotate_receipts() (run by CALL sog.prune_due(), in a
# transaction of its own each time) turns the ring, and TRUNCATEs a
# partition whose receipts are all at or below their horizon.  One
# checkpoint keeping ten positions, pages of a hundred, CALL
# sog.prune_due() after each page; a crash:
#
#   a. inside an uncommitted TRUNCATE (backend SIGKILL): the partition
#      keeps its rows, and the next run empties it;
#   b. right after a call that turned the ring committed, before the call
#      that empties the partition left behind (postmaster SIGKILL): the
#      next run empties it;
#   c. inside a sink transaction writing to the current partition
#      (postmaster SIGKILL): nothing of it is stored, and the page applies
#      again in full;
#   d. right after a run that emptied a partition committed (postmaster
#      SIGKILL): the next apply goes to the current partition.
#
# After each: the receipts (sog.receipts), the answers for a pruned and a
# kept position, and amcheck over the extension's relations are what they
# were; at the end the sink holds every event once and the checkpoint
# exactly the receipts its policy keeps.  fsync is off (Cluster.pm's
# init): the operating system does not crash, so what is tested is
# PostgreSQL's crash recovery under the ring, which runs the same either
# way.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = SogTest::crash_node('receipt_ring', restart_after_crash => 1);
my $cp = SogTest::claim_c1($node);
$node->safe_psql('postgres', qq{SELECT sog.set_retention(checkpoint_id => $cp, keep_positions => 10)});

sub psql { return $node->safe_psql('postgres', $_[0]); }

# apply page lo..hi in its own sink transaction: how many were new
sub page
{
	my ($lo, $hi) = @_;
	return psql(qq{SELECT count(*) FILTER (WHERE f) FROM unnest(sink_batch($cp, 1, span($lo, $hi))) f});
}

# CALL sog.prune_due(): what the ring did (its NOTICEs, one per call of
# sog.rotate_receipts, joined by " / "), '' for nothing
sub retention
{
	my ($rc, $out, $err) = $node->psql('postgres', 'CALL sog.prune_due()');
	is($rc, 0, 'CALL sog.prune_due() succeeds');
	return join ' / ', $err =~ /NOTICE:  receipt ring: (.*)/g;
}

# sog.prune_due(cp): the prune alone, the ring left as it is
sub prune_only { return psql(qq{SELECT sog.prune_due($cp)}); }

# what every answer depends on: the receipts kept, the horizon, a pruned
# position with other bytes and a kept one with its own (both false)
sub answers
{
	my ($pruned, $kept) = @_;
	return psql(qq{SELECT (SELECT count(*) || ':' || sog.min("position") || '-' || sog.max("position")
	                         FROM sog.receipts($cp)),
	                      (SELECT prune_horizon FROM sog.checkpoint WHERE id = $cp),
	                      sog.apply($cp, 1, '$pruned', d('other')),
	                      sog.apply($cp, 1, '$kept', d('$kept'))});
}

sub partitions
{
	return psql(q{SELECT string_agg(ring || ':' || rows, ' ' ORDER BY ring)
	               FROM (SELECT ring, count(*) AS rows FROM sog.receipt GROUP BY ring) x});
}

my $moved = 'checkpoints moved to their partition: 1';
is(retention(), $moved, 'the first run puts the checkpoint in the ring');
is(page(1, 100), '100', 'page 1..100, into sog.receipt_1');
is(retention(), "receipts now go to sog.receipt_2; $moved", 'the ring turns');
is(page(101, 200), '100', 'page 101..200, into sog.receipt_2');
is(retention(), "receipts now go to sog.receipt_3; $moved / emptied sog.receipt_1",
	'the ring turns, and the next call empties sog.receipt_1');
is(page(201, 300), '100', 'page 201..300, into sog.receipt_3');
is(prune_only(), '100', 'a prune alone lets sog.receipt_2 go');

# a. inside an uncommitted TRUNCATE
my $before = answers('150', '295');
is($before, '10:291-300|290|f|f', 'receipts 291..300 kept, horizon 290');
my $session = $node->background_psql('postgres', on_error_stop => 1);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_safe('BEGIN');
is($session->query_safe(q{SELECT sog.receipt_ring_empty(2, NULL)}), 'emptied', 'a: the truncation, not committed');
SogTest::kill9_backend($node, $session, $pid, 'a: the session');
is(partitions(), '2:1 3:1', 'a: sog.receipt_2 keeps its rows');
is(answers('150', '295'), $before, 'a: every answer is as it was');
SogTest::storage_verifies($node, 'postgres');
is(retention(), "receipts now go to sog.receipt_4; $moved / emptied sog.receipt_2",
	'a: the next run empties it');
is(partitions(), '3:1', 'a: and only sog.receipt_3 holds rows');
is(answers('150', '295'), $before, 'a: every answer is as it was');

# b. right after a call that turned the ring, before the one that empties
is(page(301, 400), '100', 'page 301..400, into sog.receipt_4');
is(prune_only(), '100', 'a prune alone lets sog.receipt_3 go');
is(psql(q{SELECT sog.rotate_receipts()}), "receipts now go to sog.receipt_1; $moved",
	'b: a call turns the ring (and empties nothing: it moved the checkpoint)');
$before = answers('250', '395');
SogTest::kill9_and_wait($node);
$node->start;
is(partitions(), '3:1 4:1', 'b: sog.receipt_3 still holds its rows');
is(answers('250', '395'), $before, 'b: every answer is as it was');
is(retention(), 'emptied sog.receipt_3', 'b: the next run empties it');
is(answers('250', '395'), $before, 'b: every answer is as it was');

# c. inside a sink transaction writing to the current partition
$session = $node->background_psql('postgres', on_error_stop => 1);
$session->query_safe('BEGIN');
is($session->query_safe(qq{SELECT count(*) FILTER (WHERE f) FROM unnest(sink_batch($cp, 1, span(401, 500))) f}),
	'100', 'c: page 401..500, not committed');
SogTest::kill9_and_wait($node);
SogTest::session_lost($session, 'c: the sink session');
$node->start;
is(partitions(), '4:1', 'c: nothing of it is stored');
is(answers('250', '395'), $before, 'c: every answer is as it was');
is(page(401, 500), '100', 'c: the page applies again, whole, into sog.receipt_1');

# d. right after a run that emptied a partition
is(retention(), "receipts now go to sog.receipt_2; $moved / emptied sog.receipt_4",
	'd: the ring turns, and sog.receipt_4 is emptied');
$before = answers('450', '495');
SogTest::kill9_and_wait($node);
$node->start;
is(answers('450', '495'), $before, 'd: every answer is as it was');
is(page(501, 600), '100', 'd: the next page applies');
is(partitions(), '1:1 2:1', 'd: into the current partition, sog.receipt_2');

is(retention(), "receipts now go to sog.receipt_3; $moved / emptied sog.receipt_1", 'the ring turns');
SogTest::sink_exactly_once($node, 1, 600);
is(answers('550', '595'), '10:591-600|590|f|f', 'the checkpoint keeps exactly 591..600');
SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
