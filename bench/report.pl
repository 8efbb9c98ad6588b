#!/usr/bin/perl
#
# bench/report.pl OUTDIR: the reports of one bench/run.sh run, computed from
# the raw files it left in OUTDIR (results.tsv, metrics.txt, env.txt,
# micro.txt, hashloop.txt, openssl-speed.txt).  Writes into OUTDIR:
#   summary.tsv       medians per cell, paired ratios, CPU per transaction
#   latest.md         the summary: targets met or missed (and where the
#                     misses go), events/s, ratios, WAL, the real client's
#                     split of a transaction, scale, receipts, prune, micro
#   results.svg       the one picture: the real client, what the guard costs
#                     against an offsets table and an inbox
#   results-more.svg  the rest: every guard call with the real client, and
#                     every pgbench variant
#   readme-table.md   the compact tables for the top-level README
#   report.txt        the console summary (also printed)
# Called by bench/run.sh; `REPORT_ONLY=dir bash bench/run.sh` rebuilds them.
#
# Also a library: test/versions/bench-report.pl loads it (require) for
# load_run, issue22_targets and the names of the variants; run as a
# program, it calls main.  Plain Perl, core modules only.
package BenchReport;

use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use List::Util qw(sum0);

# ------------------------------------------------------------------ variants
#
# results.tsv names a variant by a label: a pgbench variant by its script's
# letters (bench/pgbench/<label>_*.sql), a real-client variant by "c" and
# the client's -v letter (cb = the real client's (b)), the scale check by
# "s" and its checkpoints per client (s1, s16).  Everything past reading
# results.tsv speaks of a runner (client, pgbench, scale) and a variant.

our %NAME = (
	a  => 'bare sink INSERT (a)',
	b  => 'offsets table (b)',
	c  => 'inbox (c)',
	d  => 'replication origin (d)',
	e  => 'idempotent sink (e)',
	f  => 'sog.apply per event (f)',
	g  => 'sog.apply_batch (g)',
	gd => "sog.apply_batch, digests hashed in the transaction (g')",
	h  => 'sog.apply_batch_int8 (h)',
	r  => 'sog.apply_run (r)',
	w  => 'whole protocol, two commits per page (w)',
	p  => 'whole protocol, pipelined, one call per page (p)',
	m  => 'whole protocol, pipelined, three calls per page (m)',
	qg => 'portable edition: sog.apply_batch (qg)',
	qr => 'portable edition: sog.apply_run (qr)',
	qw => 'portable edition: whole protocol, two commits per page (qw)',
	qp => 'portable edition: whole protocol, pipelined, one call per page (qp)',
	qm => 'portable edition: whole protocol, pipelined, three calls per page (qm)',
);
our %RUNNER = (client => 'real client', pgbench => 'pgbench');
# the order of the rows in every table
our %ORDER = (client => [qw(b c g h r w p m qg qr qw qm qp)], pgbench => [qw(a b c d e f g gd r)]);
# the denominators of the paired ratios
our %DENOMINATORS = (client => [qw(b c g r)], pgbench => [qw(a b c g)]);
our %COLOUR = (
	a => '#9e9e9e', b => '#4e79a7', c => '#f28e2b', d => '#76b7b2', e => '#edc948',
	f => '#e15759', g => '#59a14f', gd => '#9c755f', h => '#8cd17d', r => '#1d6b2f',
	w => '#b07aa1', p => '#6a3d9a', m => '#ff9da7',
	qg => '#a0cbe8', qr => '#86bcb6', qw => '#d4a6c8', qp => '#b6992d', qm => '#d7b5a6',
);

sub name { my ($v) = @_; return $NAME{$v} // "($v)" }

sub parse_label {
	my ($label) = @_;
	return ('scale', $1) if $label =~ /^s(\d+)$/;
	return ('client', $1) if $label =~ /^c([bcghrwpm])$/;
	return ('client', "q$1") if $label =~ /^q([grwpm])$/;	# the portable edition
	return ('pgbench', $label);
}

# ------------------------------------------------------------------ numbers

sub isnum { my ($x) = @_; return defined $x && $x =~ /^-?[0-9]+([.][0-9]+)?$/ }
sub f0 { my ($x) = @_; return isnum($x) ? sprintf('%.0f', $x) : $x // 'NA' }
sub dash { my ($x) = @_; return !defined $x || $x eq 'NA' ? '-' : $x }

sub median {
	my @v = sort { $a <=> $b } @_;
	return undef unless @v;
	return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

sub max_of { my $m; for (@_) { $m = $_ if !defined $m || $_ > $m } return $m }
sub min_of { my $m; for (@_) { $m = $_ if !defined $m || $_ < $m } return $m }

# a / b with the given format, NA unless both are numbers and b is not 0
sub quotient {
	my ($a, $b, $fmt) = @_;
	return 'NA' unless isnum($a) && isnum($b) && $b != 0;
	return sprintf($fmt // '%.1f', $a / $b);
}

# events/s for a table cell: 12345 -> 12k
sub kilo {
	my ($x) = @_;
	return '-' unless defined $x && $x =~ /^[0-9.]+$/;
	return $x >= 10000 ? sprintf('%.0fk', $x / 1000) : sprintf('%.0f', $x);
}

sub plural { my ($n, $word) = @_; return "$n $word" . ($n == 1 ? '' : 's') }

# ------------------------------------------------------------------ input

sub read_lines {
	my ($file) = @_;
	open my $fh, '<', $file or return ();
	chomp(my @l = <$fh>);
	return @l;
}

sub write_file {
	my ($file, $text) = @_;
	open my $o, '>', $file or die "$file: $!\n";
	print $o $text;
	close $o or die "$file: $!\n";
}

# env.txt: "key: value" lines (the machine), the run's settings line
# (duration=... runs=...), the server's version and settings (name=value)
sub read_env {
	my ($file) = @_;
	my %e = (settings => []);
	for (read_lines($file)) {
		if (/^([a-z][\w ]*?): (.*)$/) { $e{$1} = $2 }
		elsif (/^duration=/) { $e{run} = { /(\w+)=(\[[^\]]*\]|\S+)/g } }
		elsif (/^([a-z_]+)=([^=]*)$/) { push @{ $e{settings} }, "$1=$2" }
		elsif (/^PostgreSQL /) { $e{version} = $_ }
	}
	($e{cpus}) = ($e{host} // '') =~ /(\d+) cpus/;
	return \%e;
}

sub read_metrics {
	my ($file) = @_;
	return { map { /^([^=]+)=(.*)$/ ? ($1, $2) : () } read_lines($file) };
}

# lines "name|n|median_s|min_s|max_s|extra" of micro.txt and hashloop.txt
sub read_micro {
	my ($file) = @_;
	my %m;
	for (read_lines($file)) {
		my @f = split /\|/, $_, -1;
		$m{ $f[0] } //= \@f;
	}
	return \%m;
}

# load_run DIR: a run's raw files and their summary (see summarize)
sub load_run {
	my ($dir) = @_;
	my @rows;
	for (read_lines("$dir/results.tsv")) {
		my @f = split /\t/;
		next unless @f >= 11;
		my ($runner, $variant) = parse_label($f[0]);
		push @rows, {
			runner => $runner, variant => $variant, b => $f[1], c => $f[2], run => $f[3],
			events => $f[5], status => $f[7], wal => $f[8], other => $f[9], attempt => $f[10],
			client_cpu => $f[11] // 'NA', backend_cpu => $f[12] // 'NA',
		};
	}
	die "report: no results in $dir/results.tsv\n" unless @rows;
	my $run = summarize(\@rows);
	$run->{dir} = $dir;
	$run->{env} = read_env("$dir/env.txt");
	$run->{metrics} = read_metrics("$dir/metrics.txt");
	$run->{micro} = read_micro("$dir/micro.txt");
	$run->{hashloop} = read_micro("$dir/hashloop.txt");
	($run->{openssl}) = grep { /^sha256 / } read_lines("$dir/openssl-speed.txt");
	return $run;
}

# ------------------------------------------------------------------ summary
#
# Per cell (runner, variant, batch size B, clients C): the medians over the
# runs of events/s and WAL bytes per event, the most other CPU of a run, the
# spread (max - min) / median of events/s, the runs, failed runs, retries;
# for the real client the medians of client and backend CPU per transaction
# and the wall time of one transaction of one client; and the paired
# ratios: per run, a variant's events/s over another's in the same cell of
# the same run (so both saw the same load), their median.

sub cell_key { return join ' ', @_ }

sub summarize {
	my ($rows) = @_;
	my (%seen, @order, %acc, %by_run, $maxrun);
	$maxrun = 0;
	for my $r (@$rows) {
		my $k = cell_key(@$r{qw(runner variant b c)});
		push @order, [ @$r{qw(runner variant b c)} ] unless $seen{$k}++;
		$maxrun = $r->{run} if $r->{run} > $maxrun;
		my $a = $acc{$k} //= { events => [], wal => [], other => [], client => [], backend => [], err => 0, retries => 0 };
		if ($r->{status} eq 'ok') {
			push @{ $a->{events} }, $r->{events};
			push @{ $a->{wal} }, $r->{wal} if $r->{wal} ne 'NA';
			$by_run{$k}{ $r->{run} } = $r->{events};
			push @{ $a->{client} }, $r->{client_cpu} if $r->{client_cpu} =~ /^[0-9.]+$/;
			push @{ $a->{backend} }, $r->{backend_cpu} if $r->{backend_cpu} =~ /^[0-9.]+$/;
		}
		else { $a->{err}++ }
		push @{ $a->{other} }, $r->{other};
		$a->{retries} += $r->{attempt} if $r->{attempt} > 0;
	}
	my $s = { order => \@order, runs => $maxrun, cell => {}, cpu => {}, ratio => {}, batches => [] };
	for my $o (@order) {
		my ($runner, $variant, $b, $c) = @$o;
		my $a = $acc{ cell_key(@$o) };
		my $m = median(@{ $a->{events} });
		$s->{cell}{$runner}{$variant}{"$b $c"} = {
			events => defined $m ? sprintf('%.0f', $m) : 'NA',
			wal => @{ $a->{wal} } ? sprintf('%.0f', median(@{ $a->{wal} })) : 'NA',
			other => max_of(@{ $a->{other} }),
			spread => defined $m && $m > 0
				? sprintf('%.0f', 100 * (max_of(@{ $a->{events} }) - min_of(@{ $a->{events} })) / $m) : 'NA',
			runs => scalar @{ $a->{events} }, failed => $a->{err}, retries => $a->{retries},
		};
		if (@{ $a->{client} } && defined $m && $m > 0) {
			$s->{cpu}{$runner}{$variant}{"$b $c"} = {
				client => sprintf('%.0f', median(@{ $a->{client} })),
				backend => @{ $a->{backend} } ? sprintf('%.0f', median(@{ $a->{backend} })) : 'NA',
				wall => sprintf('%.0f', 1e6 * $b * $c / $m),
			};
		}
	}
	my $paired = sub {
		my ($runner, $num, $den, $b, $c) = @_;
		my ($n, $d) = map { $by_run{ cell_key($runner, $_, $b, $c) } } $num, $den;
		return () unless $n && $d;
		return map { $n->{$_} / $d->{$_} } grep { exists $n->{$_} && exists $d->{$_} && $d->{$_} > 0 } 1 .. $maxrun;
	};
	for my $o (@order) {
		my ($runner, $variant, $b, $c) = @$o;
		my @dens = $runner eq 'scale' ? ($variant eq '16' ? ('1') : ()) : @{ $DENOMINATORS{$runner} };
		for my $den (grep { $_ ne $variant } @dens) {
			my @r = $paired->($runner, $variant, $den, $b, $c);
			$s->{ratio}{$runner}{"$variant/$den"}{"$b $c"} = sprintf('%.3f', median(@r)) if @r;
		}
	}
	my %bc;
	$bc{"$_->[2] $_->[3]"} = [ $_->[2], $_->[3] ] for grep { $_->[0] ne 'scale' } @order;
	$s->{batches} = [ sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } values %bc ];
	return $s;
}

# accessors: NA when not measured
sub events { my ($run, $runner, $v, $b, $c) = @_; return cell_field($run, $runner, $v, $b, $c, 'events') }
sub wal { my ($run, $runner, $v, $b, $c) = @_; return cell_field($run, $runner, $v, $b, $c, 'wal') }

sub cell_field {
	my ($run, $runner, $v, $b, $c, $field) = @_;
	my $x = $run->{cell}{$runner}{$v}{"$b $c"};
	return $x ? $x->{$field} : 'NA';
}

sub ratio {
	my ($run, $runner, $num, $den, $b, $c) = @_;
	return $run->{ratio}{$runner}{"$num/$den"}{"$b $c"} // 'NA';
}

# per transaction of the real client: wall, backend or client (us)
sub per_txn {
	my ($run, $v, $b, $c, $what) = @_;
	my $x = $run->{cpu}{client}{$v}{"$b $c"};
	return $x ? $x->{$what} : 'NA';
}

sub measured { my ($run, $runner, $v) = @_; return exists $run->{cell}{$runner}{$v} }
sub variants_of { my ($run, $runner) = @_; return grep { measured($run, $runner, $_) } @{ $ORDER{$runner} } }

# the batch size the scale check ran at
sub scale_batch {
	my ($run) = @_;
	my ($o) = grep { $_->[0] eq 'scale' && $_->[1] eq '1' } @{ $run->{order} };
	return $o ? $o->[2] : undef;
}

sub write_summary {
	my ($run, $file) = @_;
	my @l = (
		"# bench/report.pl's summary of results.tsv: medians over the runs of each cell",
		"# cell   runner variant B clients events/s WAL-bytes/event max-other-CPU% spread% runs failed retries",
		"# cpu    runner variant B clients client-CPU-us/txn backend-CPU-us/txn wall-us/txn (the real client)",
		"# ratio  runner numerator denominator B clients median-of-paired-per-run-ratios",
		"# runner: client (bench/client.c), pgbench (bench/pgbench), scale (variant: checkpoints per client)");
	for my $o (@{ $run->{order} }) {
		my ($runner, $v, $b, $c) = @$o;
		my $x = $run->{cell}{$runner}{$v}{"$b $c"};
		push @l, join "\t", 'cell', $runner, $v, $b, $c, @$x{qw(events wal other spread runs failed retries)};
	}
	for my $o (@{ $run->{order} }) {
		my ($runner, $v, $b, $c) = @$o;
		my $x = $run->{cpu}{$runner}{$v}{"$b $c"} or next;
		push @l, join "\t", 'cpu', $runner, $v, $b, $c, @$x{qw(client backend wall)};
	}
	for my $o (@{ $run->{order} }) {
		my ($runner, $v, $b, $c) = @$o;
		for my $pair (sort keys %{ $run->{ratio}{$runner} }) {
			my ($num, $den) = split m{/}, $pair;
			next unless $num eq $v;
			my $r = $run->{ratio}{$runner}{$pair}{"$b $c"} // next;
			push @l, join "\t", 'ratio', $runner, $num, $den, $b, $c, $r;
		}
	}
	push @l, "runs\t$run->{runs}";
	write_file($file, join("\n", @l) . "\n");
}

# ------------------------------------------------------------------ targets
#
# A target: what, the measured value, the comparison (>= or <=) and the
# limit, how the value is shown, met / missed / not measured, and for a miss
# with the real client where the difference went (why).

sub target {
	my (%t) = @_;
	$t{shown} //= $t{value};
	if (!isnum($t{value}) || !isnum($t{limit})) { $t{result} = 'not measured' }
	else {
		my $ok = $t{op} eq '>=' ? $t{value} >= $t{limit} : $t{value} <= $t{limit};
		$t{result} = $ok ? 'met' : 'missed';
	}
	return \%t;
}

sub clients_words { my ($c) = @_; return plural($c, 'client') }

# Where a real-client transaction of variant n differs from one of d, from
# the run's own measurements; allowed: what the target allows of the wall
# time (wall) or of the backend's CPU (backend).
sub transaction_split {
	my ($run, $n, $d, $b, $c, %allowed) = @_;
	my %x = map { my $k = $_; ($k => [ map { per_txn($run, $_, $b, $c, $k) } $n, $d ]) } qw(wall backend client);
	return undef unless isnum($x{wall}[0]) && isnum($x{wall}[1]);
	my $s = "one transaction takes $x{wall}[0] us against $x{wall}[1] for ($d)";
	$s .= " (the target allows $allowed{wall})" if defined $allowed{wall};
	if (isnum($x{backend}[0]) && isnum($x{backend}[1])) {
		$s .= sprintf '; its server backend uses %s us of CPU against %s (%+.0f', @{ $x{backend} }, $x{backend}[0] - $x{backend}[1];
		$s .= defined $allowed{backend} ? "; the target allows $allowed{backend})" : ')';
	}
	$s .= sprintf ', the client %s against %s (%+.0f)', @{ $x{client} }, $x{client}[0] - $x{client}[1]
		if isnum($x{client}[0]) && isnum($x{client}[1]);
	my @w = map { wal($run, 'client', $_, $b, $c) } $n, $d;
	$s .= sprintf '; WAL %d against %d bytes per transaction', $w[0] * $b, $w[1] * $b if isnum($w[0]) && isnum($w[1]);
	return "$s.";
}

sub ratio_target {
	my ($run, $num, $den, $b, $c, $want) = @_;
	my $t = target(
		what => "real client: $NAME{$num} / $NAME{$den}, B=$b, " . clients_words($c),
		value => ratio($run, 'client', $num, $den, $b, $c), op => '>=', limit => $want);
	if ($t->{result} eq 'missed') {
		my $wd = per_txn($run, $den, $b, $c, 'wall');
		my $why = transaction_split($run, $num, $den, $b, $c, wall => isnum($wd) ? sprintf('%.0f', $wd / $want) : undef);
		$t->{why} = "$t->{what}: $t->{value} < $want; $why" if $why;
	}
	return $t;
}

# Issue 22's targets, on the real client: (g)'s backend CPU per event within
# 1.15x of (b)'s at B = 100 and 1000; (g)/(b) >= 0.8 (1 client) and 0.85
# (4 clients) at B = 1000; (g)/(c) >= 2.5 at B = 1000; the same for the
# fastest guard call (r); the whole protocol (w, p) within 0.05 of (g)'s
# ratio to (b) at B = 100 and 1000.  Each miss with its split.
sub issue22_targets {
	my ($run) = @_;
	my @t;
	for my $call (qw(g r)) {
		for my $b (100, 1000) {
			for my $c (1, 4) {
				my ($n, $d) = map { per_txn($run, $_, $b, $c, 'backend') } $call, 'b';
				my $t = target(
					what => "backend CPU per event: $NAME{$call} / $NAME{b}, B=$b, " . clients_words($c),
					value => quotient($n, $d, '%.2f'), op => '<=', limit => 1.15);
				$t->{shown} = "$t->{value} ($n / $d us per transaction)" if isnum($t->{value});
				if ($t->{result} eq 'missed') {
					my $why = transaction_split($run, $call, 'b', $b, $c, backend => sprintf('%.0f', 1.15 * $d));
					$t->{why} = "$t->{what}: $t->{value} > 1.15; $why" if $why;
				}
				push @t, $t;
			}
		}
		push @t, ratio_target($run, $call, 'b', 1000, 1, 0.8), ratio_target($run, $call, 'b', 1000, 4, 0.85);
		push @t, ratio_target($run, $call, 'c', 1000, $_, 2.5) for 1, 4;
	}
	for my $v (qw(w p)) {
		for my $b (100, 1000) {
			for my $c (1, 4) {
				my $g = ratio($run, 'client', 'g', 'b', $b, $c);
				my $t = target(
					what => "real client: $NAME{$v} / $NAME{b} within 0.05 of $NAME{g}'s, B=$b, " . clients_words($c),
					value => ratio($run, 'client', $v, 'b', $b, $c), op => '>=',
					limit => isnum($g) ? sprintf('%.3f', $g - 0.05) : 'NA');
				$t->{shown} = "$t->{value} ((g): $g)" if isnum($t->{value});
				$t->{wanted} = isnum($g) ? ">= $t->{limit} ((g) - 0.05)" : '>= (g) - 0.05';
				if ($t->{result} eq 'missed') {
					my $wb = per_txn($run, 'b', $b, $c, 'wall');
					my $why = transaction_split($run, $v, 'g', $b, $c,
						wall => isnum($wb) && $t->{limit} > 0 ? sprintf('%.0f', $wb / $t->{limit}) : undef);
					$why .= ' (w) commits twice per page (note_read, then the sink), (g) once.' if $why && $v eq 'w';
					$t->{why} = "$t->{what}: $t->{value} < $t->{limit}; $why" if $why;
				}
				push @t, $t;
			}
		}
	}
	return @t;
}

# Issue 30's targets, on the real client: the whole protocol with one commit
# per page (p) within 0.05 of the fastest guard call alone (r), (p)/(r) >=
# 0.95, at B = 100 and 1000, 1 and 4 clients.  Each miss with its split
# against (r).
sub issue30_targets {
	my ($run) = @_;
	my @t;
	for my $b (100, 1000) {
		for my $c (1, 4) {
			my $t = target(
				what => "real client: $NAME{p} / $NAME{r}, B=$b, " . clients_words($c),
				value => ratio($run, 'client', 'p', 'r', $b, $c), op => '>=', limit => 0.95);
			if ($t->{result} eq 'missed') {
				my $wr = per_txn($run, 'r', $b, $c, 'wall');
				my $why = transaction_split($run, 'p', 'r', $b, $c,
					wall => isnum($wr) ? sprintf('%.0f', $wr / 0.95) : undef);
				$t->{why} = "$t->{what}: $t->{value} < 0.95; $why" if $why;
			}
			push @t, $t;
		}
	}
	return @t;
}

# The micro-figures: rows/s and ns per call, as formatted strings
sub micro_figures {
	my ($run) = @_;
	my ($m, $h) = @$run{qw(micro hashloop)};
	my $bh = 'buffer_hash agg (digest + chain, ORDER BY i)';
	my $n = $m->{$bh} ? $m->{$bh}[1] : undef;
	my $rate = sub {
		my ($file, $name) = @_;
		my $t = $file->{$name} ? $file->{$name}[2] : undef;
		return isnum($t) && isnum($n) ? sprintf('%.0f', $n / $t) : 'NA';
	};
	my $ns = sub {
		my ($a, $b) = map { $m->{$_} ? $m->{$_}[2] : undef } @_;
		return isnum($a) && isnum($b) && isnum($n) ? sprintf('%.1f', ($a - $b) / $n * 1e9) : 'NA';
	};
	my %x = (
		n => $n // '',
		buffer_hash => $rate->($m, $bh),
		buffer_hash_unsorted => $rate->($m, 'buffer_hash agg, scan order (no ORDER BY)'),
		digest_only => $rate->($m, 'payload_digest only (count)'),
		c_low => $rate->($h, 'C loop, OpenSSL SHA256_Init/Update/Final'),
		c_evp => $rate->($h, 'C loop, OpenSSL EVP_Digest* (reused ctx)'),
		c_evp_fetched => $rate->($h, 'C loop, OpenSSL EVP_Digest* (EVP_MD fetched once)'),
		hex_sql => $m->{$bh} ? $m->{$bh}[5] : '',
		hex_c => $h->{'C loop, OpenSSL SHA256_Init/Update/Final'} ? $h->{'C loop, OpenSSL SHA256_Init/Update/Final'}[5] : '',
		compare => $ns->('position compare a < b', 'empty: a, b not null'),
		compare_bigint => $ns->('bigint compare x < y', 'empty: x, y not null'),
		input => $ns->('position input s::sog.position', 'empty: count(s)'),
		input_bigint => $ns->('bigint input s::bigint', 'empty: count(s)'),
		output => $ns->('position output a::text', 'empty: count(a)'),
		output_bigint => $ns->('bigint output x::text', 'empty: count(x)'),
	);
	# the read boundary's check per 1000 records: M = N / 10 records applied
	{
		my ($a, $b) = map { $m->{$_} ? $m->{$_}[2] : undef }
			'apply_run of N/10 events closing a noted read boundary', 'apply_run of N/10 events, no read boundary';
		my $recs = isnum($n) ? int($n / 10) : undef;
		$x{boundary_per_1000} = isnum($a) && isnum($b) && $recs ? sprintf('%.0f', ($a - $b) / $recs * 1000 * 1e6) : 'NA';
		$x{apply_run_per_1000} = isnum($b) && $recs ? sprintf('%.0f', $b / $recs * 1000 * 1e6) : 'NA';
	}
	$x{vs_c_low} = quotient($x{buffer_hash}, $x{c_low}, '%.2f');
	$x{vs_c_evp} = quotient($x{buffer_hash}, $x{c_evp}, '%.2f');
	# openssl speed: "sha256  <16> <64> <256> <1024> <8192> <16384>" in 1000s of bytes/s
	if (my $line = $run->{openssl}) {
		(my $l = $line) =~ s/k//g;
		my @f = split ' ', $l;
		my @sizes = (16, 64, 256, 1024, 8192, 16384);
		for my $i (0 .. $#sizes) {
			next unless defined $f[ $i + 1 ];
			$x{openssl}{ $sizes[$i] } = [ sprintf('%.0f', $f[ $i + 1 ] * 1000 / $sizes[$i]), sprintf('%.1f', $f[ $i + 1 ] / 1000) ];
		}
	}
	return \%x;
}

# The targets before issue 22 (issue 9's on the real client, the older
# pgbench ones, WAL, receipts, buffer_hash, scale), as report.sh had them.
sub earlier_targets {
	my ($run) = @_;
	my @t;
	my $met = $run->{metrics};
	for my $call (qw(g h)) {
		next unless $call eq 'g' || measured($run, 'client', $call);
		for my $b (1, 100, 1000) {
			for my $c (1, 4) {
				my $t = ratio_target($run, $call, 'b', $b, $c, 0.9);
				$t->{what} =~ s/^real client/real client (earlier)/;
				push @t, $t;
			}
		}
		for my $c (1, 4) {
			my $t = ratio_target($run, $call, 'c', 1000, $c, 2.5);
			$t->{what} =~ s/^real client/real client (earlier)/;
			push @t, $t;
		}
	}
	delete $_->{why} for @t;	# issue 22's targets explain these cells
	for my $b (1000, 100) {
		push @t, target(what => "pgbench: $NAME{g} / $NAME{b}, B=$b, " . clients_words($_),
			value => ratio($run, 'pgbench', 'g', 'b', $b, $_), op => '>=', limit => 0.8) for 1, 4;
	}
	push @t, target(what => "pgbench: $NAME{g} / $NAME{c}, B=1000, " . clients_words($_),
		value => ratio($run, 'pgbench', 'g', 'c', 1000, $_), op => '>=', limit => 2.5) for 1, 4;
	push @t, target(what => "pgbench: $NAME{f} / $NAME{b}, B=1, " . clients_words($_),
		value => ratio($run, 'pgbench', 'f', 'b', 1, $_), op => '>=', limit => 0.9) for 1, 4;
	for my $b (100, 1000) {
		for my $c (1, 4) {
			my ($wg, $wb) = map { wal($run, 'pgbench', $_, $b, $c) } qw(g b);
			my $d = isnum($wg) && isnum($wb) ? $wg - $wb : 'NA';
			push @t, target(what => "pgbench: WAL per event of $NAME{g} - $NAME{b}, B=$b, " . clients_words($c),
				value => $d, op => '<=', limit => 60, shown => "$d B ($wg vs $wb)");
		}
	}
	my $per = quotient($met->{receipts_total}, $met->{receipts_events});
	push @t, target(what => 'receipts on disk per event (table + index)', value => $per, op => '<=', limit => 48, shown => "$per B");
	my $mf = micro_figures($run);
	push @t, target(what => 'buffer_hash / plain C loop (SHA256_*)', value => $mf->{vs_c_low}, op => '>=', limit => 0.5);
	my $sb = scale_batch($run);
	push @t, target(what => "64 checkpoints / 4 checkpoints, $NAME{g} B=" . ($sb // 'NA') . ', 4 clients',
		value => defined $sb ? ratio($run, 'scale', '16', '1', $sb, 4) : 'NA', op => '>=', limit => 0.9);
	return @t;
}

# ------------------------------------------------------------------ Markdown

# md_table([heads], rows...): the first column left-aligned, the others
# right-aligned (figures); md_table({ left => 1 }, [heads], rows...): all left
sub md_table {
	my $opt = ref $_[0] eq 'HASH' ? shift : {};
	my ($head, @rows) = @_;
	my $align = $opt->{left} ? ' --- |' : ' ---: |';
	my @l = ('| ' . join(' | ', @$head) . ' |', '| --- |' . join('', map { $align } 1 .. $#$head));
	push @l, '| ' . join(' | ', @$_) . ' |' for @rows;
	return join("\n", @l) . "\n";
}

sub cell_heads { my ($run) = @_; return map { "B=$_->[0] c=$_->[1]" } @{ $run->{batches} } }

# one row per variant of a runner, a column per cell: f(variant, B, C)
sub variant_table {
	my ($run, $runner, $first, $f, @variants) = @_;
	@variants = variants_of($run, $runner) unless @variants;
	return md_table([ $first, cell_heads($run) ],
		map { my $v = $_; [ $NAME{$v}, map { $f->($v, @$_) } @{ $run->{batches} } ] } @variants);
}

sub ratio_rows {
	my ($run, $runner, @pairs) = @_;
	my @rows;
	for my $pair (@pairs) {
		my ($n, $d) = @$pair;
		next unless measured($run, $runner, $n) && measured($run, $runner, $d);
		push @rows, [ "$NAME{$n} / $NAME{$d}", map { dash(ratio($run, $runner, $n, $d, @$_)) } @{ $run->{batches} } ];
	}
	return @rows;
}

our @CLIENT_RATIOS = ([qw(g b)], [qw(g c)], [qw(h b)], [qw(h c)], [qw(h g)], [qw(r b)], [qw(r c)], [qw(r g)],
	[qw(w b)], [qw(w g)], [qw(p b)], [qw(p g)], [qw(p r)], [qw(m b)], [qw(m r)], [qw(c b)],
	[qw(qg b)], [qw(qg c)], [qw(qg g)], [qw(qr b)], [qw(qr c)], [qw(qr r)], [qw(qw b)], [qw(qw c)],
	[qw(qp b)], [qw(qp c)], [qw(qp p)]);
our @PGBENCH_RATIOS = ([qw(g b)], [qw(g c)], [qw(r b)], [qw(r c)], [qw(r g)], [qw(f b)], [qw(gd b)], [qw(gd c)],
	[qw(c b)], [qw(d b)], [qw(e b)], [qw(g a)]);

sub targets_table {
	my (@t) = @_;
	return md_table({ left => 1 }, [qw(target measured wanted result)],
		map { [ $_->{what}, $_->{shown}, $_->{wanted} // "$_->{op} $_->{limit}",
				$_->{result} eq 'not measured' ? 'not measured' : "**$_->{result}**" ] } @t);
}

sub tally {
	my (@t) = @_;
	my %n = (met => 0, missed => 0, 'not measured' => 0);
	$n{ $_->{result} }++ for @t;
	return "$n{met} met, $n{missed} missed" . ($n{'not measured'} ? ", $n{'not measured'} not measured" : '') . '.';
}

sub shown_path {
	my ($dir) = @_;
	my $here = abs_path(dirname(__FILE__));
	my $abs = abs_path($dir) // $dir;
	return $abs =~ m{^\Q$here\E/(.*)$} ? "bench/$1" : $dir;
}

sub latest_md {
	my ($run, $new, $old) = @_;
	my ($e, $met) = @$run{qw(env metrics)};
	my $dur = $e->{run}{duration} // '?';
	my $mf = micro_figures($run);
	my $m = sub { $met->{ $_[0] } // 'NA' };
	my @o;
	push @o, '# stream_offset_guard benchmark: latest run', '',
		'Made by `make bench` (bench/run.sh, bench/report.pl); raw files in `' . shown_path($run->{dir}) . '/` (not committed).',
		join('; ', $e->{date} // '', $e->{host} // '', ($e->{memory} // '') . ' RAM', $e->{disk} // '') . '.',
		(split(/,/, $e->{version} // ''))[0] . '; extension ' . ($e->{'extension'} // '') =~ s/^built from //r . '.',
		'Settings: ' . join(', ', @{ $e->{settings} }) . '.',
		"Medians of $run->{runs} run(s) of $dur s per cell, all cells interleaved in one run on one cluster; pgbench -M prepared,",
		'one pipeline per transaction; each client is its own partition (offsets row, origin, checkpoint).',
		'Load average at start: ' . ($e->{'loadavg at start'} // '') . '; at end: ' . ($e->{'loadavg at end'} // '')
		. '; elapsed ' . ($e->{elapsed} // '') . '.', '';

	my @i30 = issue30_targets($run);
	push @o, '## Targets: the whole protocol against its fastest call', '',
		'On the real client (bench/client.c), medians of paired runs: the whole protocol, one commit and one call per',
		'page (p), against the fastest guard call alone (r) in the same cells.', '',
		targets_table(@i30), tally(@i30), '';
	if (my @why30 = map { $_->{why} // () } @i30) {
		push @o, '### Where the misses go, measured in this run', '',
			'Per transaction of one client (as below): wall time, CPU of the client processes (for (p) also the',
			'buffer hash of the next page: a second SHA-256 per event) and of their server backends (for (p) also',
			"the read boundary's check: a SHA-256 per event of the page, and the note and the token in the same call):",
			'', (map { "- \u$_" } @why30), '';
	}
	push @o, '## Targets: the guard against the baselines', '',
		'On the real client (bench/client.c), medians of paired runs; the fastest guard call (r) is reported',
		'separately from (g); the whole protocol (w, p) is compared with (g) by their ratios to (b) in the same cells.', '',
		targets_table(@$new), tally(@$new), '';
	my @why = map { $_->{why} // () } @$new;
	if (@why) {
		push @o, '### Where the misses go, measured in this run', '',
			'Per transaction of one client: wall time (clients x 10^6 x B / events/s), CPU of the client processes',
			'(getrusage: SHA-256 of each payload for the guard, and of each page for the whole protocol, building and',
			'sending the parameters) and of their server backends (/proc: parsing, the statements, the guard, the',
			"commit's WAL write), medians of the runs:", '', (map { "- \u$_" } @why), '';
	}
	push @o, '## Earlier targets', '', targets_table(@$old), tally(@$old)
		. ' Ratios are medians of per-run paired ratios (same run, same cell).';
	my @walx = map {
		my ($wg, $wb) = (wal($run, 'pgbench', 'g', 1, $_), wal($run, 'pgbench', 'b', 1, $_));
		"B=1, $_ client(s): (g) $wg, (b) $wb B/event (" . (isnum($wg) && isnum($wb) ? '+' . ($wg - $wb) : 'NA') . '). '
	} 1, 4;
	push @o, 'WAL is checked at B >= 100; at B = 1 the per-transaction records dominate: ' . join('', @walx), '';

	push @o, '## Events per second', '';
	for my $runner (qw(client pgbench)) {
		next unless variants_of($run, $runner);
		push @o, "### $RUNNER{$runner}", '', variant_table($run, $runner, 'variant',
			sub { dash(events($run, $runner, @_)) });
	}
	push @o, '## Ratios (median of paired per-run ratios)', '';
	for ([ client => \@CLIENT_RATIOS ], [ pgbench => \@PGBENCH_RATIOS ]) {
		my ($runner, $pairs) = @$_;
		my @rows = ratio_rows($run, $runner, @$pairs) or next;
		push @o, "### $RUNNER{$runner}", '', md_table([ 'ratio', cell_heads($run) ], @rows);
	}
	push @o, '## WAL bytes per event (median; WAL LSN delta / (transactions x B))', '';
	for my $runner (qw(client pgbench)) {
		next unless variants_of($run, $runner);
		push @o, "### $RUNNER{$runner}", '', variant_table($run, $runner, 'variant', sub { dash(wal($run, $runner, @_)) });
	}
	if (variants_of($run, 'client')) {
		push @o, '## The real client: microseconds per transaction (wall / backend CPU / client CPU)', '',
			variant_table($run, 'client', 'variant',
				sub { my @a = @_; join ' / ', map { dash(per_txn($run, $a[0], $a[1], $a[2], $_)) } qw(wall backend client) }),
			'',
			"With c clients on this machine's cores, the backends and the clients share the CPUs: at 4 clients a",
			"transaction's wall time is mostly other transactions' CPU.", '';
	}
	my $sb = scale_batch($run) // 'NA';
	push @o, '## Scale: no shared hot spot', '',
		"(g) at B=$sb, 4 clients; each client rotates over its own checkpoints, one per transaction (bench/pgbench/s_n.sql).", '',
		md_table([ 'checkpoints', 'events/s', 'WAL B/event' ],
			map { [ $_->[1], events($run, 'scale', $_->[0], $sb, 4), wal($run, 'scale', $_->[0], $sb, 4) ] }
			grep { measured($run, 'scale', $_->[0]) } ([ 1, 4 ], [ 16, 64 ])),
		'', '64/4: ' . ratio($run, 'scale', '16', '1', $sb, 4) . ' (paired per-run ratio, median).', '';
	my $rn = $m->('receipts_events');
	push @o, '## Receipts on disk', '',
		"$rn events applied with sog.apply_batch, B=1000, to a fresh checkpoint (receipts only):",
		"pg_total_relation_size('sog.receipt') = " . $m->('receipts_total') . ' bytes = **' . quotient($m->('receipts_total'), $rn) . ' bytes/event**',
		'(table ' . $m->('receipts_heap') . ' = ' . quotient($m->('receipts_heap'), $rn) . ' B/event, indexes ' . $m->('receipts_index')
		. ' = ' . quotient($m->('receipts_index'), $rn) . ' B/event; ' . $m->('receipts_rows') . ' rows);',
		'WAL ' . quotient($m->('receipts_wal'), $rn) . ' bytes/event for these receipt-only transactions; '
		. f0($m->('receipts_fill_tps')) . ' transactions/s of 1000 events.', '';
	my ($pn, $ps) = ($m->('prune_receipts'), $m->('prune_s'));
	my $prate = isnum($pn) && isnum($ps) ? ($ps > 0 ? sprintf('%.0f', $pn / $ps) : 'NA') : 'NA';
	push @o, '## prune_receipts', '',
		"sog.prune_receipts of $pn receipts (checkpoint A): $ps s = **$prate receipts/s**.",
		'Meanwhile a second connection applied on checkpoint B (sog.apply + a sink row, one event per transaction) while the',
		'prune transaction ran and stayed open (' . $m->('prune_txn_s') . " s in all, holding A's lock):",
		$m->('probe_during_n') . ' transactions, latency median ' . $m->('probe_during_med_ms') . ' ms, p99 '
		. $m->('probe_during_p99_ms') . ' ms, max ' . $m->('probe_during_max_ms') . ' ms;',
		$m->('probe_overlap_stmt_n') . " of them overlapped the prune statement itself ($ps s)",
		'(alone before: ' . $m->('probe_alone_n') . ' transactions, median ' . $m->('probe_alone_med_ms') . ' ms, max '
		. $m->('probe_alone_max_ms') . ' ms).',
		"Not blocked if B's maximum stays far below the prune transaction's " . $m->('prune_txn_s') . ' s.', '';
	push @o, '## Micro-figures (one core, server-side timing, median of 5 after a warm-up)', '',
		md_table([ 'what', 'rate' ],
			[ "sog.buffer_hash(pos, sog.payload_digest(p) ORDER BY pos), $mf->{n} x 100-byte records", "$mf->{buffer_hash} rows/s" ],
			[ 'same, records already in order (no ORDER BY: no sort)', "$mf->{buffer_hash_unsorted} rows/s" ],
			[ 'sog.payload_digest alone (count)', "$mf->{digest_only} rows/s" ],
			[ 'plain C loop (bench/hashloop.c), OpenSSL SHA256_Init/Update/Final', "$mf->{c_low} rows/s" ],
			[ 'plain C loop, OpenSSL EVP_DigestInit_ex(EVP_sha256())/Update/Final_ex (what PostgreSQL 15 does)', "$mf->{c_evp} rows/s" ],
			[ 'plain C loop, OpenSSL EVP_MD fetched once, EVP_DigestInit_ex2 (OpenSSL 3)', "$mf->{c_evp_fetched} rows/s" ],
			map { my $x = $mf->{openssl}{$_} // [ 'NA', 'NA' ];
				[ "openssl speed sha256, $_-byte blocks", "$x->[0] blocks/s ($x->[1] MB/s)" ] } 64, 256, 1024),
		'', "buffer_hash / C loop: $mf->{vs_c_low} (SHA256_*), $mf->{vs_c_evp} (EVP). Same chain value in SQL and C: "
		. ($mf->{hex_sql} ne '' && $mf->{hex_sql} eq $mf->{hex_c} ? 'yes' : "NO ($mf->{hex_sql} vs $mf->{hex_c})") . '.', '',
		md_table([ 'per call (query minus an empty-loop query over the same rows)', 'sog.position', 'bigint' ],
			[ 'compare (<)', "$mf->{compare} ns", "$mf->{compare_bigint} ns" ],
			[ 'input (text to value)', "$mf->{input} ns", "$mf->{input_bigint} ns" ],
			[ 'output (value to text)', "$mf->{output} ns", "$mf->{output_bigint} ns" ]), '',
		"The read boundary's check (sog.apply_run of " . (isnum($mf->{n}) ? int($mf->{n} / 10) : 'NA')
		. " events closing a boundary noted with their buffer hash, minus the same apply with no boundary): "
		. "**$mf->{boundary_per_1000} us per 1000 records** (the apply itself: $mf->{apply_run_per_1000} us per 1000).", '';
	my $max_other = $ENV{MAX_OTHER_CPU} // 10;
	push @o, '## Noise', '',
		'Other CPU (not this benchmark\'s processes), % of all ' . ($e->{cpus} // '?')
		. " cores, max over the recorded runs of a cell (> $max_other = disturbed):", '';
	for my $runner (qw(client pgbench)) {
		next unless variants_of($run, $runner);
		push @o, "### $RUNNER{$runner}", '',
			variant_table($run, $runner, 'variant', sub { my $x = $run->{cell}{$runner}{ $_[0] }{"$_[1] $_[2]"}; $x ? $x->{other} : '-' });
	}
	my @cells = map { $run->{cell}{ $_->[0] }{ $_->[1] }{"$_->[2] $_->[3]"} } @{ $run->{order} };
	push @o, sprintf('%d cells; worst other CPU %s%%; %d failed runs; %d retries.', scalar @cells,
			max_of(map { $_->{other} } @cells), sum0(map { $_->{failed} } @cells), sum0(map { $_->{retries} } @cells)),
		'Other CPU during openssl speed ' . $m->('other_cpu_openssl') . '%, hashloop ' . $m->('other_cpu_hashloop')
		. '%, micro.sql ' . $m->('other_cpu_micro') . '%.', '';
	push @o, '## How to read', '',
		'- (a)-(e) are the reference baselines (bench/pgbench/[a-e]_*.sql, byte-identical to the shared references).',
		"- (f), (g) and (r) run (b)'s sink INSERT and the guard call in one transaction; with pgbench the payload digests are",
		'  precomputed (bench/setup_sog.sql), as a real client computes them on its own CPU while it buffers. (g\') computes',
		'  them in the transaction with sog.payload_digest, the upper bound of what hashing adds on the server.',
		'- The real client (bench/client.c: libpq pipeline mode, binary parameters, one round trip per transaction) hashes',
		'  each payload itself; its (g), (h) and (r) insert only the rows the guard answered new. (r) is sog.apply_run: a',
		'  dense run, its digests back to back in one bytea. (w) and (p) are the whole protocol of the consumer guide with',
		'  (r) as the sink statement: sog.note_read of the page (the client hashes the page too), the sink transaction with',
		'  sog.commit_page; (w) commits note_read on its own first (two commits per page), (p) notes page k+1 inside page',
		"  k's sink transaction (one commit per page; only the first page's note_read commits alone).",
		'- Between runs the sink, inbox and receipt tables are truncated and a CHECKPOINT is taken.';
	return join("\n", @o) . "\n";
}

# ------------------------------------------------------------------ README tables

sub readme_tables {
	my ($run) = @_;
	my @o;
	for ([ client => [ [qw(g b)], [qw(r b)], [qw(w b)], [qw(p b)], [qw(g c)], [qw(r c)] ] ],
		[ pgbench => [ [qw(g b)], [qw(g c)], [qw(r b)], [qw(f b)] ] ]) {
		my ($runner, $pairs) = @$_;
		next unless variants_of($run, $runner);
		push @o, "**$RUNNER{$runner}**", '', md_table([ 'events/s', cell_heads($run) ],
				(map { my $v = $_; [ $NAME{$v}, map { kilo(events($run, $runner, $v, @$_)) } @{ $run->{batches} } ] }
				variants_of($run, $runner)),
				ratio_rows($run, $runner, @$pairs));
	}
	return join("\n", @o);
}

# ------------------------------------------------------------------ SVG

sub esc { my ($s) = @_; $s =~ s/&/&amp;/g; $s =~ s/</&lt;/g; $s =~ s/>/&gt;/g; return $s }

# a round step for about four grid lines up to m
sub nice_step {
	my ($m) = @_;
	return 1 if $m <= 0;
	my $e = 10**int(log($m) / log(10));
	my $f = $m / $e;
	return ($f <= 1 ? 1 : $f <= 2 ? 2 : $f <= 2.5 ? 2.5 : $f <= 5 ? 5 : 10) * $e;
}

sub human {
	my ($x) = @_;
	return $x >= 1e6 ? sprintf('%.1fM', $x / 1e6) : $x >= 1e4 ? sprintf('%.0fk', $x / 1e3)
		: $x >= 1e3 ? sprintf('%.1fk', $x / 1e3) : sprintf('%.0f', $x);
}

# bar_chart(run, title, [subtitle lines], [footer lines], row...): a row is
# {heading, runner, variants}: a legend, then a panel per batch size with a
# group of bars per client count; each panel has its own linear scale.  A
# bar is labelled with its events/s and its ratio to (b) in the same run.
sub bar_chart {
	my ($run, $title, $sub, $foot, @rows) = @_;
	my ($ml, $gap, $ph, $room, $min_panel) = (62, 18, 250, 62, 210);
	my (@el, $y, $width);
	# the text decides the width where it is wider than the panels
	$width = max_of(map { $ml + length($_) * 6.3 } @$sub, @$foot);
	$width = max_of($width, $ml + length($title) * 8.3);
	$y = 22 + 16 * @$sub + 10;
	for my $row (@rows) {
		my $runner = $row->{runner};
		my @v = grep { measured($run, $runner, $_) } @{ $row->{variants} };
		next unless @v;
		my @bs = do { my %s; grep { !$s{$_}++ } map { $_->[0] } @{ $run->{batches} } };
		my %cs = map { my $b = $_; ($b => [ map { $_->[1] } grep { $_->[0] == $b } @{ $run->{batches} } ]) } @bs;
		my $ncs = max_of(map { scalar @{ $cs{$_} } } @bs);
		my $bw = max_of(13, int(($min_panel - $gap * ($ncs + 1)) / ($ncs * @v)));
		if (defined $row->{heading}) {
			$y += 18;
			push @el, sprintf '<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>', $ml, $y, esc($row->{heading});
		}
		# the legend, wrapped at the row's width
		my $rw = $ml + sum0(map { @{ $cs{$_} } * (@v * $bw + $gap) + $gap + $ml } @bs);
		my ($lx, $ly) = ($ml, $y + 20);
		for my $v (@v) {
			my $t = $NAME{$v};
			if ($lx > $ml && $lx + 13 + length($t) * 6.2 > max_of($rw, $width)) { $lx = $ml; $ly += 16 }
			push @el, sprintf '<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>',
				$lx, $ly - 9, $COLOUR{$v}, $lx + 13, $ly, esc($t);
			$lx += 13 + length($t) * 6.2 + 14;
		}
		my $top = $ly + 30;
		my $x0 = $ml;
		for my $b (@bs) {
			my @cs = @{ $cs{$b} };
			my $pw = @cs * (@v * $bw + $gap) + $gap;
			my $m = max_of(0, map { my $c = $_; map { my $e = events($run, $runner, $_, $b, $c); isnum($e) ? $e : 0 } @v } @cs);
			my $step = nice_step($m / 4);
			my $ymax = $step * int($m / $step + 0.999);
			$ymax += $step if $ymax < $m || $ymax == 0;
			my $base = $top + $room + $ph;
			for (my $t = 0; $t <= $ymax + $step / 2; $t += $step) {
				my $yy = $base - $ph * $t / $ymax;
				push @el, sprintf '<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>',
					$x0, $yy, $x0 + $pw, $yy, $x0 - 4, $yy + 4, human($t);
			}
			push @el, sprintf '<text x="%.1f" y="%d" text-anchor="middle" font-weight="bold">B = %s events per transaction</text>',
				$x0 + $pw / 2, $top - 6, $b;
			my $gx = $x0 + $gap;
			for my $c (@cs) {
				for my $i (0 .. $#v) {
					my $e = events($run, $runner, $v[$i], $b, $c);
					next unless isnum($e);
					my $bh = $ph * $e / $ymax;
					my $bx = $gx + $i * $bw;
					my $r = $v[$i] eq 'b' ? 'NA' : ratio($run, $runner, $v[$i], 'b', $b, $c);
					my $label = human($e) . (isnum($r) ? sprintf(' (%.2f)', $r) : '');
					push @el, sprintf '<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s, %s, B=%s, %s: %s events/s%s</title></rect>',
						$bx, $base - $bh, $bw - 1, $bh, $COLOUR{ $v[$i] }, $RUNNER{$runner}, esc($NAME{ $v[$i] }), $b, clients_words($c), $e,
						isnum($r) ? ", $r of $NAME{b}" : '';
					push @el, sprintf '<text transform="translate(%.1f,%.1f) rotate(-90)" font-size="9" fill="#333">%s</text>',
						$bx + $bw / 2 + 3, $base - $bh - 3, $label;
				}
				push @el, sprintf '<text x="%.1f" y="%d" text-anchor="middle">%s</text>', $gx + @v * $bw / 2, $base + 16, clients_words($c);
				$gx += @v * $bw + $gap;
			}
			push @el, sprintf '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>', $x0, $base, $x0 + $pw, $base;
			$x0 += $pw + $ml;
		}
		$width = max_of($width, $x0, $lx);
		$y = $top + $room + $ph + 26;
	}
	$y += 6;
	for (@$foot) { push @el, sprintf '<text x="%d" y="%d" fill="#555">%s</text>', $ml, $y, esc($_); $y += 15 }
	my $h = $y + 4;
	$width = int($width + 10);
	my @head = (
		sprintf('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">',
			$width, $h, $width, $h),
		'<rect width="100%" height="100%" fill="white"/>',
		sprintf('<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>', $ml, esc($title)),
		map { sprintf '<text x="%d" y="%d" fill="#333">%s</text>', $ml, 36 + 16 * $_, esc($sub->[$_]) } 0 .. $#$sub);
	return join("\n", @head, @el, '</svg>') . "\n";
}

# the fastest guard call measured with the real client: sog.apply_run when it ran
sub fastest_call { my ($run) = @_; return (grep { measured($run, 'client', $_) } qw(r g))[0] // 'r' }

sub pictures {
	my ($run) = @_;
	my $e = $run->{env};
	my $host = join(',', (split /,/, $e->{host} // '')[ 0, 1 ]);
	my $runs = "Medians of $run->{runs} run(s) of " . ($e->{run}{duration} // '?') . " s per cell, $host.";
	my @foot = ('Each panel has its own linear scale. In brackets: the ratio to the offsets table (b) in the same cell',
		'(median of paired per-run ratios). Durable settings (fsync, synchronous_commit on); one partition per client.',
		'Figures in bench/latest.md.');
	my $main = bar_chart($run, 'What the guard costs with a real client: events per second',
		[ "$runs bench/client.c: libpq pipeline mode, binary parameters,",
		  'one round trip per transaction, the SHA-256 of each payload on the client.',
		  'Today: an offsets table (b) or an inbox (c). The guard: its fastest call alone, and the whole protocol of the',
		  'consumer guide (read boundary, sink transaction, provider token) with two commits per page or pipelined (one).' ],
		\@foot, { runner => 'client', variants => [ 'b', 'c', fastest_call($run), 'w', 'p' ] });
	my $more = bar_chart($run, 'Every other variant: events per second',
		[ $runs, 'The real client with each guard call, and every pgbench variant (bench/pgbench/*.sql; digests precomputed).' ],
		\@foot,
		{ heading => 'The real client (bench/client.c): each guard call', runner => 'client', variants => [qw(b g h r)] },
		{ heading => 'pgbench -M prepared', runner => 'pgbench', variants => $ORDER{pgbench} });
	return ($main, $more);
}

# ------------------------------------------------------------------ main

sub main {
	my ($dir) = @_;
	die "usage: report.pl OUTDIR\n" unless $dir;
	die "report: no $dir/results.tsv\n" unless -s "$dir/results.tsv";
	my $run = load_run($dir);
	my @new = issue22_targets($run);
	my @old = earlier_targets($run);
	write_summary($run, "$dir/summary.tsv");
	write_file("$dir/latest.md", latest_md($run, \@new, \@old));
	my ($main, $more) = pictures($run);
	write_file("$dir/results.svg", $main);
	write_file("$dir/results-more.svg", $more);
	my $readme = readme_tables($run);
	write_file("$dir/readme-table.md", $readme);
	my $console = "\n== $dir/latest.md (targets)\n"
		. join('', map { "| $_->{what} | $_->{shown} | " . ($_->{wanted} // "$_->{op} $_->{limit}") . " | $_->{result} |\n" }
			issue30_targets($run), @new, @old)
		. "\n== events/s\n$readme";
	write_file("$dir/report.txt", $console);
	print $console;
	return 0;
}

exit main(@ARGV) unless caller;
1;
