#!/usr/bin/perl
#
# test/reliability/check.pl: the offline checker of one scenario.
#
#   perl check.pl DIR [SCENARIO]
#
# DIR holds logs/*.log (one per driver process, see sogload.c), faults.log
# (one line per injected fault) and dump/*.tsv (the final database, written
# by run.sh after the drain).  Prints one summary line
#
#   scenario=S ops=N faults=N lost=N dup=N regressions=N zombie=N
#   double_promotions=N unrecorded_gaps=N unknown=N resolved=N amcheck=N
#   anomalies=N
#
# then the details of every non-zero count, and writes DIR/result.tsv.  The
# exit status is 1 if any invariant count is non-zero.  How each count is
# decided is in README.md ("How the checker decides"); in short:
#
#   lost          source events missing from the sink that some reader was
#                 told were applied (a committed apply answer, a receipt, or
#                 at or below the final applied position), or that the drain
#                 should have applied, and that no gap resolved as
#                 accepted_loss or skipped_telemetry covers;
#   dup           sink rows beyond the first for one (partition, position),
#                 plus rows whose payload is not the source's;
#   regressions   observations (monitor reads of sog.status, claim plans,
#                 promotions) of an applied position or generation lower
#                 than one observed strictly earlier in real time, or than
#                 the final database holds;
#   zombie        sink or recovery-page transactions of generation g that
#                 committed after a claim or promotion of a later generation
#                 of the same checkpoint had committed (commit timestamps);
#   double_promotions  two promoted attempts on one base generation, one
#                 generation created twice, or two "promoted" answers;
#   (acked_events: distinct events acknowledged before the drain)
#   unrecorded_gaps    runs of positions the applied position passed with
#                 no receipt, no sink row and no gap row, plus halts without
#                 a hash over unapplied records that did not fail closed
#                 (unless they handed over a boundary noted with a hash);
#   unknown/resolved   operations whose COMMIT outcome was unknown, and how
#                 many of them the database resolves consistently (by the
#                 tag, cross-checked with the extension's own tables);
#   amcheck       relations for which bt_index_check(heapallindexed) or
#                 verify_heapam reported anything;
#   anomalies     everything else that must not happen: unexpected SQLSTATEs
#                 (XX000 ...), refused verifications, recovery stops,
#                 acknowledged transactions missing, failed ones committed,
#                 receipts that disagree with the source, open gaps or
#                 undrained partitions at the end.

use strict;
use warnings;

my $dir = shift or die "usage: check.pl DIR [SCENARIO]\n";
my $scenario = shift // ($dir =~ m{([^/]+)/*$})[0];
my $INF = 9e18;

my (%detail, @anomaly_lines);

sub note_detail
{
	my ($key, $line) = @_;
	push @{ $detail{$key} }, $line if @{ $detail{$key} // [] } < 12;
}

sub anomaly
{
	my ($what, $line) = @_;
	$detail{anomaly_kinds}{$what}++;
	note_detail("anomalies", "$what: $line");
}

# ---------------------------------------------------------------- logs

my (%tx, %apply, %rpage, %rows_logged, @claims, %promote_inv, @promotes,
	%recbegin, @halts, %halt_inv, @status, %verify, $ops, %skips, %drained,
	@prune_refused);
$ops = 0;
my %protocol_op = map { $_ => 1 } qw(claim note apply page halt verify
  recbegin rpage promote skip report resolve register ownercheck prune);

sub fields
{
	my ($rest) = @_;
	my %f;
	if ($rest =~ s/(?:^| )msg=(.*)$//) { $f{msg} = $1; }
	for my $kv (split / /, $rest)
	{
		my ($k, $v) = split /=/, $kv, 2;
		$f{$k} = $v if defined $v;
	}
	return \%f;
}

sub expand_ranges
{
	my ($s, $first, $last) = @_;
	my @p;
	return ($first .. $last) if !defined $s && defined $first && defined $last;
	return () unless defined $s && length $s;
	for my $r (split /,/, $s)
	{
		if ($r =~ /^(\d+)-(\d+)$/) { push @p, $1 .. $2; }
		else { push @p, $r; }
	}
	return @p;
}

my %status_t0;
for my $file (sort glob("$dir/logs/*.log"))
{
	open my $fh, '<', $file or die "$file: $!";
	while (my $line = <$fh>)
	{
		chomp $line;
		my ($ts, $proc, $op, $phase, $rest) = split / /, $line, 5;
		next unless defined $phase;
		my $f = fields($rest // '');
		$ops++ if $phase eq 'invoked' && $protocol_op{$op};
		if ($op eq 'status' && $phase eq 'ok')
		{
			$ops++ unless $status_t0{"$proc $f->{t0}"}++;
			push @status, [ $f->{t0}, $ts, $f->{cp}, $f->{applied}, $f->{gen}, "$proc status" ];
		}
		elsif ($op eq 'tx')
		{
			my $t = $tx{ $f->{tag} } //= { tag => $f->{tag}, proc => $proc };
			$t->{kind} = $f->{kind} if $f->{kind};
			if ($phase eq 'invoked') { $t->{t0} = $ts; $t->{cp} = $f->{cp}; }
			else
			{
				$t->{phase} = $phase;
				$t->{t1} = $ts;
				$t->{gen} = $f->{gen} if defined $f->{gen};
				$t->{sqlstate} = $f->{sqlstate};
			}
		}
		elsif ($op eq 'apply')
		{
			my $a = $apply{ $f->{tag} } //= {};
			if ($phase eq 'invoked')
			{
				@$a{qw(cp gen t0 proc)} = ($f->{cp}, $f->{gen}, $ts, $proc);
				$a->{pos} = [ expand_ranges($f->{pos}, $f->{first}, $f->{last}) ];
			}
			elsif ($phase eq 'ok') { $a->{answers} = $f->{answers}; }
		}
		elsif ($op eq 'rpage')
		{
			my $a = $rpage{ $f->{tag} } //= {};
			if ($phase eq 'invoked')
			{
				@$a{qw(cp gen rid t0 proc)} = ($f->{cp}, $f->{gen}, $f->{rid}, $ts, $proc);
				$a->{pos} = [ expand_ranges($f->{pos}, $f->{first}, $f->{last}) ];
			}
			elsif ($phase eq 'ok') { $a->{answers} = $f->{answers}; }
		}
		elsif ($op eq 'sinkrows' && $phase eq 'ok')
		{
			$rows_logged{ $f->{tag} } += $f->{n};
		}
		elsif ($op eq 'claim' && $phase eq 'ok')
		{
			push @claims, { %$f, t1 => $ts, proc => $proc };
			push @status, [ $f->{t0}, $ts, $f->{cp}, $f->{resume}, $f->{gen}, "$proc claim $f->{tag}" ];
		}
		elsif ($op eq 'promote')
		{
			if ($phase eq 'invoked') { $promote_inv{ $f->{tag} } = $ts; }
			elsif ($phase eq 'ok')
			{
				push @promotes, { %$f, t1 => $ts, proc => $proc };
				if ($f->{promoted} eq 't')
				{
					push @status, [ $promote_inv{ $f->{tag} } // $ts, $ts, $f->{cp},
						$f->{applied}, $f->{gen}, "$proc promote $f->{tag}" ];
				}
			}
		}
		elsif ($op eq 'prune' && $phase eq 'refused')
		{
			push @prune_refused, { %$f, t1 => $ts, proc => $proc };
		}
		elsif ($op eq 'recbegin' && $phase eq 'ok')
		{
			$recbegin{ $f->{rid} } = { %$f, proc => $proc };
		}
		elsif ($op eq 'halt')
		{
			if ($phase eq 'ok') { push @halts, { %$f, proc => $proc }; }
		}
		elsif ($op eq 'verify' && $phase eq 'ok')
		{
			anomaly('verify_gap_false', "$proc $f->{tag}: a re-fetched, unchanged gap did not verify")
			  if $f->{result} ne 't';
		}
		elsif ($op eq 'skip' && $phase eq 'ok')
		{
			$skips{ $f->{tag} } = 1;
		}
		elsif ($op eq 'anomaly')
		{
			my $what = $f->{what} // 'unknown';
			my $info = $rest;
			anomaly($what, "$proc $info");
		}
		elsif ($op eq 'drained')
		{
			$drained{ $f->{part} } = $phase;
			anomaly('undrained', "$proc part $f->{part}: applied $f->{applied} of $f->{end}")
			  if $phase ne 'ok';
		}
	}
	close $fh;
}

my $faults = 0;
my %fault_kinds;
if (open my $fh, '<', "$dir/faults.log")
{
	while (<$fh>)
	{
		my (undef, $kind) = split / /;
		next unless defined $kind;
		$faults++;
		$fault_kinds{$kind}++;
	}
}

# ---------------------------------------------------------------- database

sub tsv
{
	my ($name) = @_;
	my @rows;
	open my $fh, '<', "$dir/dump/$name.tsv" or die "$dir/dump/$name.tsv: $!";
	while (<$fh>)
	{
		chomp;
		push @rows, [ map { $_ eq '\N' ? undef : $_ } split /\t/, $_, -1 ];
	}
	return @rows;
}

my (%src, %src_end, %sink, %sink_by_tag, %optag, %cp_part, %cp_row,
	%receipt, %gaps, %man_skip, @manifest, @recovery);
for (tsv('source'))
{
	my ($part, $pos, $trimmed, $dig) = @$_;
	# one short string per event: trimmed flag and a digest prefix
	$src{$part}{$pos} = ($trimmed eq 't' ? 'T' : 'F') . substr($dig, 0, 16);
	$src_end{$part} = $pos if !defined $src_end{$part} || $pos > $src_end{$part};
}
my ($dup, $corrupt) = (0, 0);
for (tsv('sink'))
{
	my ($part, $pos, $tag, $gen, $dig) = @$_;
	$sink{$part}{$pos}++;
	$sink_by_tag{$tag}++;
	my $s = $src{$part}{$pos};
	if (!$s || substr($s, 1) ne substr($dig, 0, 16))
	{
		$corrupt++;
		note_detail('dup', "part $part pos $pos (tag $tag): payload is not the source's");
	}
}
for my $part (sort keys %sink)
{
	for my $pos (sort { $a <=> $b } keys %{ $sink{$part} })
	{
		my $n = $sink{$part}{$pos};
		next if $n <= 1;
		$dup += $n - 1;
		note_detail('dup', "part $part pos $pos: $n sink rows");
	}
}
for (tsv('optag'))
{
	my ($tag, $kind, $cp, $gen, $ts) = @$_;
	$optag{$tag} = { kind => $kind, cp => $cp, gen => $gen, ts => $ts };
}
for (tsv('checkpoint'))
{
	my ($id, $pname, $crit, $gen, $applied, $state, $horizon, $cursor) = @$_;
	(my $part = $pname) =~ s/^p//;
	$cp_part{$id} = $part;
	$cp_row{$id} = { part => $part, crit => $crit, gen => $gen, applied => $applied,
		state => $state, horizon => $horizon, cursor => $cursor };
}
for (tsv('receipts'))
{
	my ($cp, $pos, $dig) = @$_;
	my $part = $cp_part{$cp};
	$receipt{$part}{$pos} = 1;
	my $s = $src{$part}{$pos};
	anomaly('receipt_digest', "checkpoint $cp position $pos: receipt digest is not the source's")
	  if !$s || substr($s, 1) ne substr($dig, 0, 16);
}
my $open_gaps = 0;
for (tsv('gap'))
{
	my ($id, $cp, $gen, $from, $to, $reason, $res, $resolved, $ts) = @$_;
	push @{ $gaps{ $cp_part{$cp} } }, { id => $id, from => $from // 0, to => $to // 0,
		reason => $reason, res => $res, resolved => $resolved eq 't', gen => $gen };
	if ($resolved ne 't')
	{
		$open_gaps++;
		anomaly('open_gap_at_end', "gap $id of checkpoint $cp ($reason, ($from, $to]) is still open");
	}
}
for (tsv('manifest'))
{
	my ($id, $cp, $gen, $kind, $owner, $cursor, $applied, $verdict, $gap, $ts, $note) = @$_;
	push @manifest, { id => $id, cp => $cp, gen => $gen, kind => $kind, owner => $owner // '',
		ts => $ts, verdict => $verdict };
	if ($kind eq 'skip' && defined $note && $note =~ /skipped \((\S+), (\S+)\]/)
	{
		my ($a, $b) = ($1, $2);
		$a = 0 if $a eq 'NULL' || $a eq 'start';
		push @{ $man_skip{ $cp_part{$cp} } }, [ $a, $b ] if $b =~ /^\d+$/;
	}
}
for (tsv('recovery'))
{
	my ($id, $cp, $gen, $state, $rgen, $tok, $last, $adv, $ts, $anchor) = @$_;
	push @recovery, { id => $id, cp => $cp, gen => $gen, state => $state, rgen => $rgen, ts => $ts,
		anchor => $anchor };
}
my %rec_by_id = map { $_->{id} => $_ } @recovery;

# prune_receipts refused under an open recovery attempt (55000, logged by the
# operator as "prune refused"): justified only if the attempt it cites is of
# that checkpoint, its anchor is at or below the prune's position (or it
# has none: it reads from the start), and it was still open when the prune
# began (never concluded, or its conclusion committed after that).
for my $p (@prune_refused)
{
	my $r = $rec_by_id{ $p->{rid} };
	my $why = !$r ? "attempt $p->{rid} does not exist"
	  : $r->{cp} ne $p->{cp} ? "attempt $p->{rid} is of checkpoint $r->{cp}"
	  : (defined $r->{anchor} && $r->{anchor} > $p->{through}) ? "attempt $p->{rid}'s anchor $r->{anchor} is above $p->{through}"
	  : ($r->{state} ne 'open' && defined $r->{ts} && $r->{ts} < $p->{t0}) ? "attempt $p->{rid} was concluded ($r->{state}) at $r->{ts}, before the prune began at $p->{t0}"
	  : undef;
	anomaly('prune_refusal_unjustified', "$p->{proc} prune of checkpoint $p->{cp} through $p->{through}: $why")
	  if defined $why;
}

# ---------------------------------------------------------------- unknown outcomes

my ($unknown, $resolved, $unres_committed, $unres_aborted) = (0, 0, 0, 0);
my %claim_owner = map { $_->{owner} => 1 } grep { $_->{kind} eq 'claim' } @manifest;
my %promote_answer;
for my $p (@promotes) { $promote_answer{ $p->{tag} } = $p; }
for my $t (values %tx)
{
	next unless defined $t->{phase};
	my $committed = exists $optag{ $t->{tag} };
	if ($t->{phase} eq 'ok')
	{
		anomaly('acknowledged_tx_missing', "$t->{proc} $t->{tag} ($t->{kind}) committed but its tag is gone")
		  unless $committed;
		next;
	}
	if ($t->{phase} eq 'failed')
	{
		anomaly('failed_tx_committed', "$t->{proc} $t->{tag} ($t->{kind}) failed but committed")
		  if $committed;
		next;
	}
	next unless $t->{phase} eq 'unknown';
	$unknown++;
	my $ok = 1;
	my $kind = $t->{kind};
	my $rows = $sink_by_tag{ $t->{tag} } // 0;
	if ($kind eq 'sink' || $kind eq 'rpage')
	{
		my $want = $rows_logged{ $t->{tag} } // 0;
		$ok = 0 if $committed && $rows != $want;
		$ok = 0 if !$committed && $rows != 0;
	}
	elsif ($kind eq 'claim')
	{
		$ok = 0 if $committed != ($claim_owner{ $t->{tag} } ? 1 : 0);
	}
	if ($ok)
	{
		$resolved++;
		$committed ? $unres_committed++ : $unres_aborted++;
	}
	else
	{
		note_detail('unknown', "$t->{proc} $t->{tag} ($kind): tag " . ($committed ? 'present' : 'absent')
			  . " but the extension's tables disagree (sink rows $rows)");
	}
}

# ---------------------------------------------------------------- acknowledged events

my %acked;						# part -> pos -> index in @ack_by
my %acked_workload;				# "part pos" acknowledged before the drain
my @ack_by;
for my $tag (keys %apply)
{
	my $a = $apply{$tag};
	next unless defined $a->{answers};
	my $t = $tx{$tag} or next;
	next unless exists $optag{$tag};	# committed (ok, or unknown resolved)
	my $part = $cp_part{ $a->{cp} } // next;
	my @p = @{ $a->{pos} };
	push @ack_by, "apply $tag";
	$acked{$part}{$_} //= $#ack_by for @p;
	$acked_workload{"$part $_"} = 1 for $a->{proc} eq 'drain' ? () : @p;
}
for my $tag (keys %rpage)
{
	my $a = $rpage{$tag};
	next unless defined $a->{answers} && exists $optag{$tag};
	my $part = $cp_part{ $a->{cp} } // next;
	my @p = @{ $a->{pos} };
	my @ans = split //, $a->{answers};
	push @ack_by, "rpage $tag";
	for my $i (0 .. $#ans)
	{
		next unless $ans[$i] =~ /[vad]/;
		$acked{$part}{ $p[$i] } //= $#ack_by;
		$acked_workload{"$part $p[$i]"} = 1;
	}
}

# ---------------------------------------------------------------- lost, unrecorded gaps

sub covered
{
	my ($list, $pos, @res) = @_;
	for my $g (@{ $list // [] })
	{
		next if @res && !grep { ($g->{res} // '') eq $_ } @res;
		return $g if $pos > $g->{from} && $pos <= $g->{to};
	}
	return undef;
}

my ($lost, $unrecorded_runs, $unrecorded_events, $excused) = (0, 0, 0, 0);
my (%part_applied, %part_horizon);
for my $cp (keys %cp_row)
{
	$part_applied{ $cp_row{$cp}{part} } = $cp_row{$cp}{applied};
	$part_horizon{ $cp_row{$cp}{part} } = $cp_row{$cp}{horizon};
}
for my $part (sort { $a <=> $b } keys %src)
{
	my $applied = $part_applied{$part} // 0;
	my $horizon = $part_horizon{$part} // 0;
	my $in_run = 0;
	for my $pos (sort { $a <=> $b } keys %{ $src{$part} })
	{
		my $unrec = 0;
		if (!$sink{$part}{$pos})
		{
			if (covered($gaps{$part}, $pos, 'accepted_loss', 'skipped_telemetry'))
			{
				$excused++;
			}
			else
			{
				my $below = $pos <= $applied;
				my $pruned = $pos <= $horizon;
				my $skip_only = grep { $pos > $_->[0] && $pos <= $_->[1] } @{ $man_skip{$part} // [] };
				if ($below && !$pruned && !$receipt{$part}{$pos})
				{
					$unrec = 1;
					$unrecorded_events++;
					note_detail('unrecorded', "part $part pos $pos: at or below applied $applied, no receipt, no row, no gap"
						  . ($skip_only ? ' (a telemetry skip recorded only in manifest_log)' : ''));
				}
				if (!$skip_only)
				{
					$lost++;
					my $why = $below ? ($receipt{$part}{$pos} ? 'receipt' : $pruned ? 'pruned, below applied' : 'below applied')
					  : defined $acked{$part}{$pos} ? "acknowledged by $ack_by[$acked{$part}{$pos}]" : 'not drained';
					note_detail('lost', "part $part pos $pos: missing ($why)");
				}
			}
		}
		$unrecorded_runs++ if $unrec && !$in_run;
		$in_run = $unrec;
	}
	for my $pos (keys %{ $receipt{$part} // {} })
	{
		anomaly('receipt_without_source', "part $part position $pos") unless $src{$part}{$pos};
	}
	for my $pos (keys %{ $sink{$part} // {} })
	{
		anomaly('row_without_receipt', "part $part position $pos has a sink row but no receipt")
		  unless $receipt{$part}{$pos} || $pos <= $horizon;
	}
}

# halts without a hash over unapplied records must fail closed, unless a
# boundary noted with a hash is open: the halt hands that one over as it
# was noted (1.2), and the successor verifies it
my $fail_open = 0;
for my $h (@halts)
{
	next unless $h->{cursor} ne 'NULL' && !$h->{hashed} && !$h->{noted};
	next if $h->{verdict} eq 'fail_closed';
	$fail_open++;
	note_detail('unrecorded', "$h->{proc} $h->{tag}: halt without a hash at cursor $h->{cursor} answered $h->{verdict}");
}

# ---------------------------------------------------------------- regressions

my $regressions = 0;
my %obs_by_cp;
push @{ $obs_by_cp{ $_->[2] } }, $_ for @status;
for my $cp (sort keys %obs_by_cp)
{
	my @obs = @{ $obs_by_cp{$cp} };
	for my $k ([ 3, 'applied position' ], [ 4, 'generation' ])
	{
		my ($i, $vi) = @$k;
		my @by_end = sort { $a->[1] <=> $b->[1] } @obs;
		my @by_start = sort { $a->[0] <=> $b->[0] } @obs;
		my ($j, $max, $maxobs) = (0, -1, undef);
		for my $o (@by_start)
		{
			while ($j < @by_end && $by_end[$j][1] < $o->[0])
			{
				if ($by_end[$j][$i] > $max) { $max = $by_end[$j][$i]; $maxobs = $by_end[$j]; }
				$j++;
			}
			if ($o->[$i] < $max)
			{
				$regressions++;
				note_detail('regressions', "checkpoint $cp: $o->[5] saw $vi $o->[$i] after $maxobs->[5] saw $max");
			}
		}
		my $final = $cp_row{$cp} ? ($i == 3 ? $cp_row{$cp}{applied} : $cp_row{$cp}{gen}) : undef;
		my $top = (sort { $b <=> $a } map { $_->[$i] } @obs)[0];
		if (defined $final && defined $top && $final < $top)
		{
			$regressions++;
			note_detail('regressions', "checkpoint $cp: the final $vi $final is below the observed $top");
		}
	}
}

# ---------------------------------------------------------------- zombie commits

my %bumps;						# cp -> [ [gen, ts], ... ]
for my $m (@manifest)
{
	push @{ $bumps{ $m->{cp} } }, [ $m->{gen}, $m->{ts} ] if $m->{kind} eq 'claim' && defined $m->{ts};
}
for my $o (values %optag)
{
	push @{ $bumps{ $o->{cp} } }, [ $o->{gen}, $o->{ts} ] if $o->{kind} eq 'claim' && defined $o->{ts};
}
for my $r (@recovery)
{
	push @{ $bumps{ $r->{cp} } }, [ $r->{rgen}, $r->{ts} ]
	  if $r->{state} eq 'promoted' && defined $r->{rgen} && defined $r->{ts};
}
sub bump_after
{
	my ($cp, $gen) = @_;
	my $min = $INF;
	for my $b (@{ $bumps{$cp} // [] })
	{
		$min = $b->[1] if $b->[0] > $gen && $b->[1] < $min;
	}
	return $min;
}
my $zombie = 0;
for my $tag (keys %optag)
{
	my $o = $optag{$tag};
	next unless $o->{kind} eq 'sink' || $o->{kind} eq 'rpage';
	next unless defined $o->{ts};
	my $b = bump_after($o->{cp}, $o->{gen});
	if ($o->{ts} > $b)
	{
		$zombie++;
		note_detail('zombie', "$tag ($o->{kind}, checkpoint $o->{cp}, generation $o->{gen}) committed "
			  . sprintf('%.3f ms', ($o->{ts} - $b) / 1000) . " after a later generation did");
	}
}

# ---------------------------------------------------------------- double promotions

my $double = 0;
my (%promoted_base, %gen_made);
for my $r (@recovery)
{
	next unless $r->{state} eq 'promoted';
	push @{ $promoted_base{"$r->{cp} $r->{gen}"} }, $r->{id};
	push @{ $gen_made{"$r->{cp} $r->{rgen}"} }, "promotion of attempt $r->{id}";
}
for my $k (sort keys %promoted_base)
{
	my @ids = @{ $promoted_base{$k} };
	next if @ids < 2;
	$double += @ids - 1;
	note_detail('double', "checkpoint/generation $k: attempts @ids all promoted");
}
for my $m (@manifest)
{
	push @{ $gen_made{"$m->{cp} $m->{gen}"} }, "claim by $m->{owner}" if $m->{kind} eq 'claim';
}
for my $k (sort keys %gen_made)
{
	my @who = @{ $gen_made{$k} };
	next if @who < 2;
	$double += @who - 1;
	note_detail('double', "checkpoint/generation $k made twice: @who");
}
my %answered;
for my $p (@promotes)
{
	next unless $p->{promoted} eq 't' && $p->{reason} eq 'promoted';
	my $rb = $recbegin{ $p->{rid} } or next;
	push @{ $answered{"$rb->{cp} $rb->{gen}"} }, $p->{rid};
}
for my $k (sort keys %answered)
{
	my %u = map { $_ => 1 } @{ $answered{$k} };
	next if keys %u < 2;
	$double += (keys %u) - 1;
	note_detail('double', "checkpoint/generation $k: attempts " . join(' ', sort keys %u) . " were all answered promoted");
}
for my $p (@promotes)
{
	next unless $p->{promoted} eq 't';
	my $r = $rec_by_id{ $p->{rid} };
	anomaly('promotion_not_recorded', "attempt $p->{rid} was answered promoted; its row says " . ($r ? $r->{state} : 'nothing'))
	  if exists $optag{ $p->{tag} } && (!$r || $r->{state} ne 'promoted');
}

# ---------------------------------------------------------------- amcheck

my ($amcheck_bad, $amcheck_rels) = (0, 0);
for (tsv('amcheck'))
{
	my ($rel, $check, $result) = @$_;
	$amcheck_rels++;
	next if $result eq 'ok';
	$amcheck_bad++;
	note_detail('amcheck', "$rel $check: $result");
}
anomaly('amcheck_ran_on_nothing', 'no relation was checked') if $amcheck_rels == 0;

# ---------------------------------------------------------------- summary

my $anomalies = 0;
$anomalies += $_ for values %{ $detail{anomaly_kinds} // {} };
my $unrecorded = $unrecorded_runs + $fail_open;
my %r = (
	scenario => $scenario, ops => $ops, faults => $faults, lost => $lost, dup => $dup + $corrupt,
	regressions => $regressions, zombie => $zombie, double_promotions => $double,
	unrecorded_gaps => $unrecorded, unknown => $unknown, resolved => $resolved,
	resolved_committed => $unres_committed, resolved_aborted => $unres_aborted,
	amcheck => $amcheck_bad, amcheck_relations => $amcheck_rels, anomalies => $anomalies,
	acked_events => scalar(keys %acked_workload), excused => $excused,
	unrecorded_events => $unrecorded_events, prune_refused => scalar(@prune_refused),
	fault_kinds => join(',', map { "$_:$fault_kinds{$_}" } sort keys %fault_kinds) || 'none',
	anomaly_kinds => join(',', map { "$_:$detail{anomaly_kinds}{$_}" } sort keys %{ $detail{anomaly_kinds} // {} }) || 'none',
);
my @order = qw(scenario ops faults lost dup regressions zombie double_promotions
  unrecorded_gaps unknown resolved amcheck anomalies);
print join(' ', map { "$_=$r{$_}" } @order), "\n";
for my $k (qw(lost dup regressions zombie double unrecorded unknown amcheck anomalies))
{
	next unless $detail{$k};
	print "  $k: $_\n" for @{ $detail{$k} };
}
open my $out, '>', "$dir/result.tsv" or die "$dir/result.tsv: $!";
print $out "$_\t$r{$_}\n" for sort keys %r;
close $out;
my $bad = $lost + $dup + $corrupt + $regressions + $zombie + $double + $unrecorded
  + ($unknown - $resolved) + $amcheck_bad + $anomalies;
exit($bad ? 1 : 0);
