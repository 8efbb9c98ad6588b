#!/usr/bin/perl
# test/portable/gen_inputs.pl: the inputs test/portable/pure_diff.sql asks
# both editions about, one per line in COPY's text format (tab, newline and
# backslash escaped).  Deterministic: the same seed gives the same file.
#
#   perl test/portable/gen_inputs.pl [N [SEED]] > inputs.txt
use strict;
use warnings;

my $n = shift // 2000;
my $seed = shift // 20261204;
srand($seed);

sub digits { my ($k) = @_; return join '', map { int(rand(10)) } 1 .. $k; }
sub number {
	my $r = rand();
	return int(rand(10)) if $r < 0.25;
	return int(rand(100000)) if $r < 0.5;
	return 1 + int(rand(9)) . digits(int(rand(19))) if $r < 0.8;
	my $len = (18, 19, 20, 56, 129, 159, 160, 161, 170)[ int(rand(9)) ];
	return 1 + int(rand(9)) . digits($len - 1);
}
sub tuple { my ($k) = @_; return join '-', map { number() } 1 .. $k; }

my @fixed = ('0', '00', '007', ' 7 ', "\t42\n", '5', '5-0', '5-1', '6', '9', '10', '100-0-0',
	'1700000000000-0', '1700000000000-15', '18446744073709551615', '9223372036854775807',
	'9223372036854775808', '1-2-3-4-5-6-7-8', '1-2-3-4-5-6-7-8-9', '', ' ', '-', '--', '1--2', '-1', '1-',
	'+1', '1.5', '12.50', '1e3', 'abc', "\x{0661}", '1 2', '0-0', '000-000', '0/0', '16/B374D848',
	'FFFFFFFF/FFFFFFFF', '1/0', '-5', '3-4-5', '9' x 160, '9' x 161, '0' x 200 . '1', '1' . '0' x 160,
	'1-' . '0' x 170, '42\\', 'x' x 300, 'v7', "\x0B7", "7\x0B", "\f7\r", '1--a', '-a', '-', '1-a', 'a-1',
	'1-2-3-4-5-6-7-8-9-a', ('1' x 161) . '-a', join('-', ('9' x 161) x 9), '1-2-3-4-5-6-7-8-' . ('1' x 170),
	"7\x{00a0}", "\x{1F600}", '1-' x 8 . '1', ' - ', '0-', '00-00');
my @out = @fixed;
while (@out < $n) {
	my $r = rand();
	my $t;
	if ($r < 0.45) { $t = number(); }
	elsif ($r < 0.75) { $t = tuple(2 + int(rand(4))); }
	elsif ($r < 0.8) { $t = tuple(7 + int(rand(3))); }
	elsif ($r < 0.87) { $t = tuple(1 + int(rand(3))); $t =~ s/(^|-)/$1 . ('0' x int(rand(3)))/ge; }
	elsif ($r < 0.9) { $t = (' ', "\t", "\n", '')[ int(rand(4)) ] . number() . (' ', "\r", '')[ int(rand(3)) ]; }
	elsif ($r < 0.93) { $t = sprintf('%X/%X', int(rand(2**31)), int(rand(2**31))); }
	elsif ($r < 0.96) { $t = number() . '.' . int(rand(100)); }
	elsif ($r < 0.98) { $t = '-' . number(); }
	else { $t = tuple(2); substr($t, int(rand(length $t)), 1) = ('a', '-', ' ', '+', "\x{00e9}")[ int(rand(5)) ]; }
	push @out, $t;
}
binmode(STDOUT, ':encoding(UTF-8)');
for my $t (@out) {
	$t =~ s/\\/\\\\/g;
	$t =~ s/\t/\\t/g;
	$t =~ s/\n/\\n/g;
	$t =~ s/\r/\\r/g;
	print "$t\n";
}
