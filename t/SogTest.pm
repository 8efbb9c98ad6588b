# SogTest.pm: what every TAP test of stream_offset_guard shares.
#
#   use lib $FindBin::Bin;
#   use SogTest;
#   SogTest::storage_verifies($node, 'postgres');   # before stopping the node
#
# and, for the tests that carry a database from one place to another (an
# extension update, a dump and restore, a new PostgreSQL major):
#
#   SogTest::fill_state($node, $db, 'up');          # a year of use; roles up_*
#   my $cols = SogTest::checkpoint_columns($node, $db);
#   my $fp = $node->safe_psql($db, SogTest::fingerprint_sql($cols));
#   my $privs = $node->safe_psql($db, SogTest::privileges_sql('up'));

package SogTest;

use strict;
use warnings;

use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();
use Test::More;
use Time::HiRes ();

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

# The extension's default version, as stream_offset_guard.control says:
# what CREATE EXTENSION and ALTER EXTENSION UPDATE install.
sub default_version
{
	my $control = "$FindBin::Bin/../stream_offset_guard.control";
	open(my $fh, '<', $control) or die "cannot read $control: $!";
	while (my $line = <$fh>)
	{
		return $1 if $line =~ /^\s*default_version\s*=\s*'([^']+)'/;
	}
	die "no default_version in $control";
}

# amcheck over every table, TOAST table and btree index of the extension in
# database $db (sog.verify_storage: verify_heapam, bt_index_check with
# heapallindexed): one test, which fails with the problems it found.
sub storage_verifies
{
	my ($node, $db) = @_;

	# (on a standby amcheck must come from the primary: nothing is created)
	$node->safe_psql($db, 'CREATE EXTENSION amcheck')
	  if $node->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'amcheck'}) eq '0';
	# an extension owner that is not a superuser (the portable edition's,
	# crash_node) is granted amcheck's functions, superuser-only by default,
	# which its sog.verify_storage() runs
	$node->safe_psql($db, q{
DO $$ BEGIN
	IF NOT (SELECT r.rolsuper FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner
			 WHERE e.extname = 'stream_offset_guard') THEN
		EXECUTE (SELECT string_agg(format('GRANT EXECUTE ON FUNCTION %s TO %I', p.oid::regprocedure,
										  (SELECT e2.extowner::regrole::text FROM pg_extension e2
											WHERE e2.extname = 'stream_offset_guard')), '; ')
				   FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
					AND d.deptype = 'e' JOIN pg_extension e ON e.oid = d.refobjid WHERE e.extname = 'amcheck');
	END IF;
END $$}) if $ENV{SOG_PORTABLE_INSTALL};
	my $problems = $node->safe_psql($db,
		q{SELECT coalesce(string_agg(relation || ': ' || problem, E'\n'), '') FROM sog.verify_storage()});
	is($problems, '', "amcheck finds nothing in the extension's relations of $db");
	return;
}

# After a backend was killed with SIGKILL: wait until the postmaster has
# logged its death (PostgreSQL 18 names the backend's type, "client
# backend (PID n)", where earlier releases say "server process (PID n)"),
# reinitialized, and accepts connections again; from byte $offset of the log.
sub wait_for_crash_restart
{
	my ($node, $pid, $offset) = @_;
	$node->wait_for_log(
		qr/(?:server process|client backend) \(PID $pid\) was terminated by signal 9/,
		$offset);
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	return;
}

# A started node with the extension created in database postgres (and
# each line of conf in postgresql.conf).  With SOG_PORTABLE_INSTALL and
# SOG_PORTABLE_TLE_SQL set (test/portable/regress.sh), the node is the
# portable edition's: that installation (pg_tle, no C edition), pg_tle
# preloaded, the edition registered and created by sog_tle_admin, a
# pgtle_admin role that is not a superuser; one test then, that it was.
sub extension_node
{
	my ($name, %opt) = @_;
	my $portable = $ENV{SOG_PORTABLE_INSTALL};
	my $node = PostgreSQL::Test::Cluster->new($name, $portable ? (install_path => $portable) : ());
	$node->init;
	$node->append_conf('postgresql.conf', $_) for @{ $opt{conf} // [] };
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'") if $portable;
	$node->start;
	if ($portable)
	{
		$node->safe_psql('postgres', q{
CREATE ROLE sog_tle_admin LOGIN NOSUPERUSER IN ROLE pg_read_all_stats;
GRANT CREATE ON DATABASE postgres TO sog_tle_admin;
CREATE EXTENSION pg_tle;
GRANT pgtle_admin TO sog_tle_admin;
});
		$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			'-U', 'sog_tle_admin', '-f', $ENV{SOG_PORTABLE_TLE_SQL}, '-c', 'CREATE EXTENSION stream_offset_guard' ],
			"$name: the portable edition installed through pg_tle by sog_tle_admin");
	}
	else
	{
		$node->safe_psql('postgres', 'CREATE EXTENSION stream_offset_guard');
	}
	return $node;
}

# A node for the crash tests (extension_node), with t/sink_setup.sql loaded
# (the sink table, d(), sink_batch(), span(), span_hash()).
# restart_after_crash => 1: the postmaster reinitializes after a backend's
# crash, as a production server does (Cluster.pm's init turns it off; it
# also writes fsync = off, which a process crash does not need: the
# kernel keeps what was written).
sub crash_node
{
	my ($name, %opt) = @_;
	my $node = extension_node($name, conf => [ $opt{restart_after_crash} ? ('restart_after_crash = on') : () ]);
	my $setup = PostgreSQL::Test::Utils::slurp_file("$FindBin::Bin/sink_setup.sql");
	$setup =~ s/^CREATE EXTENSION stream_offset_guard;$//m
	  or die "t/sink_setup.sql no longer creates the extension as crash_node expects";
	$node->safe_psql('postgres', $setup);
	return $node;
}

# Register checkpoint c1/orders/0 (with the extra register() arguments
# given) and claim it as w1: its id; one test, that w1 got generation 1.
sub claim_c1
{
	my ($node, @register) = @_;
	my $args = join '', map { ", $_" } @register;
	my $cp = $node->safe_psql('postgres', "SELECT id FROM sog.register('c1', 'orders', '0'$args)");
	is($node->safe_psql('postgres', "SELECT generation FROM sog.claim($cp, 'w1')"),
		'1', 'worker w1 claims generation 1');
	return $cp;
}

# SIGKILL the postmaster and wait until it and all its children are gone
# (they outlive it until they notice its death, and a new postmaster cannot
# start while they hold the shared memory); one test.  kill9 does not wait.
sub kill9_and_wait
{
	my ($node) = @_;
	my @pids = split /\n/, $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity');
	push @pids, $node->{_pid};
	$node->kill9;
	my $waited = 0;
	while (grep { kill(0, $_) } @pids)
	{
		Time::HiRes::usleep(100_000);
		last if ++$waited > 10 * $PostgreSQL::Test::Utils::timeout_default;
	}
	ok(!(grep { kill(0, $_) } @pids), 'the postmaster and all its children are gone');
	return;
}

# The sink holds positions lo..hi each exactly once (one test), and, with
# $cp, checkpoint cp holds exactly their receipts (another).
sub sink_exactly_once
{
	my ($node, $lo, $hi, $cp, $what) = @_;
	my $n = $hi - $lo + 1;
	is($node->safe_psql('postgres',
			q{SELECT count(*), count(DISTINCT pos), min(pos::numeric), max(pos::numeric) FROM sink}),
		"$n|$n|$lo|$hi", $what // "every position $lo..$hi is in the sink exactly once");
	is($node->safe_psql('postgres',
			"SELECT count(*), min(\"position\"::numeric), max(\"position\"::numeric) FROM sog.receipts($cp)"),
		"$n|$lo|$hi", "receipts $lo..$hi") if defined $cp;
	return;
}

# A background session ($node->background_psql) whose backend died notices
# that its connection is gone; one test.
sub session_lost
{
	my ($session, $name) = @_;
	$session->{stdin} .= "SELECT 1;\n";
	ok( PostgreSQL::Test::Utils::pump_until(
			$session->{run}, $session->{timeout},
			\$session->{stderr},
			qr/server closed the connection unexpectedly|connection to server was lost|could not send data to server|terminating connection/m
		),
		"$name lost its connection");
	$session->{run}->finish;
	return;
}

# SIGKILL the backend $pid of background session $session (not
# pg_terminate_backend: it gets no chance to abort its transaction, and the
# postmaster treats its death as a crash); the session notices, and the
# postmaster (restart_after_crash = on) reinitializes and accepts
# connections again.  Three tests.
sub kill9_backend
{
	my ($node, $session, $pid, $name) = @_;
	my $offset = -s $node->logfile;
	PostgreSQL::Test::Utils::system_or_bail('pg_ctl', 'kill', 'KILL', $pid);
	session_lost($session, $name);
	wait_for_crash_restart($node, $pid, $offset);
	ok($node->poll_query_until('postgres', 'SELECT 1', '1'), 'the cluster is back after crash recovery');
	return;
}

# The buffer hash of the records given as [position text, payload bytes]
# in increasing position order, computed by the client (docs/reference.md: hash
# definitions): h0 = SHA-256("sog:buffer:v1"), hi = SHA-256(h(i-1) ||
# be16(len(Pi)) || Pi || SHA-256(payload)); lowercase hex.
sub buffer_hash
{
	my @records = @_;
	require Digest::SHA;
	my $h = Digest::SHA::sha256('sog:buffer:v1');
	$h = Digest::SHA::sha256($h . pack('n', length $_->[0]) . $_->[0] . Digest::SHA::sha256($_->[1]))
	  for @records;
	return unpack('H*', $h);
}

# The vectors of test/contract-v1.json (a hash of its sections)
sub contract_vectors
{
	require JSON::PP;
	return JSON::PP::decode_json(
		PostgreSQL::Test::Utils::slurp_file("$FindBin::Bin/../test/contract-v1.json"));
}

# d(p): the digest of the payload of position p (an SQL expression in p)
sub digest_sql
{
	my ($p) = @_;
	return "sog.payload_digest(convert_to('payload ' || $p, 'UTF8'))";
}

# SQL arrays of the positions lo..hi and of their payloads' digests
sub positions
{
	my ($lo, $hi) = @_;
	return "ARRAY(SELECT g::sog.position FROM generate_series($lo, $hi) g)";
}

sub digests
{
	my ($lo, $hi) = @_;
	return "ARRAY(SELECT " . digest_sql('g') . " FROM generate_series($lo, $hi) g)";
}

# The buffer hash of positions 16..20 (checkpoint 2 of fill_state is
# replaying with it)
sub hash_16_20
{
	return "(SELECT sog.buffer_hash(" . positions(16, 20) . ", " . digests(16, 20) . "))";
}

# Fill database $db (the extension installed, at 1.0 or later) the way a
# year of use fills it: checkpoints in every state (1 running, 2 replaying,
# 3 failed_closed, 4 never claimed, 5 failed_closed after an accepted
# retention loss and a reconfiguration), receipts in several batches, page
# tokens, a halt manifest, open and resolved gaps, recovery attempts
# promoted, lost, failed and open (4, anchored at 250), a user-added
# provider, and grants to $prefix_app (every consumer), $prefix_scoped
# (consumer "$prefix-a") and $prefix_ops (operator).  Creates the roles
# $prefix_app, $prefix_scoped, $prefix_ops and $prefix_nobody (no grant)
# unless they exist.
sub fill_state
{
	my ($node, $db, $prefix) = @_;
	my $d300 = digest_sql("'300'");

	$node->safe_psql('postgres', join("\n",
		map { "SELECT 'CREATE ROLE ${prefix}_$_ LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${prefix}_$_') \\gexec" }
		  qw(app scoped ops nobody)));
	$node->safe_psql(
		$db, qq{
SELECT sog.grant_consumer('${prefix}_app');
SELECT sog.grant_consumer('${prefix}_scoped', '$prefix-a');
SELECT sog.grant_operator('${prefix}_ops');
INSERT INTO sog.provider (name, seek_inclusive, empty_page_is_barrier, may_backfill)
VALUES ('my_feed', true, true, false);

-- 1: running, receipts in three batches, a page token, a halt manifest
SELECT sog.register('$prefix-a', 'orders', '0', provider => 'kafka');
SELECT sog.claim(1, 'w1');
SELECT sog.apply_batch(1, 1, @{[positions(1, 100)]}, @{[digests(1, 100)]});
SELECT sog.apply_batch(1, 1, @{[positions(101, 200)]}, @{[digests(101, 200)]});
SELECT sog.commit_page(1, 1, NULL, 'T1');
SELECT sog.halt(1, 1, '200', NULL, 0);
SELECT sog.claim(1, 'w2');
SELECT sog.apply_batch(1, 2, @{[positions(201, 300)]}, @{[digests(201, 300)]});

-- 2: replaying: the predecessor read 16..20 and left their hash
SELECT sog.register('$prefix-b', 'orders', '0', provider => 'my_feed');
SELECT sog.claim(2, 'w1');
SELECT sog.apply_batch(2, 1, @{[positions(1, 15)]}, @{[digests(1, 15)]});
SELECT sog.note_read(2, 1, '20', @{[hash_16_20()]}, 5);
SELECT sog.claim(2, 'w2');

-- 3: failed closed: read 40 without a hash (gap no_buffer_hash, open)
SELECT sog.register('$prefix-b', 'orders', '1');
SELECT sog.claim(3, 'w1');
SELECT sog.apply_batch(3, 1, @{[positions(1, 10)]}, @{[digests(1, 10)]});
SELECT sog.note_read(3, 1, '40', NULL, 30);
SELECT sog.claim(3, 'w2');

-- 4: never claimed
SELECT sog.register('$prefix-c', 'orders', '0');

-- 5: a reported retention loss, then resolved by an operator
SELECT sog.register('$prefix-c', 'orders', '1', criticality => 'telemetry');
SELECT sog.claim(5, 'w1');
SELECT sog.apply_batch(5, 1, @{[positions(1, 5)]}, @{[digests(1, 5)]});
SELECT sog.report_gap(5, 1, '9', 'retention', 'trimmed by the broker');
SELECT sog.resolve_gap((SELECT id FROM sog.gap WHERE checkpoint_id = 5), 'accepted_loss', 'events 6..9 are gone');
SELECT sog.reconfigure(5, criticality => 'critical', note => 'now critical');

-- recovery attempts: one promoted, one lost (its token was taken), one failed, one open
SELECT sog.begin_recovery(1, 2, 'T1', NULL, '300', true);
SELECT sog.recovery_event(1, '300', $d300);
SELECT generation AS g FROM sog.promote(1, 'T2', '300') \\gset
SELECT sog.begin_recovery(1, :g, 'T2', NULL, '300', true);
SELECT sog.commit_page(1, :g, 'T2', 'T3');
SELECT sog.recovery_event(2, '300', $d300);
SELECT sog.promote(2, 'T4', '300');
-- (5 has no provider: its attempt fails closed at once, an open gap)
SELECT sog.commit_page(5, 1, NULL, 'U1');
SELECT sog.begin_recovery(5, 1, 'U1', NULL, '5', false);
SELECT sog.begin_recovery(1, :g, 'T3', NULL, '250', true);
});
	return;
}

# What fill_state leaves: the checkpoints' states, the attempts', the gaps'
my %filled = (
	states => '1:running:3 2:replaying:2 3:failed_closed:2 4:running:0 5:failed_closed:1',
	recovery => '1:promoted 2:lost 3:failed 4:open',
	gaps => 'no_buffer_hash:false retention:true coverage_unproven:false');
sub filled { return $filled{ $_[0] }; }
sub states_sql
{
	return q{SELECT string_agg(id || ':' || state || ':' || generation, ' ' ORDER BY id) FROM sog.checkpoint};
}
sub recovery_states_sql
{
	return q{SELECT string_agg(id || ':' || state, ' ' ORDER BY id) FROM sog.recovery};
}
sub gap_states_sql
{
	return q{SELECT string_agg(reason || ':' || (resolved_at IS NOT NULL), ' ' ORDER BY id) FROM sog.gap};
}

# The columns of sog.checkpoint in $db now, as "c.col, ..." (a later
# version may add columns: fingerprints compare the ones taken before)
sub checkpoint_columns
{
	my ($node, $db) = @_;
	return $node->safe_psql($db,
		q{SELECT string_agg('c.' || quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
	   WHERE attrelid = 'sog.checkpoint'::regclass AND attnum > 0 AND NOT attisdropped});
}

# One line per state table of 1.0: its name, row count and an md5 of its
# rows in key order (receipts both as sog.receipts() answers them and as
# stored); sog.checkpoint by the columns given; sog.role_grant by the role's
# name (1.0's regrole prints it; 1.1 keeps it, and the OID, which differs
# from cluster to cluster, beside it: grants_in_force_sql checks that);
# $more: further "UNION ALL SELECT name, count, md5 ..." lines.
sub fingerprint_sql
{
	my ($cp_columns, $more) = @_;
	$more //= '';
	return qq{
SELECT 'checkpoint', count(*), md5(string_agg(ROW($cp_columns)::text, '|' ORDER BY id)) FROM sog.checkpoint c
UNION ALL SELECT 'receipts', count(*), md5(string_agg(r::text, '|' ORDER BY r.checkpoint_id, r."position"))
  FROM (SELECT c.id AS checkpoint_id, x.* FROM sog.checkpoint c, sog.receipts(c.id) x) r
UNION ALL SELECT 'receipt rows', count(*), md5(string_agg((r.checkpoint_id, r.first_position, r.last_position, r.n, r.positions, r.digests)::text, '|' ORDER BY r.checkpoint_id, r.last_position)) FROM sog.receipt r
UNION ALL SELECT 'gap', count(*), md5(string_agg(g::text, '|' ORDER BY id)) FROM sog.gap g
UNION ALL SELECT 'manifest_log', count(*), md5(string_agg(m::text, '|' ORDER BY id)) FROM sog.manifest_log m
UNION ALL SELECT 'recovery', count(*), md5(string_agg(r::text, '|' ORDER BY id)) FROM sog.recovery r
UNION ALL SELECT 'provider', count(*), md5(string_agg(p::text, '|' ORDER BY name)) FROM sog.provider p
UNION ALL SELECT 'reconfiguration', count(*), md5(string_agg(x::text, '|' ORDER BY id)) FROM sog.reconfiguration x
UNION ALL SELECT 'role_grant', count(*), md5(string_agg((x.role::text, x.kind, x.consumer, x.granted_by, x.granted_at)::text, '|' ORDER BY x.role::text, x.kind, x.consumer)) FROM sog.role_grant x
$more
ORDER BY 1};
}

# What every role named $prefix_* may do with every object of the
# extension, beyond what PUBLIC may: one line per role, object and privilege
sub privileges_sql
{
	my ($prefix) = @_;
	return qq{
SELECT string_agg(format('%s %s %s', r.rolname, o.what, o.priv), E'\n' ORDER BY r.rolname, o.what, o.priv)
  FROM pg_roles r,
       LATERAL (SELECT p.oid::regprocedure::text AS what, 'EXECUTE' AS priv
                  FROM pg_proc p WHERE p.pronamespace = 'sog'::regnamespace
                   AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                   AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
                UNION ALL
                SELECT c.oid::regclass::text, x.priv
                  FROM pg_class c, unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) x(priv)
                 WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind IN ('r', 'v')
                   AND has_table_privilege(r.oid, c.oid, x.priv)
                   AND NOT has_table_privilege('public', c.oid, x.priv)) o
 WHERE r.rolname LIKE '${prefix}\\_%'};
}

# 1.1: the grants of sog.role_grant that are not in force, as
# "role:kind:consumer:status" lines ('' when every one is)
sub grants_not_in_force_sql
{
	return q{SELECT coalesce(string_agg(concat_ws(':', role, kind, consumer, status), E'\n' ORDER BY role, kind, consumer), '')
	  FROM sog.grant_status WHERE status <> 'in_force'};
}

# A new cluster whose next OID is $oid (pg_resetwal -o on the stopped,
# freshly made cluster), started: the next object it creates, e.g. a role,
# gets that OID, as after the OID counter wrapped around.
sub cluster_with_next_oid
{
	my ($name, $oid) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	PostgreSQL::Test::Utils::command_ok([ 'pg_resetwal', '-o', $oid, '-D', $node->data_dir ],
		"pg_resetwal -o $oid on $name");
	$node->start;
	return $node;
}

# The lines of a client's stderr that are errors or warnings, without
# psql's or pg_restore's prefixes and with the DETAIL/HINT lines dropped
sub messages
{
	my ($stderr, $level) = @_;
	return [ map { s/^.*?\b($level):\s+/$1:  /r } grep { /\b$level:/ } split /\n/, $stderr ];
}

# The SQLSTATE a statement fails with as $role in $db ('ok' if it succeeds)
sub sqlstate
{
	my ($node, $db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, "SET ROLE $role; \\set VERBOSITY verbose\n$sql");
	return 'ok' if $ret == 0;
	return $1 if $err =~ /ERROR:\s+([0-9A-Z]{5})/;
	return "unexpected: $err";
}

# A database filled by fill_state($node, $db, 'mv') with the retention
# policy of consumer mv-a (t/010, t/015), moved (dump and restore,
# pg_upgrade, to the other edition), behaves as it did: every table's rows
# ($was->{fingerprint} gives $was->{before}), every role's privileges
# ($was->{privileges} gives $was->{privileges_before}), every state; a
# replay is answered false, the old generation is fenced, the open gap
# blocks, the replaying checkpoint verifies its gap, the open recovery
# attempt verifies and promotes, the scoped role is refused, the
# retention policy prunes.  Changes the state: run it once per copy.
sub moved_state_behaves
{
	my ($node, $db, $how, $was) = @_;
	my ($fingerprint, $before, $privileges, $privileges_before) =
	  @$was{qw(fingerprint before privileges privileges_before)};
	my $d = sub { digest_sql("'$_[0]'") };
	is($node->safe_psql($db, $fingerprint), $before, "$how: every table's rows are as they were");
	is($node->safe_psql($db, $privileges), $privileges_before, "$how: every role may do what it could, and no more");
	is($node->safe_psql($db, grants_not_in_force_sql()), '',
		"$how: every grant is in force (bound to the role of its name in this cluster)");
	is($node->safe_psql($db, states_sql()), filled('states'), "$how: every state is as it was");
	is( $node->safe_psql(
			$db, qq{SET ROLE mv_app; SELECT sog.apply_batch(1, 3, ARRAY['5', '300', '301']::sog.position[],
	ARRAY[@{[$d->(5)]}, @{[$d->(300)]}, @{[$d->(301)]}])}),
		'{f,f,t}', "$how: replays are answered false, the next position applies");
	is(sqlstate($node, $db, 'mv_app', qq{SELECT sog.apply(1, 2, '302', @{[$d->(302)]})}),
		'SG001', "$how: the old generation is fenced");
	is(sqlstate($node, $db, 'mv_app', qq{SELECT sog.apply(3, 2, '41', @{[$d->(41)]})}),
		'SG004', "$how: the open gap still blocks the failed-closed checkpoint");
	is($node->safe_psql($db, 'SELECT count(*) FROM sog.unresolved_gaps'), '2', "$how: both open gaps are open");
	is($node->safe_psql($db, 'SET ROLE mv_app; SELECT sog.verify_gap(2, 2, ' . hash_16_20() . ')'),
		't', "$how: the replaying checkpoint verifies its gap with the predecessor's hash");
	is( $node->safe_psql(
			$db, qq{SET ROLE mv_app; SELECT string_agg(DISTINCT sog.recovery_event(4, g::sog.position, @{[digest_sql('g')]}), ',') FROM generate_series(250, 301) g}),
		'verified', "$how: the open recovery attempt verifies its page from receipts");
	is($node->safe_psql($db, q{SET ROLE mv_app; SELECT promoted, reason FROM sog.promote(4, 'T5', '301')}),
		't|promoted', "$how: and promotes");
	is(sqlstate($node, $db, 'mv_scoped', q{SELECT sog.claim(3, 'w3')}),
		'42501', "$how: the scoped role is refused other consumers");
	is($node->safe_psql($db, q{SET ROLE mv_ops; SELECT sog.prune_due(1)}), '201',
		"$how: the retention policy prunes (1..201 of 1..301)");
	is($node->safe_psql($db, qq{SET ROLE mv_app; SELECT sog.apply(1, 4, '7', @{[$d->(7)]})}),
		'f', "$how: a pruned position is still a duplicate");
	storage_verifies($node, $db);
	return;
}

1;
