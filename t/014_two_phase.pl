# 014_two_phase.pl: sink transactions that a two-phase commit coordinator
# prepares (PREPARE TRANSACTION).
#
# A gap recorded in such a transaction must commit wherever it commits:
# PostgreSQL refuses to prepare a transaction that executed NOTIFY, and in
# 1.1 every recorded gap sent one, so the PREPARE failed and the gap and the
# failed_closed state rolled back with it.  Now the announcement is queued
# at COMMIT only: a prepared transaction's gap commits with COMMIT PREPARED
# (and is found in sog.unresolved_gaps, unannounced), one committed
# directly is announced once with an empty payload.  A prepared transaction
# is held to the read-boundary rule as a committed one: leaving a boundary
# partly applied, it is refused at PREPARE.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = SogTest::extension_node('two_phase', conf => ['max_prepared_transactions = 4']);
$node->safe_psql('postgres', q{
CREATE TABLE sink (pos sog.position PRIMARY KEY);
CREATE ROLE coordinator LOGIN;
SELECT sog.grant_consumer('coordinator');
GRANT INSERT ON sink TO coordinator;
GRANT USAGE ON SCHEMA sog TO coordinator;
SELECT sog.register('tp', 'orders', p::text) FROM generate_series(0, 2) p;
SELECT sog.claim(id, 'w1') FROM sog.checkpoint ORDER BY id;
});

# Run $sql as the coordinator in one psql session that LISTENs on sog_gap
# first: its stdout, stderr and exit code.  psql prints each notification
# its session receives ("Asynchronous notification ...") after a command.
sub as_coordinator
{
	my ($sql) = @_;
	my ($stdout, $stderr);
	my $rc = $node->psql('postgres', "SET ROLE coordinator;\nLISTEN sog_gap;\n$sql\nSELECT 'done';",
		stdout => \$stdout, stderr => \$stderr);
	return ($stdout, $stderr, $rc);
}

# 1. A loss reported in a sink transaction that is prepared: PREPARE goes
# through (1.1: "cannot PREPARE a transaction that has executed LISTEN,
# UNLISTEN, or NOTIFY", the gap rolled back), nothing is announced, and
# COMMIT PREPARED commits the gap and the failed_closed state.
my ($out, $err, $rc) = as_coordinator(q{
BEGIN;
SELECT sog.report_gap(1, 1, '10', 'retention', 'XTRIM before the fetch');
PREPARE TRANSACTION 'sink-1';
});
is($rc, 0, 'a transaction that recorded a gap is prepared');
unlike($err, qr/cannot PREPARE/, 'no NOTIFY stands in the way of PREPARE');
unlike($out . $err, qr/Asynchronous notification/, 'nothing is announced at PREPARE');
is($node->safe_psql('postgres', q{SELECT count(*) FROM sog.unresolved_gaps WHERE checkpoint_id = 1}),
	'0', 'the prepared gap is not visible before COMMIT PREPARED');
($out, $err, $rc) = as_coordinator(q{COMMIT PREPARED 'sink-1';});
is($rc, 0, 'COMMIT PREPARED');
unlike($out . $err, qr/Asynchronous notification/, 'nor at COMMIT PREPARED');
is($node->safe_psql('postgres', q{
SELECT s.state || ' ' || coalesce(g.from_position::text, 'start') || ' ' || g.to_position || ' ' || g.reason
  FROM sog.status s JOIN sog.unresolved_gaps g USING (checkpoint_id) WHERE checkpoint_id = 1}),
	'failed_closed start 10 retention', 'the gap and the failed_closed state committed with it');

# A prepared transaction that rolls back takes its gap with it.
($out, $err, $rc) = as_coordinator(q{
BEGIN;
SELECT sog.report_gap(2, 1, '10', 'retention');
PREPARE TRANSACTION 'sink-2';
ROLLBACK PREPARED 'sink-2';
});
is($rc, 0, 'ROLLBACK PREPARED');
is($node->safe_psql('postgres', q{SELECT state || ' ' || open_gaps FROM sog.status WHERE checkpoint_id = 2}),
	'running 0', 'a rolled-back prepared gap leaves nothing');

# 2. The same gap committed directly is announced once, with an empty
# payload, even when the transaction recorded two.
($out, $err, $rc) = as_coordinator(q{
BEGIN;
SELECT sog.report_gap(2, 1, '10', 'retention');
SELECT sog.report_gap(2, 1, '20', 'retention');
COMMIT;
});
is($rc, 0, 'two gaps committed directly');
my @notes = ($out . $err) =~ /Asynchronous notification "sog_gap" with payload "([^"]*)"/g;
is(scalar(@notes), 1, 'one announcement');
is($notes[0] // '', '{}', 'with an empty payload');

# 3. A sink transaction that leaves a read boundary partly applied is
# refused at PREPARE, as it is at COMMIT, and leaves nothing.
$node->safe_psql('postgres', q{
SET ROLE coordinator;
SELECT sog.note_read(3, 1, '3', sog.buffer_hash(ARRAY['1', '2', '3']::sog.position[],
	ARRAY[sog.payload_digest('1'), sog.payload_digest('2'), sog.payload_digest('3')]), 3);
});
($out, $err, $rc) = as_coordinator(q{
BEGIN;
SELECT sog.apply_batch(3, 1, ARRAY['1', '2']::sog.position[], ARRAY[sog.payload_digest('1'), sog.payload_digest('2')]);
INSERT INTO sink VALUES ('1'), ('2');
PREPARE TRANSACTION 'sink-3';
});
like($err, qr/SG004|applied only through 2/, 'PREPARE of a partly applied boundary is refused');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}), '0', 'nothing was prepared');
is($node->safe_psql('postgres', q{SELECT coalesce(applied_position::text, 'none') || ' ' || source_cursor FROM sog.status WHERE checkpoint_id = 3}),
	'none 3', 'the boundary is as it was noted');
($out, $err, $rc) = as_coordinator(q{
BEGIN;
SELECT sog.apply_batch(3, 1, ARRAY['1', '2', '3']::sog.position[],
	ARRAY[sog.payload_digest('1'), sog.payload_digest('2'), sog.payload_digest('3')]);
INSERT INTO sink VALUES ('1'), ('2'), ('3');
PREPARE TRANSACTION 'sink-4';
COMMIT PREPARED 'sink-4';
});
is($rc, 0, 'the whole boundary is prepared and committed');
is($node->safe_psql('postgres', q{SELECT applied_position || ' ' || source_cursor FROM sog.status WHERE checkpoint_id = 3}),
	'3 3', 'the boundary closed by its hash');

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
