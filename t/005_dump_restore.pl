# 005_dump_restore.pl: pg_dump and a restore reproduce every checkpoint,
# receipt, gap, manifest, recovery attempt and user-added provider row of the
# extension (docs/operations.md: roles and grants, backup and restore), and the restored state behaves: a replay
# is still recognised as duplicates, the fence still holds, and open gaps are
# still open.  Seeded provider rows are not dumped (CREATE EXTENSION seeds
# them again), so the restore does not fail on duplicates.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $node = PostgreSQL::Test::Cluster->new('dump_restore');
$node->init;
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql(
	'src', q{
CREATE EXTENSION stream_offset_guard;
INSERT INTO sog.provider (name, seek_inclusive, empty_page_is_barrier, may_backfill)
VALUES ('my_feed', true, true, false);
SELECT sog.register('dump', 'orders', '0', provider => 'my_feed');
SELECT sog.register('dump', 'orders', '1');
SELECT sog.claim(1, 'w1');
SELECT sog.claim(2, 'w1');
SELECT sog.apply_batch(1, 1, ARRAY['1', '2', '3', '5']::sog.position[],
	ARRAY(SELECT sog.payload_digest(convert_to('p' || g, 'UTF8')) FROM unnest(ARRAY[1, 2, 3, 5]) g));
SELECT sog.apply_batch(1, 1, ARRAY(SELECT g::sog.position FROM generate_series(6, 500) g),
	ARRAY(SELECT sog.payload_digest(convert_to('p' || g, 'UTF8')) FROM generate_series(6, 500) g));
SELECT sog.commit_page(1, 1, NULL, 'T1');
SELECT sog.note_read(2, 1, '40', NULL, 40);
SELECT sog.claim(2, 'w2');            -- fails closed: gap (none, 40], no_buffer_hash
SELECT sog.begin_recovery(1, 1, 'T1', NULL, '3', true);
});

my $tables = q{
SELECT 'checkpoint', count(*), md5(string_agg(c::text, '|' ORDER BY id)) FROM sog.checkpoint c
UNION ALL SELECT 'receipts', count(*), md5(string_agg(r::text, '|' ORDER BY r.checkpoint_id, r."position"))
  FROM (SELECT c.id AS checkpoint_id, x.* FROM sog.checkpoint c, sog.receipts(c.id) x) r
UNION ALL SELECT 'gap', count(*), md5(string_agg((g.id, g.checkpoint_id, g.from_position, g.to_position, g.reason, g.resolved_at)::text, '|' ORDER BY id)) FROM sog.gap g
UNION ALL SELECT 'manifest_log', count(*), md5(string_agg((m.id, m.kind, m.verdict, m.resume_from, m.manifest_digest)::text, '|' ORDER BY id)) FROM sog.manifest_log m
UNION ALL SELECT 'recovery', count(*), md5(string_agg((r.id, r.state, r.anchor)::text, '|' ORDER BY id)) FROM sog.recovery r
UNION ALL SELECT 'provider', count(*), md5(string_agg(p::text, '|' ORDER BY name)) FROM sog.provider p
ORDER BY 1};
my $before = $node->safe_psql('src', $tables);

my $dump = $node->basedir . '/src.dump';
command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $dump ],
	'pg_dump of a database using the extension');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into an empty database');

my $after = $node->safe_psql('dst', $tables);
is($after, $before, 'checkpoints, receipts, gaps, manifests, attempts and providers are reproduced');
like($after, qr/^receipts\|499\|/m, '499 receipts restored (4 + 495)');

# The restored state behaves like the original.
is( $node->safe_psql(
		'dst', q{SELECT sog.apply_batch(1, 1, ARRAY['2', '501']::sog.position[],
	ARRAY[sog.payload_digest(convert_to('p2', 'UTF8')), sog.payload_digest(convert_to('p501', 'UTF8'))])}),
	'{f,t}',
	'a replayed event is a duplicate after the restore, a new one is applied');
my ($rc, $out, $err) = $node->psql('dst', q{SELECT sog.apply(1, 0, '600', sog.payload_digest('x'))});
like($err, qr/is fenced/, 'the fence survives the restore');
is($node->safe_psql('dst', 'SELECT count(*) FROM sog.unresolved_gaps'),
	'1', 'the open gap is still open');
is( $node->safe_psql(
		'dst', q{SELECT (sog.register('dump', 'orders', '2')).id}),
	'3', 'identity sequences continue after the restored ids');

SogTest::storage_verifies($node, 'src');
SogTest::storage_verifies($node, 'dst');
$node->stop;
done_testing();
