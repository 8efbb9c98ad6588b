# 001_crash_mid_sink.pl: a backend dies (SIGKILL) in the middle of a sink
# transaction that has written sink rows and called sog.apply_batch, but has
# not committed.  The postmaster restarts the cluster and runs crash
# recovery.  Afterwards none of that transaction is visible: no receipts for
# its positions; applied_position, source_cursor and the provider token
# unchanged; no sink rows.  The checkpoint row is not left locked, and the
# same events can be applied again, once.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken this test:
# the operating system does not crash, so everything PostgreSQL wrote
# reaches the files; what is tested is PostgreSQL's crash recovery (WAL
# replay, the commit log marking the dead transaction aborted), which runs
# the same with fsync on or off.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

# the postmaster reinitializes after the backend's crash (t/sink_setup.sql
# loaded: the extension, the sink and its helpers)
my $node = SogTest::crash_node('crash_mid_sink', restart_after_crash => 1);
my $cp = SogTest::claim_c1($node);

# An acknowledged sink transaction for 1..3.
is( $node->safe_psql(
		'postgres',
		"SELECT sink_batch($cp, 1, ARRAY['1', '2', '3'])"),
	'{t,t,t}',
	'positions 1..3 applied and committed');

# The victim: a sink transaction for 4..6, left open.
my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe('BEGIN');
is( $victim->query_safe(
		"SELECT sink_batch($cp, 1, ARRAY['4', '5', '6'])"),
	'{t,t,t}',
	'positions 4..6 applied inside the open transaction');

# Flush the dirty pages (including the uncommitted row versions of the
# checkpoint, the receipts and the sink) to the data files, so recovery
# finds them on disk and must rely on the transaction never having
# committed.
$node->safe_psql('postgres', 'CHECKPOINT');

# Then the same transaction moves the provider token, after the checkpoint:
# recovery has to replay that change from WAL, and must not make it visible
# either.
$victim->query_safe("SELECT sog.commit_page($cp, 1, NULL, 'token-4-6')");
# An unrelated commit flushes the WAL written so far, the victim's records
# included, so they are on disk for recovery to replay.
$node->safe_psql('postgres', 'CREATE TABLE wal_flush_marker ()');

# SIGKILL, not pg_terminate_backend: the backend gets no chance to abort
# its transaction, and the postmaster treats it as a crash; the victim's
# psql notices, and the cluster is back after crash recovery.
SogTest::kill9_backend($node, $victim, $victim_pid, 'the victim session');

is( $node->safe_psql(
		'postgres',
		"SELECT generation, owner, state, applied_position, source_cursor
		   FROM sog.checkpoint WHERE id = $cp"),
	'1|w1|running|3|3',
	'applied_position and source_cursor are those of the last commit');
is( $node->safe_psql(
		'postgres',
		"SELECT provider_token IS NULL FROM sog.checkpoint WHERE id = $cp"),
	't',
	'the provider token the killed transaction set is not there');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM sog.receipts($cp, '4', '6')"),
	'0',
	'no receipts for the positions of the killed transaction');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(\"position\"::text, ' ' ORDER BY \"position\")
		   FROM sog.receipts($cp)"),
	'1 2 3',
	'the acknowledged receipts are there');
is( $node->safe_psql(
		'postgres',
		'SELECT string_agg(pos::text, \' \' ORDER BY pos) FROM sink'),
	'1 2 3',
	'no sink rows of the killed transaction');

# A crash is not a claim: w1 (generation 1) still owns the checkpoint and
# applies 4..6 again, as new events.  lock_timeout proves the checkpoint row
# is not left locked by the dead transaction.
is( $node->safe_psql(
		'postgres',
		"SET lock_timeout = '10s'; SELECT sink_batch($cp, 1, ARRAY['3', '4', '5', '6'])"),
	'{f,t,t,t}',
	'w1 re-applies 3..6 after recovery: 3 is a duplicate, 4..6 are new');

# A successor takes over from there.
is( $node->safe_psql(
		'postgres',
		"SET lock_timeout = '10s';
		 SELECT generation, verdict, resume_from FROM sog.claim($cp, 'w2')"),
	'2|aligned|6',
	'a successor resumes after 6');

SogTest::sink_exactly_once($node, 1, 6);

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
