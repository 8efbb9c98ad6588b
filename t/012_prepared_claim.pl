# 012_prepared_claim.pl: a claim that times out on a checkpoint whose row a
# prepared transaction holds (issue 20, item 7).
#
# A sink transaction that applied on the checkpoint is prepared (PREPARE
# TRANSACTION, as a two-phase commit coordinator does) and never finished.
# No backend runs it, so pg_stat_activity does not show it and
# pg_terminate_backend cannot end it: the 55P03 of the claim must name the
# prepared transaction (gid, owner, when it was prepared) and send the
# operator to COMMIT PREPARED / ROLLBACK PREPARED.  Then each way out: a
# rollback leaves nothing applied, a commit the prepared events.  Also when
# the apply ran in a savepoint (the lock is then a subtransaction's).

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = SogTest::extension_node('prepared', conf => ['max_prepared_transactions = 2']);
$node->safe_psql('postgres', q{
CREATE TABLE sink (pos sog.position PRIMARY KEY);
CREATE ROLE coordinator LOGIN;
SELECT sog.grant_consumer('coordinator');
GRANT INSERT ON sink TO coordinator;
SELECT sog.register('prepared', 'orders', '0');
SELECT sog.claim(1, 'w1');
});

# the sink transaction of positions 1 and 2, prepared by the coordinator
sub prepare
{
	my ($gid) = @_;
	$node->safe_psql('postgres', qq{
SET ROLE coordinator;
BEGIN;
SELECT sog.apply_batch(1, (SELECT generation FROM sog.status WHERE checkpoint_id = 1),
	ARRAY['1', '2']::sog.position[], ARRAY[sog.payload_digest('1'), sog.payload_digest('2')]);
INSERT INTO sink VALUES ('1'), ('2');
PREPARE TRANSACTION '$gid';
});
	return;
}

prepare('sink-page-7');
is($node->safe_psql('postgres', q{SELECT gid, owner FROM pg_prepared_xacts}), 'sink-page-7|coordinator',
	'the sink transaction is prepared');
my ($rc, $out, $err) = $node->psql('postgres', q{SET sog.claim_timeout = 200; SELECT sog.claim(1, 'w2')});
isnt($rc, 0, 'the claim does not get the row');
like($err, qr/ERROR:  could not claim checkpoint 1 within 200 ms/, 'it times out (55P03)');
like($err,
	qr/DETAIL:  Generation 1 \(owner w1, since [^)]+\) holds the checkpoint; its row is locked by prepared transaction "sink-page-7" \(owner coordinator, prepared at \d{4}-\d\d-\d\d [0-9:.]+[-+]\d\d\), which no backend runs\./,
	'the detail names the prepared transaction, its owner and when it was prepared');
like($err,
	qr/HINT:  Finish that prepared transaction: COMMIT PREPARED 'sink-page-7' keeps its sink rows, ROLLBACK PREPARED 'sink-page-7' discards them\./,
	'the hint says COMMIT PREPARED or ROLLBACK PREPARED');
unlike($err, qr/pg_terminate_backend|pg_stat_activity/, 'and not what cannot end it');
is($node->safe_psql('postgres', q{SELECT generation, applied_position FROM sog.checkpoint WHERE id = 1}),
	'1|', 'the timed-out claim changed nothing');

# ROLLBACK PREPARED: nothing was applied
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'sink-page-7'});
is($node->safe_psql('postgres', q{SELECT generation, verdict, resume_from FROM sog.claim(1, 'w2')}),
	'2|aligned|', 'after ROLLBACK PREPARED the claim resumes from the start');

# COMMIT PREPARED: the prepared events are applied
$node->safe_psql('postgres', q{SELECT sog.claim(1, 'w3')});
prepare('sink-page-8');
($rc, $out, $err) = $node->psql('postgres', q{SET sog.claim_timeout = 200; SELECT sog.claim(1, 'w4')});
like($err, qr/prepared transaction "sink-page-8" \(owner coordinator/, 'the second prepared transaction is named too');
$node->safe_psql('postgres', q{COMMIT PREPARED 'sink-page-8'});
is($node->safe_psql('postgres', q{SELECT generation, verdict, resume_from FROM sog.claim(1, 'w4')}),
	'4|aligned|2', 'after COMMIT PREPARED the claim resumes after the prepared events');
is($node->safe_psql('postgres', q{SELECT string_agg(pos::text, ',' ORDER BY pos) FROM sink}), '1,2',
	'and the sink holds them once');

# The sink transaction's apply ran in a savepoint (JDBC's autosave, a
# nested transaction block of psycopg or Django): the row is locked by the
# subtransaction's xid, which neither pg_prepared_xacts nor a backend shows
# (review of issue 20: the 55P03 fell back to "an open transaction" and
# pg_stat_activity, also for a prepared transaction).  It names the
# prepared transaction, and the backend, all the same.
$node->safe_psql('postgres', qq{
SET ROLE coordinator;
BEGIN;
SAVEPOINT autosave;
SELECT sog.apply(1, 4, '3', sog.payload_digest('3'));
RELEASE SAVEPOINT autosave;
INSERT INTO sink VALUES ('3');
PREPARE TRANSACTION 'sink-page-9';
});
($rc, $out, $err) = $node->psql('postgres', q{SET sog.claim_timeout = 200; SELECT sog.claim(1, 'w5')});
like($err, qr/its row is locked by prepared transaction "sink-page-9" \(owner coordinator, prepared at /,
	'an apply in a savepoint: the prepared transaction is named');
like($err, qr/HINT:  Finish that prepared transaction.*COMMIT PREPARED 'sink-page-9'/, 'and the hint says how to end it');
$node->safe_psql('postgres', q{COMMIT PREPARED 'sink-page-9'});
my $open = $node->background_psql('postgres', on_error_stop => 0);
my $open_pid = $open->query_safe('SELECT pg_backend_pid()');
$open->query_safe('SET ROLE coordinator');
$open->query_safe('BEGIN');
$open->query_safe('SAVEPOINT autosave');
$open->query_safe(q{SELECT sog.apply(1, 4, '4', sog.payload_digest('4'))});
$open->query_safe('RELEASE SAVEPOINT autosave');
($rc, $out, $err) = $node->psql('postgres', q{SET sog.claim_timeout = 200; SELECT sog.claim(1, 'w5')});
like($err, qr/its row is locked by the open transaction of backend $open_pid, in progress since /,
	'an apply in a savepoint of an open transaction: its backend is named');
like($err, qr/pg_terminate_backend\($open_pid\)/, 'and the hint says how to end it');
$open->query_safe('COMMIT');
$open->quit;
is($node->safe_psql('postgres', q{SELECT generation, verdict, resume_from FROM sog.claim(1, 'w5')}),
	'5|aligned|4', 'then the claim resumes after both');

# An unrelated transaction older than the savepoint's, open or prepared,
# is never named.  The C edition names the holder (pg_subtrans); the
# portable edition cannot tell which of the two owns the released
# subtransaction and says "an open transaction" (docs/portable.md, what differs).
my $portable = defined $ENV{SOG_PORTABLE_INSTALL};
my $older = $node->background_psql('postgres', on_error_stop => 0);
my $older_pid = $older->query_safe('SELECT pg_backend_pid()');
$older->query_safe('BEGIN');
$older->query_safe('SELECT txid_current()');
$node->safe_psql('postgres', q{BEGIN; SELECT txid_current(); PREPARE TRANSACTION 'unrelated-older'});
$open = $node->background_psql('postgres', on_error_stop => 0);
$open_pid = $open->query_safe('SELECT pg_backend_pid()');
$open->query_safe('SET ROLE coordinator');
$open->query_safe('BEGIN');
$open->query_safe('SAVEPOINT autosave');
$open->query_safe(q{SELECT sog.apply(1, 5, '5', sog.payload_digest('5'))});
$open->query_safe('RELEASE SAVEPOINT autosave');
($rc, $out, $err) = $node->psql('postgres', q{SET sog.claim_timeout = 200; SELECT sog.claim(1, 'w6')});
like($err, qr/could not claim checkpoint 1 within 200 ms/, 'with older unrelated transactions: the claim times out');
unlike($err, qr/backend $older_pid\b|pg_terminate_backend\($older_pid\)/, 'an older open transaction that does not hold it is not named');
unlike($err, qr/unrelated-older/, 'nor an older prepared one');
if ($portable)
{
	like($err, qr/its row is locked by an open transaction\./, 'the portable edition says "an open transaction"');
}
else
{
	like($err, qr/its row is locked by the open transaction of backend $open_pid, /, 'the C edition names the holder');
}
$open->query_safe('COMMIT');
$open->quit;
$older->query_safe('COMMIT');
$older->quit;
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'unrelated-older'});
is($node->safe_psql('postgres', q{SELECT generation, verdict, resume_from FROM sog.claim(1, 'w6')}),
	'6|aligned|5', 'then the claim resumes after it');

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
