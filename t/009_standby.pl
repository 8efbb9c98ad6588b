# 009_standby.pl: on a hot standby, every stateful function refuses with
# 25006 and a hint that names the next step, and everything that reads
# works: the views, receipts, gaps, owner_check, retention_horizon,
# verify_storage (issue 12).  The standby streams from a primary that holds
# live state; after a refusal the session is still usable, and nothing a
# refused call tried is visible anywhere.

use strict;
use warnings;

use FindBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use SogTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql(
	'postgres', q{
CREATE ROLE sb_app LOGIN;
CREATE ROLE sb_ops LOGIN;
CREATE EXTENSION stream_offset_guard;
CREATE EXTENSION amcheck;
SELECT sog.grant_consumer('sb_app');
SELECT sog.grant_operator('sb_ops');
SELECT sog.register('sb', 'orders', '0', provider => 'kafka');
SELECT sog.register('sb', 'orders', '1');
SELECT sog.claim(1, 'w1');
SELECT sog.claim(2, 'w1');
SELECT sog.apply_batch(1, 1, ARRAY(SELECT g::sog.position FROM generate_series(1, 100) g),
	ARRAY(SELECT sog.payload_digest(convert_to('p' || g, 'UTF8')) FROM generate_series(1, 100) g));
SELECT sog.commit_page(1, 1, NULL, 'T1');
SELECT sog.report_gap(2, 1, '10', 'retention');
SELECT sog.set_retention(consumer => 'sb', keep_positions => 10);
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');

my $d = q{sog.payload_digest('\x01')};
my $hash = q{repeat('a', 64)};
# every stateful function, called as on the primary it would succeed or
# fail for its own reasons: on the standby each must say 25006
my @stateful = (
	[ 'sb_app', q{SELECT sog.register('sb', 'orders', '2')} ],
	[ 'sb_app', q{SELECT sog.claim(1, 'w2')} ],
	[ 'sb_app', qq{SELECT sog.note_read(1, 1, '120', $hash, 20)} ],
	[ 'sb_app', qq{SELECT sog.apply(1, 1, '101', $d)} ],
	[ 'sb_app', qq{SELECT sog.apply_batch(1, 1, '{101,102}', ARRAY[$d, $d])} ],
	[ 'sb_app', qq{SELECT sog.apply_batch_int8(1, 1, '{101,102}', ARRAY[$d, $d])} ],
	[ 'sb_app', qq{SELECT sog.apply_run(1, 1, 101, $d)} ],
	[ 'sb_app', qq{SELECT sog.halt(1, 1, '100', NULL, 0)} ],
	[ 'sb_app', qq{SELECT sog.verify_gap(1, 1, $hash)} ],
	[ 'sb_app', q{SELECT sog.skip_gap(1, 1, 'operator_accepted')} ],
	[ 'sb_app', q{SELECT sog.commit_page(1, 1, 'T1', 'T2')} ],
	[ 'sb_app', q{SELECT sog.report_gap(1, 1, '200', 'retention')} ],
	[ 'sb_app', q{SELECT sog.begin_recovery(1, 1, 'T1', NULL, '100', true)} ],
	[ 'sb_ops', q{SELECT sog.resolve_gap(1, 'accepted_loss', 'gone')} ],
	[ 'sb_ops', q{SELECT sog.prune_receipts(1, '50')} ],
	[ 'sb_ops', q{SELECT sog.reconfigure(1, criticality => 'telemetry')} ],
	[ 'sb_ops', q{SELECT sog.set_retention(keep_positions => 5)} ],
	[ 'sb_ops', q{SELECT sog.prune_due(1)} ],
	[ 'sb_ops', q{CALL sog.prune_due()} ],
	[ 'postgres', q{SELECT sog.grant_consumer('sb_ops')} ],
	[ 'postgres', q{SELECT sog.revoke_consumer('sb_app')} ],
	[ 'postgres', q{SELECT sog.grant_operator('sb_app')} ],
	[ 'postgres', q{SELECT sog.refresh_grants()} ],);

my $state_before = $standby->safe_psql('postgres',
	q{SELECT md5(string_agg(c::text, '|' ORDER BY id)) FROM sog.checkpoint c});
for my $case (@stateful)
{
	my ($role, $sql) = @$case;
	my ($ret, $out, $err) = $standby->psql('postgres',
		"\\set VERBOSITY verbose\nSET ROLE $role;\n$sql;\nSELECT 'still usable';", on_error_stop => 0);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5})/;
	is($state // 'none', '25006', "standby: $sql refuses with 25006");
	like($err, qr/HINT:\s+\S/, "  with a hint") or diag($err);
	like($out, qr/still usable/, "  and the session goes on");
}
is($standby->safe_psql('postgres', q{SELECT md5(string_agg(c::text, '|' ORDER BY id)) FROM sog.checkpoint c}),
	$state_before, 'no refused call changed anything');

# what reads works, for the roles that may read
my @reads = (
	[ 'sb_app', q{SELECT count(*) FROM sog.status}, '2' ],
	[ 'sb_app', q{SELECT count(*) FROM sog.receipts(1)}, '100' ],
	[ 'sb_app', q{SELECT string_agg(reason, ',') FROM sog.gaps(2)}, 'retention' ],
	[ 'sb_app', q{SELECT sog.owner_check(1, 1)}, 't' ],
	[ 'sb_ops', q{SELECT count(*) FROM sog.unresolved_gaps}, '1' ],
	[ 'sb_ops', q{SELECT string_agg(state, ',' ORDER BY checkpoint_id) FROM sog.checkpoint_metrics}, 'running,failed_closed' ],
	[ 'sb_ops', q{SELECT through FROM sog.retention_due WHERE checkpoint_id = 1}, '90' ],
	[ 'sb_ops', q{SELECT sog.retention_horizon(1)}, '90' ],
	[ 'sb_ops', q{SELECT count(*) FROM sog.reconfiguration}, '0' ],);
for my $case (@reads)
{
	my ($role, $sql, $want) = @$case;
	is($standby->safe_psql('postgres', "SET ROLE $role; $sql"), $want, "standby: $sql");
}
SogTest::storage_verifies($standby, 'postgres');

# and the primary goes on: the standby refused, nothing is held
is($primary->safe_psql('postgres', qq{SET ROLE sb_app; SELECT sog.apply(1, 1, '101', $d)}), 't',
	'the primary applies meanwhile');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', q{SELECT applied_position FROM sog.status WHERE checkpoint_id = 1}), '101',
	'and the standby sees it');

$standby->stop;
$primary->stop;
done_testing();
