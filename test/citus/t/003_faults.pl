# 003_faults.pl: faults across nodes during and after the sink transaction.
#
#  1. a worker's postmaster killed (SIGKILL) while a sink transaction over
#     both workers is open; then a worker backend killed the same way (the
#     worker restarts by itself: restart_after_crash);
#  2. a worker killed during the commit's second phase: after the
#     coordinator's commit record, before COMMIT PREPARED;
#  3. the coordinator killed (SIGKILL of the backend running the sink
#     transaction, so the whole coordinator goes through crash recovery)
#     after PREPARE on the workers: (a) before its own commit record, (b)
#     after it, before COMMIT PREPARED (recovered by Citus' maintenance
#     daemon, not by hand);
#  4. a worker unreachable for a while (stopped, then started);
#  5. one-phase commit: a sink transaction whose rows go to one worker over
#     one connection (INSERT ... VALUES), with the coordinator killed after
#     the worker's COMMIT and before its own; and the same window hit by a
#     serialization failure at COMMIT instead of a crash.
# After each, and Citus' recovery of prepared transactions: every event in
# the sink exactly once with one receipt, the applied position matching the
# sink, nothing prepared on any node; at the end a zombie is fenced.
#
# The moments are reached without breakpoints or timing: a commit or a
# PREPARE TRANSACTION of a node waits after its WAL record is written when
# the node has synchronous_standby_names set and no standby connects
# (CitusTest::hold_commits); only the sessions that ask for it
# (synchronous_commit = on) wait, and releasing it lets them finish.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken these
# tests: only PostgreSQL processes are killed, never the operating system,
# so every WAL record written reaches the files through the page cache;
# crash recovery and two-phase commit are what is tested.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use lib $FindBin::Bin;
use CitusTest;

my ($coord, $w1, $w2) = CitusTest::cluster('faults');
my @workers = ($w1, $w2);
my @nodes = ($coord, @workers);

# Partitions by worker: two on worker 1, two on worker 2.
my (@on1, @on2);
for my $p (0 .. 63)
{
	my $port = CitusTest::worker_port_of($coord, $p);
	push @on1, $p if $port == $w1->port && @on1 < 2;
	push @on2, $p if $port == $w2->port && @on2 < 2;
}
my ($pa, $pc) = @on1;
my ($pb, $pd) = @on2;
my ($cpa, $gena) = CitusTest::checkpoint($coord, $pa, 'w-a');
my ($cpb, $genb) = CitusTest::checkpoint($coord, $pb, 'w-b');

# One sink transaction's statement over both workers: pages of partition a
# (worker 1) and b (worker 2).
sub both
{
	my ($from, $to) = @_;
	my $a = CitusTest::sink_insert($cpa, $gena, $pa, $from, $to);
	my $b = CitusTest::sink_insert($cpb, $genb, $pb, $from, $to);
	$b =~ s/^INSERT INTO sink \(partition, pos, payload\) //;
	return "$a UNION ALL $b";
}

sub check_both
{
	my ($what, $n) = @_;
	CitusTest::invariants($what, $coord, \@workers, $cpa, $pa, $n);
	CitusTest::invariants($what, $coord, \@workers, $cpb, $pb, $n);
}

sub applied
{
	my ($cp) = @_;
	return $coord->safe_psql('postgres',
		"SELECT coalesce(applied_position::text, 'none') FROM sog.status WHERE checkpoint_id = $cp");
}

$coord->safe_psql('postgres', 'BEGIN; ' . both(1, 10) . '; COMMIT;');
check_both('before the faults', 10);

# --- 1. a worker killed while the sink transaction is open ------------------------------

my $s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('BEGIN');
$s->query_safe(both(11, 20));
CitusTest::kill9_restart($w1, sub {
	$s->{stderr} = '';
	$s->query('COMMIT');
	like($s->{stderr}, qr/ERROR/, '1: COMMIT fails while worker 1 is down');
	is(applied($cpa) . ' ' . applied($cpb), '10 10',
		'1: the coordinator rolled back both checkpoints (receipts and applied position)');
	is(CitusTest::prepared($w2), '', '1: worker 2 holds nothing prepared');
});
$s->quit;
ok(CitusTest::recover($coord, @workers), '1: recovery leaves nothing prepared');
is(CitusTest::deliver($coord, $cpa, $gena, $pa, 11, 20), 0, '1: the consumer of a delivers 11..20 again');
is(CitusTest::deliver($coord, $cpb, $genb, $pb, 11, 20), 0, '1: the consumer of b delivers 11..20 again');
check_both('1, worker postmaster killed during the sink transaction', 20);

# The worker backend serving the coordinator, killed: the worker's
# postmaster restarts its cluster by itself (restart_after_crash).
$s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('BEGIN');
$s->query_safe(both(21, 30));
my $backend = $w1->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND backend_type = 'client backend' ORDER BY backend_start DESC LIMIT 1});
ok($backend =~ /^\d+$/, "1b: worker 1's backend of the sink transaction is $backend");
kill 'KILL', $backend;
$s->{stderr} = '';
$s->query('COMMIT');
like($s->{stderr}, qr/ERROR/, '1b: COMMIT fails after the worker backend was killed');
$s->quit;
is(applied($cpa) . ' ' . applied($cpb), '20 20', '1b: both checkpoints rolled back');
ok($w1->poll_query_until('postgres', 'SELECT true'), '1b: worker 1 restarted by itself');
ok(CitusTest::recover($coord, @workers), '1b: recovery leaves nothing prepared');
is(CitusTest::deliver($coord, $cpa, $gena, $pa, 21, 30) + CitusTest::deliver($coord, $cpb, $genb, $pb, 21, 30),
	0, '1b: 21..30 delivered again');
check_both('1b, worker backend killed during the sink transaction', 30);

# --- 2. a worker killed in the commit's second phase -------------------------------------

CitusTest::hold_commits($coord);
$s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('SET synchronous_commit = on');
$s->query_safe('BEGIN');
$s->query_safe(both(31, 40));
CitusTest::send_async($s, "COMMIT;\n\\echo commit-done");
ok(CitusTest::wait_syncrep($coord), '2: the coordinator wrote its commit record and waits');
isnt(CitusTest::prepared($w1), '', '2: worker 1 holds the prepared transaction');
isnt(CitusTest::prepared($w2), '', '2: worker 2 holds the prepared transaction');
my @pids = split /\n/, $w1->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity');
push @pids, $w1->{_pid};
$w1->kill9;
ok(CitusTest::wait_gone(@pids), '2: worker 1 killed before COMMIT PREPARED reached it');
CitusTest::release_commits($coord);
pump_until($s->{run}, $s->{timeout}, \$s->{stdout}, qr/commit-done/);
unlike($s->{stderr}, qr/ERROR/, '2: the COMMIT succeeded for the client');
like($s->{stderr}, qr/WARNING:\s+failed to commit transaction on 127\.0\.0\.1:${\ $w1->port}/,
	'2: with a warning that worker 1 did not get COMMIT PREPARED');
$s->quit;
$w1->start;
isnt(CitusTest::prepared($w1), '', '2: after its restart, worker 1 still holds the prepared transaction');
is($coord->safe_psql('postgres', "SELECT count(*) FROM sink WHERE partition = $pa AND pos > 30"),
	'0', '2: so events 31..40 of a are not yet in the sink, though they are applied');
ok(CitusTest::recover($coord, @workers), '2: recover_prepared_transactions() commits it');
check_both('2, worker killed in the second phase', 40);

# --- 3a. the coordinator killed after the workers' PREPARE, before its commit --------------

CitusTest::hold_commits($w1, 1);
$s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('BEGIN');
$s->query_safe(both(41, 50));
CitusTest::send_async($s, 'COMMIT;');
ok(CitusTest::wait_syncrep($w1), "3a: worker 1's PREPARE TRANSACTION is written and waits");
ok($w2->poll_query_until('postgres', 'SELECT count(*) > 0 FROM pg_prepared_xacts'),
	'3a: worker 2 has prepared too');
isnt(CitusTest::prepared($w1), '', '3a: worker 1 holds the prepared transaction');
my $sink_pid = $coord->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE query = 'COMMIT;' AND state = 'active'});
CitusTest::crash_backend($coord, $sink_pid);
eval { $s->quit };
CitusTest::release_commits($w1);
is(applied($cpa) . ' ' . applied($cpb), '40 40',
	'3a: after its restart the coordinator has neither checkpoint advanced');
isnt(CitusTest::prepared($w1) . CitusTest::prepared($w2), '', '3a: the workers still hold prepared transactions');
ok(CitusTest::recover($coord, @workers), '3a: recover_prepared_transactions() rolls them back');
is($coord->safe_psql('postgres', "SELECT count(*) FROM sink WHERE pos > 40 AND partition IN ($pa, $pb)"),
	'0', '3a: none of 41..50 is in the sink');
is(CitusTest::deliver($coord, $cpa, $gena, $pa, 41, 50) + CitusTest::deliver($coord, $cpb, $genb, $pb, 41, 50),
	0, '3a: the consumers deliver 41..50 again');
check_both('3a, coordinator killed before its commit record', 50);

# --- 3b. the coordinator killed after its commit record, before COMMIT PREPARED -----------

CitusTest::hold_commits($coord);
$s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('SET synchronous_commit = on');
$s->query_safe('BEGIN');
$s->query_safe(both(51, 60));
CitusTest::send_async($s, 'COMMIT;');
ok(CitusTest::wait_syncrep($coord), '3b: the coordinator wrote its commit record and waits');
CitusTest::crash_backend($coord, CitusTest::syncrep_pid($coord));
eval { $s->quit };
CitusTest::release_commits($coord);
is(applied($cpa) . ' ' . applied($cpb), '60 60',
	'3b: after its restart the coordinator has both pages committed (its commit record survived)');
isnt(CitusTest::prepared($w1), '', '3b: worker 1 holds the prepared transaction');
isnt(CitusTest::prepared($w2), '', '3b: worker 2 holds the prepared transaction');
# not by hand this time: Citus' maintenance daemon
$coord->safe_psql('postgres', q{ALTER SYSTEM SET citus.recover_2pc_interval = '500ms'});
$coord->reload;
ok( $coord->poll_query_until('postgres',
		"SELECT count(*) = 20 FROM sink WHERE partition IN ($pa, $pb) AND pos > 50"),
	'3b: the maintenance daemon commits the prepared transactions');
ok($w1->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts')
	  && $w2->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts'),
	'3b: and nothing is left prepared');
$coord->safe_psql('postgres', 'ALTER SYSTEM RESET citus.recover_2pc_interval');
$coord->reload;
check_both('3b, coordinator killed after its commit record', 60);

# --- 4. a worker unreachable for a while ---------------------------------------------------

$w2->stop('fast');
my ($rc, $out, $err) = $coord->psql('postgres', 'BEGIN; ' . both(61, 70) . '; COMMIT;');
isnt($rc, 0, '4: a sink transaction over both workers fails while worker 2 is stopped');
is(applied($cpa) . ' ' . applied($cpb), '60 60', '4: and advances neither checkpoint');
is(CitusTest::deliver($coord, $cpa, $gena, $pa, 61, 70), 0,
	'4: partition a (worker 1) keeps going while worker 2 is stopped');
($rc, $out, $err) = $coord->psql('postgres', CitusTest::sink_txn($cpb, $genb, $pb, 61, 70));
isnt($rc, 0, "4: partition b's page fails while its worker is stopped");
is(applied($cpb), '60', '4: and does not advance its checkpoint');
sleep 2;
$w2->start;
is(CitusTest::deliver($coord, $cpb, $genb, $pb, 61, 70), 0, '4: after the restart, b catches up');
ok(CitusTest::recover($coord, @workers), '4: nothing is left prepared');
check_both('4, worker unreachable for a while', 70);

# --- 5. one-phase commit: rows on one worker, INSERT ... VALUES ------------------------------
#
# Citus commits a one-connection modification in its pre-commit callback,
# before the coordinator's commit record.  The worker's COMMIT is held after
# its commit record; the coordinator is killed; then the worker finishes.
my ($cpc, $genc) = CitusTest::checkpoint($coord, $pc, 'w-c');
is(CitusTest::deliver($coord, $cpc, $genc, $pc, 1, 10), 0, '5: partition c has 1..10');
CitusTest::hold_commits($w1, 1);
$s = $coord->background_psql('postgres', on_error_stop => 0);
$s->query_safe('BEGIN');
$s->query_safe("SELECT sog.apply($cpc, $genc, '11', sog.payload_digest(convert_to('p$pc-e11', 'UTF8')))");
$s->query_safe("INSERT INTO sink VALUES ($pc, 11, 'p$pc-e11')");
CitusTest::send_async($s, 'COMMIT;');
ok(CitusTest::wait_syncrep($w1), "5: worker 1's one-phase COMMIT is written and waits");
note('5: worker 1 ' . (CitusTest::prepared($w1) eq '' ? 'commits with one-phase commit' : 'prepared the transaction'));
$sink_pid = $coord->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE query = 'COMMIT;' AND state = 'active'});
CitusTest::crash_backend($coord, $sink_pid);
eval { $s->quit };
CitusTest::release_commits($w1);
is(applied($cpc), '10', '5: the coordinator lost the receipt and the applied position of event 11');
is(CitusTest::deliver($coord, $cpc, $genc, $pc, 11, 11), 0, '5: the consumer replays event 11 from the applied position');
is($coord->safe_psql('postgres', "SELECT count(*) FROM sink WHERE partition = $pc AND pos = 11"),
	'1', '5: event 11 is in the sink once after a coordinator crash between the two commits');


# The same window without a crash: a serialization failure at COMMIT, which
# PostgreSQL raises after the pre-commit callbacks.  W reads x and writes
# y, T reads y and writes x, T commits first: W is doomed.
my ($cpd, $gend) = CitusTest::checkpoint($coord, $pd, 'w-d');
$coord->safe_psql('postgres', q{
CREATE TABLE ssi_x (v int); INSERT INTO ssi_x VALUES (1);
CREATE TABLE ssi_y (v int); INSERT INTO ssi_y VALUES (1);});
my $wsess = $coord->background_psql('postgres', on_error_stop => 0);
my $tsess = $coord->background_psql('postgres', on_error_stop => 0);
$wsess->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
$wsess->query_safe('SELECT sum(v) FROM ssi_x');
$wsess->query_safe('UPDATE ssi_y SET v = v + 1');
$wsess->query_safe("SELECT sog.apply($cpd, $gend, '1', sog.payload_digest(convert_to('p$pd-e1', 'UTF8')))");
$wsess->query_safe("INSERT INTO sink VALUES ($pd, 1, 'p$pd-e1')");
$tsess->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
$tsess->query_safe('SELECT sum(v) FROM ssi_y');
$tsess->query_safe('UPDATE ssi_x SET v = v + 1');
$tsess->query_safe('COMMIT');
$tsess->quit;
$wsess->{stderr} = '';
$wsess->query("\\set VERBOSITY verbose\nCOMMIT");
like($wsess->{stderr}, qr/40001/, '5b: the sink transaction fails at COMMIT with 40001');
$wsess->quit;
is(applied($cpd), 'none', '5b: its receipt and applied position rolled back');
is(CitusTest::deliver($coord, $cpd, $gend, $pd, 1, 1), 0, '5b: the consumer retries, as 40001 asks');
is($coord->safe_psql('postgres', "SELECT count(*) FROM sink WHERE partition = $pd AND pos = 1"),
	'1', '5b: event 1 is in the sink once after a serialization failure at COMMIT');


# --- after everything: the invariants, and a zombie -------------------------------------------

ok(CitusTest::recover($coord, @workers), 'recovery leaves nothing prepared');
check_both('after all faults', 70);
my $gena2 = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpa, 'w-a2')");
CitusTest::zombie_fenced('after all faults', $coord, $cpa, $gena, $pa, 71);
my $genb2 = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpb, 'w-b2')");
CitusTest::zombie_fenced('after all faults', $coord, $cpb, $genb, $pb, 71);
is(CitusTest::deliver($coord, $cpa, $gena2, $pa, 71, 75), 0, 'the successor of a continues');
CitusTest::invariants('the successor', $coord, \@workers, $cpa, $pa, 75);

done_testing();
