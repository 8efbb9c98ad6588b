# 005_two_phase_table.pl: how the extension makes Citus commit the sink
# transaction with two-phase commit, with Citus as a distribution ships it
# (stripped), and what it does when it cannot.
#
# In every transaction that changes its state on a Citus coordinator the
# extension runs DELETE FROM sog.citus_2pc, a Citus local table (its one
# shard on the coordinator) that is always empty: Citus runs that write in
# the consumer's backend (local execution), and any write it runs so turns
# two-phase commit on for the transaction (Citus 13.2, local_executor.c:
# "Any modification on the local execution should enable 2PC").  No symbol
# of Citus is looked up: the installed citus.so is stripped (run.sh).
#
#   1. the library is stripped, and the extension's names no Citus symbol;
#   2. the DELETE runs once per transaction, locally, and a sink
#      transaction whose rows go to one worker is prepared there;
#   3. refused with 0A000, changing nothing, while sog.citus_2pc is
#      missing, a plain table, or a reference table (placements on the
#      workers), and with citus.enable_local_execution off; reads work; a
#      long-lived session that was refused works once the table is made.

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use CitusTest;

# --- 1. a stripped Citus ---------------------------------------------------------------------

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $lib = "$pkglibdir/citus.so";
unlike(`readelf -S $lib`, qr/\.symtab/, 'the installed citus.so has no symbol table (stripped)');
unlike(`nm $lib 2>&1`, qr/\bUse2PCForCoordinatedTransaction\b/,
	'  nm finds no Use2PCForCoordinatedTransaction in it');
note('Use2PCForCoordinatedTransaction is '
	  . (`nm -D --defined-only $lib` =~ /\bUse2PCForCoordinatedTransaction\b/ ? '' : 'not ')
	  . 'in its dynamic symbol table');
unlike(`strings $pkglibdir/stream_offset_guard.so`, qr/Use2PCForCoordinatedTransaction/,
	"the extension's library does not name Citus' function");

my ($coord, $w1, $w2) = CitusTest::cluster('twopc');
my @workers = ($w1, $w2);
my ($pa, $pb) = CitusTest::partitions_on($coord, $w1, $w2);
my ($cp, $gen) = CitusTest::checkpoint($coord, $pa, 'w-a');
my $applied = "SELECT applied_position FROM sog.status WHERE checkpoint_id = $cp";

# --- 2. once per transaction, locally; two-phase commit ----------------------------------------

sub digest { my ($i) = @_; return "sog.payload_digest(convert_to('p$pa-e$i', 'UTF8'))"; }

my ($rc, $out, $err) = $coord->psql(
	'postgres', "SET citus.log_remote_commands = on; SET citus.log_local_commands = on;
SET client_min_messages = notice;
BEGIN;
SELECT sog.apply($cp, $gen, '1', " . digest(1) . ");
INSERT INTO sink VALUES ($pa, 1, 'p$pa-e1');
SELECT sog.apply($cp, $gen, '2', " . digest(2) . ");
INSERT INTO sink VALUES ($pa, 2, 'p$pa-e2');
COMMIT;");
is($rc, 0, 'two events, each an INSERT ... VALUES to one worker, in one transaction') or diag $err;
my @local = $err =~ /executing the command locally: (DELETE FROM sog\.citus_2pc_\d+)/g;
is(scalar(@local), 1, '  sog.citus_2pc is written once, in this backend (local execution)');
unlike($err, qr/issuing [^\n]*citus_2pc/, '  and never over a connection');
like($err, qr/issuing PREPARE TRANSACTION/, '  the worker is committed with two-phase commit');
like($err, qr/issuing COMMIT PREPARED/, '  and COMMIT PREPARED after the coordinator committed');
CitusTest::invariants('after two events', $coord, \@workers, $cp, $pa, 2);

# --- 3. refusals ------------------------------------------------------------------------------

# A state-changing call (an apply of event 3): refused with 0A000, the
# reason in the detail, nothing changed.
sub refused
{
	my ($what, $detail, $session) = @_;
	my $sql = "SELECT sog.apply($cp, $gen, '3', " . digest(3) . ")";
	my ($rc, $out, $err);
	if ($session)
	{
		$session->{stderr} = '';
		$session->query($sql);
		$err = $session->{stderr};
		$session->{stderr} = '';
		$rc = $err =~ /ERROR/ ? 3 : 0;
	}
	else
	{
		($rc, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	}
	isnt($rc, 0, "$what: a state-changing call is refused");
	like($err, qr/ERROR:  0A000: cannot commit the sink transaction through Citus' two-phase commit/,
		"  $what: 0A000") unless $session;
	like($err, $detail, "  $what: the detail says why");
	like($err, qr/HINT:  .*citus_add_local_table_to_metadata|HINT:  Leave citus.enable_local_execution on/,
		"  $what: the hint says what to do") unless $session;
	is($coord->safe_psql('postgres', $applied), '2', "  $what: nothing changed");
	return;
}

($rc, $out, $err) = $coord->psql('postgres',
	"\\set VERBOSITY verbose\nSET citus.enable_local_execution = off; SELECT sog.apply($cp, $gen, '3', " . digest(3) . ")");
isnt($rc, 0, 'citus.enable_local_execution off: a state-changing call is refused');
like($err, qr/ERROR:  0A000: cannot commit the sink transaction through Citus' two-phase commit/, '  0A000');
like($err, qr/DETAIL:  Citus did not write table sog.citus_2pc in this backend \(local execution\)/,
	'  the detail says Citus ran the write over a connection');
like($err, qr/HINT:  Leave citus.enable_local_execution on/, '  the hint says what to do');
is($coord->safe_psql('postgres', $applied), '2', '  nothing changed');

# a session that works now, and is refused while the table is gone
my $session = $coord->background_psql('postgres', on_error_stop => 0);
is($session->query_safe("SELECT sog.owner_check($cp, $gen)"), 't', 'a long-lived session uses the extension');

$coord->safe_psql('postgres', 'DROP TABLE sog.citus_2pc');
refused('sog.citus_2pc dropped', qr/DETAIL:  .*and there is no table sog.citus_2pc\./);
refused('sog.citus_2pc dropped (the long-lived session)', qr/there is no table sog.citus_2pc/, $session);
is( $coord->safe_psql('postgres', "SELECT count(*) FROM sog.receipts($cp)"),
	'2', '  reads work without it');

$coord->safe_psql('postgres', 'CREATE TABLE sog.citus_2pc (CHECK (false))');
refused('sog.citus_2pc a plain table', qr/DETAIL:  .*and table sog.citus_2pc is not managed by Citus\./);

$coord->safe_psql('postgres', "SET client_min_messages = warning; SELECT create_reference_table('sog.citus_2pc')");
refused('sog.citus_2pc a reference table',
	qr/DETAIL:  .*and table sog.citus_2pc has more than one shard or placement\./);
refused('sog.citus_2pc a reference table (the long-lived session)', qr/more than one shard or placement/,
	$session);

$coord->safe_psql('postgres', "SET client_min_messages = warning; SELECT undistribute_table('sog.citus_2pc')");
$coord->safe_psql('postgres', "SELECT citus_add_local_table_to_metadata('sog.citus_2pc')");
is($session->query_safe("SELECT sog.apply($cp, $gen, '3', " . digest(3) . ")"),
	't', 'made a Citus local table again: the long-lived session applies event 3');
$session->query_safe("INSERT INTO sink VALUES ($pa, 3, 'p$pa-e3')");
$session->quit;
CitusTest::invariants('after event 3', $coord, \@workers, $cp, $pa, 3);

done_testing();
