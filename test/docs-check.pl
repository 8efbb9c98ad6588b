#!/usr/bin/perl
#
# test/docs-check.pl: the README and docs/*.md against the tree and a live
# database (make test's suite "docs"; issue 21: a test that fails when the
# documentation drifts).
#
#   perl test/docs-check.pl SRCDIR         (psql reaches a database where
#                                           the extension is installed, via
#                                           PGHOST/PGPORT/PGDATABASE)
#
# Checks, each a line "ok ..." or "FAILED ...":
#   1. every file path the documents name (in backquotes or as a link) that
#      looks like one of the tree's (src/, sql/, test/, t/, bench/, docs/,
#      examples/, model/, monitoring/, debian/, .ci/) exists;
#   2. every function of the README's SQL reference tables (a row that
#      starts with | `sog.name(args) -> ...`) exists in schema sog with
#      those arguments: as many (the DEFAULTed ones optional), named as the
#      reference names them, of the types it gives, returning what it says;
#   3. every function and procedure of schema sog that users may call is in
#      the reference (a row, or named in its text), so a new one cannot be
#      left out;
#   4. every SQLSTATE the README names is one the tree raises (in src/ or
#      sql/) or one PostgreSQL raises that a test shows (test/expected/);
#   5. the setting sog.claim_timeout has the default the README gives;
#   6. nothing refers to a document outside the repository (CONTRACT.md,
#      "contract section").
# Also: every link to a heading (#anchor, FILE.md#anchor) finds one, and
# the README's "Contents" line lists its sections in order.
# Ends with "docs-check: N passed, M failed"; exit status 1 if any failed.

use strict;
use warnings;

my $src = shift // '.';
my ($passed, $failed) = (0, 0);

sub check
{
	my ($ok, $what, $why) = @_;
	if ($ok) { $passed++; print "ok      $what\n"; }
	else { $failed++; print "FAILED  $what" . ($why ? ": $why" : '') . "\n"; }
	return $ok;
}

sub slurp
{
	my ($f) = @_;
	open my $fh, '<', $f or die "$f: $!";
	local $/;
	return <$fh>;
}

sub psql
{
	my ($sql) = @_;
	open my $ph, '-|', 'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-c', $sql
	  or die "psql: $!";
	local $/;
	my $out = <$ph>;
	close $ph or die "psql failed for: $sql\n";
	return $out // '';
}

my $readme = slurp("$src/README.md");
my @docs = ('README.md', map { s{^\Q$src\E/}{}r } glob("$src/docs/*.md"));
my %text = map { $_ => slurp("$src/$_") } @docs;

# 1. paths
my $dirs = qr{(?:src|sql|test|t|bench|docs|examples|model|monitoring|debian|\.ci)/};
for my $doc (@docs)
{
	my (%seen, @missing);
	my $base = $doc =~ m{/} ? ($doc =~ s{/[^/]+$}{}r) : '';
	while ($text{$doc} =~ /`((?:\.\.\/)?$dirs[A-Za-z0-9_.\/-]*)`|\]\(((?:\.\.\/)?$dirs[A-Za-z0-9_.\/-]*|(?:\.\.\/)?[A-Za-z0-9_.-]+\.(?:md|svg))(?:#[^)]*)?\)/g)
	{
		my $p = $1 // $2;
		$p =~ s/[.,:;]+$//;
		next if $seen{$p}++ || $p =~ /[*<>]/;
		next if $p =~ m{^(?:bench/results|build)/};	# output, not committed
		# a link resolves from the document's directory (as GitHub
		# resolves it), a path in backquotes from the tree's root
		my $rel = ($2 && $base) ? "$base/$p" : $p;
		1 while $rel =~ s{[^/.][^/]*/\.\./}{};
		push @missing, $p unless -e "$src/$rel";
	}
	check(!@missing, "$doc: every path it names exists", join(', ', @missing));
}

# 1b. every link to a heading (#anchor, or FILE.md#anchor) names a heading
# of that document, as GitHub makes an anchor of it
sub anchors
{
	my ($md) = @_;
	my (%a, %n);
	my $fenced = 0;
	for (split /\n/, $md)
	{
		$fenced = !$fenced if /^```/;
		next if $fenced || !/^#{1,6}\s+(.*?)\s*$/;
		my $slug = lc $1;
		$slug =~ s/[^\w\- ]//g;
		$slug =~ s/ /-/g;
		$a{ $n{$slug}++ ? "$slug-" . ($n{$slug} - 1) : $slug } = 1;
	}
	return \%a;
}
for my $doc (@docs)
{
	my $base = $doc =~ m{/} ? ($doc =~ s{/[^/]+$}{}r) : '';
	my @broken;
	while ($text{$doc} =~ /\]\(([A-Za-z0-9_.\/-]*\.md)?#([^)\s]+)\)/g)
	{
		my ($file, $anchor) = ($1, $2);
		my $target = $doc;
		if (defined $file)
		{
			$target = $base ? "$base/$file" : $file;
			1 while $target =~ s{[^/.][^/]*/\.\./}{};
		}
		next unless -e "$src/$target";
		$text{$target} //= slurp("$src/$target");
		push @broken, ($file // '') . "#$anchor" unless anchors($text{$target})->{$anchor};
	}
	check(!@broken, "$doc: every link to a heading finds it", join(', ', @broken));
}

# 1c. the README's table of contents names every section, in order
{
	my ($toc) = $readme =~ /^\*\*Contents\*\*:(.*?)\n\n/ms;
	my @listed = defined $toc ? $toc =~ /\]\(#([^)]+)\)/g : ();
	my @sections = map { my $s = lc $_; $s =~ s/[^\w\- ]//g; $s =~ s/ /-/g; $s }
	  grep { defined } map { /^## (.*?)\s*$/ ? $1 : undef } split /\n/, $readme =~ s/^```.*?^```//gmsr;
	check("@listed" eq "@sections", "README.md: the contents line lists every section in order",
		"listed: @listed; sections: @sections");
}

# 2. the reference's functions, against the catalog
my %catalog;	# name -> [ { args => [[name, type, has_default]...], result => text } ]
for my $line (split /\n/, psql(q{
	SELECT p.proname, p.prokind, pg_get_function_result(p.oid),
	       coalesce(array_to_string(p.proargnames, ','), ''),
	       coalesce(array_to_string(ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t), ','), ''),
	       p.pronargdefaults
	  FROM pg_proc p WHERE p.pronamespace = 'sog'::regnamespace}))
{
	my ($name, $kind, $result, $argnames, $argtypes, $ndef) = split /\|/, $line, -1;
	my @types = split /,/, ($argtypes =~ s/"//gr);
	$result =~ s/"//g if defined $result;
	my @names = split /,/, $argnames;
	my @args = map { [ $names[$_] // '', $types[$_], $_ >= @types - $ndef ] } 0 .. $#types;
	push @{ $catalog{$name} }, { kind => $kind, result => $result // '', args => \@args };
}

# split "a, b DEFAULT x, "c" sog.position" at top-level commas
sub split_args
{
	my ($s) = @_;
	my (@out, $depth, $cur);
	($depth, $cur) = (0, '');
	for my $ch (split //, $s)
	{
		if ($ch eq ',' && $depth == 0) { push @out, $cur; $cur = ''; next; }
		$depth++ if $ch eq '(';
		$depth-- if $ch eq ')';
		$cur .= $ch;
	}
	push @out, $cur if $cur =~ /\S/;
	return map { s/^\s+|\s+$//gr } @out;
}

# the text inside the parentheses that open at $s's first "(", and what follows
sub balanced
{
	my ($s) = @_;
	my $open = index($s, '(');
	my $depth = 0;
	for my $i ($open .. length($s) - 1)
	{
		my $ch = substr($s, $i, 1);
		$depth++ if $ch eq '(';
		$depth-- if $ch eq ')';
		return (substr($s, $open + 1, $i - $open - 1), substr($s, $i + 1)) if $depth == 0;
	}
	return (undef, undef);
}

my %documented;
my $rows = 0;
for my $line (split /\n/, $readme)
{
	next unless $line =~ /^\| `(?:CALL )?sog\.([a-z_0-9]+)(\([^`]*)`/;
	my ($name, $rest) = ($1, $2);
	my ($args, $after) = balanced($rest);
	next unless defined $args;
	my ($result) = $after =~ /^\s*->\s*(.+)$/;
	$rows++;
	$documented{$name} = 1;
	my @doc = split_args($args);
	my $cands = $catalog{$name};
	if (!check($cands, "reference: sog.$name exists", 'no such function in schema sog')) { next; }
	my @why;
	my $match = 0;
	for my $c (@$cands)
	{
		my @cargs = @{ $c->{args} };
		my $required = grep { !$_->[2] } @cargs;
		if (@doc > @cargs || @doc < $required)
		{
			push @why, scalar(@cargs) . " arguments, not " . scalar(@doc);
			next;
		}
		my $bad = 0;
		for my $i (0 .. $#doc)
		{
			my $d = $doc[$i] =~ s/\s+DEFAULT\s+.*$//ir;
			my ($dname, $dtype) = $d =~ /^("?[a-z_0-9]+"?)(?:\s+(.+))?$/i;
			next unless defined $dname;
			# a bare type (sog.position_predecessor(sog.position)): no name given
			if ($dname =~ /^sog$/ || $d =~ /^sog\./) { ($dname, $dtype) = ('', $d); }
			$dname =~ s/"//g;
			my ($cname, $ctype) = @{ $cargs[$i] };
			if ($dname ne '' && $cname ne '' && $cname ne $dname) { push @why, "argument " . ($i + 1) . " is $cname, not $dname"; $bad = 1; last; }
			if (defined $dtype && $dtype ne '' && $dtype ne $ctype && "sog.$dtype" ne $ctype)
			{
				push @why, "argument $dname is $ctype, not $dtype";
				$bad = 1;
				last;
			}
		}
		next if $bad;
		if (defined $result && $c->{kind} ne 'p')
		{
			(my $want = $result) =~ s/\s*\(1\.1\).*$//;
			$want =~ s/\s+$//;
			my $have = $c->{result};
			my $short = $have =~ s/\bsog\.//gr;
			if ($want !~ /^TABLE\(/ && $want ne $have && $want ne $short && "sog.$want" ne $have)
			{
				push @why, "it returns $have, not $want";
				next;
			}
			if ($want =~ /^TABLE\((.*)\)$/)
			{
				my @wcols = map { (split /\s+/)[0] =~ s/"//gr } split_args($1);
				my @hcols = map { (split /\s+/)[0] =~ s/"//gr } split_args($have =~ s/^TABLE\((.*)\)$/$1/r);
				if ("@wcols" ne "@hcols") { push @why, "it returns columns (@hcols), not (@wcols)"; next; }
			}
		}
		$match = 1;
		last;
	}
	check($match, "reference: sog.$name($args) matches the catalog", join('; ', @why));
}
check($rows >= 30, "the reference has a row per function", "$rows rows");

# 3. every function is documented: a row of the reference, or named in its
# text (the type's support functions, the grant functions' helpers)
my @undocumented = grep { !$documented{$_} && $readme !~ /`(?:sog\.)?$_(?:\(\))?`|\bsog\.$_\b/ } sort keys %catalog;
check(!@undocumented, 'every function of schema sog is in the reference', join(', ', @undocumented));

# 4. SQLSTATEs
my $code = join '', map { slurp($_) } glob("$src/src/*.[ch]"), glob("$src/sql/*.sql");
my $expected = join '', map { slurp($_) } glob("$src/test/expected/*.out"), glob("$src/t/*.pl");
my %errcodes = ('42501' => 'ERRCODE_INSUFFICIENT_PRIVILEGE', '22023' => 'ERRCODE_INVALID_PARAMETER_VALUE',
	'55000' => 'ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE', '55P03' => 'ERRCODE_LOCK_NOT_AVAILABLE',
	'25006' => 'ERRCODE_READ_ONLY_SQL_TRANSACTION', '22P02' => 'ERRCODE_INVALID_TEXT_REPRESENTATION',
	'22P03' => 'ERRCODE_INVALID_BINARY_REPRESENTATION', '0A000' => 'ERRCODE_FEATURE_NOT_SUPPORTED',
	'22003' => 'ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE', 'XX001' => 'ERRCODE_DATA_CORRUPTED',
	'23514' => 'ERRCODE_CHECK_VIOLATION', '53100' => 'ERRCODE_DISK_FULL');
my %codes = map { $_ => 1 } $readme =~ /`([0-9A-Z]{5})`/g;
my @unknown;
for my $c (sort keys %codes)
{
	next if $c !~ /\d/;			# a word, not a code
	next if $c =~ /^(?:40001|40P01|XX000)$/;	# PostgreSQL's own, named as such
	my $raised = $code =~ /\Q$c\E/ || ($errcodes{$c} && $code =~ /\Q$errcodes{$c}\E/);
	my $shown = $expected =~ /\b\Q$c\E\b/;
	push @unknown, $c unless $raised || $shown;
}
check(!@unknown, 'every SQLSTATE the README names is raised by the tree or shown by a test', join(', ', @unknown));

# 5. the setting's default
# (the library defines the setting when it loads: a call of one of its functions loads it)
my ($boot) = psql(q{SELECT FROM sog.position_components('1'); SELECT boot_val FROM pg_settings WHERE name = 'sog.claim_timeout'}) =~ /(\S+)\s*$/;
$boot //= '(not loaded)';
check(scalar($readme =~ /`sog\.claim_timeout` \(milliseconds; `\Q$boot\E`, the default/),
	"sog.claim_timeout's default in the README is the setting's ($boot)");

# 6. no document outside the repository
for my $doc (@docs)
{
	my @refs = $text{$doc} =~ /(CONTRACT\.md|[Cc]ontract section|contract's section)/g;
	check(!@refs, "$doc refers to no document outside the repository", join(', ', @refs));
}
# (the released 1.0 script is frozen and keeps its words)
my @src_refs = grep { slurp($_) =~ /[Cc]ontract section|contract's section|CONTRACT\.md/ }
	glob("$src/src/*.[ch]"), glob("$src/sql/*--1.0--1.1.sql"),
	glob("$src/examples/*/*.{c,h,py,sh,md}"), glob("$src/test/reliability/*.{c,md,pl,sh}"),
	glob("$src/bench/*.{c,md,pl,sh}"), glob("$src/model/*");
check(!@src_refs, 'no source file cites a document outside the repository', join(', ', map { s{^\Q$src\E/}{}r } @src_refs));

print "docs-check: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
