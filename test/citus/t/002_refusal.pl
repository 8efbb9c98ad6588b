# 002_refusal.pl: an operator turns one of the extension's own tables into
# a Citus distributed or reference table.  Its rows then live on the
# workers, and the coordinator's heap - which the extension reads and
# writes through the executor under its row locks - is stale.  So every
# stateful function must refuse with 0A000 naming the table, in new
# sessions and in one that used the extension before; nothing stored may be
# lost; and once the table is local again, everything works again.
#
# Which conversions Citus accepts is found out here, not assumed: each
# table of schema sog is offered to create_distributed_table (on its first
# column; sog.receipt on checkpoint_id) and create_reference_table, and
# each accepted one is tested.  Then the race: a conversion that commits
# while a sink transaction waits for the table's lock.
#
# Cluster.pm's init writes "fsync = off": see CitusTest.pm (no operating
# system crash happens here, so it does not weaken what is tested).

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use CitusTest;

my ($coord, $w1, $w2) = CitusTest::cluster('refusal');
my @workers = ($w1, $w2);

# --- state worth keeping ----------------------------------------------------------------
#
# cp_k: a kafka checkpoint with 20 events in the sink and a provider token;
# cp_r: another one with an open recovery attempt; cp_g: a telemetry
# checkpoint with an open gap; a consumer role and an operator role with
# grants (sog.role_grant, and privileges on the views).

my $pk = 50;
my $cpk = $coord->safe_psql('postgres',
	"SELECT id FROM sog.register('citus-refusal', 'orders', '$pk', 'critical', 'kafka', 'topic=orders')");
my $genk = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpk, 'w-k')");
$coord->safe_psql('postgres',
	'BEGIN; ' . CitusTest::sink_insert($cpk, $genk, $pk, 1, 20) . "; SELECT sog.commit_page($cpk, $genk, NULL, 'K1'); COMMIT;");

my $pr = 51;
my $cpr = $coord->safe_psql('postgres',
	"SELECT id FROM sog.register('citus-refusal', 'orders', '$pr', 'critical', 'kafka', 'topic=orders')");
my $genr = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpr, 'w-r')");
$coord->safe_psql('postgres',
	'BEGIN; ' . CitusTest::sink_insert($cpr, $genr, $pr, 1, 10) . "; SELECT sog.commit_page($cpr, $genr, NULL, 'R1'); COMMIT;");
my $rid = $coord->safe_psql('postgres',
	"SELECT id FROM sog.begin_recovery($cpr, $genr, 'R1', 'topic=orders', '10', false)");

my $cpg = $coord->safe_psql('postgres',
	"SELECT id FROM sog.register('citus-refusal', 'metrics', '0', 'telemetry')");
my $geng = $coord->safe_psql('postgres', "SELECT generation FROM sog.claim($cpg, 'w-g')");
my $gapid = $coord->safe_psql('postgres',
	"SELECT sog.report_gap($cpg, $geng, '10', 'retention', 'trimmed by the broker')");

$coord->safe_psql(
	'postgres', q{
CREATE ROLE regress_consumer LOGIN;
CREATE ROLE regress_operator LOGIN;
SELECT sog.grant_consumer('regress_consumer', 'citus-refusal');
SELECT sog.grant_consumer('regress_consumer', 'citus-other');
SELECT sog.grant_operator('regress_operator');
});
# a retention policy, so that sog.prune_due has receipts to prune
$coord->safe_psql('postgres', "SELECT sog.set_retention(checkpoint_id => $cpk, keep_positions => 15)");

# Everything the extension stores, as text: each table of schema sog, row
# by row, and the privileges of its relations.
my $state_sql = q{
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
	SELECT 'checkpoint ' || t::text AS x FROM sog.checkpoint t UNION ALL
	SELECT 'receipt ' || t::text FROM sog.receipt t UNION ALL
	SELECT 'gap ' || t::text FROM sog.gap t UNION ALL
	SELECT 'manifest_log ' || t::text FROM sog.manifest_log t UNION ALL
	SELECT 'provider ' || t::text FROM sog.provider t UNION ALL
	SELECT 'recovery ' || t::text FROM sog.recovery t UNION ALL
	SELECT 'reconfiguration ' || t::text FROM sog.reconfiguration t UNION ALL
	SELECT 'retention ' || t::text FROM sog.retention t UNION ALL
	SELECT 'role_grant ' || t::text FROM sog.role_grant t UNION ALL
	SELECT 'acl ' || c.relname || ' ' || coalesce(c.relacl::text, 'default')
	  FROM pg_class c WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind IN ('r', 'v') UNION ALL
	SELECT 'extconfig ' || c.rel::regclass::text || ' ' || c.cond
	  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS c(rel, cond)
	 WHERE e.extname = 'stream_offset_guard' UNION ALL
	SELECT 'member ' || pg_describe_object(d.classid, d.objid, 0)
	  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
	 WHERE e.extname = 'stream_offset_guard' AND d.deptype = 'e' AND d.classid = 'pg_class'::regclass
) s};
my $receipts_sql = "SELECT string_agg(\"position\"::text || ':' || encode(payload_digest, 'hex'), ',' ORDER BY \"position\") FROM sog.receipts";
my $before = $coord->safe_psql('postgres', $state_sql);
my $receipts_k = $coord->safe_psql('postgres', "$receipts_sql($cpk)");
my $receipts_r = $coord->safe_psql('postgres', "$receipts_sql($cpr)");
like($receipts_k, qr/^1:[0-9a-f]{64},2:/, 'checkpoint k has its receipts');

# Every stateful function, with arguments it would accept.
my $d21 = "sog.payload_digest(convert_to('p$pk-e21', 'UTF8'))";
my @calls = (
	"SELECT sog.claim($cpk, 'w-x')",
	"SELECT sog.note_read($cpk, $genk, '25', sog.buffer_hash(ARRAY['21']::sog.position[], ARRAY[$d21]), 1)",
	"SELECT sog.apply($cpk, $genk, '21', $d21)",
	"SELECT sog.apply_batch($cpk, $genk, ARRAY['21']::sog.position[], ARRAY[$d21])",
	"SELECT sog.apply_batch_int8($cpk, $genk, ARRAY[21], ARRAY[$d21])",
	"SELECT sog.apply_run($cpk, $genk, 21, $d21)",
	"SELECT sog.halt($cpk, $genk, '20', NULL, 0)",
	"SELECT sog.verify_gap($cpk, $genk, repeat('0', 64))",
	"SELECT sog.skip_gap($cpg, $geng, 'metrics only')",
	"SELECT sog.resolve_gap($gapid, 'accepted_loss', 'test')",
	"SELECT sog.commit_page($cpk, $genk, 'K1', 'K2')",
	"SELECT * FROM sog.receipts($cpk)",
	"SELECT * FROM sog.gaps($cpg)",
	"SELECT sog.prune_receipts($cpk, '5')",
	"SELECT sog.report_gap($cpk, $genk, '30', 'retention', 'test')",
	"SELECT sog.owner_check($cpk, $genk)",
	"SELECT * FROM sog.begin_recovery($cpk, $genk, 'K1', 'topic=orders', '20', false)",
	"SELECT sog.recovery_event($rid, '11', sog.payload_digest(convert_to('p$pr-e11', 'UTF8')))",
	"SELECT * FROM sog.promote($rid, 'R2', '11')",
	"SELECT * FROM sog.reconfigure($cpk, note => 'test')",
	"SELECT sog.prune_due($cpk)",
	"CALL sog.prune_due()",
	"SELECT * FROM sog.register('citus-refusal', 'orders', 'new')");

# A session that uses the extension before, during and after.
my $session = $coord->background_psql('postgres', on_error_stop => 0);
is($session->query_safe("SELECT sog.owner_check($cpk, $genk)"), 't',
	'a long-lived session uses the extension');

# --- the conversions Citus accepts ----------------------------------------------------------

# (1.2: sog.receipt is partitioned; Citus converts a partitioned table with
# its partitions, and no partition alone)
my @tables = split /\n/, $coord->safe_psql('postgres',
	q{SELECT relname FROM pg_class WHERE relnamespace = 'sog'::regnamespace AND relkind IN ('r', 'p')
	   AND NOT relispartition AND relname <> 'citus_2pc' ORDER BY relname});
my @accepted;
for my $t (@tables)
{
	my $col = $t eq 'receipt' ? 'checkpoint_id' : $coord->safe_psql('postgres',
		"SELECT attname FROM pg_attribute WHERE attrelid = 'sog.$t'::regclass AND attnum = 1");
	for my $conv ("create_distributed_table('sog.$t', '$col')", "create_reference_table('sog.$t')")
	{
		my ($rc, $out, $err) = $coord->psql('postgres',
			"SET client_min_messages = warning; BEGIN; SELECT $conv; ROLLBACK;");
		if ($rc == 0)
		{
			push @accepted, [ $t, $conv ];
		}
		else
		{
			$err =~ s/^psql:<stdin>:\d+: //;
			$err =~ s/\n.*//s;
			note("Citus refuses $conv: $err");
		}
	}
}
ok(scalar(grep { $_->[1] eq "create_distributed_table('sog.receipt', 'checkpoint_id')" } @accepted),
	"Citus accepts create_distributed_table('sog.receipt', 'checkpoint_id')");
note('Citus accepts: ' . join(', ', map { $_->[1] } @accepted));

# Extension views over table $t (Citus re-creates them when it converts
# the table back).
sub dependent_views
{
	my ($t) = @_;
	return split /\n/, $coord->safe_psql('postgres', qq{
SELECT DISTINCT r.ev_class::regclass::text
  FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
 WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = 'sog.$t'::regclass
   AND r.ev_class <> 'sog.$t'::regclass
 ORDER BY 1});
}

# Make sog.$t a local table again.  First what the refusal's hint says;
# where that fails, the procedure that works: take the table (and the
# extension's views over it) out of the extension, undistribute_table, put
# them back, and restore the table's pg_extension_config_dump entry (which
# ALTER EXTENSION ... DROP TABLE removes, and which pg_dump needs to dump
# its rows).
sub make_local
{
	my ($t, $hint) = @_;
	my ($rc, $out, $err) = $coord->psql('postgres', "SET client_min_messages = warning; $hint");
	# Citus refuses to convert a table of an extension: hence the procedure
	# of docs/scaling.md, "The way back", which follows
	isnt($rc, 0, "$t: $hint alone is refused (the table belongs to the extension)");
	return if $rc == 0;
	my @views = dependent_views($t);
	# undistribute_table re-creates those views without their grants
	my $grants = @views ? $coord->safe_psql('postgres', "
SELECT coalesce(string_agg(format('GRANT %s ON %s TO %I;', a.privilege_type, c.oid::regclass, a.grantee::regrole), E'\\n'), '')
  FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.oid IN (" . join(', ', map { "'$_'::regclass" } @views) . ") AND a.grantee <> c.relowner") : '';
	# the table and its partitions (undistribute_table re-creates them all),
	# each with its pg_extension_config_dump condition (none: not dumped)
	my @rels = ("sog.$t", split /\n/, $coord->safe_psql('postgres', qq{
SELECT i.inhrelid::regclass::text FROM pg_inherits i WHERE i.inhparent = 'sog.$t'::regclass ORDER BY 1}));
	my %cond = map { my $c = $coord->safe_psql('postgres', qq{
SELECT coalesce(e.extcondition[array_position(e.extconfig, '$_'::regclass::oid)], '<none>')
  FROM pg_extension e WHERE e.extname = 'stream_offset_guard'}); ($_ => $c) } @rels;
	my $sql = "SET client_min_messages = warning;\nBEGIN;\n"
	  . join('', map { "ALTER EXTENSION stream_offset_guard DROP TABLE $_;\n" } @rels)
	  . join('', map { "ALTER EXTENSION stream_offset_guard DROP VIEW $_;\n" } @views)
	  . "SELECT undistribute_table('sog.$t');\n"
	  . join('', map { "ALTER EXTENSION stream_offset_guard ADD TABLE $_;\n" } @rels)
	  . join('', map { "ALTER EXTENSION stream_offset_guard ADD VIEW $_;\n" } @views)
	  . join('', map { "UPDATE pg_catalog.pg_extension SET extconfig = extconfig || '$_'::regclass::oid, "
		  . "extcondition = extcondition || '$cond{$_}'::text WHERE extname = 'stream_offset_guard';\n" }
		grep { $cond{$_} ne '<none>' } @rels)
	  . "$grants\n"
	  . "COMMIT;\n";
	($rc, $out, $err) = $coord->psql('postgres', $sql);
	is($rc, 0, "sog.$t is local again (out of the extension, undistribute_table, back in, grants on its views again)")
	  or diag($err);
	return;
}

# The race: a conversion commits while an apply waits for the table.
# create_distributed_table locks sog.receipt and its partitions; a sink
# transaction that has passed the placement check waits for the lock of
# the partition it writes to, then would write its receipt; the placement
# is checked again after the table lock, on the newest catalog.  (1.2: run
# as the conversion of sog.receipt in the loop below, not as a second one
# after it: once sog.receipt, now partitioned, has been made local again,
# Citus 13.2 fails to convert it back a second time, at its undistribute
# on the workers, whose own copies of the extension's tables have the
# shells' names: "relation receipt_0 is not a partition of relation
# receipt".  The extension refuses distributed tables of its own in any
# case; the way back is for a conversion made by mistake.)
sub convert_racing
{
	my ($conv, $next) = @_;
	my $conv_session = $coord->background_psql('postgres', on_error_stop => 0);
	$conv_session->query_safe('SET client_min_messages = warning');
	$conv_session->query_safe('BEGIN');
	$conv_session->query_safe("SELECT $conv");
	my $sink_session = $coord->background_psql('postgres', on_error_stop => 0);
	CitusTest::send_async($sink_session, CitusTest::sink_txn($cpk, $genk, $pk, $next, $next) . "\n\\echo sink-done");
	ok($coord->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%apply_batch%'}),
		'the race: the sink transaction waits for the conversion\'s lock');
	$conv_session->query_safe('COMMIT');
	$conv_session->quit;
	pump_until($sink_session->{run}, $sink_session->{timeout}, \$sink_session->{stdout}, qr/sink-done/);
	my $race_err = $sink_session->{stderr};
	$sink_session->quit;
	like($race_err, qr/managed by Citus/, 'the race: the sink transaction that waited for the conversion refuses');
	return 0;
}

my $n = 20;
for my $a (@accepted)
{
	my ($t, $conv) = @$a;
	my ($rc, $out, $err);
	if ($conv eq "create_distributed_table('sog.receipt', 'checkpoint_id')")
	{
		$rc = convert_racing($conv, $n + 1);
	}
	else
	{
		($rc, $out, $err) = $coord->psql('postgres', "SET client_min_messages = warning; SELECT $conv");
	}
	is($rc, 0, "$conv") or next;

	# every stateful function refuses, naming the table, in a new session
	my $hint;
	for my $call (@calls)
	{
		($rc, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$call");
		like($err, qr/ERROR:\s+0A000: table sog\.$t is managed by Citus/,
			"$t: $call refuses with 0A000 naming the table");
		$hint //= $1 if $err =~ /HINT:\s+.*?(docs\/scaling\.md, "The way back")/;
	}
	ok(defined $hint, "$t: the refusal's hint points to the way back (docs/scaling.md)");
	# what a call that did not refuse created
	$coord->safe_psql('postgres', q{DELETE FROM sog.checkpoint WHERE "partition" = 'new'});

	# and in the session that used the extension before the conversion
	$session->{stderr} = '';
	$session->query("\\set VERBOSITY verbose\nSELECT sog.owner_check($cpk, $genk)");
	like($session->{stderr}, qr/0A000: table sog\.$t is managed by Citus/,
		"$t: the long-lived session refuses too (after the relcache invalidation)");
	$session->{stderr} = '';

	# the sink, distributed, is unaffected: what the coordinator holds is
	# still readable through Citus
	is($coord->safe_psql('postgres', "SELECT count(*) FROM sink WHERE partition = $pk"),
		"$n", "$t: the sink still holds checkpoint k's $n events");

	make_local($t, $hint // "SELECT undistribute_table('sog.$t')");
	is($coord->safe_psql('postgres', "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'sog.$t'::regclass"),
		'0', "$t: Citus no longer manages it");
	is($coord->safe_psql('postgres', $state_sql), $before,
		"$t: nothing stored was lost (every row of every table, privileges, extension membership, dump configuration)");
	is($coord->safe_psql('postgres', "$receipts_sql($cpk)"), $receipts_k, "$t: checkpoint k's receipts are intact");
	is($coord->safe_psql('postgres', "$receipts_sql($cpr)"), $receipts_r, "$t: checkpoint r's receipts are intact");

	# everything works again: a new page, a replay, a zombie
	is(CitusTest::deliver($coord, $cpk, $genk, $pk, $n + 1, $n + 5), 0, "$t: a new page commits again");
	$n += 5;
	CitusTest::invariants("$t, local again", $coord, \@workers, $cpk, $pk, $n);
	is($coord->safe_psql('postgres',
		"SELECT sog.apply($cpk, $genk, '1', sog.payload_digest(convert_to('p$pk-e1', 'UTF8')))"),
		'f', "$t: a replay answers false");
	# and the long-lived session: a new page
	$session->{stderr} = '';
	$session->query(CitusTest::sink_txn($cpk, $genk, $pk, $n + 1, $n + 1));
	# (undistribute_table gives sog.receipt and its partitions new OIDs: the
	# session finds them)
	is($session->{stderr}, '', "$t: the long-lived session works again (a new page)");
	$session->{stderr} = '';
	CitusTest::deliver($coord, $cpk, $genk, $pk, $n + 1, $n + 1);
	$n += 1;
	CitusTest::invariants("$t, after the long-lived session's page", $coord, \@workers, $cpk, $pk, $n);
	$before = $coord->safe_psql('postgres', $state_sql);
	$receipts_k = $coord->safe_psql('postgres', "$receipts_sql($cpk)");
}
$session->quit;

# sog.register and the grant check read sog.role_grant's heap with a direct
# scan.  With sog.role_grant a reference table, a revoke (written through
# Citus to the workers) is not seen by that scan.
if (grep { $_->[0] eq 'role_grant' } @accepted)
{
	$coord->safe_psql('postgres', q{
SET client_min_messages = warning;
SELECT create_reference_table('sog.role_grant');
SELECT sog.revoke_consumer('regress_consumer', 'citus-refusal');});
	my ($rc, $out, $err) = $coord->psql('postgres',
		"SET ROLE regress_consumer; SELECT id FROM sog.register('citus-refusal', 'orders', 'after-revoke')");
	isnt($rc, 0, 'a role whose grant was revoked cannot register (role_grant a reference table)');
	make_local('role_grant', "SELECT undistribute_table('sog.role_grant')");
	$coord->safe_psql('postgres', q{
DELETE FROM sog.checkpoint WHERE "partition" = 'after-revoke';
SELECT sog.grant_consumer('regress_consumer', 'citus-refusal');});
}

done_testing();
