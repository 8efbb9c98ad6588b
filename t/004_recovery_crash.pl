# 004_recovery_crash.pl: expired-token recovery across crashes.  An
# attempt's page transaction (sog.recovery_event per event, with the sink
# effects) and its promotion (sog.promote, the compare-and-swap that
# installs the successor token, advances applied_position and bumps the
# generation) are separate steps; the server may die between them or in
# the middle of the promotion.  Afterwards the checkpoint is either
# untouched (the attempt's base generation, expired token and applied
# position, the attempt still open) or fully promoted (generation + 1, the
# successor token and the applied position the attempt row reports), never
# a mixture; and a retry of the promote converges: promoted if the crash
# took the promotion, already_promoted with the same successor if it had
# committed.
#
# Four crashes, one after the other on the same checkpoint:
#   1. the postmaster is killed (SIGKILL) after the page committed and
#      before the promote;
#   2. an immediate shutdown while a promote is executed but not committed;
#   3. the backend executing an uncommitted promote is killed (SIGKILL), and
#      the postmaster reinitializes by itself (restart_after_crash = on);
#   4. an immediate shutdown right after a promote committed, before the
#      client could know it (the retry finds it already promoted).
#
# Cluster.pm's init writes "fsync = off".  That does not weaken this test:
# the operating system does not crash, so every WAL record a commit wrote
# reaches the files; what is tested is PostgreSQL's crash recovery (WAL
# replay, the commit log marking dead transactions aborted), which runs the
# same with fsync on or off.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;
use Time::HiRes qw(usleep);

# the postmaster reinitializes after a backend's crash (crash 3); the sink
# and its helpers from t/sink_setup.sql, and the recovery helpers below
my $node = SogTest::crash_node('recovery_crash', restart_after_crash => 1);
$node->safe_psql(
	'postgres', q{
-- A recovery page: each fetched event checked by sog.recovery_event, its
-- effect written when the answer is 'apply'.
CREATE FUNCTION page(rid bigint, positions text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	p text;
	outcome text;
	seen text[] := '{}';
BEGIN
	FOREACH p IN ARRAY positions LOOP
		outcome := sog.recovery_event(rid, p::sog.position, d(p));
		IF outcome = 'apply' THEN
			INSERT INTO sink VALUES (p::sog.position, 'p' || p);
		END IF;
		seen := seen || (p || ' ' || outcome);
	END LOOP;
	RETURN array_to_string(seen, ', ');
END $$;
-- outcome(rid): the checkpoint compared with the attempt: 'untouched' (the
-- attempt is open and the checkpoint still has its base generation,
-- expired token and applied position), 'promoted' (the attempt is promoted
-- and the checkpoint has generation + 1, the successor token and the
-- applied position the attempt reports, at least what it applied), or
-- 'inconsistent'.
CREATE FUNCTION outcome(rid bigint) RETURNS text LANGUAGE sql STABLE
	SET search_path = public, sog  -- the position operators (1.2)
AS $$
SELECT CASE
	WHEN r.state = 'open'
		 AND c.generation = r.generation
		 AND c.provider_token IS NOT DISTINCT FROM r.expired_token
		 AND c.applied_position IS NOT DISTINCT FROM r.applied_at_start
		 AND r.result_generation IS NULL
		THEN 'untouched'
	WHEN r.state = 'promoted'
		 AND c.generation = r.generation + 1
		 AND r.result_generation = c.generation
		 AND c.provider_token = r.successor_token
		 AND r.result_provider_token = r.successor_token
		 AND c.applied_position OPERATOR(sog.=) r.result_applied_position
		 AND c.applied_position OPERATOR(sog.=) greatest(r.applied_at_start, r.advance_through)
		THEN 'promoted'
	ELSE 'inconsistent'
END
  FROM sog.recovery r JOIN sog.checkpoint c ON c.id = r.checkpoint_id
 WHERE r.id = rid
$$;
});

my $cp = SogTest::claim_c1($node, q{'critical'}, q{'kafka'}, q{'topic=orders'});
is( $node->safe_psql(
		'postgres', "BEGIN;
		 SELECT sink_batch($cp, 1, ARRAY['101', '102', '103', '104', '105']);
		 SELECT sog.commit_page($cp, 1, NULL, 'C8');
		 COMMIT;"),
	'{t,t,t,t,t}' . "\n",
	'101..105 applied with token C8');

# The checkpoint as "generation|token|applied|state|open gaps".
sub checkpoint
{
	return $node->safe_psql(
		'postgres',
		"SELECT c.generation, c.provider_token, c.applied_position, c.state, s.open_gaps
		   FROM sog.checkpoint c JOIN sog.status s ON s.checkpoint_id = c.id
		  WHERE c.id = $cp");
}

# The attempt as "state|last_position|successor_token".
sub attempt
{
	my ($rid) = @_;
	return $node->safe_psql('postgres',
		"SELECT state, last_position, successor_token FROM sog.recovery WHERE id = $rid"
	);
}

sub promote
{
	my ($rid, $token, $page_last) = @_;
	return $node->safe_psql(
		'postgres',
		"SET lock_timeout = '10s';
		 SELECT promoted, generation, applied_position, provider_token, reason
		   FROM sog.promote($rid, '$token', '$page_last')");
}

# Kill the postmaster with SIGKILL, wait until it and all its children are
# gone, and start again.
sub kill9_and_restart
{
	SogTest::kill9_and_wait($node);
	$node->start;
}

#
# 1. The postmaster dies after the page committed, before the promote.
#
# C8 expired; inclusive seek at 103 returned 103..106 and the token N1.
my $rid1 = $node->safe_psql('postgres',
	"SELECT id FROM sog.begin_recovery($cp, 1, 'C8', 'topic=orders', '103', true)");
is( $node->safe_psql(
		'postgres', "SELECT page($rid1, ARRAY['103', '104', '105', '106'])"),
	'103 verified, 104 verified, 105 verified, 106 apply',
	'crash 1: the page 103..106 committed (106 new)');

kill9_and_restart();

is($node->safe_psql('postgres', "SELECT outcome($rid1)"),
	'untouched', 'crash 1: the checkpoint is untouched');
is(checkpoint(), '1|C8|105|running|0',
	'crash 1: generation 1, token C8, applied 105');
is(attempt($rid1), 'open|106|',
	'crash 1: the attempt is open with its committed page through 106');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(\"position\"::text, ' ' ORDER BY \"position\") FROM sog.receipts($cp)"
	),
	'101 102 103 104 105 106',
	'crash 1: the receipt of 106 committed with the page');
is(promote($rid1, 'N1', '106'), 't|2|106|N1|promoted',
	'crash 1: the promote after the restart wins');
is($node->safe_psql('postgres', "SELECT outcome($rid1)"),
	'promoted', 'crash 1: the checkpoint is fully promoted');
is(promote($rid1, 'N1', '106'), 't|2|106|N1|already_promoted',
	'crash 1: a retry converges');

#
# 2. An immediate shutdown while a promote is executed, not committed.
#
my $rid2 = $node->safe_psql('postgres',
	"SELECT id FROM sog.begin_recovery($cp, 2, 'N1', 'topic=orders', '105', true)");
is( $node->safe_psql(
		'postgres', "SELECT page($rid2, ARRAY['105', '106', '107'])"),
	'105 verified, 106 verified, 107 apply',
	'crash 2: the page 105..107 committed (107 new)');

my $open = $node->background_psql('postgres', on_error_stop => 0);
$open->query_safe('BEGIN');
is( $open->query_safe(
		"SELECT promoted, generation, applied_position, provider_token, reason
		   FROM sog.promote($rid2, 'N2', '107')"),
	't|3|107|N2|promoted',
	'crash 2: the promote ran inside the open transaction');
# The dirty pages, the uncommitted promotion's row versions included, reach
# the data files; recovery must rely on the transaction never having
# committed.  An unrelated commit flushes the WAL written since.
$node->safe_psql('postgres', 'CHECKPOINT');
$node->safe_psql('postgres', 'CREATE TABLE wal_flush_marker_2 ()');

$node->stop('immediate');
SogTest::session_lost($open, 'crash 2: the open promote');
$node->start;

is($node->safe_psql('postgres', "SELECT outcome($rid2)"),
	'untouched', 'crash 2: the checkpoint is untouched');
is(checkpoint(), '2|N1|106|running|0',
	'crash 2: generation 2, token N1, applied 106');
is(attempt($rid2), 'open|107|', 'crash 2: the attempt is still open');
is(promote($rid2, 'N2', '107'), 't|3|107|N2|promoted',
	'crash 2: the retried promote wins (no lock left behind)');
is($node->safe_psql('postgres', "SELECT outcome($rid2)"),
	'promoted', 'crash 2: the checkpoint is fully promoted');
is(promote($rid2, 'N2', '107'), 't|3|107|N2|already_promoted',
	'crash 2: a second retry converges');

#
# 3. The backend executing an uncommitted promote is killed; the postmaster
# reinitializes the cluster by itself.
#
my $rid3 = $node->safe_psql('postgres',
	"SELECT id FROM sog.begin_recovery($cp, 3, 'N2', 'topic=orders', '107', true)");
is( $node->safe_psql(
		'postgres', "SELECT page($rid3, ARRAY['107', '108'])"),
	'107 verified, 108 apply',
	'crash 3: the page 107..108 committed (108 new)');

my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe('BEGIN');
is( $victim->query_safe(
		"SELECT promoted, generation, applied_position, provider_token, reason
		   FROM sog.promote($rid3, 'N3', '108')"),
	't|4|108|N3|promoted',
	'crash 3: the promote ran inside the open transaction');
$node->safe_psql('postgres', 'CREATE TABLE wal_flush_marker_3 ()');

# SIGKILL, not pg_terminate_backend: the backend gets no chance to abort
# its transaction, and the postmaster treats it as a crash.
SogTest::kill9_backend($node, $victim, $victim_pid, 'crash 3: the killed promote');

is($node->safe_psql('postgres', "SELECT outcome($rid3)"),
	'untouched', 'crash 3: the checkpoint is untouched');
is(checkpoint(), '3|N2|107|running|0',
	'crash 3: generation 3, token N2, applied 107');
is(promote($rid3, 'N3', '108'), 't|4|108|N3|promoted',
	'crash 3: the retried promote wins');
is($node->safe_psql('postgres', "SELECT outcome($rid3)"),
	'promoted', 'crash 3: the checkpoint is fully promoted');
is(promote($rid3, 'N3', '108'), 't|4|108|N3|already_promoted',
	'crash 3: a second retry converges');

#
# 4. The promote commits, and the server stops immediately before the
# client learns the outcome: the retry finds the promotion.
#
my $rid4 = $node->safe_psql('postgres',
	"SELECT id FROM sog.begin_recovery($cp, 4, 'N3', 'topic=orders', '108', true)");
is( $node->safe_psql(
		'postgres', "SELECT page($rid4, ARRAY['108', '109'])"),
	'108 verified, 109 apply',
	'crash 4: the page 108..109 committed (109 new)');
$node->safe_psql('postgres',
	"SELECT * FROM sog.promote($rid4, 'N4', '109')");

$node->stop('immediate');
$node->start;

is($node->safe_psql('postgres', "SELECT outcome($rid4)"),
	'promoted', 'crash 4: the committed promotion survived in full');
is(checkpoint(), '5|N4|109|running|0',
	'crash 4: generation 5, token N4, applied 109');
is(promote($rid4, 'N4', '109'), 't|5|109|N4|already_promoted',
	'crash 4: the retry with the same successor converges');
my ($stdout, $stderr);
my $ret = $node->psql(
	'postgres',
	"\\set VERBOSITY verbose
	 SELECT * FROM sog.promote($rid4, 'N5', '109')",
	stdout => \$stdout,
	stderr => \$stderr);
isnt($ret, 0, 'crash 4: a retry with another successor fails');
like($stderr, qr/ERROR:  55000:/, 'crash 4: ... with 55000');
is(checkpoint(), '5|N4|109|running|0', 'crash 4: and changes nothing');

#
# Across all four: every attempt promoted exactly once, every effect in the
# sink exactly once, and generation 5 continues with the normal path.
#
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(state, ' ' ORDER BY id) FROM sog.recovery WHERE checkpoint_id = $cp"
	),
	'promoted promoted promoted promoted',
	'all four attempts are promoted');
is( $node->safe_psql(
		'postgres',
		"SET lock_timeout = '10s'; SELECT sink_batch($cp, 5, ARRAY['109', '110'])"),
	'{f,t}',
	'generation 5 continues: 109 is a duplicate, 110 is new');
SogTest::sink_exactly_once($node, 101, 110, $cp);

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
