# 008_exporter.pl: the real prometheus-postgres-exporter (Debian's package)
# with monitoring/postgres_exporter.yml, against a throwaway cluster, scraped
# over HTTP on 127.0.0.1: every series of monitoring/postgres_exporter.yml is
# there for each checkpoint (running with lag, replaying, failed_closed with
# a gap of a controlled age, multi-component positions, an open recovery
# attempt, never claimed), with the values sog.checkpoint_metrics has; the
# series follow a state change; and a role without sog.grant_operator gets
# a scrape error instead of metrics.
#
# Skipped when the exporter is not installed (apt-get install
# prometheus-postgres-exporter); SOG_POSTGRES_EXPORTER names another binary.

use strict;
use warnings;

use FindBin;
use File::Spec;
use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run;
use Time::HiRes qw(usleep);

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $exporter = $ENV{SOG_POSTGRES_EXPORTER};
if (!$exporter)
{
	foreach my $dir (split(/:/, $ENV{PATH} // ''), '/usr/bin', '/usr/local/bin')
	{
		foreach my $name ('prometheus-postgres-exporter', 'postgres_exporter')
		{
			if (-x "$dir/$name")
			{
				$exporter = "$dir/$name";
				last;
			}
		}
		last if $exporter;
	}
}
plan skip_all =>
  'prometheus-postgres-exporter is not installed (apt-get install prometheus-postgres-exporter, or set SOG_POSTGRES_EXPORTER)'
  unless $exporter && -x $exporter;

my $queries = File::Spec->rel2abs("$FindBin::Bin/../monitoring/postgres_exporter.yml");
ok(-r $queries, "the custom-queries file $queries is readable");

my $node = PostgreSQL::Test::Cluster->new('exporter', port => 55960);
$node->init;
$node->start;

# The roles: a consumer for the workers, the exporter's operator role, and
# a role with no grant of the extension.
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION stream_offset_guard;
CREATE ROLE sog_worker LOGIN;
CREATE ROLE sog_monitor LOGIN;
CREATE ROLE no_grants LOGIN;
SELECT sog.grant_consumer('sog_worker');
SELECT sog.grant_operator('sog_monitor');
});
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'stream_offset_guard'}),
	SogTest::default_version(), 'extension installed at the default version');

my $H1 = 'a' x 64;    # buffer hashes where nothing checks them against records: any 64 hex digits
my $H2 = 'b' x 64;

# Checkpoints in every state, created by the consumer role.
$node->safe_psql(
	'postgres', qq{
SET ROLE sog_worker;
-- 1: running, 100 applied, read through 150 (lag 50)
SELECT (sog.register('orders', 'orders', '0', provider => 'kafka')).id;
SELECT (sog.claim(1, 'w1')).verdict;
SELECT sog.apply_batch(1, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 100) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o0:' || g, 'UTF8')) FROM generate_series(1, 100) g));
SELECT sog.note_read(1, 1, '150', sog.buffer_hash(ARRAY(SELECT g::sog.position FROM generate_series(101, 150) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o0:' || g, 'UTF8')) FROM generate_series(101, 150) g)), 50);
-- 2: replaying: the successor of a worker that read 20 and applied 10
SELECT (sog.register('orders', 'orders', '1', provider => 'kafka')).id;
SELECT (sog.claim(2, 'w1')).verdict;
SELECT sog.apply_batch(2, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 10) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o1:' || g, 'UTF8')) FROM generate_series(1, 10) g));
SELECT sog.note_read(2, 1, '20', '$H2', 10);
SELECT (sog.claim(2, 'w2')).verdict;
-- 3: failed_closed: read 30 without a hash, applied 5
SELECT (sog.register('orders', 'orders', '2', provider => 'kafka')).id;
SELECT (sog.claim(3, 'w1')).verdict;
SELECT sog.apply_batch(3, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 5) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o2:' || g, 'UTF8')) FROM generate_series(1, 5) g));
SELECT sog.note_read(3, 1, '30', NULL, 25);
SELECT (sog.claim(3, 'w2')).verdict;
-- 4: telemetry, Redis stream IDs (two components): no lag or position series
SELECT (sog.register('clicks', 'clicks', '0', criticality => 'telemetry', provider => 'redis_streams')).id;
SELECT (sog.claim(4, 'w1')).verdict;
SELECT sog.apply_batch(4, 1, ARRAY['1700000000000-0', '1700000000000-1', '1700000000001-0']::sog.position[],
	ARRAY[sog.payload_digest('c1'), sog.payload_digest('c2'), sog.payload_digest('c3')]);
SELECT sog.note_read(4, 1, '1700000000002-5', '$H1', 4);
-- 5: an open expired-token recovery attempt, anchored at 40
SELECT (sog.register('orders', 'orders', '3', provider => 'kafka')).id;
SELECT (sog.claim(5, 'w1')).verdict;
SELECT sog.apply_batch(5, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 50) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o3:' || g, 'UTF8')) FROM generate_series(1, 50) g));
SELECT sog.commit_page(5, 1, NULL, 'T1');
SELECT (sog.begin_recovery(5, 1, 'T1', NULL, '40', true)).state;
-- 6: registered, never claimed
SELECT (sog.register('idle', 'idle', '0')).id;
});

# Ages we control (as the superuser): the failed checkpoint's gap was
# detected 30 minutes ago and its applied position last moved 10 minutes ago.
$node->safe_psql(
	'postgres', q{
UPDATE sog.gap SET detected_at = now() - interval '1800 seconds' WHERE checkpoint_id = 3;
UPDATE sog.checkpoint SET applied_at = now() - interval '600 seconds' WHERE id = 3;
});
is( $node->safe_psql(
		'postgres', q{SELECT string_agg(checkpoint_id || ':' || state, ',' ORDER BY checkpoint_id) FROM sog.checkpoint_metrics}),
	'1:running,2:replaying,3:failed_closed,4:running,5:running,6:running',
	'checkpoints set up in the states the test needs');

# A free port in 55900-55949 on 127.0.0.1.
sub free_port
{
	for my $p (55900 .. 55949)
	{
		my $s = IO::Socket::INET->new(
			LocalAddr => '127.0.0.1',
			LocalPort => $p,
			Proto => 'tcp',
			Listen => 1,
			ReuseAddr => 0);
		next unless $s;
		close($s);
		return $p;
	}
	die 'no free port in 55900-55949';
}

my $http = HTTP::Tiny->new(timeout => 10);
my @exporters;

# Every built-in collector of this exporter, switched off: the test reads
# only what the extension's queries give.  Their names change between
# versions (0.11's bgwriter is stat_bgwriter from 0.15 on), so they are read
# from --help.
my @no_collectors = do
{
	my $help = `$exporter --help 2>&1`;
	my %c = map { $_ => 1 } $help =~ /--(?:\[no-\])?collector\.([a-z_]+)/g;
	map { "--no-collector.$_" } sort keys %c;
};

# Start the exporter as $role; returns the base URL once it answers.
sub start_exporter
{
	my ($role) = @_;
	my $port = free_port();
	my $log = $node->basedir . "/exporter_$role.log";
	local $ENV{DATA_SOURCE_NAME} =
	  'host=' . $node->host . ' port=' . $node->port . " user=$role dbname=postgres sslmode=disable";
	my $h = IPC::Run::start(
		[
			$exporter, "--web.listen-address=127.0.0.1:$port",
			"--extend.query-path=$queries", '--disable-default-metrics',
			'--disable-settings-metrics', @no_collectors, '--log.level=info'
		],
		'<', \undef, '>', $log, '2>&1');
	push @exporters, $h;
	my $url = "http://127.0.0.1:$port/metrics";
	for (1 .. 300)
	{
		my $r = $http->get($url);
		return $url if $r->{success};
		usleep(100_000);
	}
	die "the exporter did not answer on $url; its log:\n" . slurp_file($log);
}

# Parse the text exposition format into { name => [ { labels => {}, value => n } ] }.
sub scrape
{
	my ($url) = @_;
	my $r = $http->get($url);
	die "GET $url: $r->{status} $r->{reason}" unless $r->{success};
	my %series;
	foreach my $line (split /\n/, $r->{content})
	{
		next if $line =~ /^#/ || $line !~ /\S/;
		$line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/
		  or die "unparsed line: $line";
		my ($name, $lab, $value) = ($1, $2 // '', $3);
		my %labels;
		while ($lab =~ /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g)
		{
			my ($k, $v) = ($1, $2);
			$v =~ s/\\n/\n/g;
			$v =~ s/\\(["\\])/$1/g;
			$labels{$k} = $v;
		}
		push @{ $series{$name} }, { labels => \%labels, value => $value };
	}
	return \%series;
}

# The one sample of $name for checkpoint $id (undef when absent).
sub sample
{
	my ($s, $name, $id) = @_;
	my @m = grep { ($_->{labels}{checkpoint_id} // '') eq $id } @{ $s->{$name} // [] };
	die "several $name series for checkpoint $id" if @m > 1;
	return @m ? $m[0] : undef;
}

# What the database says, one hash per checkpoint, read right after a scrape.
sub metrics_from_db
{
	my %db;
	my $rows = $node->safe_psql(
		'postgres', q{
SELECT m.checkpoint_id, m.consumer, m.stream, m."partition", m.criticality, m.state,
       m.generation, coalesce(m.applied_position::text, ''), m.lag, m.open_gaps,
       m.oldest_open_gap_seconds, m.seconds_since_apply, m.receipts, m.open_recoveries,
       coalesce(s.source_cursor OPERATOR(sog.>) s.applied_position
                OR (s.applied_position IS NULL AND s.source_cursor IS NOT NULL), false)::int
  FROM sog.checkpoint_metrics m JOIN sog.status s USING (checkpoint_id)
 ORDER BY 1});
	foreach my $row (split /\n/, $rows)
	{
		my @f = split /\|/, $row, -1;
		$db{ $f[0] } = {
			consumer => $f[1],
			stream => $f[2],
			partition => $f[3],
			criticality => $f[4],
			state => $f[5],
			generation => $f[6],
			applied_position => $f[7],
			lag => $f[8],
			open_gaps => $f[9],
			oldest_open_gap_seconds => $f[10],
			seconds_since_apply => $f[11],
			receipts => $f[12],
			open_recoveries => $f[13],
			behind => $f[14],
		};
	}
	return \%db;
}

# Every series against the database.  Ages may differ by the time between
# the scrape and the query.
sub check_scrape
{
	my ($s, $db, $what) = @_;

	is($s->{pg_up}[0]{value}, '1', "$what: pg_up is 1");
	is($s->{pg_exporter_last_scrape_error}[0]{value}, '0', "$what: no scrape error");
	is($s->{pg_exporter_user_queries_load_error}[0]{value}, '0', "$what: the queries file loaded");

	foreach my $id (sort { $a <=> $b } keys %$db)
	{
		my $d = $db->{$id};
		my $cp = "$what, checkpoint $id ($d->{state})";

		my %exact = (
			sog_checkpoint_generation => $d->{generation},
			sog_checkpoint_open_gaps => $d->{open_gaps},
			sog_checkpoint_receipts => $d->{receipts},
			sog_checkpoint_open_recoveries => $d->{open_recoveries},
			sog_checkpoint_behind => $d->{behind},
			sog_checkpoint_running => ($d->{state} eq 'running' ? 1 : 0),
			sog_checkpoint_replaying => ($d->{state} eq 'replaying' ? 1 : 0),
			sog_checkpoint_failed_closed => ($d->{state} eq 'failed_closed' ? 1 : 0));
		foreach my $name (sort keys %exact)
		{
			my $m = sample($s, $name, $id);
			ok(defined $m, "$cp: $name is exported") or next;
			cmp_ok($m->{value}, '==', $exact{$name}, "$cp: $name = $exact{$name}");
		}

		my $m = sample($s, 'sog_checkpoint_open_gaps', $id);
		if ($m)
		{
			is( join(',', map { "$_=" . ($m->{labels}{$_} // '(none)') } qw(consumer stream partition criticality)),
				"consumer=$d->{consumer},stream=$d->{stream},partition=$d->{partition},criticality=$d->{criticality}",
				"$cp: labels consumer, stream, partition, criticality");
		}

		foreach my $name ('sog_checkpoint_oldest_open_gap_seconds', 'sog_checkpoint_seconds_since_apply')
		{
			my $m = sample($s, $name, $id);
			(my $col = $name) =~ s/^sog_checkpoint_//;
			ok(defined $m, "$cp: $name is exported") or next;
			ok( abs($m->{value} - $d->{$col}) < 5,
				"$cp: $name = $m->{value}, the database says $d->{$col} (within 5 s)");
		}

		if ($d->{applied_position} ne '')
		{
			my $lag = sample($s, 'sog_checkpoint_lag', $id);
			my $pos = sample($s, 'sog_checkpoint_applied_position', $id);
			ok(defined $lag && $lag->{value} == $d->{lag}, "$cp: sog_checkpoint_lag = $d->{lag}");
			ok(defined $pos && $pos->{value} == $d->{applied_position},
				"$cp: sog_checkpoint_applied_position = $d->{applied_position}");
		}
		else
		{
			ok( !defined sample($s, 'sog_checkpoint_lag', $id)
				  && !defined sample($s, 'sog_checkpoint_applied_position', $id),
				"$cp: no lag or applied position series (position not a one-component number)");
		}
	}
	return;
}

my $url = start_exporter('sog_monitor');
note "exporter $exporter on $url";

my $s = scrape($url);
my $db = metrics_from_db();
check_scrape($s, $db, 'first scrape');

# What the chosen checkpoints must show, independently of the view.
my $v = sub { my ($n, $id) = @_; my $m = sample($s, $n, $id); defined $m ? $m->{value} : 'absent' };
is($v->('sog_checkpoint_lag', 1), 50, 'running checkpoint 1: lag 50 (read 150, applied 100)');
is($v->('sog_checkpoint_applied_position', 1), 100, 'running checkpoint 1: applied position 100');
is($v->('sog_checkpoint_receipts', 1), 100, 'running checkpoint 1: 100 receipts');
is($v->('sog_checkpoint_replaying', 2), 1, 'checkpoint 2 is replaying');
is($v->('sog_checkpoint_generation', 2), 2, 'checkpoint 2: generation 2 after the second claim');
is($v->('sog_checkpoint_failed_closed', 3), 1, 'checkpoint 3 failed closed');
is($v->('sog_checkpoint_open_gaps', 3), 1, 'checkpoint 3: one open gap');
ok(abs($v->('sog_checkpoint_oldest_open_gap_seconds', 3) - 1800) < 10,
	'checkpoint 3: oldest open gap about 1800 s old: ' . $v->('sog_checkpoint_oldest_open_gap_seconds', 3));
ok(abs($v->('sog_checkpoint_seconds_since_apply', 3) - 600) < 10,
	'checkpoint 3: about 600 s since the last apply: ' . $v->('sog_checkpoint_seconds_since_apply', 3));
is($v->('sog_checkpoint_lag', 4), 'absent', 'checkpoint 4 (Redis stream IDs): no lag series');
is($v->('sog_checkpoint_behind', 4), 1, 'checkpoint 4: behind its read cursor');
is($v->('sog_checkpoint_open_recoveries', 5), 1, 'checkpoint 5: one open recovery attempt');
is($v->('sog_checkpoint_generation', 6), 0, 'checkpoint 6: generation 0, never claimed');
is($v->('sog_checkpoint_lag', 6), 'absent', 'checkpoint 6: nothing applied, no lag series');
is( join(' ', sort grep { /^sog_/ } keys %$s),
	join(' ', sort map { "sog_checkpoint_$_" } qw(running replaying failed_closed generation open_gaps
		  oldest_open_gap_seconds seconds_since_apply receipts open_recoveries behind lag applied_position)),
	'the twelve sog_ metrics, no other');
foreach my $name (grep { /^sog_/ } keys %$s)
{
	my @labelsets = map { join(',', sort keys %{ $_->{labels} }) } @{ $s->{$name} };
	my %distinct = map { $_ => 1 } @labelsets;
	ok(!grep({ !/\bcheckpoint_id\b.*\bconsumer\b.*\bcriticality\b.*\bpartition\b.*\bstream\b/ } keys %distinct),
		"$name: every series has the labels checkpoint_id, consumer, criticality, partition, stream");
}

# Change states: the successor verifies checkpoint 2's gap (same hash), an
# operator resolves checkpoint 3's gap, checkpoint 1 applies what it read.
$node->safe_psql(
	'postgres', qq{
SET ROLE sog_worker;
SELECT sog.verify_gap(2, 2, '$H2');
SELECT sog.apply_batch(1, 1, ARRAY(SELECT g::sog.position FROM generate_series(101, 150) g),
	ARRAY(SELECT sog.payload_digest(convert_to('o0:' || g, 'UTF8')) FROM generate_series(101, 150) g));
RESET ROLE;
SET ROLE sog_monitor;
SELECT sog.resolve_gap((SELECT gap_id FROM sog.unresolved_gaps WHERE checkpoint_id = 3), 'accepted_loss',
	'008_exporter: the business accepted the loss');
});
$s = scrape($url);
$db = metrics_from_db();
check_scrape($s, $db, 'second scrape');
is($v->('sog_checkpoint_running', 2), 1, 'checkpoint 2 runs after verify_gap');
is($v->('sog_checkpoint_replaying', 2), 0, 'checkpoint 2 no longer replaying');
is($v->('sog_checkpoint_failed_closed', 3), 0, 'checkpoint 3 no longer failed closed');
is($v->('sog_checkpoint_open_gaps', 3) . '/' . $v->('sog_checkpoint_oldest_open_gap_seconds', 3),
	'0/0', 'checkpoint 3: no open gap, age 0');
is($v->('sog_checkpoint_lag', 1) . '/' . $v->('sog_checkpoint_applied_position', 1) . '/' . $v->('sog_checkpoint_behind', 1),
	'0/150/0', 'checkpoint 1: lag 0 at 150 after applying what it read');

# A role without the operator grant: the exporter connects, its queries fail.
my $url2 = start_exporter('no_grants');
my $s2 = scrape($url2);
is($s2->{pg_up}[0]{value}, '1', 'no_grants: the exporter connects');
is($s2->{pg_exporter_last_scrape_error}[0]{value}, '1', 'no_grants: the scrape reports an error');
is(scalar(grep { /^sog_/ } keys %$s2), 0, 'no_grants: no sog_ series');

foreach my $h (@exporters)
{
	$h->signal('TERM');
	$h->finish;
}
ok(1, 'exporters stopped');

SogTest::storage_verifies($node, 'postgres');
$node->stop;
done_testing();
