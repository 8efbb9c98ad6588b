# CitusTest.pm: what the Citus TAP tests of stream_offset_guard share.
#
#   use lib $FindBin::Bin;
#   use CitusTest;
#   my ($coord, @workers) = CitusTest::cluster('topology');
#
# A Citus cluster on this machine: a coordinator and two workers, each its
# own PostgreSQL::Test::Cluster on a port of 55700-55799, listening on
# 127.0.0.1 (Citus' connections between nodes) and on the framework's unix
# socket (the tests' own psql).  Every node preloads citus, allows prepared
# transactions and restarts after a backend crash, as production nodes do.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken these tests:
# the operating system never crashes here, only PostgreSQL processes are
# killed, so every WAL record a COMMIT or a PREPARE TRANSACTION wrote is in
# the kernel's page cache and reaches the files; what is tested is
# PostgreSQL's and Citus' crash recovery and two-phase commit, not the disk.
#
# The sink: table `sink` (partition, pos, payload), hash-distributed by
# partition over the two workers, and `sink_ref`, a reference table.  A
# consumer event is (partition p, position i) with payload 'p<p>-e<i>', so
# a replay carries the same bytes and the same digest.

package CitusTest;

use strict;
use warnings;

use Fcntl qw(O_CREAT O_EXCL O_WRONLY);
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our $port_lock_dir = $ENV{SOG_CITUS_PORT_DIR} // '/tmp/sog-citus-ports';

# A free port of 55700-55799, reserved for this process with a lock file
# (a lock whose owner died is taken over).
sub free_port
{
	mkdir $port_lock_dir;
	for my $port (55700 .. 55799)
	{
		my $lock = "$port_lock_dir/$port";
		if (-e $lock)
		{
			open my $fh, '<', $lock or next;
			my $pid = <$fh> // '';
			close $fh;
			chomp $pid;
			next if $pid =~ /^\d+$/ && kill(0, $pid);
			unlink $lock;
		}
		sysopen(my $fh, $lock, O_CREAT | O_EXCL | O_WRONLY) or next;
		print $fh "$$\n";
		close $fh;
		my $sock = IO::Socket::INET->new(
			LocalAddr => '127.0.0.1',
			LocalPort => $port,
			Proto => 'tcp',
			ReuseAddr => 1);
		if (!$sock || -e "/tmp/.s.PGSQL.$port")
		{
			next;				# in use by something else: keep our lock, skip it
		}
		close $sock;
		return $port;
	}
	BAIL_OUT('no free port in 55700-55799');
}

END
{
	# release this process's port locks
	if (opendir my $dh, $port_lock_dir)
	{
		for my $f (readdir $dh)
		{
			my $lock = "$port_lock_dir/$f";
			next unless -f $lock;
			open my $fh, '<', $lock or next;
			my $pid = <$fh> // '';
			close $fh;
			chomp $pid;
			unlink $lock if $pid eq $$;
		}
		closedir $dh;
	}
}

# A node with Citus preloaded, started.  %conf: extra settings.
sub node
{
	my ($name, %conf) = @_;
	# the tests run Citus' recovery of prepared transactions themselves
	# (recover_prepared_transactions()), except where one turns the
	# maintenance daemon's on to show that it works
	my $node = plain_node($name, shared_preload_libraries => "'citus'",
		max_prepared_transactions => 20, 'citus.recover_2pc_interval' => -1, %conf);
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

# A node without Citus (the second topology), started.
sub plain_node
{
	my ($name, %conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name, port => free_port());

	$node->init;
	my $extra = join '', map { "$_ = $conf{$_}\n" } sort keys %conf;
	$node->append_conf(
		'postgresql.conf', qq{
listen_addresses = '127.0.0.1'
restart_after_crash = on
max_connections = 60
# for the commit stalls of the fault tests (synchronous replication to a
# standby that never comes; only sessions that ask for it wait)
wal_level = replica
max_wal_senders = 4
synchronous_commit = local
log_statement = none
$extra});
	$node->start;
	return $node;
}

# A coordinator and two workers; the extension installed on the coordinator
# (Citus propagates CREATE EXTENSION to the workers: see t/001) with its
# two-phase-commit table sog.citus_2pc, the sink tables created.  Returns ($coordinator, $worker1, $worker2).
sub cluster
{
	my ($prefix, %conf) = @_;
	my $coord = node("${prefix}_coord", %conf);
	my @workers = map { node("${prefix}_w$_", %conf) } (1, 2);

	$coord->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('127.0.0.1', " . $coord->port . ')');
	for my $w (@workers)
	{
		$coord->safe_psql('postgres',
			"SELECT citus_add_node('127.0.0.1', " . $w->port . ')');
	}
	$coord->safe_psql(
		'postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION stream_offset_guard;
-- the table whose write makes Citus commit the sink transaction with
-- two-phase commit (docs/scaling.md, "Two-phase commit")
CREATE TABLE sog.citus_2pc (CHECK (false));
SELECT citus_add_local_table_to_metadata('sog.citus_2pc');
CREATE TABLE sink (
	partition int NOT NULL,
	pos bigint NOT NULL,
	payload text NOT NULL
);
SELECT create_distributed_table('sink', 'partition', shard_count => 4);
CREATE TABLE sink_ref (
	partition int NOT NULL,
	pos bigint NOT NULL,
	payload text NOT NULL
);
SELECT create_reference_table('sink_ref');
});
	return ($coord, @workers);
}

# The port of the worker holding partition $part of table sink.
sub worker_port_of
{
	my ($coord, $part) = @_;
	return $coord->safe_psql('postgres',
		"SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('sink', $part)"
	);
}

# Two partitions whose shards are on different workers: ($p_on_w1, $p_on_w2).
sub partitions_on
{
	my ($coord, $w1, $w2) = @_;
	my ($a, $b);
	for my $p (0 .. 31)
	{
		my $port = worker_port_of($coord, $p);
		$a //= $p if $port == $w1->port;
		$b //= $p if $port == $w2->port;
		last if defined $a && defined $b;
	}
	return ($a, $b);
}

# SQL: positions $from..$to, as sog.position[], and the digests of their
# payloads, for partition $part.
sub positions_sql
{
	my ($from, $to) = @_;
	return "ARRAY(SELECT i FROM generate_series($from, $to) i ORDER BY i)::int8[]";
}

sub digests_sql
{
	my ($part, $from, $to) = @_;
	return
	  "ARRAY(SELECT sog.payload_digest(convert_to('p$part-e' || i, 'UTF8')) FROM generate_series($from, $to) i ORDER BY i)";
}

# The sink statement of one page: apply_batch for events $from..$to of
# partition $part, and the INSERT of the rows it answers new, in one
# INSERT ... SELECT (which Citus commits with two-phase commit).  $table:
# sink (default) or sink_ref.
sub sink_insert
{
	my ($cp, $gen, $part, $from, $to, $table) = @_;
	$table //= 'sink';
	my $pos = positions_sql($from, $to);
	my $dig = digests_sql($part, $from, $to);
	return
	  "INSERT INTO $table (partition, pos, payload) SELECT $part, u.p, 'p$part-e' || u.p "
	  . "FROM unnest($pos, sog.apply_batch($cp, $gen, ${pos}::sog.position[], $dig)) AS u(p, fresh) "
	  . "WHERE u.fresh";
}

# One whole sink transaction.
sub sink_txn
{
	return 'BEGIN; ' . sink_insert(@_) . '; COMMIT;';
}

# Register and claim a checkpoint for partition $part: (id, generation).
sub checkpoint
{
	my ($coord, $part, $owner) = @_;
	my $cp = $coord->safe_psql('postgres',
		"SELECT id FROM sog.register('citus-test', 'orders', '$part')");
	my $gen = $coord->safe_psql('postgres',
		"SELECT generation FROM sog.claim($cp, '$owner')");
	return ($cp, $gen);
}

# A consumer's retry loop, as the README's guide says: run the sink
# transaction of $from..$to; on a lost connection or an error, check
# ownership, re-read the applied position and resume from it, until every
# event through $to is applied or $tries attempts failed.  Returns the
# number of attempts that failed.
sub deliver
{
	my ($coord, $cp, $gen, $part, $from, $to, %opt) = @_;
	my $tries = $opt{tries} // 80;
	my $failed = 0;
	while ($tries-- > 0)
	{
		my ($rc, $out, $err) = $coord->psql('postgres', sink_txn($cp, $gen, $part, $from, $to),
			on_error_stop => 1);
		$failed++ if $rc != 0 || $err =~ /ERROR/;
		my ($rc2, $owner) = $coord->psql('postgres', "SELECT sog.owner_check($cp, $gen)");
		if ($rc2 == 0)
		{
			die "checkpoint $cp: generation $gen is no longer the owner" if $owner ne 't';
			my ($rc3, $applied) = $coord->psql('postgres',
				"SELECT coalesce(applied_position::numeric, 0) FROM sog.status WHERE checkpoint_id = $cp");
			if ($rc3 == 0)
			{
				return $failed if $applied >= $to;
				$from = $applied + 1;
			}
		}
		usleep(250_000);
	}
	die "checkpoint $cp: events through $to not delivered";
}

# Prepared transactions left on $node, as "gid gid ...".
sub prepared
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT coalesce(string_agg(gid, \' \' ORDER BY gid), \'\') FROM pg_prepared_xacts');
}

# Run Citus' recovery of prepared transactions until nothing is left
# prepared on any node (a node that was just restarted may refuse
# connections for a moment).
sub recover
{
	my ($coord, @workers) = @_;
	for (1 .. 40)
	{
		my ($rc) = $coord->psql('postgres', 'SELECT recover_prepared_transactions()');
		return 1 if $rc == 0 && !grep { prepared($_) ne '' } ($coord, @workers);
		usleep(250_000);
	}
	return 0;
}

# The invariants, for checkpoint $cp of partition $part that must hold
# events 1..$n: every event in the sink exactly once, one receipt per event
# with the digest of the row's payload, the applied position at $n, nothing
# prepared on any node.  $what names the situation in the test names.
sub invariants
{
	my ($what, $coord, $workers, $cp, $part, $n) = @_;

	my $rows = $coord->safe_psql('postgres',
		"SELECT count(*) || ' ' || count(DISTINCT pos) || ' ' || coalesce(min(pos), 0) || ' ' || coalesce(max(pos), 0) FROM sink WHERE partition = $part"
	);
	is($rows, "$n $n 1 $n", "$what: partition $part has events 1..$n in the sink, each once");

	my $sink = $coord->safe_psql('postgres',
		"SELECT string_agg(pos || ':' || encode(sha256(convert_to(payload, 'UTF8')), 'hex'), ',' ORDER BY pos) FROM sink WHERE partition = $part"
	);
	my $receipts = $coord->safe_psql('postgres',
		"SELECT string_agg(\"position\"::text || ':' || encode(payload_digest, 'hex'), ',' ORDER BY \"position\") FROM sog.receipts($cp)"
	);
	is($receipts, $sink,
		"$what: checkpoint $cp has exactly one receipt per sink row, with the row's digest");

	is( $coord->safe_psql('postgres',
			"SELECT applied_position FROM sog.status WHERE checkpoint_id = $cp"),
		"$n",
		"$what: the applied position of checkpoint $cp is the sink's last event ($n)");

	for my $node ($coord, @$workers)
	{
		is(prepared($node), '', "$what: nothing is left prepared on " . $node->name);
	}
	return;
}

# A zombie (generation $old, fenced by a newer claim) cannot write: SG001,
# and its sink rows are not there.
sub zombie_fenced
{
	my ($what, $coord, $cp, $old, $part, $pos) = @_;
	my ($rc, $out, $err) = $coord->psql(
		'postgres',
		"\\set VERBOSITY verbose\n" . sink_txn($cp, $old, $part, $pos, $pos),
		on_error_stop => 1);
	like($err, qr/SG001/, "$what: the zombie (generation $old) is fenced with SG001");
	is( $coord->safe_psql('postgres',
			"SELECT count(*) FROM sink WHERE partition = $part AND pos = $pos"),
		'0',
		"$what: the zombie's row is not in the sink");
	return;
}

# Wait until $node's pids (postmaster and children) are all gone.
sub wait_gone
{
	my (@pids) = @_;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 unless grep { kill(0, $_) } @pids;
		usleep(100_000);
	}
	return 0;
}

# SIGKILL $node's postmaster, wait for its children to exit, start it
# again (crash recovery).  $between: code run while it is down.
sub kill9_restart
{
	my ($node, $between) = @_;
	my @pids = split /\n/,
	  $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity');
	push @pids, $node->{_pid};
	$node->kill9;
	ok(wait_gone(@pids), $node->name . ': the postmaster and its children are gone after SIGKILL');
	$between->() if $between;
	$node->start;
	return;
}

# SIGKILL the backend $pid of $node: its postmaster (restart_after_crash =
# on) ends every other backend, resets shared memory and runs crash
# recovery, as after a crash of the machine's PostgreSQL; wait until the
# node accepts connections again.  (Killing the postmaster instead is not
# the same here: a backend waiting for synchronous replication that sees
# its postmaster die stops waiting and finishes its commit, COMMIT
# PREPARED included.)
sub crash_backend
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	$node->wait_for_log(qr/terminated by signal 9: Killed/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	ok(!kill(0, $pid), $node->name . ": backend $pid killed, the node went through crash recovery");
	return;
}

# The pid of the backend of $node waiting in synchronous replication.
sub syncrep_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1});
}

# Send $sql to a BackgroundPsql session without waiting for its result.
sub send_async
{
	my ($bg, $sql) = @_;
	$bg->{stdin} .= "$sql\n";
	$bg->{run}->pump_nb;
	return;
}

# Make commits of sessions with synchronous_commit = on (or all commits
# and PREPAREs, with $all) on $node wait after their commit record, for a
# synchronous standby that never comes; release() lets them go.
sub hold_commits
{
	my ($node, $all) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'sog_never'");
	$node->safe_psql('postgres', 'ALTER SYSTEM SET synchronous_commit = on') if $all;
	$node->reload;
	return;
}

sub release_commits
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET synchronous_commit');
	$node->reload;
	return;
}

# Wait until $n backends of $node wait in synchronous replication.
sub wait_syncrep
{
	my ($node, $n) = @_;
	$n //= 1;
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= $n FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
}

1;
