#!/usr/bin/perl
#
# examples/jetstream_demo/report.pl: the demo's report.  Every figure is
# computed from what the run left behind:
#
#   --check   the checker's output (demo_check): produced, in sink, lost,
#             duplicated, claims by verdict, recoveries promoted (read from
#             the guard's own tables), the retention gap
#   --faults  the driver's fault log: kills, pauses, the PostgreSQL crash
#   --logs    the consumers' logs: gaps verified, writes refused (SG001)
#   --bench   the RATE lines of the throughput rounds (guard, offsets,
#             twocommit); --bench-stream and --bench-events say what a
#             round read
#   --expect  the driver's own checks (each planned fault happened)
#
# Prints a table per partition, the throughput side by side, and a final
# line "demo: N produced, ...".  Exits 0 only if every invariant held.
use strict;
use warnings;
use Getopt::Long;

my ($check, $faults, $logs, $bench, $expect, $main, $retention, $page);
my ($bench_stream, $bench_events);
GetOptions('check=s' => \$check, 'faults=s' => \$faults, 'logs=s' => \$logs,
	'bench=s' => \$bench, 'expect=s' => \$expect, 'main=s' => \$main,
	'retention=s' => \$retention, 'page=i' => \$page,
	'bench-stream=s' => \$bench_stream, 'bench-events=i' => \$bench_events) or die "usage\n";
my @main = split /,/, $main;
my @streams = (@main, $retention ? ($retention) : ());

# check lines: "check stream=S key=value ..." (several per stream)
my (%c, $check_failures);
open my $fh, '<', $check or die "$check: $!\n";
while (<$fh>) {
	$check_failures = $1 if /^check failures=(\d+)/;
	next unless /^check stream=(\S+)(.*)/;
	my ($s, $rest) = ($1, $2);
	$c{$s}{$1} = $2 while $rest =~ /(\w+)=(-?\d+)/g;
}
close $fh;
my @failed;
push @failed, "the checker found $check_failures broken invariant(s)"
	if !defined $check_failures || $check_failures > 0;

# faults: "<time> <kind> <partition> <what>"
my (%kills, $crashes);
$crashes = 0;
open $fh, '<', $faults or die "$faults: $!\n";
while (<$fh>) {
	my (undef, $kind, $part) = split ' ';
	$kills{$part}++, $crashes++ if $kind eq 'kill';
	$crashes++ if $kind eq 'pg_crash';
}
close $fh;

# consumers' logs: "<time> <stream> <EVENT> ..." (the benchmark's excluded)
my (%verified, %refused, %expired);
for my $log (glob "$logs/*.log") {
	next if $log =~ m{/bench-};
	open $fh, '<', $log or die "$log: $!\n";
	while (<$fh>) {
		my (undef, $s, $ev) = split ' ';
		next unless defined $ev;
		$verified{$s}++ if $ev eq 'VERIFY' && / ok=true/;
		$refused{$s}++ if $ev eq 'REFUSED' && / sqlstate=SG001/;
		$expired{$s}++ if $ev eq 'EXPIRED';
	}
	close $fh;
}

# the driver's own checks
open $fh, '<', $expect or die "$expect: $!\n";
while (<$fh>) {
	push @failed, $1 if /^FAILED (.*)/;
}
close $fh;

my $v = sub { my ($s, $k) = @_; $c{$s}{$k} // 0 };
printf "%-15s %9s %8s %6s %10s %5s %-22s %8s %10s %8s\n", 'partition',
	'produced', 'in sink', 'lost', 'duplicated', 'kills',
	'claims (a/g/f/d)', 'gaps', 'recoveries', 'zombie';
printf "%-15s %9s %8s %6s %10s %5s %-22s %8s %10s %8s\n", '', '', '', '', '', '',
	'', 'verified', 'promoted', 'refused';
my %total;
for my $s (@streams) {
	my $is_ret = $retention && $s eq $retention;
	my $lost = $is_ret ? $v->($s, 'proven_lost') : $v->($s, 'lost');
	my $claims = sprintf '%d/%d/%d/%d', map { $v->($s, "claims_$_") }
		qw(aligned gap_replay_required fail_closed unrecoverable_divergence);
	printf "%-15s %9d %8d %6d %10d %5d %-22s %8d %10d %8d\n", $s,
		$v->($s, 'produced'), $v->($s, 'in_sink'), $lost, $v->($s, 'duplicated'),
		$kills{$s} // 0, $claims, $verified{$s} // 0,
		$v->($s, 'recoveries_promoted'), $refused{$s} // 0;
	next if $is_ret;
	$total{$_} += $v->($s, $_) for qw(produced in_sink lost duplicated recoveries_promoted);
	$total{verified} += $verified{$s} // 0;
}
print "claims: aligned/gap_replay_required/fail_closed/unrecoverable_divergence, from sog.manifest_log\n";
if ($retention) {
	my $s = $retention;
	printf "%s: applied through %d when the stream's first sequence became %d: "
		. "gap (%d, %d] reported (%d events proven lost), %d retained events left unapplied\n",
		$s, $v->($s, 'applied'), $v->($s, 'first_seq'), $v->($s, 'gap_from'),
		$v->($s, 'gap_to'), $v->($s, 'proven_lost'), $v->($s, 'unapplied_retained');
}
$total{kills} = 0;
$total{kills} += $kills{$_} // 0 for @streams;
printf "faults: %d SIGKILLs, %d PostgreSQL crash(es), %d expired consumers seen, "
	. "%d zombie writes refused\n", $total{kills}, $crashes - $total{kills},
	(eval { my $n = 0; $n += $expired{$_} // 0 for @streams; $n }),
	(eval { my $n = 0; $n += $refused{$_} // 0 for @streams; $n });

# throughput: the median of the rounds, per mode; the ratios are medians of
# the rounds' own ratios (each round's modes ran one after the other, in an
# order that turns from round to round), as make bench pairs its runs
my (%eps, %round);
open $fh, '<', $bench or die "$bench: $!\n";
while (<$fh>) {
	next unless /^bench (\w+) (\d+) .* eps=(\d+)/;
	push @{$eps{$1}}, $3;
	$round{$2}{$1} = $3;
}
close $fh;
my $median = sub {
	my @x = sort { $a <=> $b } @{$_[0] // []};
	return 0 unless @x;
	return @x % 2 ? $x[$#x / 2] : ($x[@x / 2 - 1] + $x[@x / 2]) / 2;
};
my ($g, $o) = ($median->($eps{guard}), $median->($eps{offsets}));
printf "\nend to end, %s%s to the sink, pages of %d, median of %d round(s):\n",
	$bench_events ? "$bench_events events of " : '', $bench_stream // $main[0], $page,
	scalar @{$eps{guard} // []};
my $t = $median->($eps{twocommit});
printf "  %-60s %9.0f events/s\n", 'with the guard, one COMMIT per page (the next page noted)', $g;
printf "  %-60s %9.0f events/s\n", 'offsets only (INSERT + UPDATE offsets)', $o;
printf "  %-60s %9.0f events/s\n", 'with the guard, two COMMITs per page (--two-commit)', $t;
my %ratios;
for my $r (sort { $a <=> $b } keys %round) {
	my $x = $round{$r};
	next unless $x->{offsets};
	push @{$ratios{$_}}, $x->{$_} / $x->{offsets} for grep { $x->{$_} } qw(guard twocommit);
}
printf "  guard / offsets only: %.2f (two commits per page: %.2f), medians of the rounds' ratios (%s)\n",
	$median->($ratios{guard}), $median->($ratios{twocommit}),
	join(' ', map { sprintf '%.2f', $_ } @{$ratios{guard} // []});
push @failed, 'the throughput rounds did not all run' unless $g > 0 && $o > 0 && $t > 0;

print "\n";
print "demo: FAILED: $_\n" for @failed;
my $gaps = $retention ? $v->($retention, 'retention_gaps') : 0;
printf "demo: %d produced, %d in sink, %d lost, %d duplicated, %d crashes, "
	. "%d expired consumers recovered, %d gaps verified, %d unresolved gap (retention) reported\n",
	$total{produced}, $total{in_sink}, $total{lost}, $total{duplicated}, $crashes,
	$total{recoveries_promoted}, $total{verified}, $gaps;
exit(@failed ? 1 : 0);
