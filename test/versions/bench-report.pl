#!/usr/bin/perl
# test/versions/bench-report.pl OUTDIR MAJOR...: docs/versions-bench.md from
# the runs of test/versions/bench.sh (OUTDIR/pgN/summary.tsv and env.txt,
# written by bench/run.sh and bench/report.sh), on standard output.
use strict;
use warnings;

my ($out, @majors) = @ARGV;
die "usage: $0 OUTDIR MAJOR...\n" unless $out && @majors;

# summary.tsv: cell LABEL B C events/s ...; ratio NUM DEN B C r; cpu LABEL B C client backend wall
sub summary
{
	my ($dir) = @_;
	my %s;
	open my $fh, '<', "$dir/summary.tsv" or die "$dir/summary.tsv: $!";
	while (<$fh>)
	{
		chomp;
		my @f = split /\t/;
		if ($f[0] eq 'cell') { $s{ev}{"$f[1] $f[2] $f[3]"} = $f[4]; }
		elsif ($f[0] eq 'ratio') { $s{ratio}{"$f[1]/$f[2] $f[3] $f[4]"} = $f[5]; }
		elsif ($f[0] eq 'cpu') { $s{cpu}{"$f[1] $f[2] $f[3]"} = [ $f[4], $f[5], $f[6] ]; }
		elsif ($f[0] eq 'runs') { $s{runs} = $f[1]; }
	}
	open my $env, '<', "$dir/env.txt" or die "$dir/env.txt: $!";
	while (<$env>)
	{
		$s{version} = $1 if /^(PostgreSQL \S+)/;
		$s{date} = $1 if /^date: (\S+)/;
		$s{duration} = $1 if /duration=(\S+)/;
	}
	return \%s;
}

my %s = map { $_ => summary("$out/pg$_") } @majors;
my $first = $s{ $majors[0] };
print "# The guard on each PostgreSQL major\n\n";
print "Made by `make bench-versions` (test/versions/bench.sh): the benchmark's real client (bench/client.c: libpq\n"
  . "pipeline mode, binary parameters, client-side SHA-256 of 100-byte payloads), B=1000 events per transaction,\n"
  . "1 and 4 clients, in a Debian root of each major's suite, one major after the other on the same machine\n"
  . "with the same settings (fsync and synchronous_commit on; bench/run.sh). Medians of $first->{runs} paired runs of\n"
  . "$first->{duration} s per cell; a ratio is the median of the per-run ratios within one major's run.\n"
  . "Raw results: `" . ($out =~ s{^.*/(bench/results/)}{$1}r) . "` (not committed).\n\n";
print "| major | clients | (b) offsets ev/s | (c) inbox ev/s | (g) apply_batch ev/s | (g)/(b) | (h)/(b) | (g)/(c) | (h)/(c) | backend CPU us/txn (g) / (b) |\n";
print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
for my $m (@majors)
{
	my $x = $s{$m};
	for my $c (1, 4)
	{
		my $k = "1000 $c";
		my $cpu = sub { my $v = $x->{cpu}{"$_[0] $k"}; $v ? $v->[1] : 'NA' };
		printf "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n",
		  $x->{version}, $c, map({ $x->{ev}{"$_ $k"} // 'NA' } qw(cb cc cg)),
		  map({ $x->{ratio}{"$_ $k"} // 'NA' } qw(cg/cb ch/cb cg/cc ch/cc)),
		  $cpu->('cg'), $cpu->('cb');
	}
}
print "\n";
