# 001_topology.pl: the supported topology.  The extension and its state on
# the coordinator; the sink hash-distributed by partition over two workers,
# and a reference sink.  A sink transaction (sog.apply_batch + the INSERT of
# the rows it answers new) spanning both workers commits atomically through
# Citus' two-phase commit, a rollback or a worker-side error leaves neither
# receipts nor rows, replays answer false, and a zombie gets SG001.
#
# Cluster.pm's init writes "fsync = off": see CitusTest.pm (no operating
# system crash happens here, so it does not weaken what is tested).

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use CitusTest;

my ($coord, $w1, $w2) = CitusTest::cluster('topology');
my @workers = ($w1, $w2);

is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0}),
	'2',
	'a coordinator and two workers');
is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::regclass::text LIKE 'sog.%'
		     AND logicalrelid <> 'sog.citus_2pc'::regclass}),
	'0',
	"the extension's tables are local to the coordinator");
# sog.citus_2pc, the operator's, is a Citus local table: its one shard is
# on the coordinator, so Citus writes it in the consumer's backend
is( $coord->safe_psql('postgres',
		q{SELECT p.partmethod::text || ' ' || count(*) || ' ' || bool_and(pl.groupid = 0)
		    FROM pg_dist_partition p JOIN pg_dist_shard s USING (logicalrelid)
		    JOIN pg_dist_placement pl USING (shardid)
		   WHERE p.logicalrelid = 'sog.citus_2pc'::regclass GROUP BY p.partmethod}),
	'n 1 true',
	'sog.citus_2pc has one placement, on the coordinator');

my ($pa, $pb) = CitusTest::partitions_on($coord, $w1, $w2);
ok(defined $pa && defined $pb, "partition $pa is on worker 1, partition $pb on worker 2");
my ($cpa, $gena) = CitusTest::checkpoint($coord, $pa, 'w-a');
my ($cpb, $genb) = CitusTest::checkpoint($coord, $pb, 'w-b');

# --- one transaction over both workers, and what Citus sent them -------------

# One multi-shard INSERT: the new rows of two checkpoints' pages, one
# partition on each worker, plus a row of the reference sink.
sub two_pages
{
	my ($from, $to) = @_;
	my $a = CitusTest::sink_insert($cpa, $gena, $pa, $from, $to);
	my $b = CitusTest::sink_insert($cpb, $genb, $pb, $from, $to);
	$b =~ s/^INSERT INTO sink \(partition, pos, payload\) //;
	return "$a UNION ALL $b";
}

my ($rc, $out, $err) = $coord->psql(
	'postgres', "SET citus.log_remote_commands = on; SET client_min_messages = notice;
BEGIN;
" . two_pages(1, 10) . ";
INSERT INTO sink_ref VALUES ($pa, 0, 'page 1 of both');
COMMIT;");
is($rc, 0, 'the sink transaction over both workers commits');
for my $w (@workers)
{
	my $port = $w->port;
	like($err, qr/issuing PREPARE TRANSACTION '[^']+'\s*\nDETAIL:\s+on server \S+:$port /,
		'Citus prepared it on ' . $w->name);
	like($err, qr/issuing COMMIT PREPARED '[^']+'\s*\nDETAIL:\s+on server \S+:$port /,
		'and committed the prepared transaction on ' . $w->name);
}
CitusTest::invariants('after the first page', $coord, \@workers, $cpa, $pa, 10);
CitusTest::invariants('after the first page', $coord, \@workers, $cpb, $pb, 10);

# --- a rollback, and an error on a worker -------------------------------------

$coord->safe_psql('postgres', "BEGIN; " . two_pages(11, 20) . "; ROLLBACK;");
CitusTest::invariants('after a rollback of 11..20', $coord, \@workers, $cpa, $pa, 10);
CitusTest::invariants('after a rollback of 11..20', $coord, \@workers, $cpb, $pb, 10);

# A CHECK constraint that only the workers' shards evaluate: a poisoned row
# of partition b makes the worker fail the statement; the coordinator's
# receipts and applied position of partition a roll back with it.
$coord->safe_psql('postgres',
	q{ALTER TABLE sink ADD CONSTRAINT sink_no_poison CHECK (payload <> 'poison')});
($rc, $out, $err) = $coord->psql(
	'postgres', "BEGIN;
" . CitusTest::sink_insert($cpa, $gena, $pa, 11, 20) . ";
INSERT INTO sink SELECT $pb, 11, 'poison';
COMMIT;");
like($err, qr/relation "sink_\d+" violates check constraint "sink_no_poison/,
	"the worker holding partition ${pb}'s shard refuses the poisoned row");
CitusTest::invariants('after an error on a worker', $coord, \@workers, $cpa, $pa, 10);
CitusTest::invariants('after an error on a worker', $coord, \@workers, $cpb, $pb, 10);

# --- replays -----------------------------------------------------------------------

is(CitusTest::deliver($coord, $cpa, $gena, $pa, 11, 20), 0, 'partition a: 11..20 committed');
is(CitusTest::deliver($coord, $cpb, $genb, $pb, 11, 20), 0, 'partition b: 11..20 committed');
is( $coord->safe_psql('postgres',
		"SELECT sog.apply_batch($cpa, $gena, "
		  . CitusTest::positions_sql(1, 20)
		  . '::sog.position[], '
		  . CitusTest::digests_sql($pa, 1, 20) . ') = array_fill(false, ARRAY[20])'),
	't',
	'a replay of 1..20 answers false for every event');
($rc, $out, $err) = $coord->psql('postgres',
	"BEGIN;\n" . CitusTest::sink_insert($cpa, $gena, $pa, 5, 20) . ";\n\\echo rows :ROW_COUNT\nCOMMIT;");
like($out, qr/rows 0$/, 'the replayed page inserts no row');
CitusTest::invariants('after replays', $coord, \@workers, $cpa, $pa, 20);

# --- a zombie ------------------------------------------------------------------------

my $gena2 = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpa, 'w-a2')");
is($gena2, $gena + 1, 'a successor claims partition a');
CitusTest::zombie_fenced('after a handoff', $coord, $cpa, $gena, $pa, 21);
is(CitusTest::deliver($coord, $cpa, $gena2, $pa, 21, 30), 0, 'the successor continues with 21..30');
CitusTest::invariants('after the handoff', $coord, \@workers, $cpa, $pa, 30);

# --- the reference sink ------------------------------------------------------------------

my $pr = 1000;
my ($cpr, $genr) = CitusTest::checkpoint($coord, $pr, 'w-ref');
($rc, $out, $err) = $coord->psql('postgres',
	"SET citus.log_remote_commands = on; SET client_min_messages = notice;\n"
	  . CitusTest::sink_txn($cpr, $genr, $pr, 1, 10, 'sink_ref'));
is($rc, 0, 'a page into the reference sink commits');
for my $w (@workers)
{
	my $port = $w->port;
	like($err, qr/issuing PREPARE TRANSACTION '[^']+'\s*\nDETAIL:\s+on server \S+:$port /,
		'the reference sink\'s page was prepared on ' . $w->name);
}
$coord->safe_psql('postgres', CitusTest::sink_txn($cpr, $genr, $pr, 1, 10, 'sink_ref'));
$coord->safe_psql('postgres', 'BEGIN; ' . CitusTest::sink_insert($cpr, $genr, $pr, 11, 15, 'sink_ref') . '; ROLLBACK;');
is( $coord->safe_psql('postgres',
		"SELECT count(*) || ' ' || count(DISTINCT pos) || ' ' || max(pos) FROM sink_ref WHERE partition = $pr"),
	'10 10 10',
	'the reference sink has 1..10 once each after a replay and a rollback');
for my $w (@workers)
{
	is( $w->safe_psql('postgres',
			"SELECT count(*) FROM sink_ref_" . $coord->safe_psql('postgres',
				q{SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'sink_ref'::regclass})
			  . " WHERE partition = $pr"),
		'10',
		'and so has its placement on ' . $w->name);
}
is( $coord->safe_psql('postgres',
		"SELECT count(*) || ' ' || sog.max(\"position\") FROM sog.receipts($cpr)"),
	'10 10',
	'one receipt per event of the reference sink');

# --- single-shard INSERT ... VALUES: one-phase commit ----------------------------------------
#
# A sink transaction whose rows all go to one worker over one connection,
# written as INSERT ... VALUES (the README's Python example: executemany),
# is committed by Citus with one-phase commit in its pre-commit callback:
# the worker's COMMIT happens before the coordinator writes its own commit
# record with the receipts.  t/003 shows what a crash between the two does.
# The guard's promise needs two-phase commit here too.
($rc, $out, $err) = $coord->psql(
	'postgres', "SET citus.log_remote_commands = on; SET client_min_messages = notice;
BEGIN;
SELECT sog.apply($cpb, $genb, '21', sog.payload_digest(convert_to('p$pb-e21', 'UTF8')));
INSERT INTO sink VALUES ($pb, 21, 'p$pb-e21');
COMMIT;");
is($rc, 0, 'a single-shard INSERT ... VALUES with sog.apply commits');
# the extension makes Citus use two-phase commit in every transaction that
# changes its state: a write of sog.citus_2pc, which Citus runs in this
# backend (local execution), once per transaction
like($err, qr/issuing PREPARE TRANSACTION/,
	'the single-shard sink transaction is committed with two-phase commit');
unlike($err, qr/issuing .*citus_2pc/,
	'  sog.citus_2pc is written in this backend, not over a connection');
CitusTest::invariants('after a single-shard INSERT ... VALUES', $coord, \@workers, $cpb, $pb, 21);

# --- the workers have the extension too ------------------------------------------------------
#
# Citus propagates CREATE EXTENSION to every worker, so each worker has
# stream_offset_guard with tables of its own, empty.  The consumer must use
# the coordinator: a consumer connected to a worker (Citus' workers accept
# distributed queries) gets checkpoints, receipts and generations that the
# coordinator does not know, and fencing and duplicate detection no longer
# apply across the two.
for my $w (@workers)
{
	is( $w->safe_psql('postgres',
			q{SELECT count(*) FROM pg_extension WHERE extname = 'stream_offset_guard'}),
		'1',
		'Citus propagated the extension to ' . $w->name);
}
($rc, $out, $err) = $w1->psql('postgres',
	"SELECT id FROM sog.register('citus-test', 'orders', '$pa')");
isnt($rc, 0, 'a stateful function on a worker refuses (the state is on the coordinator)');
like($err, qr/runs on the Citus coordinator only/, '  naming the coordinator');
if ($rc == 0)
{
	# what that allows: the same events of partition a applied a second time,
	# by a consumer on worker 1 whose checkpoint the coordinator never saw
	my $wcp = $out;
	my $wgen = $w1->safe_psql('postgres', "SELECT generation FROM sog.claim($wcp, 'zombie-on-worker')");
	my ($wrc, $wout, $werr) = $w1->psql('postgres', CitusTest::sink_txn($wcp, $wgen, $pa, 1, 5));
	note("on worker 1, the replay of partition $pa, events 1..5: psql exit $wrc; "
		  . $coord->safe_psql('postgres',
			"SELECT count(*) - count(DISTINCT pos) FROM sink WHERE partition = $pa")
		  . ' duplicate rows in the sink');
	is( $coord->safe_psql('postgres',
			"SELECT count(*) - count(DISTINCT pos) FROM sink WHERE partition = $pa"),
		'0',
		'no duplicate after a consumer used a worker');
}

done_testing();
