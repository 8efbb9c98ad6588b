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
#   2. every function of docs/reference.md's tables (a row that
#      starts with | `sog.name(args) -> ...`) exists in schema sog with
#      those arguments: as many (the DEFAULTed ones optional), named as the
#      reference names them, of the types it gives, returning what it says;
#   3. every function and procedure of schema sog that users may call is in
#      the reference (a row, or named in its text), so a new one cannot be
#      left out;
#   4. every SQLSTATE the README or docs/ name is one the tree raises (in src/ or
#      sql/) or one PostgreSQL raises that a test shows (test/expected/);
#   5. the setting sog.claim_timeout has the default docs/reference.md gives;
#   6. nothing refers to a document outside the repository (CONTRACT.md,
#      "contract section");
#   7. docs/checkpoint-states.svg names every state, claim verdict and call
#      that moves a checkpoint (read from the catalog), and the README
#      shows it;
#   8. no "section N" or "issue N" where users read: README, CHANGELOG,
#      docs/, examples/, the comments of the installed objects;
#   9. the README is at most 600 lines and links every page of docs/;
#  10. the counts of tests docs/tests.md gives are the tree's;
#  11. every file of src/ is in docs/development.md's table of layers and
#      includes no header of a later layer.
# Also: every link to a heading (#anchor, FILE.md#anchor) finds one, and
# the README's "Contents" line lists its sections in order.
# Ends with "docs-check: N passed, M failed"; exit status 1 if any failed.

use strict;
use warnings;
use File::Find ();

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

# Every .c and .h of src/ and its folders, as paths from the tree's top.
sub src_files
{
	my @files;
	File::Find::find({ no_chdir => 1, wanted => sub { push @files, $_ if /\.[ch]\z/ } }, "$src/src");
	return sort map { s{^\Q$src\E/}{}r } @files;
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
my $reference = slurp("$src/docs/reference.md");
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
for my $line (split /\n/, $reference)
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
my $alldocs = join "\n", map { $text{$_} } @docs;
my @undocumented = grep { !$documented{$_} && $reference !~ /`(?:sog\.)?$_(?:\(\))?`|\bsog\.$_\b/ } sort keys %catalog;
check(!@undocumented, 'every function of schema sog is in the reference', join(', ', @undocumented));

# 4. SQLSTATEs
my $code = join '', map { slurp("$src/$_") } src_files(), map { s{^\Q$src\E/}{}r } glob("$src/sql/*.sql");
my $expected = join '', map { slurp($_) } glob("$src/test/expected/*.out"), glob("$src/t/*.pl");
my %errcodes = ('42501' => 'ERRCODE_INSUFFICIENT_PRIVILEGE', '22023' => 'ERRCODE_INVALID_PARAMETER_VALUE',
	'55000' => 'ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE', '55P03' => 'ERRCODE_LOCK_NOT_AVAILABLE',
	'25006' => 'ERRCODE_READ_ONLY_SQL_TRANSACTION', '22P02' => 'ERRCODE_INVALID_TEXT_REPRESENTATION',
	'22P03' => 'ERRCODE_INVALID_BINARY_REPRESENTATION', '0A000' => 'ERRCODE_FEATURE_NOT_SUPPORTED',
	'22003' => 'ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE', 'XX001' => 'ERRCODE_DATA_CORRUPTED',
	'23514' => 'ERRCODE_CHECK_VIOLATION', '53100' => 'ERRCODE_DISK_FULL');
my %codes = map { $_ => 1 } $alldocs =~ /`([0-9A-Z]{5})`/g;
my @unknown;
for my $c (sort keys %codes)
{
	next if $c !~ /\d/;			# a word, not a code
	next if $c =~ /^(?:40001|40P01|XX000)$/;	# PostgreSQL's own, named as such
	my $raised = $code =~ /\Q$c\E/ || ($errcodes{$c} && $code =~ /\Q$errcodes{$c}\E/);
	my $shown = $expected =~ /\b\Q$c\E\b/;
	push @unknown, $c unless $raised || $shown;
}
check(!@unknown, 'every SQLSTATE the README and docs/ name is raised by the tree or shown by a test', join(', ', @unknown));

# 5. the setting's default
# (the library defines the setting when it loads: a call of one of its functions loads it)
my ($boot) = psql(q{SELECT FROM sog.position_components('1'); SELECT boot_val FROM pg_settings WHERE name = 'sog.claim_timeout'}) =~ /(\S+)\s*$/;
$boot //= '(not loaded)';
check(scalar($reference =~ /`sog\.claim_timeout` \(milliseconds; `\Q$boot\E`, the default/),
	"sog.claim_timeout's default in docs/reference.md is the setting's ($boot)");

# 6. no document outside the repository
for my $doc (@docs)
{
	my @refs = $text{$doc} =~ /(CONTRACT\.md|[Cc]ontract section|contract's section)/g;
	check(!@refs, "$doc refers to no document outside the repository", join(', ', @refs));
}
# (the released 1.0 script is frozen and keeps its words)
my @src_refs = grep { slurp($_) =~ /[Cc]ontract section|contract's section|CONTRACT\.md/ }
	(map { "$src/$_" } src_files()), glob("$src/sql/*--1.0--1.1.sql"),
	glob("$src/examples/*/*.{c,h,py,sh,md}"), glob("$src/test/reliability/*.{c,md,pl,sh}"),
	glob("$src/bench/*.{c,md,pl,sh}"), glob("$src/model/*");
check(!@src_refs, 'no source file cites a document outside the repository', join(', ', map { s{^\Q$src\E/}{}r } @src_refs));

# 7. the picture of a checkpoint's states (docs/checkpoint-states.svg, in
# the README's "How it works") names every state the checkpoint's CHECK
# constraint allows, every verdict of claim, and every call that moves a
# checkpoint: the functions a consumer's grant gives that change state
# (VOLATILE, not PUBLIC), and the operators' resolve_gap.
{
	my $svg = slurp("$src/docs/checkpoint-states.svg");
	my @words = $svg =~ />([^<]*)</g;
	my $said = join ' ', @words;
	my ($def) = psql(q{SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'checkpoint_state' AND conrelid = 'sog.checkpoint'::regclass});
	my @states = $def =~ /'(\w+)'/g;
	check(@states >= 3, 'the checkpoint states are read from the catalog', "constraint: $def");
	my ($calls) = psql(q{
		DO $$ BEGIN
			IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sog_docs_probe') THEN CREATE ROLE sog_docs_probe; END IF;
		END $$;
		SELECT sog.grant_consumer('sog_docs_probe');
		SELECT 'calls: ' || string_agg(DISTINCT p.proname, ' ' ORDER BY p.proname)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = 'sog' AND p.provolatile = 'v'
		   AND has_function_privilege('sog_docs_probe', p.oid, 'EXECUTE')
		   AND NOT has_function_privilege('public', p.oid, 'EXECUTE');
		SELECT sog.revoke_consumer('sog_docs_probe');
		DROP ROLE sog_docs_probe;
	}) =~ /^calls: (.*)$/m;
	my @calls = (split(' ', $calls // ''), 'resolve_gap');
	check(@calls >= 15, "the consumer's calls are read from the catalog", "@calls");
	my @verdicts = qw(aligned gap_replay_required fail_closed unrecoverable_divergence);
	my @absent = grep { $said !~ /(?<![\w])\Q$_\E(?![\w])/ } @states, @verdicts, @calls;
	check(!@absent, 'docs/checkpoint-states.svg names every state, verdict of claim and call that moves a checkpoint',
		'not named: ' . join(', ', @absent));
	check($readme =~ /\]\(docs\/checkpoint-states\.svg\)/, 'README.md shows docs/checkpoint-states.svg');
}

# 8. what users read names no document they lack: no "section N" or "issue
# N" in the README, docs/, examples/ or the comments of the installed
# objects (the catalog's, as \d+ shows them)
{
	my $pat = qr/\b(?:[Ss]ection|[Ii]ssue)s? \d+/;
	my @files = ('README.md', 'CHANGELOG.md', map { s{^\Q$src\E/}{}r } glob("$src/docs/*.md"),
		glob("$src/examples/*.{sql,md}"), glob("$src/examples/*/*.{c,h,py,sh,md,sql}"));
	for my $f (@files)
	{
		my $t = $text{$f} // slurp("$src/$f");
		my @hits;
		my $n = 0;
		for (split /\n/, $t) { $n++; push @hits, "line $n: $&" if /$pat/; }
		check(!@hits, "$f names no section or issue a user lacks", join('; ', @hits[0 .. ($#hits < 4 ? $#hits : 4)]));
	}
	my @comments = grep { /$pat/ } split /\n/, psql(q{
		SELECT pg_describe_object(d.classoid, d.objoid, d.objsubid) || ': ' || replace(d.description, E'\n', ' ')
		  FROM pg_description d JOIN pg_depend e ON e.classid = d.classoid AND e.objid = d.objoid AND e.deptype = 'e'
		 WHERE e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'stream_offset_guard')});
	check(!@comments, 'no comment of the installed objects names a section or issue', join('; ', @comments));
}

# 9. the README stays short, and its "Documentation" list links every page
# of docs/
{
	my $lines = () = $readme =~ /\n/g;
	check($lines <= 600, 'README.md is at most 600 lines', "$lines lines");
	my ($list) = $readme =~ /^## Documentation\n(.*?)^## /ms;
	my @unlisted = grep { my $f = $_; !defined $list || $list !~ /\]\(\Q$f\E\)/ } map { s{^\Q$src\E/}{}r } glob("$src/docs/*.md");
	check(!@unlisted, "README.md's Documentation list links every page of docs/", join(', ', @unlisted));
}

# 10. the counts docs/tests.md gives are the tree's: regression files,
# isolation specs, TAP files (and the portable edition's and the
# sanitizers' runs of the same)
{
	my $t = $text{'docs/tests.md'};
	my $nsql = () = glob("$src/test/sql/*.sql");
	my $nspec = () = glob("$src/test/specs/*.spec");
	my $ntap = () = glob("$src/t/*.pl");
	my @want = ([qr{\(`test/sql/`, `test/expected/`, (\d+) files\)}, $nsql, 'regression files'],
		[qr{\(`test/specs/`, (\d+) specs}, $nspec, 'isolation specs'],
		[qr{\(`t/`, (\d+) files}, $ntap, 'TAP files'],
		[qr{the C edition's (\d+) regression files}, $nsql - 1, 'regression files the portable edition runs (setup aside)'],
		[qr{the C edition's \d+ regression files and (\d+) isolation specs}, $nspec, 'isolation specs the portable edition runs'],
		[qr{the regression suite \((\d+)\) and isolation specs}, $nsql, 'regression files under the sanitizers'],
		[qr{the regression suite \(\d+\) and isolation specs \((\d+)\)}, $nspec, 'isolation specs under the sanitizers']);
	for my $w (@want)
	{
		my ($re, $n, $what) = @$w;
		my ($said) = $t =~ $re;
		check(defined $said && $said == $n, "docs/tests.md counts the $what ($n)", defined $said ? "it says $said" : 'no count found');
	}
}

# 11. the layers of src/ (docs/development.md): every file of src/ is in
# the table, and includes only headers of its own layer or of one above
{
	my ($table) = $text{'docs/development.md'} =~ /^## The layers of src\/\n(.*?)^## /ms;
	my (%layer, $n);
	for my $row (split /\n/, $table // '')
	{
		next unless $row =~ /^\| (\w[\w ]*?) \| (`[^|]*`) \|/;
		$n++;
		$layer{$_} = $n for $2 =~ /`([\w.\/]+)`/g;
	}
	check($n && $n >= 5, 'docs/development.md has the table of the layers of src/', 'no table found');
	my @files = map { s{^src/}{}r } src_files();
	my @unnamed = grep { !$layer{$_} } @files;
	check(!@unnamed, 'every file of src/ has a layer in docs/development.md', join(', ', @unnamed));
	my @up;
	for my $f (grep { $layer{$_} } @files)
	{
		for my $h (slurp("$src/src/$f") =~ /^#include "([\w.\/]+)"/mg)
		{
			next unless -e "$src/src/$h";	# PostgreSQL's own, through -I
			push @up, "$f includes $h" if !$layer{$h} || $layer{$h} > $layer{$f};
		}
	}
	check(!@up, 'no file of src/ includes a header of a later layer', join('; ', @up));
}

print "docs-check: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
