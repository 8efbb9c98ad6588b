# 007_pg_cron_retention.pl: receipt retention run by a real pg_cron job
# (Debian's postgresql-N-cron) while consumers apply.
#
# Five checkpoints apply continuously, each in its own session, one
# apply_batch of 25 events per sink transaction, timing every call with
# clock_timestamp():
#   1, 2  consumer 'orders'  : the consumer's policy keeps 500 positions
#   3     consumer 'audit'   : the consumer's policy keeps 20 seconds
#   4     consumer 'orders'  : its own policy keeps 0 positions (wins over the
#                              consumer's), but an expired-token recovery
#                              attempt is open, anchored at 300
#   5     consumer 'nopolicy': no policy, never pruned
# A pg_cron job runs CALL sog.prune_due() as an operator role (every 2
# seconds where pg_cron accepts interval schedules, 1.5 and later; every
# minute with Debian 12's 1.4) until it has run at least twice (at 2
# seconds, until checkpoint 3's receipts are older than its policy keeps:
# 13 times).  Meanwhile a sampler checks, in one snapshot each time, that
# no prune horizon is above its applied position or at or above an open
# attempt's anchor.  Afterwards: receipts stayed bounded, every run of the
# job succeeded, no apply waited longer than 200 ms (the measured maximum is
# printed), pruned positions are still answered false, the sink holds each
# event exactly once, and retention resumes once the attempt concludes.
#
# With pg_cron 1.4 it waits for two minute boundaries: 1 to 2 minutes; with
# 1.5 and later about 30 s.  Skipped when pg_cron is not installed
# (apt-get install postgresql-N-cron).

use strict;
use warnings;

use FindBin;
use IPC::Run;
use List::Util qw(max min sum);
use Time::HiRes qw(usleep time);

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my ($pkglibdir, $sharedir) = map {
	my $d = `pg_config --$_`;
	chomp $d;
	$d
} qw(pkglibdir sharedir);
plan skip_all =>
  "pg_cron is not installed in this PostgreSQL ($pkglibdir/pg_cron.so or $sharedir/extension/pg_cron.control missing: apt-get install postgresql-N-cron)"
  unless -e "$pkglibdir/pg_cron.so" && -e "$sharedir/extension/pg_cron.control";

my $KEEP = 500;            # positions kept by the 'orders' policy
my $KEEP_SECONDS = 20;     # seconds kept by the 'audit' policy
my $ANCHOR = 300;          # checkpoint 4's open recovery attempt
my $BATCH = 25;            # events per sink transaction
my $BOUND_MS = 200;        # generous, for a shared 2-core machine

my $node = PostgreSQL::Test::Cluster->new('pg_cron_retention', port => 55950);
$node->init;
my $socketdir = $node->host;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.host = '$socketdir'
max_connections = 40
log_statement = none
# every lock wait over 5 ms is logged, with its length once acquired
log_lock_waits = on
deadlock_timeout = '5ms'
});
$node->start;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION stream_offset_guard;
CREATE EXTENSION pg_cron;
CREATE EXTENSION amcheck;
CREATE ROLE sog_worker LOGIN;
CREATE ROLE sog_retention LOGIN;
SELECT sog.grant_consumer('sog_worker');
SELECT sog.grant_operator('sog_retention');

-- the sink, the consumers' timing log, and a stop switch
CREATE TABLE sink (checkpoint_id bigint, pos numeric, PRIMARY KEY (checkpoint_id, pos));
CREATE TABLE apply_log (checkpoint_id bigint, first_pos numeric, n int, started timestamptz,
						apply_ms float8, prev_txn_ms float8);
CREATE TABLE control (stop boolean NOT NULL);
INSERT INTO control VALUES (false);
GRANT SELECT, INSERT ON sink, apply_log TO sog_worker;
GRANT SELECT ON control TO sog_worker;

-- A consumer: apply_batch of \$BATCH new events per sink transaction, the
-- sink rows of those answered true, commit, a short pause.  apply_ms is the
-- apply_batch call alone (any wait for the checkpoint's row lock is in it);
-- prev_txn_ms is the previous transaction from its start to after COMMIT.
CREATE PROCEDURE consume(cp bigint, gen bigint, batch int, pause float8)
LANGUAGE plpgsql AS \$\$
DECLARE
	nxt numeric := coalesce((SELECT s.applied_position::numeric FROM sog.status s
							  WHERE s.checkpoint_id = cp), 0) + 1;
	ps sog.position[];
	ds bytea[];
	res boolean[];
	t0 timestamptz;
	t1 timestamptz;
	prev float8;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM control);
		ps := ARRAY(SELECT (nxt + g)::sog.position FROM generate_series(0, batch - 1) g);
		ds := ARRAY(SELECT sog.payload_digest(convert_to(cp || ':' || (nxt + g), 'UTF8'))
					  FROM generate_series(0, batch - 1) g);
		t0 := clock_timestamp();
		res := sog.apply_batch(cp, gen, ps, ds);
		t1 := clock_timestamp();
		INSERT INTO sink SELECT cp, nxt + u.i - 1 FROM unnest(res) WITH ORDINALITY u(r, i) WHERE u.r;
		INSERT INTO apply_log VALUES (cp, nxt, batch, t0, extract(epoch FROM t1 - t0) * 1000, prev);
		COMMIT;
		prev := extract(epoch FROM clock_timestamp() - t0) * 1000;
		nxt := nxt + batch;
		PERFORM pg_sleep(pause);
	END LOOP;
END
\$\$;

-- checkpoints and policies
SET ROLE sog_worker;
SELECT (sog.register('orders', 'orders', '0')).id;
SELECT (sog.register('orders', 'orders', '1')).id;
SELECT (sog.register('audit', 'audit', '0')).id;
SELECT (sog.register('orders', 'orders', '2', provider => 'kafka')).id;
SELECT (sog.register('nopolicy', 'misc', '0')).id;
SELECT (sog.claim(id, 'w1')).verdict FROM generate_series(1, 5) id;
RESET ROLE;
SET ROLE sog_retention;
SELECT sog.set_retention(consumer => 'orders', keep_positions => $KEEP);
SELECT sog.set_retention(consumer => 'audit', keep_interval => interval '$KEEP_SECONDS seconds');
SELECT sog.set_retention(checkpoint_id => 4, keep_positions => 0);
});
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'}),
	SogTest::default_version(), 'extension installed at the default version');

# Checkpoint 4: 1000 events applied, a page committed, then a recovery
# attempt from the expired token, anchored (inclusively) at $ANCHOR.
$node->safe_psql(
	'postgres', qq{
SET ROLE sog_worker;
SELECT sog.apply_batch(4, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 1000) g),
	ARRAY(SELECT sog.payload_digest(convert_to('4:' || g, 'UTF8')) FROM generate_series(1, 1000) g)) IS NOT NULL;
INSERT INTO sink SELECT 4, g FROM generate_series(1, 1000) g;
SELECT sog.commit_page(4, 1, NULL, 'T1');
});
my $attempt = $node->safe_psql('postgres',
	qq{SET ROLE sog_worker; SELECT id || ':' || state FROM sog.begin_recovery(4, 1, 'T1', NULL, '$ANCHOR', true)});
like($attempt, qr/^\d+:open$/, "checkpoint 4 has an open recovery attempt anchored at $ANCHOR");
($attempt) = split /:/, $attempt;

# The consumers.
my @consumers;
for my $cp (1 .. 5)
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
			$node->connstr('postgres') . ' user=sog_worker',
			'-c', "CALL consume($cp, 1, $BATCH, 0.02)"
		],
		'<', \undef, '>', \$out, '2>', \$err);
	push @consumers, { cp => $cp, h => $h, out => \$out, err => \$err };
}

# The job, as the operator role.  pg_cron 1.5 and later accept '2 seconds';
# 1.4 (Debian 12) only cron schedules, the finest being every minute.
my $period = 2;
my ($rc, $jobid, $err) = $node->psql('postgres',
	q{SELECT cron.schedule_in_database('sog-retention', '2 seconds', 'CALL sog.prune_due()', 'postgres', 'sog_retention')});
if ($rc != 0)
{
	like($err, qr/invalid schedule/, "this pg_cron has no interval schedules: every minute instead");
	$period = 60;
	$jobid = $node->safe_psql('postgres',
		q{SELECT cron.schedule_in_database('sog-retention', '* * * * *', 'CALL sog.prune_due()', 'postgres', 'sog_retention')});
}
# Enough runs that checkpoint 3's receipts get older than its policy keeps
# (every minute: two runs are; every 2 s: KEEP_SECONDS of them and three more).
my $want_runs = $period == 2 ? int($KEEP_SECONDS / $period) + 3 : 2;
note "pg_cron "
  . $node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'})
  . ": job $jobid every $period s; waiting for $want_runs runs";

# Sample until the job has run often enough, then a few seconds more.  A
# sample's snapshot is taken between t0 (statement_timestamp) and t1
# (clock_timestamp at the end): a sample saw everything committed before its
# t0 and nothing committed after its t1.  The oldest receipt is the oldest
# kept one, above the prune horizon (1.2: the ring's rows below it stay
# stored until their partition is emptied, and are answered as gone).
my $sample_sql = q{
SELECT extract(epoch FROM statement_timestamp()), extract(epoch FROM clock_timestamp()), m.checkpoint_id,
	   coalesce(c.applied_position::numeric, 0), coalesce(c.prune_horizon::numeric, 0),
	   m.receipts,
	   coalesce(extract(epoch FROM (SELECT min(r.created_at) FROM sog.receipt r WHERE r.checkpoint_id = c.id
	                                   AND (c.prune_horizon IS NULL OR r.last_position OPERATOR(sog.>) c.prune_horizon))), 0),
	   (c.prune_horizon IS NULL OR c.prune_horizon OPERATOR(sog.<=) c.applied_position),
	   NOT EXISTS (SELECT FROM sog.recovery a WHERE a.checkpoint_id = c.id AND a.state = 'open'
				   AND (a.anchor IS NULL OR c.prune_horizon OPERATOR(sog.>=) a.anchor)),
	   (SELECT count(*) FROM cron.job_run_details d WHERE d.status = 'succeeded')
  FROM sog.checkpoint_metrics m JOIN sog.checkpoint c ON c.id = m.checkpoint_id
 ORDER BY 2};
my (%samples, $runs, $above_applied, $at_anchor, $stop_at);
$above_applied = $at_anchor = 0;
my $deadline = time() + $want_runs * $period + 90;
while (1)
{
	foreach my $row (split /\n/, $node->safe_psql('postgres', $sample_sql))
	{
		my ($t0, $t1, $cp, $applied, $horizon, $receipts, $oldest, $le_applied, $below_anchor, $n) = split /\|/, $row;
		push @{ $samples{$cp} },
		  { t0 => $t0, t1 => $t1, applied => $applied, horizon => $horizon, receipts => $receipts, oldest => $oldest };
		$above_applied++ if $le_applied ne 't';
		$at_anchor++ if $below_anchor ne 't';
		$runs = $n;
	}
	if (!defined $stop_at && $runs >= $want_runs)
	{
		$stop_at = time() + ($period == 2 ? 3 : 8);
	}
	last if defined $stop_at && time() >= $stop_at;
	die "the job ran $runs times in " . ($want_runs * $period + 90) . " s" if time() > $deadline;
	usleep(500_000);
}
$node->safe_psql('postgres', 'UPDATE control SET stop = true');
foreach my $c (@consumers)
{
	ok($c->{h}->finish, "consumer of checkpoint $c->{cp} ran without an error")
	  or diag ${ $c->{err} };
}
# Let a run that started before the stop finish, and disable the job.
$node->safe_psql('postgres', qq{SELECT cron.alter_job($jobid, active => false)});
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM cron.job_run_details WHERE status IN ('starting', 'running')})
  or die 'a job run did not finish';

# The job's runs.
my $details = $node->safe_psql(
	'postgres', qq{
SELECT count(*), count(*) FILTER (WHERE status = 'succeeded'),
	   string_agg(DISTINCT status || '/' || coalesce(return_message, ''), ', '),
	   round(max(extract(epoch FROM end_time - start_time)) * 1000, 1)
  FROM cron.job_run_details WHERE jobid = $jobid});
my ($nruns, $nok, $statuses, $run_ms) = split /\|/, $details;
cmp_ok($nruns, '>=', $want_runs, "the job ran $nruns times (at least $want_runs)");
is($nok, $nruns, "every run succeeded (cron.job_run_details: $statuses)");
my @runs = map { [ split /\|/ ] } split /\n/,
  $node->safe_psql('postgres',
	qq{SELECT extract(epoch FROM start_time), extract(epoch FROM end_time) FROM cron.job_run_details WHERE jobid = $jobid AND status = 'succeeded' ORDER BY start_time});

# Horizons: never above applied, never at or above an open attempt's anchor.
my $nsamples = scalar @{ $samples{1} };
is($above_applied, 0, "no prune horizon above its applied position in $nsamples samples");
is($at_anchor, 0, "no prune horizon at or above an open attempt's anchor in $nsamples samples");

# Receipts stay bounded: after each run, a checkpoint of 'orders' keeps
# $KEEP positions plus what it applied since the run started; at any time,
# no more than $KEEP plus what it applies in one period (and 5 s).
# the last sample whose snapshot was taken before $t, and the first after
sub last_before
{
	my ($list, $t) = @_;
	my $found;
	foreach my $s (@$list)
	{
		last if $s->{t1} > $t;
		$found = $s;
	}
	return $found;
}

sub first_after
{
	my ($list, $t) = @_;
	foreach my $s (@$list)
	{
		return $s if $s->{t0} >= $t;
	}
	return undef;
}
my %figures;
foreach my $cp (1, 2)
{
	my $list = $samples{$cp};
	my ($checked, $bad, @after_runs) = (0, 0);
	foreach my $r (@runs)
	{
		my $before = last_before($list, $r->[0]);
		my $after = first_after($list, $r->[1]);
		next unless $before && $after;
		$checked++;
		push @after_runs, "$before->{receipts} -> $after->{receipts}";
		if (   $after->{horizon} < $before->{applied} - $KEEP
			|| $after->{receipts} > $KEEP + $after->{applied} - $before->{applied})
		{
			$bad++;
			diag "checkpoint $cp, run [$r->[0], $r->[1]]: before at $before->{t1} applied $before->{applied};"
			  . " after at $after->{t0} applied $after->{applied}, horizon $after->{horizon}, receipts $after->{receipts}";
		}
	}
	ok($checked >= 1 && $bad == 0,
		"checkpoint $cp: after each of $checked runs, the horizon is at least applied - $KEEP and the receipts at most $KEEP plus what was applied since the run started"
	);

	my ($maxr, $bound) = (0, 0);
	foreach my $s (@$list)
	{
		next if $s->{t0} < $runs[0][1];
		my $then = last_before($list, $s->{t0} - $period - 5);
		$bound = max($bound, $KEEP + $s->{applied} - ($then ? $then->{applied} : 0));
		$maxr = max($maxr, $s->{receipts});
	}
	my $applied = $list->[-1]{applied};
	cmp_ok($maxr, '<=', $bound,
		"checkpoint $cp: at most $maxr receipts after the first run, within the bound $bound, while it applied $applied events"
	);
	cmp_ok($list->[-1]{receipts}, '<', $applied, "checkpoint $cp: fewer receipts than events applied");
	$figures{$cp} = "applied $applied, max receipts $maxr (bound $bound), receipts before -> after each run: "
	  . join(', ', @after_runs);
}

# The interval policy: after each run, no receipt of checkpoint 3 is older
# than $KEEP_SECONDS s at the run's start (1 s of slack).
{
	my $list = $samples{3};
	my ($checked, $bad) = (0, 0);
	foreach my $r (@runs)
	{
		my $after = first_after($list, $r->[1]) or next;
		next if $after->{oldest} == 0;
		$checked++;
		if ($after->{oldest} < $r->[0] - $KEEP_SECONDS - 1)
		{
			$bad++;
			diag "checkpoint 3, run [$r->[0], $r->[1]]: at $after->{t0} the oldest receipt is from $after->{oldest}";
		}
	}
	ok($checked >= 1 && $bad == 0, "checkpoint 3: after each of $checked runs, no receipt older than $KEEP_SECONDS s is left");
	my $last = $list->[-1];
	cmp_ok($last->{horizon}, '>', 0, "checkpoint 3: pruned through $last->{horizon} of $last->{applied}");
	$figures{3} = "applied $last->{applied}, max receipts " . max(map { $_->{receipts} } @$list);
	$figures{5} = "applied $samples{5}[-1]{applied}, receipts $samples{5}[-1]{receipts} (no policy)";
}

# Checkpoint 4: held below the anchor; checkpoint 5: never pruned.
my $h4 = $samples{4}[-1];
is($h4->{horizon}, $ANCHOR - 1, "checkpoint 4: pruned through " . ($ANCHOR - 1) . ", just below the open attempt's anchor");
is( $node->safe_psql('postgres', qq{SELECT count(*) FROM sog.receipts(4, '$ANCHOR', '$ANCHOR')}),
	'1', "checkpoint 4: the receipt at the anchor is kept");
my $h5 = $samples{5}[-1];
is("$h5->{horizon}/$h5->{receipts}", "0/$h5->{applied}", 'checkpoint 5 (no policy): nothing pruned');

# Exactly once: the sink holds each applied event once.
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(format('%s:%s', c.id, (SELECT count(*) = c.applied_position::numeric
  AND min(pos) = 1 AND max(pos) = c.applied_position::numeric FROM sink s WHERE s.checkpoint_id = c.id)), ',' ORDER BY c.id)
  FROM sog.checkpoint c}),
	'1:t,2:t,3:t,4:t,5:t',
	'every sink holds events 1 to applied, each once');

# Pruned positions are still duplicates: answered false whatever the digest.
my $H1 = $node->safe_psql('postgres', 'SELECT prune_horizon FROM sog.checkpoint WHERE id = 1');
my ($below, $above) = ($H1 - 1, $H1 + 1);
is( $node->safe_psql(
		'postgres', qq{SET ROLE sog_worker;
SELECT sog.apply_batch(1, 1, ARRAY['1', '2', '$below', '$H1']::sog.position[],
	ARRAY(SELECT sog.payload_digest(convert_to('1:' || g, 'UTF8')) FROM unnest(ARRAY[1, 2, $below, $H1]) g))}),
	'{f,f,f,f}',
	"checkpoint 1: replayed events 1, 2, $below and $H1 (pruned) are answered false");
is( $node->safe_psql(
		'postgres', qq{SET ROLE sog_worker;
SELECT sog.apply_batch(1, 1, ARRAY['1', '$H1']::sog.position[], ARRAY[sog.payload_digest('x'), sog.payload_digest('y')])}),
	'{f,f}',
	'checkpoint 1: at or below the horizon the digest is not compared (no receipt is left)');
($rc, my $o, $err) = $node->psql('postgres',
	qq{SET ROLE sog_worker; SELECT sog.apply(1, 1, '$above', sog.payload_digest('x'))});
like($err, qr/SG003|digest/i, 'checkpoint 1: just above the horizon the receipt is kept and a different digest conflicts');

# Apply latency while the job pruned.
my $timing = $node->safe_psql(
	'postgres', qq{
SELECT count(*), round(max(apply_ms)::numeric, 2),
	   round((percentile_cont(0.99) WITHIN GROUP (ORDER BY apply_ms))::numeric, 2),
	   round((percentile_cont(0.5) WITHIN GROUP (ORDER BY apply_ms))::numeric, 2),
	   round(max(prev_txn_ms)::numeric, 2),
	   (SELECT count(*) FROM apply_log l JOIN cron.job_run_details d ON d.jobid = $jobid
		   AND l.started + l.apply_ms * interval '1 ms' >= d.start_time AND l.started <= d.end_time),
	   (SELECT round(coalesce(max(l.apply_ms), 0)::numeric, 2) FROM apply_log l JOIN cron.job_run_details d ON d.jobid = $jobid
		   AND l.started + l.apply_ms * interval '1 ms' >= d.start_time AND l.started <= d.end_time),
	   sum(n)
  FROM apply_log});
my ($napplies, $max_ms, $p99, $p50, $max_txn, $during, $max_during, $events) = split /\|/, $timing;
cmp_ok($max_ms, '<', $BOUND_MS, "no apply_batch took $BOUND_MS ms or more: the longest of $napplies took $max_ms ms");
cmp_ok($during, '>', 0, "$during apply_batch calls overlapped a run of the job");

# Lock waits (log_lock_waits, deadlock_timeout 5 ms): who waited, how long.
my @waits = (slurp_file($node->logfile) =~ /process \d+ acquired (\w+ on \w+)[^\n]* after ([\d.]+) ms/g);
my %wait_kinds;
my $max_wait = 0;
while (my ($kind, $ms) = splice(@waits, 0, 2))
{
	$wait_kinds{$kind}++;
	$max_wait = max($max_wait, $ms);
}
my $nwaits = sum(values %wait_kinds) // 0;
cmp_ok($max_wait, '<', $BOUND_MS, "no lock wait of $BOUND_MS ms or more ($nwaits waits over 5 ms, the longest $max_wait ms)");
diag "measured: $napplies apply_batch calls of $BATCH events ($events events), p50 $p50 ms, p99 $p99 ms, max $max_ms ms;"
  . " $during overlapping a prune run, max $max_during ms; longest sink transaction $max_txn ms;"
  . " $nruns runs every $period s, longest run $run_ms ms;"
  . " $nwaits lock waits over 5 ms (" . join(', ', map { "$wait_kinds{$_} $_" } sort keys %wait_kinds) . "), longest $max_wait ms";
diag "checkpoint $_: $figures{$_}" foreach sort keys %figures;

# Once the attempt concludes (it verifies the anchor's event and promotes),
# retention releases the hold: checkpoint 4 is pruned through applied.
is( $node->safe_psql(
		'postgres', qq{SET ROLE sog_worker;
SELECT sog.recovery_event($attempt, '$ANCHOR', sog.payload_digest(convert_to('4:$ANCHOR', 'UTF8')))}),
	'verified', "the attempt verifies the anchor's event against its kept receipt");
is( $node->safe_psql('postgres', qq{SET ROLE sog_worker; SELECT promoted FROM sog.promote($attempt, 'T2', '$ANCHOR')}),
	't', 'the attempt promotes');
$node->safe_psql('postgres', 'SET ROLE sog_retention; CALL sog.prune_due()');
is( $node->safe_psql('postgres',
		q{SELECT (prune_horizon OPERATOR(sog.=) applied_position) || '/' || (SELECT receipts FROM sog.checkpoint_metrics WHERE checkpoint_id = 4) FROM sog.checkpoint WHERE id = 4}),
	'true/0', 'checkpoint 4: with no attempt open, its policy (keep 0) prunes through applied');
is( $node->safe_psql(
		'postgres', qq{SET ROLE sog_worker; SELECT sog.apply_batch(4, 2, ARRAY['$ANCHOR', '1000']::sog.position[],
	ARRAY[sog.payload_digest(convert_to('4:$ANCHOR', 'UTF8')), sog.payload_digest('z')])}),
	'{f,f}',
	'checkpoint 4: pruned events are answered false');

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
