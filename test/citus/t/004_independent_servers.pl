# 004_independent_servers.pl: the second topology.  The stream's partitions
# are spread over two independent PostgreSQL servers, without Citus; each
# holds its own partitions' sink rows, checkpoints and receipts, and the
# consumer routes every partition to its server (here: partition p to
# server p mod 2).  No transaction spans two servers - max_prepared_
# transactions is 0 on both, so none could - and each server keeps the
# guard's promise for its partitions alone: a crash of one server stops
# only its partitions, which resume from their own applied positions.
#
# Cluster.pm's init writes "fsync = off".  That does not weaken this test:
# only PostgreSQL processes are killed, never the operating system, so
# every WAL record written reaches the files; crash recovery is what is
# tested.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use CitusTest;

my @servers = map {
	CitusTest::plain_node("server$_", max_prepared_transactions => 0)
} (0, 1);
for my $s (@servers)
{
	$s->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION stream_offset_guard;
CREATE TABLE sink (partition int NOT NULL, pos bigint NOT NULL, payload text NOT NULL);});
}

# The consumer's routing: partition -> server.
sub server_of { return $servers[ $_[0] % 2 ]; }

my @parts = (0, 1, 2, 3);
my (%cp, %gen);
for my $p (@parts)
{
	($cp{$p}, $gen{$p}) = CitusTest::checkpoint(server_of($p), $p, "w-$p");
}

for my $p (@parts)
{
	is(CitusTest::deliver(server_of($p), $cp{$p}, $gen{$p}, $p, 1, 20), 0,
		"partition $p: 1..20 committed on " . server_of($p)->name);
}
for my $p (@parts)
{
	CitusTest::invariants('first pages', server_of($p), [], $cp{$p}, $p, 20);
}
for my $s (@servers)
{
	my $here = join ',', grep { server_of($_) == $s } @parts;
	is($s->safe_psql('postgres', 'SELECT string_agg(DISTINCT partition::text, \',\' ORDER BY partition::text) FROM sink'),
		$here, $s->name . " holds the sink rows of partitions $here only");
}

# Server 0 killed while partition 0's sink transaction is open; server 1
# goes on meanwhile.
my $open = $servers[0]->background_psql('postgres', on_error_stop => 0);
$open->query_safe('BEGIN');
$open->query_safe(CitusTest::sink_insert($cp{0}, $gen{0}, 0, 21, 30));
CitusTest::kill9_restart($servers[0], sub {
	for my $p (1, 3)
	{
		is(CitusTest::deliver($servers[1], $cp{$p}, $gen{$p}, $p, 21, 30), 0,
			"partition $p goes on while server 0 is down");
	}
});
eval { $open->quit };
for my $p (0, 2)
{
	is($servers[0]->safe_psql('postgres', "SELECT applied_position FROM sog.status WHERE checkpoint_id = $cp{$p}"),
		'20', "partition $p: after the crash of server 0, the applied position is still 20");
	is(CitusTest::deliver($servers[0], $cp{$p}, $gen{$p}, $p, 21, 30), 0,
		"partition $p: 21..30 delivered after server 0's restart");
}

# A crash right after acknowledged commits: they are all there.
$servers[1]->safe_psql('postgres', CitusTest::sink_txn($cp{1}, $gen{1}, 1, 31, 40));
CitusTest::kill9_restart($servers[1]);
is(CitusTest::deliver($servers[1], $cp{1}, $gen{1}, 1, 31, 40), 0,
	'partition 1: 31..40, acknowledged before the crash, replay as duplicates');

my %n = (0 => 30, 1 => 40, 2 => 30, 3 => 30);
for my $p (@parts)
{
	CitusTest::invariants('after the crashes', server_of($p), [], $cp{$p}, $p, $n{$p});
	my $s = server_of($p);
	$s->safe_psql('postgres', "SELECT sog.claim($cp{$p}, 'w-$p-successor')");
	CitusTest::zombie_fenced("partition $p", $s, $cp{$p}, $gen{$p}, $p, $n{$p} + 1);
}

# What the guard cannot see across servers: a consumer routed to the wrong
# server gets a new checkpoint there (each server has its own), so the
# routing map must stay fixed while consumers run, and a partition moves
# only with its checkpoint and receipts.
my $wrong = $servers[1]->safe_psql('postgres',
	"SELECT id FROM sog.register('citus-test', 'orders', '0')");
ok($wrong =~ /^\d+$/, 'server 1 registers a checkpoint of its own for partition 0 (routing is the consumer\'s job)');
is($servers[1]->safe_psql('postgres', "SELECT count(*) FROM sog.status WHERE \"partition\" = '0'"),
	'1', 'one server does not see the other\'s checkpoints');

done_testing();
