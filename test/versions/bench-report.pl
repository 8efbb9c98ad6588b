#!/usr/bin/perl
# test/versions/bench-report.pl OUTDIR MAJOR...: docs/versions-bench.md from
# the runs of test/versions/bench.sh (OUTDIR/pgN/, the raw files bench/run.sh
# wrote in each major's root), on standard output.  The summary, the targets
# and the names of the variants are bench/report.pl's (loaded as a library):
# one copy of how a run is read and judged.
use strict;
use warnings;
no warnings qw(once);	# the names bench/report.pl defines when it is loaded
use FindBin;

my ($out, @majors) = @ARGV;
die "usage: $0 OUTDIR MAJOR...\n" unless $out && @majors;
require "$FindBin::Bin/../../bench/report.pl";

my %run = map { $_ => BenchReport::load_run("$out/pg$_") } @majors;
my %targets = map { $_ => [ BenchReport::issue30_targets($run{$_}), BenchReport::issue22_targets($run{$_}) ] } @majors;
my $first = $run{ $majors[0] };
my $name = \%BenchReport::NAME;
my @calls = grep { my $v = $_; grep { BenchReport::measured($run{$_}, 'client', $v) } @majors } @{ $BenchReport::ORDER{client} };
my @cells = ([ 100, 1 ], [ 100, 4 ], [ 1000, 1 ], [ 1000, 4 ]);

print "# The guard on each PostgreSQL major\n\n";
print "Made by `make bench-versions` (test/versions/bench.sh, this page by test/versions/bench-report.pl with\n"
  . "bench/report.pl's code): the benchmark's real client (bench/client.c: libpq pipeline mode, binary parameters,\n"
  . "client-side SHA-256 of 100-byte payloads), B=100 and B=1000 events per transaction, 1 and 4 clients, in a\n"
  . "Debian root of each major's suite, one major after the other on the same machine with the same settings\n"
  . "(fsync and synchronous_commit on; bench/run.sh). Medians of $first->{runs} paired runs of "
  . ($first->{env}{run}{duration} // '?') . " s per cell; a ratio is the\n"
  . "median of the per-run ratios within one major's run.\n"
  . "Raw results: `" . ($out =~ s{^.*/(bench/results/)}{$1}r) . "` (not committed).\n\n";
print join('; ', map { my $e = $run{$_}{env}; ((($e->{version} // '') =~ /^(PostgreSQL \S+)/)[0] // "PostgreSQL $_") . ' (' . ($e->{date} // '') . ')' } @majors) . ".\n\n";

print "## Targets per major\n\n";
print BenchReport::md_table([ 'target', 'wanted', map { "PostgreSQL $_" } @majors ],
	map {
		my $i = $_;
		my $t0 = $targets{ $majors[0] }[$i];
		[ $t0->{what}, $t0->{what} =~ /within 0\.05/ ? ">= (g) - 0.05" : "$t0->{op} $t0->{limit}",
		  map {
			  my $t = $targets{$_}[$i];
			  $t->{result} eq 'not measured' ? 'not measured'
				: ($t->{what} =~ /within 0\.05/ ? "$t->{value} (>= $t->{limit})" : $t->{value}) . " **$t->{result}**"
		  } @majors ]
	} 0 .. $#{ $targets{ $majors[0] } });
print "\n", join(' ', map { "PostgreSQL $_: " . BenchReport::tally(@{ $targets{$_} }) } @majors), "\n\n";

print "## Events per second and ratios\n\n";
my @pairs = grep { grep { BenchReport::measured($first, 'client', $_) } @$_ } ([qw(g b)], [qw(r b)], [qw(w b)], [qw(p b)], [qw(p r)], [qw(g c)], [qw(r c)]);
print BenchReport::md_table(
	[ 'major', 'B', 'clients', (map { $name->{$_} } @calls), map { "($_->[0])/($_->[1])" } @pairs ],
	map {
		my $m = $_;
		map { my ($b, $c) = @$_;
			[ $m, $b, $c, (map { BenchReport::events($run{$m}, 'client', $_, $b, $c) } @calls),
			  map { BenchReport::ratio($run{$m}, 'client', @$_, $b, $c) } @pairs ] } @cells
	} @majors);

print "\n## Microseconds per transaction: wall / backend CPU / client CPU\n\n";
print BenchReport::md_table([ 'major', 'B', 'clients', map { $name->{$_} } @calls ],
	map {
		my $m = $_;
		map { my ($b, $c) = @$_;
			[ $m, $b, $c, map { my $v = $_; join ' / ', map { BenchReport::per_txn($run{$m}, $v, $b, $c, $_) } qw(wall backend client) } @calls ] } @cells
	} @majors);

my @why = map { my $m = $_; map { $_->{why} ? "- PostgreSQL $m: \u$_->{why}" : () } @{ $targets{$m} } } @majors;
if (@why) {
	print "\n## Where the misses go\n\n";
	print "Per transaction of one client, medians of the runs (CPU of the client processes by getrusage, of their\n"
	  . "server backends from /proc):\n\n";
	print "$_\n" for @why;
}
