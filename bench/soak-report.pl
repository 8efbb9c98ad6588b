#!/usr/bin/perl
#
# bench/soak-report.pl: the report of bench/soak.sh, computed from what the
# runs left in the results directory (nothing is hard-coded: every target
# met or missed is a comparison of measured figures):
#
#   soak-report.pl RESULTS_DIR
#
# Reads env.txt, server.log (autovacuum and checkpoint lines) and, per run
# A, B, C, run.txt, txlog.* (end time, latency in us, events, partition per
# transaction), samples.tsv and prunes.tsv (their columns: bench/soak.sh).
# Writes into RESULTS_DIR:
#   soak.md               the page docs/soak.md: environment, targets, what
#                         to expect per billion events, a table per run of
#                         its 10% slices
#   soak-throughput.svg   events/s and p99 latency over time, per run, with
#                         the prune runs, autovacuums and checkpoints shaded
#   soak-receipts.svg     sog.receipt's table + index size over time
#   soak-depth.svg        run C: latency against receipts stored (log x)
# A slice is a tenth of a run's events, in the order the transactions
# ended.  Plain Perl, core modules only.
use strict;
use warnings;
use List::Util qw(sum max min);
use POSIX qw(ceil floor);
use Time::Local qw(timegm);

my $dir = shift or die "usage: soak-report.pl RESULTS_DIR\n";
my %env = read_env("$dir/env.txt");
my %soak = $env{soak} =~ /(\w+)=(\[[^\]]*\]|\S+)/g;
s/^\[(.*)\]$/$1/ for values %soak;
my ($ncpu) = $env{host} =~ /(\d+) cpus/;
my $activity = read_server_log("$dir/server.log");
my @runs = grep { -s "$dir/$_/run.txt" } qw(A B C);
die "soak-report: no run in $dir\n" unless @runs;
my %run;
$run{$_} = analyse(load_run($_)) for @runs;

write_file("$dir/soak-throughput.svg", plot_throughput());
write_file("$dir/soak-receipts.svg", plot_receipts());
write_file("$dir/soak-depth.svg", plot_depth()) if $run{C};
write_file("$dir/soak.md", page());
print "soak-report: wrote soak.md and the plots in $dir\n";
exit 0;

# ------------------------------------------------------------------ input

sub read_env {
	local $_;
	my %e;
	open my $fh, '<', shift or die "env.txt: $!\n";
	while (<$fh>) {
		chomp;
		if (/^([\w ]+?): (.*)$/) { $e{$1} = $2 }
		elsif (/^(\w+)=(.*)$/) { $e{settings}{$1} = $2 }
		elsif (/^PostgreSQL /) { ($e{version}) = /^(PostgreSQL \S+)/ }
	}
	return %e;
}

sub read_tsv {
	my $f = shift;
	open my $fh, '<', $f or die "$f: $!\n";
	return [map { chomp; [split /\t/] } grep { /\S/ } <$fh>];
}

# Autovacuum runs (from the LOG line at their end and their elapsed time) and
# checkpoints (from "starting" to "complete"), as [start, end, what].
sub read_server_log {
	local $_;
	my (%a, $vac, $ckpt_start) = (vacuum => [], checkpoint => []);
	open my $fh, '<', shift or return \%a;
	while (<$fh>) {
		if (/^(\d+)-(\d+)-(\d+) (\d+):(\d+):(\d+(?:\.\d+)?) UTC \[\d+\] LOG:  (.*)/) {
			my $t = timegm(0, $5, $4, $3, $2 - 1, $1) + $6;
			my $msg = $7;
			$vac = undef;
			if ($msg =~ /^automatic vacuum of table "[^.]+\.([^"]+)"/) {
				$vac = [$t, $t, $1];
				push @{ $a{vacuum} }, $vac;
			}
			$ckpt_start = $msg =~ /shutdown/ ? undef : $t if $msg =~ /^checkpoint starting: /;
			if ($msg =~ /^checkpoint complete/ && defined $ckpt_start) {
				push @{ $a{checkpoint} }, [$ckpt_start, $t, 'checkpoint'];
				$ckpt_start = undef;
			}
		}
		elsif ($vac && /elapsed: ([\d.]+) s/) {
			$vac->[0] -= $1;
		}
	}
	return \%a;
}

sub load_run {
	my $name = shift;
	my $d = "$dir/$name";
	open my $fh, '<', "$d/run.txt" or die "$d/run.txt: $!\n";
	my %m = map { /^(\w+)=(.*)$/ } <$fh>;
	my @tx;
	for my $f (glob "$d/txlog.*") {
		open my $t, '<', $f or die "$f: $!\n";
		push @tx, map { [split ' '] } <$t>;
	}
	die "run $name: no transactions logged\n" unless @tx;
	@tx = sort { $a->[0] <=> $b->[0] } @tx;
	my $cum = 0;
	for (@tx) { $_->[1] /= 1000; $_->[4] = $cum += $_->[2] }    # latency in ms; events through it
	my %s = (name => $name, meta => \%m, tx => \@tx, events => $cum);
	$s{t0} = min(map { $_->[0] - $_->[1] / 1000 } @tx);
	$s{t1} = $tx[-1][0];
	my @cols = qw(t wal heap index applied receipts live dead avcount lastav vacuuming lockwait busy ours);
	$s{samples} = [map { my $r = $_; +{ map { $cols[$_] => $r->[$_] } 0 .. $#cols } } @{ read_tsv("$d/samples.tsv") }];
	$s{prunes} = [grep { $_->[2] eq 'succeeded' } @{ read_tsv("$d/prunes.tsv") }];
	$s{prunes_failed} = grep { $_->[2] ne 'succeeded' } @{ read_tsv("$d/prunes.tsv") };
	my $in_run = sub { $_[0][1] >= $s{t0} && $_[0][0] <= $s{t1} + 1 };
	$s{vacuums} = [grep { $_->[2] =~ /^sog\.receipt(?:_[0-4])?$/  && $in_run->($_) } @{ $activity->{vacuum} }];
	$s{vacuums_other} = [grep { $_->[2] !~ /^sog\.receipt(?:_[0-4])?$/  && $in_run->($_) } @{ $activity->{vacuum} }];
	$s{checkpoints} = [grep { $in_run->($_) } @{ $activity->{checkpoint} }];
	return \%s;
}

# ------------------------------------------------------------------ figures

sub quantile {
	my ($sorted, $p) = @_;
	return undef unless @$sorted;
	my $i = ceil($p * @$sorted) - 1;
	return $sorted->[$i < 0 ? 0 : $i];
}

sub median { my @v = sort { $a <=> $b } @_; return quantile(\@v, 0.5) }

# A sampled column at time t, linear between the samples around it.
sub at {
	my ($r, $t, $col) = @_;
	my $s = $r->{samples};
	return $s->[0]{$col} if $t <= $s->[0]{t};
	for my $i (1 .. $#$s) {
		next if $s->[$i]{t} < $t;
		my ($u, $v) = ($s->[$i - 1], $s->[$i]);
		return $u->{$col} if $v->{t} == $u->{t};
		return $u->{$col} + ($v->{$col} - $u->{$col}) * ($t - $u->{t}) / ($v->{t} - $u->{t});
	}
	return $s->[-1]{$col};
}

# Intervals [start, end, ...] merged into disjoint ones.
sub merged {
	my @m;
	for my $i (sort { $a->[0] <=> $b->[0] } @_) {
		if (@m && $i->[0] <= $m[-1][1]) { $m[-1][1] = max($m[-1][1], $i->[1]) }
		else { push @m, [$i->[0], $i->[1]] }
	}
	return @m;
}

# Seconds of [lo, hi] covered by the intervals.
sub covered {
	my ($lo, $hi, @iv) = @_;
	return sum(0, map { max(0, min($hi, $_->[1]) - max($lo, $_->[0])) } merged(@iv));
}

# Does transaction t (ended at t->[0], took t->[1] ms) overlap one of the intervals?
sub overlaps { my ($t, @iv) = @_; return scalar grep { $t->[0] - $t->[1] / 1000 <= $_->[1] && $t->[0] >= $_->[0] } @iv }

# Per-slice and whole-run figures.
sub analyse {
	my $r = shift;
	my @busy = (@{ $r->{prunes} }, @{ $r->{vacuums} }, @{ $r->{checkpoints} });
	my ($from, $k, @slices) = ($r->{t0}, 0);
	my @tx = @{ $r->{tx} };
	while (@tx) {
		my @in;
		push @in, shift @tx while @tx && ($tx[0][4] <= ($k + 1) * $r->{events} / 10 || $k == 9);
		@in = (shift @tx) unless @in;
		my ($lo, $hi) = ($from, $in[-1][0]);
		my $dur = $hi - $lo || 1e-6;
		my @lat = sort { $a <=> $b } map { $_->[1] } @in;
		my $events = sum(map { $_->[2] } @in);
		my $applied = at($r, $hi, 'applied') - at($r, $lo, 'applied');
		my $quiet = $dur - covered($lo, $hi, @busy);
		my $quiet_events = sum(0, map { $_->[2] } grep { !overlaps($_, @busy) } @in);
		my $cpu = (at($r, $hi, 'busy') - at($r, $lo, 'busy')) - (at($r, $hi, 'ours') - at($r, $lo, 'ours'));
		push @slices, {
			from => $lo, to => $hi, events => $events, rate => $events / $dur,
			p50 => quantile(\@lat, 0.5), p99 => quantile(\@lat, 0.99), max => $lat[-1],
			heap => at($r, $hi, 'heap'), index => at($r, $hi, 'index'), receipts => at($r, $hi, 'receipts'),
			wal_per_event => $applied > 0 ? (at($r, $hi, 'wal') - at($r, $lo, 'wal')) / $applied : undef,
			prune => covered($lo, $hi, @{ $r->{prunes} }) / $dur,
			vacuum => covered($lo, $hi, @{ $r->{vacuums} }) / $dur,
			checkpoint => covered($lo, $hi, @{ $r->{checkpoints} }) / $dur,
			quiet_rate => $quiet > 0.05 * $dur ? $quiet_events / $quiet : undef,
			other_cpu => max(0, 100 * $cpu / ($dur * $soak{clk_tck} * $ncpu)),
		};
		($from, $k) = ($hi, $k + 1);
	}
	$r->{slices} = \@slices;
	my @s = @{ $r->{samples} };
	$r->{duration} = $r->{t1} - $r->{t0};
	$r->{rate} = $r->{events} / $r->{duration};
	$r->{wal_per_event} = ($s[-1]{wal} - $s[0]{wal}) / ($s[-1]{applied} - $s[0]{applied});
	$r->{size} = [map { [max(0, $_->{t} - $r->{t0}), $_->{heap} + $_->{index}, $_->{receipts}] } @s];
	my @lat = sort { $a <=> $b } map { $_->[1] } @{ $r->{tx} };
	@{$r}{qw(p50 p99 max)} = (quantile(\@lat, 0.5), quantile(\@lat, 0.99), $lat[-1]);
	my ($first, $last) = @slices[0, -1];
	$r->{ratio} = $last->{rate} / $first->{rate};
	$r->{quiet_ratio} = $first->{quiet_rate} && $last->{quiet_rate} ? $last->{quiet_rate} / $first->{quiet_rate} : undef;
	$r->{max_size} = max(map { $_->[1] } @{ $r->{size} });
	$r->{end_size} = $r->{size}[-1][1];
	$r->{end_receipts} = $s[-1]{receipts};
	$r->{pruned} = $s[-1]{applied} - $s[-1]{receipts};
	$r->{bytes_per_event} = ($r->{end_size} - $r->{size}[0][1]) / $r->{events};
	if (my @p = @{ $r->{prunes} }) {
		my @d = map { $_->[1] - $_->[0] } @p;
		@{$r}{qw(prune_n prune_median prune_max prune_total)} = (scalar @p, median(@d), max(@d), sum(@d));
		# After the first prune: the steady state.
		my @steady = grep { $_->{t} >= $p[0][1] } @s;
		if (@steady) {
			my ($top) = sort { $b->{heap} + $b->{index} <=> $a->{heap} + $a->{index} } @steady;
			$r->{steady_max} = $top->{heap} + $top->{index};
			$r->{steady_bytes_per_receipt} = $r->{steady_max} / ($top->{receipts} || 1);
			$r->{steady_receipts} = max(map { $_->{receipts} } @steady);
		}
		# Disk: the table + index just before each prune run (each cycle's peak).
		$r->{peaks} = [map { at($r, $_->[0], 'heap') + at($r, $_->[0], 'index') } @p];
		# The same after the first horizon: the prune runs that began once a
		# sample showed receipts pruned (applied above receipts stored).  The
		# ring's partitions are emptied one at a time, so the size before a
		# prune is a sawtooth over a turn of the ring; the largest of the
		# first third of these cycles against the largest of the last third.
		my ($h) = grep { $_->{applied} > $_->{receipts} } @s;
		if ($h) {
			my @after = map { at($r, $_->[0], 'heap') + at($r, $_->[0], 'index') } grep { $_->[0] >= $h->{t} } @p;
			$r->{peaks_after} = \@after;
			$r->{first_horizon} = $h->{t} - $r->{t0};
			if (@after >= 6) {
				my $third = int(@after / 3);
				$r->{peak_first_third} = max(@after[0 .. $third - 1]);
				$r->{peak_last_third} = max(@after[$#after - $third + 1 .. $#after]);
			}
		}
		# Pruning keeps up: receipts stored never above what the policy keeps
		# plus what arrived in one prune period, the longest run and a sample.
		my $m = $r->{meta};
		my $window = $m->{prune_every} + $r->{prune_max} + $m->{sample_every};
		my $keep = $m->{keep_positions} * $m->{partitions};
		my @over = grep {
			$_->{receipts} > $keep + $_->{applied} - at($r, $_->{t} - $window, 'applied')
		} grep { $_->{t} >= $p[0][1] } @s;
		$r->{over_bound} = scalar @over;
		$r->{checked_bound} = scalar grep { $_->{t} >= $p[0][1] } @s;
		$r->{bound_window} = $window;
		my @during = grep { overlaps($_, @p) } @{ $r->{tx} };
		my @outside = grep { !overlaps($_, @p) } @{ $r->{tx} };
		my @ld = sort { $a <=> $b } map { $_->[1] } @during;
		my @lo = sort { $a <=> $b } map { $_->[1] } @outside;
		$r->{p99_during_prune} = quantile(\@ld, 0.99);
		$r->{max_during_prune} = $ld[-1];
		$r->{p99_outside_prune} = quantile(\@lo, 0.99);
		# events/s of the transactions that ended while a prune ran, and of the others
		my $tp = covered($r->{t0}, $r->{t1}, @p);
		my @in_p = grep { my $t = $_->[0]; grep { $t >= $_->[0] && $t <= $_->[1] } @p } @{ $r->{tx} };
		$r->{rate_during_prune} = $tp > 0 ? sum(0, map { $_->[2] } @in_p) / $tp : undef;
		my @sp = grep { my $t = $_->{t}; grep { $t >= $_->[0] && $t <= $_->[1] } @p } @s;
		my @so = grep { my $t = $_->{t}; !grep { $t >= $_->[0] && $t <= $_->[1] } @p } @s;
		$r->{lockwait_during_prune} = @sp ? (grep { $_->{lockwait} > 0 } @sp) / @sp : undef;
		$r->{lockwait_outside_prune} = @so ? (grep { $_->{lockwait} > 0 } @so) / @so : undef;
		$r->{samples_during_prune} = @sp;
		$r->{rate_outside_prune} = $r->{duration} > $tp ? ($r->{events} - sum(0, map { $_->[2] } @in_p)) / ($r->{duration} - $tp) : undef;
	}
	return $r;
}

# ------------------------------------------------------------------ formats

sub n { my $v = sprintf '%.0f', shift; 1 while $v =~ s/^(\d+)(\d{3})/$1,$2/; return $v }
sub mb { return sprintf '%.1f MB', $_[0] / 1e6 }
sub ms { return defined $_[0] ? sprintf('%.2f', $_[0]) : 'NA' }
sub pct { return sprintf '%.0f%%', 100 * $_[0] }
sub ratio { return defined $_[0] ? sprintf('%.2f', $_[0]) : 'NA' }
sub gb { return sprintf '%.1f GB', $_[0] / 1e9 }

sub seconds {
	my $s = shift;
	return sprintf('%.1f s', $s) if $s < 120;
	return sprintf('%.1f min', $s / 60) if $s < 7200;
	return sprintf('%.1f h', $s / 3600);
}

sub met { return $_[0] ? '**met**' : '**missed**' }

sub describe_run {
	my $r = shift;
	my $m = $r->{meta};
	my $each = $m->{seconds} ? seconds($m->{seconds}) . ' at ' . n($m->{rate}) . ' events/s at most in all'
	  : n($m->{events_each}) . ' events';
	my $what = $m->{partitions} == 1 ? "$each through one checkpoint"
	  : "$each through each of $m->{partitions} checkpoints ($m->{clients} client processes, each cycling over "
	  . $m->{partitions} / $m->{clients} . ')';
	my $keep = $m->{keep_positions} ne ''
	  ? 'retention: keep ' . n($m->{keep_positions}) . ' positions'
	  . ($m->{keep_interval} ne '' ? " and $m->{keep_interval}" : '') . ($m->{partitions} > 1 ? ' per checkpoint' : '')
	  . ", pruned by $m->{pruner}"
	  : 'no retention';
	return "$what, B=$m->{batch}, $keep";
}

# ------------------------------------------------------------------ the page

# Why a slice comparison came out as it did, from the slices' own figures.
sub why {
	my $r = shift;
	my ($f, $l) = @{ $r->{slices} }[0, -1];
	my @parts = map {
		my ($k, $what) = @$_;
		sprintf '%s %s of the time (first slice %s)', $what, pct($l->{$k}), pct($f->{$k})
	} (['prune', 'pruning ran'], ['vacuum', 'autovacuum of sog.receipt ran'], ['checkpoint', 'a checkpoint ran']);
	my $txt = 'In the last slice ' . join('; ', @parts)
	  . sprintf('; other processes used %.0f%% of the CPU (first slice %.0f%%)', $l->{other_cpu}, $f->{other_cpu})
	  . sprintf('; %s receipts were stored at its end (first slice %s)', n($l->{receipts}), n($f->{receipts}));
	$txt .= sprintf('. Outside pruning, autovacuum and checkpoints the last slice ran at %s of the first', ratio($r->{quiet_ratio}))
	  if defined $r->{quiet_ratio};
	return "$txt.";
}

sub targets {
	my @t;
	for my $name (@runs) {
		my $r = $run{$name};
		push @t, ["run $name: throughput of the last 10% slice within 10% of the first (at least 0.9 of it)",
			sprintf('%s events/s against %s (%s)', n($r->{slices}[-1]{rate}), n($r->{slices}[0]{rate}), ratio($r->{ratio})),
			met($r->{ratio} >= 0.9) . ($r->{ratio} >= 0.9 ? '' : '. ' . why($r))];
		next if $r->{meta}{keep_positions} eq '';
		push @t, ["run $name: pruning keeps up (receipts stored, after the first prune run, at most the "
			  . n($r->{meta}{keep_positions} * $r->{meta}{partitions}) . ' kept plus what arrived in the last '
			  . seconds($r->{bound_window} // 0) . ': a prune period, the longest run and a sample)',
			defined $r->{prune_n} ? sprintf('%d of %d samples above', $r->{over_bound}, $r->{checked_bound}) : 'no prune run',
			defined $r->{prune_n} && $r->{checked_bound} ? met($r->{over_bound} == 0) : 'not measured'];
		my @pk = @{ $r->{peaks} // [] };
		push @t, ["run $name: receipts on disk bounded (table + index just before the last prune run at most 1.1 x just before the second)",
			@pk ? 'before each prune run: ' . join(', ', map { mb($_) } @pk)
			  . sprintf('; autovacuum of sog.receipt ran %d times; %s dead tuples in it at the end',
				scalar @{ $r->{vacuums} }, n($r->{samples}[-1]{dead}))
			  : 'no prune run',
			@pk >= 3 ? met(disk_bounded_literal($r) =~ /^the same/) : sprintf('not measured: %d prune run(s), the comparison needs 3', scalar @pk)];
		if (defined $r->{first_horizon}) {
			my @pa = @{ $r->{peaks_after} };
			push @t, ["run $name: receipts on disk bounded once the first horizon is reached (the largest size before a prune run"
				  . ' in the last third of the cycles after it at most 1.1 x the largest in the first third: the ring empties one partition'
				  . ' at a time, so the size is a sawtooth over a turn of the ring)',
				defined $r->{peak_last_third}
				  ? sprintf('first horizon after %s; %d prune runs after it; largest in the first third %s, in the last third %s (%s)',
					seconds($r->{first_horizon}), scalar @pa, mb($r->{peak_first_third}), mb($r->{peak_last_third}),
					ratio($r->{peak_last_third} / $r->{peak_first_third}))
				  : sprintf('first horizon after %s; %d prune runs after it', seconds($r->{first_horizon}), scalar @pa),
				defined $r->{peak_last_third} ? met($r->{peak_last_third} <= 1.1 * $r->{peak_first_third})
				  : 'not measured: the comparison needs 6 prune runs after the first horizon'];
		}
		# issue 30: the applier's rate while a prune runs, and WAL per event
		# against run C's (no retention)
		if (defined $r->{rate_during_prune} && $r->{rate_outside_prune}) {
			my $q = $r->{rate_during_prune} / $r->{rate_outside_prune};
			push @t, ["run $name: the applier keeps at least 0.8 of its rate while a prune runs",
				sprintf('%s events/s against %s (%s)', n($r->{rate_during_prune}), n($r->{rate_outside_prune}), ratio($q))
				  . ($r->{meta}{rate} ? sprintf('; the client is paced at %s events/s in all', n($r->{meta}{rate})) : ''),
				met($q >= 0.8)];
		}
		if ($run{C}) {
			my $q = $r->{wal_per_event} / $run{C}{wal_per_event};
			push @t, ["run $name: WAL per event within 5% of run C's (no retention)",
				sprintf('%.0f against %.0f bytes (%+.1f%%)', $r->{wal_per_event}, $run{C}{wal_per_event}, 100 * ($q - 1)),
				met($q <= 1.05)];
		}
	}
	return @t;
}

# Whether the run showed the table bounded: its size before each prune run
# (each cycle's peak) did not grow from the second to the last.
sub disk_bounded_literal {
	my @pk = @{ $_[0]{peaks} // [] };
	return 'not shown bounded: too few prune runs to compare cycles' if @pk < 3;
	return $pk[-1] <= 1.1 * $pk[1] ? 'the same whatever the total (bounded from cycle to cycle)'
	  : 'not shown bounded: the table still grew from cycle to cycle';
}

# The same, judged once the first horizon is reached (the ring's sawtooth:
# the largest size before a prune in the last third of the cycles after it
# against the first third's), where the run has enough of them.
sub disk_bounded {
	my $r = $_[0];
	return disk_bounded_literal($r) unless defined $r->{peak_last_third};
	return $r->{peak_last_third} <= 1.1 * $r->{peak_first_third}
	  ? 'the same whatever the total (bounded: once the first horizon is reached, the size before a prune stays within 10% from the first third of the cycles to the last)'
	  : 'not shown bounded: the table still grew after the first horizon';
}

sub per_billion {
	my @rows;
	for my $name (@runs) {
		my $r = $run{$name};
		my $m = $r->{meta};
		my @row = ("run $name", seconds(1e9 / $r->{rate}), gb($r->{wal_per_event} * 1e9) . sprintf(' (%.0f B/event)', $r->{wal_per_event}));
		if ($m->{keep_positions} eq '') {
			push @row, gb($r->{bytes_per_event} * 1e9) . sprintf(' (grows %.1f B/event: no retention)', $r->{bytes_per_event}), 'none';
		}
		elsif (defined $r->{steady_max}) {
			my $runs_per_billion = $r->{prune_n} / $r->{events} * 1e9;
			push @row,
			  sprintf('%s, %s (the largest after the first prune run, %.0f bytes per receipt stored then;'
				  . ' up to %s receipts stored: the %s kept per checkpoint plus what arrives between prune runs, every %s s)',
				mb($r->{steady_max}), disk_bounded($r), $r->{steady_bytes_per_receipt}, n($r->{steady_receipts}),
				n($m->{keep_positions}), $m->{prune_every}),
			  $r->{pruned} > 0
			  ? sprintf('%s (%s per %s receipts pruned; %s runs of median %s)', seconds($r->{prune_total} / $r->{pruned} * 1e9),
				seconds($r->{prune_total}), n($r->{pruned}), n($runs_per_billion), seconds($r->{prune_median}))
			  : 'nothing pruned';
		}
		else {
			push @row, 'not measured (no prune run)', 'not measured';
		}
		push @rows, \@row;
	}
	return @rows;
}

sub table {
	my ($head, @rows) = @_;
	return join("\n", '| ' . join(' | ', @$head) . ' |', '|' . (' --- |' x @$head), map { '| ' . join(' | ', @$_) . ' |' } @rows) . "\n";
}

sub run_section {
	my $r = shift;
	my $m = $r->{meta};
	my $o = "### Run $r->{name}: " . describe_run($r) . "\n\n";
	$o .= sprintf "%s events in %s: %s events/s; transaction latency p50 %s ms, p99 %s ms, max %s ms; WAL %.0f bytes per event"
	  . " (the whole transaction: the sink's row and the receipts, and what pruning and vacuum wrote).\n",
	  n($r->{events}), seconds($r->{duration}), n($r->{rate}), ms($r->{p50}), ms($r->{p99}), ms($r->{max}), $r->{wal_per_event};
	$o .= sprintf "sog.receipt at the end: %s (table and index), %s receipts stored; largest during the run %s.\n",
	  mb($r->{end_size}), n($r->{end_receipts}), mb($r->{max_size});
	if ($m->{keep_positions} ne '' && defined $r->{prune_n}) {
		$o .= sprintf "Pruning (%s): %d runs, median %s, longest %s, %s in all (%s of the run) for %s receipts (%s receipts/s)%s.\n",
		  $m->{pruner}, $r->{prune_n}, seconds($r->{prune_median}), seconds($r->{prune_max}), seconds($r->{prune_total}),
		  pct($r->{prune_total} / $r->{duration}), n($r->{pruned}), n($r->{pruned} / $r->{prune_total}),
		  $r->{prunes_failed} ? "; $r->{prunes_failed} run(s) failed" : '';
		$o .= sprintf "While a prune ran the client applied %s events/s, %s of its %s events/s the rest of the time;"
		  . " transactions overlapping a prune run: p99 %s ms, max %s ms (the others: p99 %s ms)",
		  n($r->{rate_during_prune}), ratio($r->{rate_during_prune} / $r->{rate_outside_prune}), n($r->{rate_outside_prune}),
		  ms($r->{p99_during_prune}), ms($r->{max_during_prune}), ms($r->{p99_outside_prune});
		$o .= defined $r->{lockwait_during_prune}
		  ? sprintf("; an apply was waiting for a lock in %s of the %d samples taken while a prune ran (%s of the others).\n",
			pct($r->{lockwait_during_prune}), $r->{samples_during_prune}, pct($r->{lockwait_outside_prune} // 0))
		  : ".\n";
	}
	elsif ($m->{keep_positions} ne '') {
		$o .= "Pruning ($m->{pruner}): no run during the transactions.\n";
	}
	else {
		$o .= sprintf "Without retention the table grows by %.1f bytes per event (%s per second at this rate).\n",
		  $r->{bytes_per_event}, mb($r->{bytes_per_event} * $r->{rate});
	}
	my @v = @{ $r->{vacuums} };
	$o .= sprintf "Autovacuum of sog.receipt: %d run(s)%s; of other tables: %d; checkpoints: %d.\n\n", scalar @v,
	  @v ? sprintf(', longest %s', seconds(max(map { $_->[1] - $_->[0] } @v))) : '',
	  scalar @{ $r->{vacuums_other} }, scalar @{ $r->{checkpoints} };
	my $k = 0;
	$o .= table(['slice', 'events/s', 'p50 ms', 'p99 ms', 'max ms', 'table', 'index', 'receipts stored', 'WAL B/event',
			'pruning', 'autovacuum', 'checkpoint', 'other CPU'],
		map {
			$k++;
			[ sprintf('%d-%d%%', 10 * $k - 10, 10 * $k), n($_->{rate}), ms($_->{p50}), ms($_->{p99}), ms($_->{max}),
			  mb($_->{heap}), mb($_->{index}), n($_->{receipts}),
			  defined $_->{wal_per_event} ? sprintf('%.0f', $_->{wal_per_event}) : 'NA',
			  pct($_->{prune}), pct($_->{vacuum}), pct($_->{checkpoint}), sprintf('%.0f%%', $_->{other_cpu}) ]
		} @{ $r->{slices} });
	$o .= "\n" . depth_table($r) if $r->{name} eq 'C';
	return "$o\n";
}

# Run C's transactions by receipts stored when they ran, a bin a decade.
sub depth_bins {
	my ($r, $per_decade, $min_n) = @_;
	my %bin;
	for my $t (@{ $r->{tx} }) {
		my $before = $t->[4] - $t->[2];
		next if $before < 1;
		push @{ $bin{ floor(log($before) / log(10) * $per_decade) } }, $t;
	}
	return map {
		my @tx = @{ $bin{$_} };
		my @lat = sort { $a <=> $b } map { $_->[1] } @tx;
		{ lo => 10**($_ / $per_decade), hi => 10**(($_ + 1) / $per_decade), n => scalar @tx,
		  p50 => quantile(\@lat, 0.5), p99 => quantile(\@lat, 0.99) }
	} grep { @{ $bin{$_} } >= $min_n } sort { $a <=> $b } keys %bin;
}

sub depth_table {
	my $r = shift;
	my @b = depth_bins($r, 1, 10);
	return "Latency by receipts stored when the transaction ran (run C; decades of 10 transactions or more):\n\n"
	  . table(['receipts stored', 'transactions', 'p50 ms', 'p99 ms'],
		map { [n($_->{lo}) . ' to ' . n($_->{hi}), n($_->{n}), ms($_->{p50}), ms($_->{p99})] } @b)
	  . (@b > 1 ? sprintf("\np50 in the last decade is %s of the first's.\n", ratio($b[-1]{p50} / $b[0]{p50})) : '');
}

# How long the full soak's runs would take at the rates this run measured.
sub full_duration {
	my %full = (A => 1e8, B => 1.6e8, C => 1e8);
	my @t = map { [$_, $full{$_} / $run{$_}{rate}] } @runs;
	return sprintf ' At the rates measured here its runs would take %s of applying (%s), plus the setup of each run.',
	  seconds(sum(map { $_->[1] } @t)), join(', ', map { "$_->[0] " . seconds($_->[1]) } @t);
}

sub page {
	my $full = $soak{events} == 100_000_000 && $soak{partitions} == 16 && $soak{events_each} == 10_000_000
	  && $soak{events_c} == 100_000_000;
	my $sizes = sprintf 'run A %s events, run B %s x %s, run C %s; keep %s positions (A), %s per checkpoint (B); prune every %s s',
	  n($soak{events}), $soak{partitions}, n($soak{events_each}), n($soak{events_c}), n($soak{keep_positions}),
	  n($soak{keep_positions_b}), $soak{prune_every};
	my $s = $env{settings};
	my $share_a = pct($soak{keep_positions} / $soak{events});
	my $share_b = pct($soak{keep_positions_b} / $soak{events_each});
	my $rate = $run{A} ? sprintf('(run A: %s events/s, so its full 100,000,000 events take %s)', n($run{A}{rate}),
		seconds(1e8 / $run{A}{rate})) : '';
	my $o = <<"EOT";
# Soak: a hundred million events, with retention

Made by `make bench-soak` (bench/soak.sh, bench/soak-report.pl) from the raw
files of one run; every figure and every met or missed below is computed from
them. Raw results: `bench/results/` (not committed).

EOT
	$o .= $soak{hour} ? sprintf("These are the figures of the hour-long soak (`make bench-soak-hour`: runs A and B %s each, run C %s, at %s events/s at most: at full speed an hour's sink rows would not fit the disk; keep %s positions (A), %s per checkpoint (B); prune every %s s).\n\n",
		seconds($soak{seconds}), seconds($soak{seconds_c}), n($soak{rate}), n($soak{keep_positions}), n($soak{keep_positions_b}), $soak{prune_every})
	  : $full ? "These are the figures of the full soak ($sizes).\n\n"
	  : "**These figures are from a run smaller than the full soak** ($sizes; the full soak is 100,000,000 events"
	  . " through one checkpoint, 10,000,000 through each of 16, and 100,000,000 without retention). `make bench-soak`"
	  . " on a quiet machine gives the full figures." . full_duration() . "\n\n";
	$o .= <<"EOT";
## What runs

One throwaway cluster with the durable settings of `make bench` (fsync and
synchronous_commit on), autovacuum on, pg_cron preloaded; the real client
(`bench/client.c`: libpq pipeline mode, binary parameters, client-side
SHA-256 of 100-byte payloads, variant ($soak{variant}) =
`sog.apply_batch_int8`), $soak{batch} events per transaction, each
transaction logged by the client (end time, latency from sending BEGIN to
the COMMIT's result). A sampler session records every $soak{sample} s the WAL
position, `pg_relation_size` and `pg_indexes_size` of `sog.receipt`, the
events applied and receipts stored (applied position minus prune horizon),
`pg_stat_user_tables` and `pg_stat_progress_vacuum` for `sog.receipt`, and
the CPU that processes other than the soak's used. The server logs every
autovacuum and checkpoint. Each run starts with empty sink and receipt
tables.

- **A**: one checkpoint, one client process; its consumer's policy keeps
  the last @{[ n($soak{keep_positions}) ]} positions.
- **B**: $soak{partitions} checkpoints from $soak{clients} client processes,
  each cycling over its share of the partitions (one transaction each in
  turn); @{[ n($soak{keep_positions_b}) ]} positions kept per checkpoint.
- **C**: one checkpoint, no retention: how fast the table grows, and the
  apply's latency as the receipt index deepens.

Choices, and why:

- **A positions horizon, not an interval.** At the rates measured here
  $rate a run takes minutes, so "the last 10 minutes" would never prune
  during it;
  a positions horizon bounds the table whatever the rate (the kept receipts
  plus what arrives between two prune runs), and is reached after $share_a
  of run A. Set `SOAK_KEEP_INTERVAL` to add an interval.
- **Run B keeps a share of each checkpoint's events, as run A does**
  ($share_b here, run A $share_a): the issue's 10,000,000 positions per
  checkpoint would keep all of the full run B's 10,000,000 events per
  checkpoint, and nothing would be pruned.
- **Run B from $soak{clients} processes, not $soak{partitions}.** The machine
  has $ncpu cores; $soak{partitions} clients and $soak{partitions} backends
  would measure the scheduler's queue (a transaction's latency would be
  mostly waiting for a core), and a few clients already saturate two cores
  (`make bench`: the most events/s at B=1000 is with 4 clients). Cycling
  keeps every checkpoint advancing at the same rate, so the receipts of
  $soak{partitions} checkpoints interleave in the table and its index as
  those of $soak{partitions} consumers would. `SOAK_CLIENTS=16` gives one
  process per partition.
- **Pruning from pg_cron**: a job `CALL sog.prune_due()` as an operator role,
  every minute by default (the finest Debian 12's pg_cron 1.4 accepts); the
  short mode prunes every second, from the script in place of pg_cron where
  pg_cron cannot (each run below says which pruner ran).
- The sink is `bench/schema.sql`'s (no index, autovacuum off: it is the
  benchmark's sink, not the guard's state); autovacuum is on for everything
  else, `sog.receipt` and `sog.checkpoint` included.

## Targets

EOT
	$o .= table(['target', 'measured', 'result'], targets());
	$o .= "\n## What to expect per billion events\n\nComputed from each run's measured rate, WAL per event, receipt sizes and prune runs"
	  . ' (on this machine; with retention, disk depends on what is kept, not on the total, once the table is bounded):' . "\n\n";
	$o .= table(['run', 'time to apply them', 'WAL', 'disk for receipts', 'prune time'], per_billion());
	$o .= "\n## The runs\n\n";
	$o .= run_section($run{$_}) for @runs;
	$o .= "![events per second and p99 latency over time](soak-throughput.svg)\n\n";
	$o .= "![sog.receipt on disk over time](soak-receipts.svg)\n\n";
	$o .= "![run C: latency against receipts stored](soak-depth.svg)\n\n" if $run{C};
	$o .= <<"EOT";
## Environment

$env{date}; $env{host}; $env{memory} RAM; $env{disk}. $env{version}, pg_cron
$env{'pg_cron'}; the extension $env{extension}. Load average at
start $env{'loadavg at start'}, at end $env{'loadavg at end'}; $env{elapsed}
in all. Settings: @{[ join ', ', map { "$_=$s->{$_}" } sort keys %$s ]}.

## How to run it

    make bench-soak                     # the full soak (the full sizes)
    bash bench/soak.sh --short          # everything with a few million events, under a minute
    SOAK_RUNS=C SOAK_EVENTS_C=20000000 bash bench/soak.sh      # one run, another size
    SOAK_REPORT_ONLY=bench/results/soak-<timestamp> bash bench/soak.sh   # the report again

It installs what it lacks (Debian packages, `postgresql-15-cron` among
them), builds the working tree into a private copy of PostgreSQL in
`/tmp/sog-soak` (the system's PostgreSQL is untouched), and writes this page
and its plots to `docs/` (`SOAK_PUBLISH=0` does not). Every size is a
parameter: `SOAK_EVENTS`, `SOAK_PARTITIONS`, `SOAK_EVENTS_EACH`,
`SOAK_CLIENTS`, `SOAK_EVENTS_C`, `SOAK_KEEP_POSITIONS`,
`SOAK_KEEP_POSITIONS_B`, `SOAK_KEEP_INTERVAL`, `SOAK_PRUNE_EVERY`,
`SOAK_SAMPLE`, `SOAK_BATCH`, `SOAK_VARIANT`, `SOAK_RUNS` (the header of
bench/soak.sh lists them all). `make test` runs the short mode once, with
no timing asserted. The runs need disk for the sink (about 150 bytes per
event), the receipts and `max_wal_size` (8 GB); the script checks first.

How the figures are made: a slice is a tenth of a run's events, in the order
the transactions ended; its events/s is its events over the time from the
previous slice's last commit to its own; its table, index and receipts are
the sampled values at its end (linear between samples); its WAL per event is
the WAL position's advance over the events applied in it; pruning,
autovacuum and checkpoint are the share of its time each was running (from
the job's runs and the server log); other CPU is the machine's busy time
minus the soak's own processes', as a share of all cores.
EOT
	return $o;
}

# ------------------------------------------------------------------ plots

# An SVG panel: a frame at (x, y) of w x h for the ranges given, with axis
# labels and ticks; returns the panel and its elements.
sub nice_ticks {
	my ($lo, $hi, $n) = @_;
	my $span = $hi - $lo || 1;
	my $step = 10**floor(log($span / $n) / log(10));
	for my $m (1, 2, 5, 10) { if ($span / ($step * $m) <= $n) { $step *= $m; last } }
	my @t;
	for (my $v = ceil($lo / $step) * $step; $v <= $hi + 1e-9; $v += $step) { push @t, $v }
	return @t;
}

sub label {
	my $v = shift;
	return sprintf('%gG', $v / 1e9) if abs($v) >= 1e9;
	return sprintf('%gM', $v / 1e6) if abs($v) >= 1e6;
	return sprintf('%gk', $v / 1e3) if abs($v) >= 1e4;
	return sprintf('%g', $v);
}

sub panel {
	my %p = @_;
	$p{ymin} //= 0;
	$p{ymax} = $p{ymin} + 1 if !$p{ymax} || $p{ymax} <= $p{ymin};
	$p{xmax} = $p{xmin} + 1 if $p{xmax} <= $p{xmin};
	my $lx = sub { $p{logx} ? log(shift) / log(10) : shift };
	$p{X} = sub { $p{x} + ($lx->(shift) - $lx->($p{xmin})) / ($lx->($p{xmax}) - $lx->($p{xmin})) * $p{w} };
	$p{Y} = sub { $p{y} + $p{h} - (shift() - $p{ymin}) / ($p{ymax} - $p{ymin}) * $p{h} };
	my @e = (qq{<text x="$p{x}" y="@{[$p{y} - 8]}" font-weight="bold">$p{title}</text>},
		qq{<rect x="$p{x}" y="$p{y}" width="$p{w}" height="$p{h}" fill="none" stroke="#ccc"/>});
	for my $v (nice_ticks($p{ymin}, $p{ymax}, 5)) {
		my $yy = $p{Y}->($v);
		push @e, sprintf(qq{<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>}, $p{x}, $yy, $p{x} + $p{w}, $yy),
		  sprintf(qq{<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>}, $p{x} - 6, $yy + 4, label($v));
	}
	my @xt = $p{logx} ? map { 10**$_ } ceil(log($p{xmin}) / log(10)) .. floor(log($p{xmax}) / log(10))
	  : nice_ticks($p{xmin}, $p{xmax}, 8);
	for my $v (@xt) {
		my $xx = $p{X}->($v);
		push @e, sprintf(qq{<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>}, $xx, $p{y}, $xx, $p{y} + $p{h}),
		  sprintf(qq{<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>}, $xx, $p{y} + $p{h} + 14, label($v));
	}
	push @e, sprintf(qq{<text x="%d" y="%d" text-anchor="middle" fill="#555">%s</text>}, $p{x} + $p{w} / 2, $p{y} + $p{h} + 30, $p{xlabel}),
	  sprintf(qq{<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#555">%s</text>},
		$p{x} - 52, $p{y} + $p{h} / 2, $p{ylabel});
	$p{elements} = \@e;
	return \%p;
}

sub line {
	my ($p, $color, $dash, @pts) = @_;
	my $pts = join ' ', map { sprintf '%.1f,%.1f', $p->{X}->($_->[0]), $p->{Y}->($_->[1]) } grep { defined $_->[1] } @pts;
	push @{ $p->{elements} }, qq{<polyline points="$pts" fill="none" stroke="$color" stroke-width="1.5"}
	  . ($dash ? qq{ stroke-dasharray="$dash"} : '') . '/>';
}

sub bands {
	my ($p, $color, $t0, @iv) = @_;
	for (@iv) {
		my ($x0, $x1) = ($p->{X}->(max($p->{xmin}, $_->[0] - $t0)), $p->{X}->(min($p->{xmax}, $_->[1] - $t0)));
		push @{ $p->{elements} }, sprintf qq{<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.18"/>},
		  $x0, $p->{y}, max(1, $x1 - $x0), $p->{h}, $color;
	}
}

sub svg {
	my ($w, $h, $title, $legend, @panels) = @_;
	return join("\n",
		qq{<svg xmlns="http://www.w3.org/2000/svg" width="$w" height="$h" font-family="sans-serif" font-size="12">},
		qq{<rect width="$w" height="$h" fill="white"/>},
		qq{<text x="90" y="24" font-size="16" font-weight="bold">$title</text>},
		(map { sprintf qq{<text x="90" y="%d" fill="#555">%s</text>}, 44 + 16 * $_, $legend->[$_] } 0 .. $#$legend),
		(map { @{ $_->{elements} } } @panels), '</svg>') . "\n";
}

# Per run: events/s and p99 latency in 100 time bins.
sub plot_throughput {
	my ($W, $PH, $top, @panels) = (1100, 150, 100);
	for my $name (@runs) {
		my $r = $run{$name};
		my $bw = $r->{duration} / 100;
		my @bins;
		push @{ $bins[min(99, floor(($_->[0] - $r->{t0}) / $bw))] }, $_ for @{ $r->{tx} };
		my @rate = map { [($_ + 0.5) * $bw, $bins[$_] ? sum(map { $_->[2] } @{ $bins[$_] }) / $bw : 0] } 0 .. 99;
		my @p99 = map { [($_ + 0.5) * $bw, $bins[$_] ? quantile([sort { $a <=> $b } map { $_->[1] } @{ $bins[$_] }], 0.99) : undef] } 0 .. 99;
		for my $kind (['events/s', \@rate, '#1f77b4', "run $name: events per second"],
			['p99 ms', \@p99, '#d62728', "run $name: p99 transaction latency"]) {
			my ($ylabel, $pts, $color, $title) = @$kind;
			my $p = panel(x => 90, y => $top, w => $W - 120, h => $PH, xmin => 0, xmax => $r->{duration},
				ymax => 1.1 * max(map { $_->[1] // 0 } @$pts), title => $title, xlabel => 'seconds since the run started',
				ylabel => $ylabel);
			bands($p, '#2ca02c', $r->{t0}, @{ $r->{prunes} });
			bands($p, '#9467bd', $r->{t0}, @{ $r->{vacuums} });
			bands($p, '#7f7f7f', $r->{t0}, @{ $r->{checkpoints} });
			line($p, $color, '', @$pts);
			push @panels, $p;
			$top += $PH + 60;
		}
	}
	return svg($W, $top, 'Soak: throughput and p99 latency over each run',
		['blue: events per second, red: p99 latency of the transactions ending in each hundredth of the run;',
		 'shaded: green while pruning (CALL sog.prune_due()) ran, purple while autovacuum of sog.receipt ran, grey during checkpoints'],
		@panels);
}

sub plot_receipts {
	my %color = (A => '#1f77b4', B => '#ff7f0e', C => '#d62728');
	my %word = (A => 'blue', B => 'orange', C => 'red');
	my @legend = map { "run $_ ($word{$_}" . ($run{$_}{meta}{keep_positions} eq '' ? ', dashed' : '') . '): '
		  . describe_run($run{$_}) =~ s/, pruned by.*//r } @runs;
	my $top = 60 + 16 * @legend;
	my @panels;
	for my $kind (['table + index of sog.receipt', 'MB', 1, 1e6], ['receipts stored (applied position minus prune horizon)', 'receipts', 2, 1]) {
		my ($title, $ylabel, $col, $unit) = @$kind;
		my $p = panel(x => 90, y => $top, w => 980, h => 220, xmin => 0, xmax => max(map { $run{$_}{size}[-1][0] } @runs),
			ymax => 1.1 * max(map { map { $_->[$col] } @{ $run{$_}{size} } } @runs) / $unit, title => $title,
			xlabel => 'seconds since the run started', ylabel => $ylabel);
		line($p, $color{$_}, $run{$_}{meta}{keep_positions} eq '' ? '6,3' : '', map { [$_->[0], $_->[$col] / $unit] } @{ $run{$_}{size} })
		  for @runs;
		push @panels, $p;
		$top += 220 + 70;
	}
	return svg(1100, $top, 'Soak: sog.receipt on disk over time, with retention (runs A, B) and without (run C)', \@legend, @panels);
}

sub plot_depth {
	my $r = $run{C};
	my @b = depth_bins($r, 5, 10);
	my $p = panel(x => 90, y => 90, w => 980, h => 300, xmin => $b[0]{lo}, xmax => $b[-1]{hi}, logx => 1,
		ymax => 1.1 * max(map { $_->{p99} } @b), title => 'run C (no retention): transaction latency',
		xlabel => 'receipts stored when the transaction ran (log scale)', ylabel => 'ms');
	line($p, '#1f77b4', '', map { [sqrt($_->{lo} * $_->{hi}), $_->{p50}] } @b);
	line($p, '#d62728', '', map { [sqrt($_->{lo} * $_->{hi}), $_->{p99}] } @b);
	return svg(1100, 440, 'Soak: does apply slow as the receipt index deepens?',
		['blue: p50, red: p99 latency of the transactions, by receipts stored (five bins a decade, those of 10 transactions or more)'], $p);
}

sub write_file {
	my ($f, $text) = @_;
	open my $o, '>', $f or die "$f: $!\n";
	print $o $text;
	close $o or die "$f: $!\n";
}
