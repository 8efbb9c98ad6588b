# 013_pipelined_crash.pl: real crashes at each step of the pipelined loop
# (docs/consumer.md: one commit per page).  A worker that has fetched
# page k+1 while it applies page k notes page k+1 inside page k's sink
# transaction, after page k's apply:
#
#   BEGIN; apply(page k); INSERT the new rows;
#          note_read(cursor of k+1, hash of k+1's records above the applied
#                    position page k leaves, their count);
#   COMMIT;                   and only then acknowledge page k to the source
#
# and only a first page (after claim or verify, or when nothing noted it)
# has a committed note_read of its own.  The source here is a consumer
# group: records 1..50, payload 'pN', pages of ten, delivered again from
# the last acknowledged position after a restart.  Five checkpoints, one
# crash each:
#
#   a. after the first page's standalone note_read (postmaster SIGKILL);
#   b. in page 2's transaction after the apply, before note_read of page 3
#      (backend SIGKILL);
#   c. in page 2's transaction after note_read of page 3, before COMMIT
#      (backend SIGKILL);
#   d. after page 2's COMMIT, before its acknowledgement reached the source
#      and before page 3's transaction (postmaster SIGKILL);
#   e. in page 3's transaction after its apply and the note of page 4
#      (postmaster SIGKILL).
#
# After each, a successor claims: the verify range must be exactly the one
# the crash leaves (a: (start, 10]; b, c: page 2's, (10, 20], noted in page
# 1's transaction; d, e: page 3's, (20, 30], noted in page 2's); it
# re-fetches from what was acknowledged, hashes the records in that range
# (the client's hash, in Perl), verify_gap answers true, and it carries on
# in the same loop to the end.  At the end the sink holds every event
# exactly once (count, distinct positions, sum over positions) and the
# applied position is the last event.  b, d and e use apply_run, a and c
# apply_batch.
#
# Cluster.pm's init writes "fsync = off" and "restart_after_crash = off";
# crash_node turns the second on (after a backend's crash the postmaster
# reinitializes, as a production server does).  fsync off does not weaken
# the test: the operating system does not crash, so everything PostgreSQL
# wrote, every commit's WAL included, reaches the files; what is tested is
# PostgreSQL's crash recovery (WAL replay, the commit log marking dead
# transactions aborted) under the guard, which runs the same either way.

use strict;
use warnings;

use FindBin;
use List::Util qw(max min);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $N = 50;       # the source's records: 1..$N
my $PAGE = 10;    # a page: ten records

my $node = SogTest::crash_node('pipelined_crash', restart_after_crash => 1);
$node->safe_psql(
	'postgres', q{
-- The sink of the five checkpoints (no unique key: a double apply shows up
-- as a duplicate row).
CREATE TABLE psink (cp bigint NOT NULL, pos sog.position NOT NULL, payload text NOT NULL);
-- Page lo..hi applied with apply_batch (or apply_run), and the rows
-- answered new inserted: how many.
CREATE FUNCTION psink_batch(cp bigint, gen bigint, lo int, hi int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	fresh boolean[];
	n int;
BEGIN
	fresh := sog.apply_batch(cp, gen, ARRAY(SELECT g::text::sog.position FROM generate_series(lo, hi) g ORDER BY g),
							 ARRAY(SELECT d(g::text) FROM generate_series(lo, hi) g ORDER BY g));
	INSERT INTO psink SELECT cp, (lo + i - 1)::text::sog.position, 'p' || (lo + i - 1)
	  FROM generate_subscripts(fresh, 1) i WHERE fresh[i];
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;
CREATE FUNCTION psink_run(cp bigint, gen bigint, lo int, hi int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	skip int;
	n int;
BEGIN
	skip := sog.apply_run(cp, gen, lo, (SELECT string_agg(d(g::text), ''::bytea ORDER BY g) FROM generate_series(lo, hi) g));
	INSERT INTO psink SELECT cp, g::text::sog.position, 'p' || g FROM generate_series(lo + skip, hi) g;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;
});

# The client's buffer hash: the contract's vectors, and the server's.
my $vectors = SogTest::contract_vectors()->{buffer_hash};
is( join(' ', map { SogTest::buffer_hash(map { [ $_->{position}, pack('H*', $_->{payload_hex}) ] } @{ $_->{records} }) eq $_->{buffer_hash} ? 'ok' : "$_->{name}:wrong" } @$vectors),
	join(' ', map { 'ok' } @$vectors),
	"the client's buffer hash gives every vector of test/contract-v1.json");

# The records lo..hi as the source delivers them
sub records { my ($lo, $hi) = @_; return map { [ "$_", "p$_" ] } $lo .. $hi; }
is(SogTest::buffer_hash(records(11, 20)), $node->safe_psql('postgres', 'SELECT span_hash(11, 20)'),
	"the client's hash of 11..20 is the server's");

# The source: the page after position $after (undef at the end).
sub fetch
{
	my ($after) = @_;
	return undef if $after >= $N;
	return [ $after + 1, min($after + $PAGE, $N) ];
}

# A worker: {name, session, cp, gen, form (batch|run), applied (0: none),
# noted (the cursor of a committed note, 0: none), acked (what the source
# was acknowledged)}.
sub sq { my ($w, $sql) = @_; return $w->{session}->query_safe($sql); }

sub note_page
{
	my ($w, $lo, $hi) = @_;
	sq($w, sprintf("SELECT sog.note_read(%d, %d, '%d', '%s', %d)",
			$w->{cp}, $w->{gen}, $hi, SogTest::buffer_hash(records($lo, $hi)), $hi - $lo + 1));
	return;
}

# The pipelined loop from what the source delivers after $w->{acked} to the
# end; stops at $crash = [step, page's last position] (first_note, apply,
# note, commit): 'crashed' there, else 'done'.
sub run_pipelined
{
	my ($w, $crash) = @_;
	my $at = sub { my ($step, $hi) = @_; return $crash && $crash->[0] eq $step && $crash->[1] == $hi; };
	my $page = fetch($w->{acked});
	while ($page)
	{
		my ($lo, $hi) = @$page;
		# a first page: records above the applied position, and nothing noted them
		if ($hi > $w->{applied} && $hi > $w->{noted})
		{
			note_page($w, max($lo, $w->{applied} + 1), $hi);
			$w->{noted} = $hi;
			return 'crashed' if $at->('first_note', $hi);
		}
		my $next = fetch($hi);    # page k+1, fetched while page k is applied
		sq($w, 'BEGIN');
		sq($w, "SELECT psink_$w->{form}($w->{cp}, $w->{gen}, $lo, $hi)");
		my $applied = max($w->{applied}, $hi);
		return 'crashed' if $at->('apply', $hi);
		my $noted = $w->{noted};
		if ($next && $next->[1] > $applied)
		{
			# page k+1's records above the applied position page k leaves
			note_page($w, max($next->[0], $applied + 1), $next->[1]);
			$noted = $next->[1];
		}
		return 'crashed' if $at->('note', $hi);
		sq($w, 'COMMIT');
		($w->{applied}, $w->{noted}) = ($applied, $noted);
		return 'crashed' if $at->('commit', $hi);
		$w->{acked} = $hi;    # acknowledged only after page k committed
		$page = $next;
	}
	return 'done';
}

# Before a crash inside an open transaction: its dirty pages (uncommitted
# row versions of the checkpoint, receipts, sink) on disk, and the WAL it
# wrote flushed by an unrelated commit, so recovery finds both and must
# rely on the transaction never having committed.
sub flush_all
{
	$node->safe_psql('postgres', 'CHECKPOINT');
	$node->safe_psql('postgres', 'CREATE TABLE IF NOT EXISTS wal_flush_marker ()');
	return;
}

# What is durable for checkpoint $cp: "applied|read cursor|buffered count|rows"
sub durable
{
	my ($cp) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(s.applied_position::text, 'start'), s.source_cursor, s.buffered_count,
		        (SELECT count(*) FROM psink p WHERE p.cp = s.checkpoint_id)
		   FROM sog.status s WHERE s.checkpoint_id = $cp");
}

my %scenario = (
	a => { step => 'first_note', page => 10, form => 'batch', kill => 'postmaster',
		durable => 'start|10|10|0', plan => 'gap_replay_required|start|start|10|10' },
	b => { step => 'apply', page => 20, form => 'run', kill => 'backend',
		durable => '10|20|10|10', plan => 'gap_replay_required|10|10|20|10' },
	c => { step => 'note', page => 20, form => 'batch', kill => 'backend',
		durable => '10|20|10|10', plan => 'gap_replay_required|10|10|20|10' },
	d => { step => 'commit', page => 20, form => 'run', kill => 'postmaster',
		durable => '20|30|10|20', plan => 'gap_replay_required|20|20|30|10' },
	e => { step => 'note', page => 30, form => 'batch', kill => 'postmaster',
		durable => '20|30|10|20', plan => 'gap_replay_required|20|20|30|10' },);
my %what = (
	a => 'after the first page\'s standalone note_read',
	b => 'in page 2\'s transaction after the apply, before note_read of page 3',
	c => 'in page 2\'s transaction after note_read of page 3, before COMMIT',
	d => 'after page 2\'s COMMIT, before its acknowledgement and page 3\'s transaction',
	e => 'in page 3\'s transaction, after its apply and the note of page 4');

for my $x (sort keys %scenario)
{
	my $sc = $scenario{$x};
	my $cp = $node->safe_psql('postgres', "SELECT id FROM sog.register('pipe-$x', 'orders', '0')");
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	my $gen = $session->query_safe("SELECT generation FROM sog.claim($cp, 'w1')");
	my $w1 = { name => "w1 of $x", session => $session, cp => $cp, gen => $gen,
		form => $sc->{form}, applied => 0, noted => 0, acked => 0 };

	is(run_pipelined($w1, [ $sc->{step}, $sc->{page} ]), 'crashed', "$x: w1 reaches the crash point: $what{$x}");
	my $in_tx = $sc->{step} eq 'apply' || $sc->{step} eq 'note';
	flush_all() if $in_tx;
	if ($sc->{kill} eq 'backend')
	{
		SogTest::kill9_backend($node, $session, $pid, "$x: w1");
	}
	else
	{
		SogTest::kill9_and_wait($node);
		SogTest::session_lost($session, "$x: w1");
		$node->start;
	}
	is(durable($cp), $sc->{durable}, "$x: what is durable (applied|read cursor|buffered count|sink rows)");

	# The successor: claim, re-fetch from what the source was acknowledged,
	# verify exactly the range the claim asks for.
	my $s2 = $node->background_psql('postgres', on_error_stop => 1);
	my ($verdict, $resume, $vfrom, $vto, $count, $gen2) = split /\|/, $s2->query_safe(
		"SELECT verdict, coalesce(resume_from::text, 'start'), coalesce(verify_from::text, 'start'),
		        verify_to, expected_count, generation FROM sog.claim($cp, 'w2')");
	is(join('|', $verdict, $resume, $vfrom, $vto, $count), $sc->{plan},
		"$x: w2's claim (verdict|resume_from|verify_from|verify_to|expected_count)");
	my $from = $vfrom eq 'start' ? 0 : $vfrom;
	my @refetched;
	for (my $page = fetch($w1->{acked}); $page; $page = fetch($page->[1]))
	{
		push @refetched, grep { $_->[0] > $from && $_->[0] <= $vto } records(@$page);
		last if $page->[1] >= $vto;
	}
	is($s2->query_safe("SELECT sog.verify_gap($cp, $gen2, '" . SogTest::buffer_hash(@refetched) . "')"),
		't', "$x: verify_gap of the re-fetched ($vfrom, $vto] is true");

	# ... and carries on to the end, the verified range already noted.
	my $w2 = { name => "w2 of $x", session => $s2, cp => $cp, gen => $gen2, form => $sc->{form},
		applied => $resume eq 'start' ? 0 : $resume, noted => $vto, acked => $w1->{acked} };
	is(run_pipelined($w2), 'done', "$x: w2 applies to the end");
	$s2->quit;

	my $sum = $N * ($N + 1) / 2;
	is( $node->safe_psql('postgres',
			"SELECT count(*), count(DISTINCT pos), sum(pos::numeric), min(pos::numeric), max(pos::numeric)
			   FROM psink WHERE cp = $cp"),
		"$N|$N|$sum|1|$N", "$x: the sink holds 1..$N exactly once");
	is( $node->safe_psql('postgres',
			"SELECT applied_position, source_cursor, state, open_gaps, generation FROM sog.status WHERE checkpoint_id = $cp"),
		"$N|$N|running|0|$gen2", "$x: applied through $N, nothing open");
	is( $node->safe_psql('postgres', "SELECT count(*), min(\"position\"::numeric), max(\"position\"::numeric) FROM sog.receipts($cp)"),
		"$N|1|$N", "$x: receipts 1..$N");
}

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
