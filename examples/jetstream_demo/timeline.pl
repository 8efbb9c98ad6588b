#!/usr/bin/perl
#
# examples/jetstream_demo/timeline.pl: demo-timeline.svg, one panel per
# partition: the read cursor (what sog.note_read was told) and the applied
# position (what committed) over time, from the consumers' logs, with every
# fault of the driver's log marked and numbered.  Plain Perl, no modules.
#
#   timeline.pl --logs DIR --faults FILE --streams S1,S2,... --out FILE.svg
use strict;
use warnings;
use Getopt::Long;

my ($logs, $faults, $streams, $out);
GetOptions('logs=s' => \$logs, 'faults=s' => \$faults, 'streams=s' => \$streams,
	'out=s' => \$out) or die "usage\n";
my @streams = split /,/, $streams;
my %want = map { $_ => 1 } @streams;

# Events per stream: [time, kind, value]; kind read/applied/gap.
my (%ev, $t0, $t1);
for my $log (sort glob "$logs/*.log") {
	next if $log =~ m{/bench-};
	open my $fh, '<', $log or die "$log: $!\n";
	while (<$fh>) {
		my ($t, $s, $e, @kv) = split ' ';
		next unless defined $e && $want{$s} && $t =~ /^\d/;
		my %kv = map { /^(\w+)=(.*)/ ? ($1, $2) : () } @kv;
		my $row;
		$row = [$t, 'read', $kv{cursor}] if $e eq 'READ';
		$row = [$t, 'applied', $kv{applied}] if $e eq 'APPLIED';
		$row = [$t, 'applied', $kv{resume_from}] if $e eq 'CLAIM';
		$row = [$t, 'read', $kv{last}] if $e eq 'RECOVERY_PAGE';
		$row = [$t, 'applied', $kv{applied}] if $e eq 'PROMOTE' && ($kv{promoted} // '') eq 'true';
		$row = [$t, 'gap', "$kv{from}:$kv{to}"] if $e eq 'GAP_REPORTED';
		next unless $row && defined $row->[2];
		push @{$ev{$s}}, $row;
		$t0 = $t if !defined $t0 || $t < $t0;
		$t1 = $t if !defined $t1 || $t > $t1;
	}
	close $fh;
}
my @faults;
open my $fh, '<', $faults or die "$faults: $!\n";
while (<$fh>) {
	chomp;
	my ($t, $kind, $part, $what) = split ' ', $_, 4;
	push @faults, {t => $t, kind => $kind, part => $part, what => $what // ''};
	$t0 = $t if !defined $t0 || $t < $t0;
	$t1 = $t if !defined $t1 || $t > $t1;
}
close $fh;
die "nothing to draw\n" unless defined $t0;
$t1 = $t0 + 1 if $t1 <= $t0;

my %color = (kill => '#d62728', pause => '#9467bd', sigstop => '#8c564b',
	sigcont => '#8c564b', pg_crash => '#000000', pg_restart => '#7f7f7f',
	retention => '#2ca02c', resume => '#9467bd');
my ($W, $L, $R, $PH, $GAP, $TOP) = (1100, 80, 30, 190, 60, 80);
my $list_y = $TOP + @streams * ($PH + $GAP);
my $H = $list_y + 20 + 16 * @faults + 20;
my $x = sub { $L + ($_[0] - $t0) / ($t1 - $t0) * ($W - $L - $R) };
my $esc = sub { my $s = shift; $s =~ s/&/&amp;/g; $s =~ s/</&lt;/g; $s =~ s/>/&gt;/g; $s };

my @svg;
push @svg, qq{<svg xmlns="http://www.w3.org/2000/svg" width="$W" height="$H" font-family="sans-serif" font-size="12">};
push @svg, qq{<rect width="$W" height="$H" fill="white"/>};
push @svg, qq{<text x="$L" y="24" font-size="16" font-weight="bold">stream_offset_guard on NATS JetStream: read cursor and applied position per partition</text>};
push @svg, qq{<text x="$L" y="44" fill="#555">orange: read cursor (sog.note_read)  blue: applied position (committed)  numbered lines: faults, listed below</text>};

for my $i (0 .. $#streams) {
	my $s = $streams[$i];
	my $top = $TOP + $i * ($PH + $GAP);
	my @e = sort { $a->[0] <=> $b->[0] } @{$ev{$s} // []};
	my $max = 1;
	for (@e) { for my $v (split /:/, $_->[2]) { $max = $v if $v =~ /^\d+$/ && $v > $max } }
	my $y = sub { $top + $PH - $_[0] / $max * $PH };
	push @svg, qq{<text x="$L" y="@{[$top - 8]}" font-weight="bold">$s</text>};
	push @svg, qq{<rect x="$L" y="$top" width="@{[$W - $L - $R]}" height="$PH" fill="none" stroke="#ccc"/>};
	for my $f (0, 0.5, 1) {
		my $yy = $y->($max * $f);
		push @svg, sprintf qq{<text x="%d" y="%.1f" text-anchor="end" fill="#555">%d</text>},
			$L - 6, $yy + 4, $max * $f;
	}
	my $step = (grep { ($t1 - $t0) / $_ <= 12 } 1, 2, 5, 10, 20, 30, 60)[0] // 120;
	for (my $t = 0; $t <= $t1 - $t0; $t += $step) {
		my $xx = $x->($t0 + $t);
		push @svg, sprintf qq{<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>}, $xx, $top, $xx, $top + $PH;
		push @svg, sprintf qq{<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%ds</text>}, $xx, $top + $PH + 14, $t;
	}
	for my $kind (['read', '#ff7f0e'], ['applied', '#1f77b4']) {
		my ($k, $c) = @$kind;
		my ($pts, $last) = ('', undef);
		for (grep { $_->[1] eq $k } @e) {
			my ($xx, $yy) = ($x->($_->[0]), $y->($_->[2]));
			$pts .= sprintf '%.1f,%.1f ', $xx, $y->($last) if defined $last;
			$pts .= sprintf '%.1f,%.1f ', $xx, $yy;
			$last = $_->[2];
		}
		push @svg, qq{<polyline points="$pts" fill="none" stroke="$c" stroke-width="1.6"/>} if $pts;
	}
	for (grep { $_->[1] eq 'gap' } @e) {
		my ($from, $to) = split /:/, $_->[2];
		my $xx = $x->($_->[0]);
		push @svg, sprintf qq{<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62728" fill-opacity="0.15"/>},
			$xx, $y->($to), $W - $R - $xx, $y->($from) - $y->($to);
		push @svg, sprintf qq{<text x="%.1f" y="%.1f" fill="#d62728">gap (%d, %d] reported: stopped</text>},
			$xx + 4, $y->($to) - 4, $from, $to;
	}
	for my $n (0 .. $#faults) {
		my $f = $faults[$n];
		next unless $f->{part} eq $s || $f->{part} eq 'all';
		my $xx = $x->($f->{t});
		my $c = $color{$f->{kind}} // '#333';
		push @svg, sprintf qq{<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="3,2"/>},
			$xx, $top, $xx, $top + $PH, $c;
		push @svg, sprintf qq{<text x="%.1f" y="%d" text-anchor="middle" fill="%s" font-size="10">%d</text>},
			$xx, $top + 10 + 10 * ($n % 5), $c, $n + 1;
	}
}
for my $n (0 .. $#faults) {
	my $f = $faults[$n];
	my $c = $color{$f->{kind}} // '#333';
	push @svg, sprintf qq{<text x="%d" y="%d" fill="%s">%d. %5.1fs  %s  %s: %s</text>},
		$L, $list_y + 16 * $n, $c, $n + 1, $f->{t} - $t0, $f->{kind}, $f->{part}, $esc->($f->{what});
}
push @svg, '</svg>';
open my $o, '>', $out or die "$out: $!\n";
print $o join("\n", @svg), "\n";
close $o;
