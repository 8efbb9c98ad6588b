# 005_symbol_lookup.pl: how the extension finds Citus' two-phase-commit
# switch, and what it does when it cannot.
#
# The extension calls Citus' C function Use2PCForCoordinatedTransaction in
# every transaction that changes its state on a Citus coordinator (so a
# sink row sent to one worker commits with its receipts).  Citus exports
# it on PostgreSQL 15; from 16 on PGXS builds Citus with hidden symbols,
# and the extension finds the function in Citus' ELF symbol table, or in
# the separate debug file of its build-id (src/symbol.c).  This test
# installs three versions of citus.so, each loaded by a fresh server:
#
#   1. as built (not stripped): a state-changing call (a claim) succeeds;
#   2. stripped (strip --strip-unneeded): where the function is exported
#      (15) it still succeeds; where it is not (16 and later), the call is
#      refused with 0A000, saying why, and changes nothing;
#   3. stripped, with its debug file in /usr/lib/debug/.build-id: succeeds.
#
# It replaces the installed citus.so and writes /usr/lib/debug, so it runs
# only where that is allowed (SOG_CITUS_LIBRARY_TESTS=1: make test-versions
# sets it in its throwaway roots), and it puts everything back at the end.

use strict;
use warnings;

use File::Copy qw(copy move);
use File::Path qw(make_path);
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib $FindBin::Bin;
use CitusTest;

plan skip_all => 'replaces the installed citus.so: only where SOG_CITUS_LIBRARY_TESTS=1 allows it '
  . '(make test-versions sets it inside its throwaway roots)'
  unless ($ENV{SOG_CITUS_LIBRARY_TESTS} // '') eq '1';
for my $tool (qw(strip objcopy readelf nm))
{
	plan skip_all => "$tool (binutils) is not installed" if system("command -v $tool >/dev/null") != 0;
}

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $lib = "$pkglibdir/citus.so";
my $work = PostgreSQL::Test::Utils::tempdir;
my $orig = "$work/citus.so.orig";
copy($lib, $orig) or die "copy $lib: $!";
my $exported = `nm -D --defined-only $lib` =~ /\bUse2PCForCoordinatedTransaction\b/;
my ($build_id) = `readelf -n $lib` =~ /Build ID: ([0-9a-f]+)/;
ok($build_id, "citus.so has a build-id ($build_id)");
my $debug = '/usr/lib/debug/.build-id/' . substr($build_id, 0, 2) . '/' . substr($build_id, 2) . '.debug';
ok(!-e $debug, 'no debug file of it is installed yet');
note 'Use2PCForCoordinatedTransaction is ' . ($exported ? '' : 'not ') . 'exported by this Citus';

# whatever happens, the installed library comes back and the debug file goes
END
{
	move("$work/citus.so.orig", $lib) if $work && -e "$work/citus.so.orig";
	unlink $debug if $debug && -e $debug;
}

# Install $file as citus.so (a new inode: no running process maps the old
# one, as every node is stopped), start a fresh coordinator and try a
# state-changing call, a claim: (psql's exit code, its stderr, the
# checkpoint's generation afterwards).
my $n = 0;
sub try_with
{
	my ($file) = @_;
	copy($file, "$lib.new") or die "copy $file: $!";
	chmod 0755, "$lib.new";
	move("$lib.new", $lib) or die "install $lib: $!";
	my $node = CitusTest::node('symbol_' . $n++);
	$node->safe_psql('postgres', 'SET client_min_messages = warning; CREATE EXTENSION stream_offset_guard');
	$node->safe_psql('postgres', "SELECT sog.register('symbol', 'orders', '0')");
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT sog.claim(1, 'w')");
	my $count = $node->safe_psql('postgres', 'SELECT generation FROM sog.checkpoint');
	$node->stop;
	return ($rc, $err, $count);
}

# 1. as built
my ($rc, $err, $count) = try_with($orig);
is($rc, 0, 'as built: a state-changing call on a Citus coordinator succeeds') or diag $err;
is($count, '1', 'and the claim took generation 1');

# 2. stripped
my $stripped = "$work/citus.so.stripped";
command_ok([ 'strip', '--strip-unneeded', '-o', $stripped, $orig ], 'strip a copy of citus.so');
unlike(`readelf -S $stripped`, qr/\.symtab/, 'the copy has no symbol table');
($rc, $err, $count) = try_with($stripped);
if ($exported)
{
	is($rc, 0, 'stripped, the function exported: the call succeeds (dlsym finds it)') or diag $err;
}
else
{
	isnt($rc, 0, 'stripped, the function not exported: the call is refused');
	like($err, qr/ERROR:  cannot commit the sink transaction through Citus' two-phase commit/,
		'with the reason');
	like($err, qr/DETAIL:  Citus' function Use2PCForCoordinatedTransaction is not exported by the Citus library loaded here, and the library is stripped, and no debug file of its build-id is installed/,
		'saying why it was not found');
	like($err, qr/HINT:  Install Citus unstripped \(built from source\) or with its debug symbols/,
		'and what to do');
	is($count, '0', 'and nothing changed (generation 0)');
}

# 3. stripped, with its debug file where distributions install it
my $dir = $debug =~ s{/[^/]+$}{}r;
make_path($dir);
command_ok([ 'objcopy', '--only-keep-debug', $orig, $debug ], 'its debug file, in /usr/lib/debug/.build-id');
($rc, $err, $count) = try_with($stripped);
is($rc, 0, 'stripped, with the debug file: the call succeeds') or diag $err;
is($count, '1', 'and the claim took generation 1');

done_testing();
