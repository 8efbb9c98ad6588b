#!/usr/bin/perl
#
# test/package/check-meta.pl: validate META.json against the PGXN Meta Spec
# 1.0.0 (https://pgxn.org/meta/spec.txt, also RFC 1 at rfcs.pgxn.org), and
# against the tree it describes.
#
#   perl test/package/check-meta.pl [--root DIR] [META.json]
#   perl test/package/check-meta.pl --self-test
#
# Debian packages neither pgxnclient nor PGXN::Meta::Validator, so this is a
# checker of our own, in core perl only (JSON::PP).  What it enforces, from
# the spec:
#
#  - the required keys (abstract, maintainer, license, provides, meta-spec,
#    name, version) and the type of every known key: String (non-empty),
#    List (a String counts as a List of one), Map, Term (at least 2
#    characters, no slash, backslash, control or space characters), Tag (1 to
#    255 characters, no slash, backslash or control characters), Version
#    (SemVer 2.0.0), Version Range (`0`, or comma-separated `[op] version`
#    with op one of < <= > >= == !=), URI, License String (the spec's list);
#  - provides: a Map of Terms to Maps with file (required, a relative unix
#    path), version (required), abstract and docfile (optional);
#  - prereqs: phases configure/build/test/runtime/develop, relationships
#    requires/recommends/suggests/conflicts, Maps of Terms to Version Ranges;
#  - resources: homepage (URI), bugtracker {web URI, mailto address},
#    repository {url URI, web URI, type lowercase String};
#  - release_status stable/testing/unstable; no_index {file, directory};
#  - every other key must be custom (x_ or X_); producers must not emit
#    anything else.
#
# And, beyond the spec, what a release of this tree needs:
#
#  - no placeholder address anywhere: a URI or e-mail address on a reserved
#    name (RFC 2606 / 6761: .example, .invalid, .test, .localhost,
#    example.com/.net/.org) is an error; a project without a public tracker
#    omits resources instead;
#  - the files named by provides exist under --root (default: the
#    directory holding META.json);
#  - the distribution's and each extension's version equal the control
#    file's default_version as SemVer (1.1 -> 1.1.0), an install script or a
#    chain of upgrade scripts in sql/ reaches default_version, and
#    debian/changelog (if there is one) packages the same upstream version.
#
# Prints "META.json: OK ..." and exits 0, or lists every error and exits 1.

use strict;
use warnings;
use B ();
use File::Basename qw(dirname);
use File::Spec;
use JSON::PP ();

# --- primitive types -----------------------------------------------------------

my @errors;
sub err { my ($path, $msg) = @_; push @errors, "$path: $msg"; return 0 }

sub is_json_string {		# a JSON string, not a number, boolean, null or ref
	my ($v) = @_;
	return 0 if !defined $v || ref $v;
	my $flags = B::svref_2object(\$v)->FLAGS;
	return ($flags & B::SVp_POK) && !($flags & (B::SVp_IOK | B::SVp_NOK));
}

sub is_map { ref $_[0] eq 'HASH' }
sub custom_key { $_[0] =~ /\Ax_/i }

sub check_string {
	my ($path, $v) = @_;
	return err($path, 'must be a String') unless is_json_string($v);
	return err($path, 'must be a non-empty String') if $v eq '';
	return 1;
}

sub check_term {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	return err($path, "\"$v\" is not a Term: at least two characters")
		if length $v < 2;
	return err($path, "\"$v\" is not a Term: no slash, backslash, control or space characters")
		if $v =~ m{[/\\[:cntrl:][:space:]]};
	return 1;
}

sub check_tag {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	return err($path, "\"$v\" is not a Tag: fewer than 256 characters")
		if length $v >= 256;
	return err($path, "\"$v\" is not a Tag: no slash, backslash or control characters")
		if $v =~ m{[/\\[:cntrl:]]};
	return 1;
}

# SemVer 2.0.0 (https://semver.org/#is-there-a-suggested-regular-expression-regex-to-check-a-semver-string)
my $ident = qr/(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)/;
my $semver = qr/(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)
	(?:-$ident(?:\.$ident)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?/x;

sub check_version {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	return err($path, "\"$v\" is not a semantic version (MAJOR.MINOR.PATCH)")
		unless $v =~ /\A$semver\z/;
	return 1;
}

sub check_version_range {
	my ($path, $v) = @_;
	return 1 if defined $v && !ref $v && $v eq '0';		# the number 0 or "0": any version
	check_string($path, $v) or return 0;
	my $ok = 1;
	for my $part (split /\s*,\s*/, $v, -1) {
		next if $part eq '0';
		$ok = err($path, "\"$part\" is not a version range element ([op] version, op one of < <= > >= == !=)")
			unless $part =~ /\A(?:(?:<=|>=|==|!=|<|>)\s*)?$semver\z/;
	}
	return $ok;
}

# RFC 2606 / 6761 reserved names: documentation, testing and invalid.
sub placeholder_host {
	my ($host) = @_;
	$host = lc $host;
	$host =~ s/:\d+\z//;
	$host =~ s/\.\z//;
	return $host =~ /(?:\A|\.)(?:example|invalid|test|localhost)\z/
		|| $host =~ /(?:\A|\.)example\.(?:com|net|org)\z/;
}

sub check_uri {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	my ($scheme, $auth) = $v =~ m{\A([A-Za-z][A-Za-z0-9+.-]*):(?://([^/?#]*))?};
	return err($path, "\"$v\" is not a URI with a scheme and a host")
		unless defined $scheme && defined $auth && length $auth;
	(my $host = $auth) =~ s/\A.*@//;
	return err($path, "\"$v\" is a placeholder (reserved name $host): name a real resource or omit the key")
		if placeholder_host($host);
	return 1;
}

sub check_email {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	my ($domain) = $v =~ /\A[^@\s<>]+@([^@\s<>]+)\z/;
	return err($path, "\"$v\" is not an e-mail address") unless defined $domain;
	return err($path, "\"$v\" is a placeholder address (reserved name $domain)")
		if placeholder_host($domain);
	return 1;
}

sub check_relpath {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	return err($path, "\"$v\" must be a relative path with unix conventions")
		if $v =~ m{\A/} || $v =~ m{\\} || grep { $_ eq '..' } split m{/}, $v;
	return 1;
}

sub check_lc_string {
	my ($path, $v) = @_;
	check_string($path, $v) or return 0;
	return err($path, "\"$v\" must be lowercase") if $v =~ /\p{Upper}/;
	return 1;
}

# A List of things (a String alone counts as a List of one).
sub check_list {
	my ($path, $v, $each, $min) = @_;
	my @items = ref $v eq 'ARRAY' ? @$v : !ref $v && defined $v ? ($v)
		: return err($path, 'must be a List');
	return err($path, "must have at least $min element(s)") if @items < ($min // 0);
	my $ok = 1;
	for my $i (0 .. $#items) {
		$ok = 0 unless $each->("$path\[$i]", $items[$i]);
	}
	return $ok;
}

# A Map with known keys: { key => [required?, checker] }; other keys must be
# custom (x_...) unless $any_key checks them.
sub check_map {
	my ($path, $v, $known, $any_key) = @_;
	return err($path, 'must be a Map') unless is_map($v);
	my $ok = 1;
	for my $k (sort keys %$known) {
		$ok = err("$path/$k", 'required field is missing')
			if $known->{$k}[0] && !exists $v->{$k};
	}
	for my $k (sort keys %$v) {
		if ($known->{$k}) {
			$ok = 0 unless $known->{$k}[1]->("$path/$k", $v->{$k});
		} elsif ($any_key) {
			$ok = 0 unless $any_key->("$path/$k", $k, $v->{$k});
		} elsif (!custom_key($k)) {
			$ok = err("$path/$k", "unknown key; custom keys must begin with \"x_\" or \"X_\"");
		}
	}
	return $ok;
}

# --- the structure ---------------------------------------------------------------

my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1
	artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1
	lgpl_3_0 mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0
	ssleay sun zlib open_source restricted unrestricted unknown);

sub check_license {
	my ($path, $v) = @_;
	if (is_map($v)) {
		return err($path, 'a license Map needs at least one license') unless %$v;
		return check_map($path, $v, {}, sub {
			my ($p, $k, $val) = @_;
			check_string($p, $k) && check_uri($p, $val);
		});
	}
	return check_list($path, $v, sub {
		my ($p, $s) = @_;
		check_string($p, $s) or return 0;
		return err($p, "\"$s\" is not a License String of the spec") unless $licenses{$s};
		return 1;
	}, 1);
}

sub check_maintainer {
	my ($path, $v) = @_;
	return check_list($path, $v, sub {
		my ($p, $s) = @_;
		check_string($p, $s) or return 0;
		# "contact-name <email-address>" is the preferred form; an address,
		# if given, must not be a placeholder.
		if ($s =~ /<([^>]*)>/) {
			return check_email($p, $1);
		}
		return 1;
	}, 1);
}

my @phases = qw(configure build test runtime develop);
my @relations = qw(requires recommends suggests conflicts);

sub check_prereqs {
	my ($path, $v) = @_;
	my %rel = map { my $r = $_; ($r => [0, sub {
		my ($p, $m) = @_;
		return err($p, 'must be a Map of extension names to Version Ranges') unless is_map($m);
		check_map($p, $m, {}, sub {
			my ($pp, $k, $val) = @_;
			check_term($pp, $k) & check_version_range($pp, $val);
		});
	}]) } @relations;
	my %phase = map { ($_ => [0, sub { check_map($_[0], $_[1], \%rel) }]) } @phases;
	return check_map($path, $v, \%phase);
}

sub check_provides {
	my ($path, $v) = @_;
	return err($path, 'must be a Map') unless is_map($v);
	return err($path, 'must name at least one extension') unless %$v;
	return check_map($path, $v, {}, sub {
		my ($p, $k, $ext) = @_;
		check_term($p, $k) & check_map($p, $ext, {
			file     => [1, \&check_relpath],
			version  => [1, \&check_version],
			abstract => [0, \&check_string],
			docfile  => [0, \&check_relpath],
		});
	});
}

sub check_resources {
	my ($path, $v) = @_;
	return check_map($path, $v, {
		homepage   => [0, \&check_uri],
		bugtracker => [0, sub { check_map($_[0], $_[1], {
			web    => [0, \&check_uri],
			mailto => [0, \&check_email],
		}) }],
		repository => [0, sub { check_map($_[0], $_[1], {
			url  => [0, \&check_uri],
			web  => [0, \&check_uri],
			type => [0, \&check_lc_string],
		}) }],
	});
}

my %top = (
	abstract       => [1, \&check_string],
	maintainer     => [1, \&check_maintainer],
	license        => [1, \&check_license],
	provides       => [1, \&check_provides],
	'meta-spec'    => [1, sub { check_map($_[0], $_[1], {
		version => [1, sub {
			my ($p, $s) = @_;
			check_version($p, $s) or return 0;
			return err($p, "\"$s\": this checker implements Meta Spec 1.0.x")
				unless $s =~ /\A1\.0\.\d+\z/;
			return 1;
		}],
		url => [0, \&check_uri],
	}) }],
	name           => [1, \&check_term],
	version        => [1, \&check_version],
	description    => [0, \&check_string],
	generated_by   => [0, \&check_string],
	tags           => [0, sub { check_list($_[0], $_[1], \&check_tag) }],
	no_index       => [0, sub { check_map($_[0], $_[1], {
		file      => [0, sub { check_list($_[0], $_[1], \&check_relpath) }],
		directory => [0, sub { check_list($_[0], $_[1], \&check_relpath) }],
	}) }],
	prereqs        => [0, \&check_prereqs],
	release_status => [0, sub {
		my ($p, $s) = @_;
		check_string($p, $s) or return 0;
		return err($p, "\"$s\" must be one of stable, testing, unstable")
			unless $s =~ /\A(?:stable|testing|unstable)\z/;
		return 1;
	}],
	resources      => [0, \&check_resources],
);

sub check_spec {
	my ($meta) = @_;
	return err('', 'the document must be a JSON object (Map)') unless is_map($meta);
	return check_map('', $meta, \%top);
}

# --- the tree ------------------------------------------------------------------

sub slurp {
	my ($f) = @_;
	open my $fh, '<:raw', $f or return undef;
	local $/;
	return scalar <$fh>;
}

# "1.1" -> "1.1.0", "2" -> "2.0.0"; undef when not dotted numbers.
sub as_semver {
	my ($v) = @_;
	return undef unless defined $v && $v =~ /\A\d+(?:\.\d+){0,2}\z/;
	my @p = split /\./, $v;
	push @p, 0 while @p < 3;
	return join '.', map { $_ + 0 } @p;
}

sub check_tree {
	my ($meta, $root) = @_;
	return unless is_map($meta) && is_map($meta->{provides});
	for my $ext (sort keys %{ $meta->{provides} }) {
		my $e = $meta->{provides}{$ext};
		next unless is_map($e);
		for my $k (qw(file docfile)) {
			next unless defined $e->{$k} && !ref $e->{$k};
			err("/provides/$ext/$k", "\"$e->{$k}\" does not exist in the distribution")
				unless -f File::Spec->catfile($root, $e->{$k});
		}
		my $control = File::Spec->catfile($root, "$ext.control");
		my $text = slurp($control);
		unless (defined $text) {
			err("/provides/$ext", "no $ext.control in the distribution");
			next;
		}
		my ($default) = $text =~ /^\s*default_version\s*=\s*'([^']*)'/m;
		unless (defined $default) {
			err("/provides/$ext", "$ext.control has no default_version");
			next;
		}
		my $want = as_semver($default) // '(not numeric)';
		for my $pair (["/provides/$ext/version", $e->{version}], ['/version', $meta->{version}]) {
			my ($p, $have) = @$pair;
			next unless defined $have && !ref $have;
			err($p, "\"$have\" is not $ext.control's default_version '$default' as SemVer ($want)")
				unless $have eq $want;
		}
		# default_version is reachable: an install script for it, or a chain
		# of upgrade scripts from one.
		my $sqldir = File::Spec->catdir($root, 'sql');
		opendir my $dh, $sqldir or do { err("/provides/$ext", 'no sql/ directory'); next };
		my (%install, %edges);
		for my $f (readdir $dh) {
			if ($f =~ /\A\Q$ext\E--([^-]+(?:-[^-]+)*?)--(.+)\.sql\z/) {
				push @{ $edges{$1} }, $2;
			} elsif ($f =~ /\A\Q$ext\E--(.+)\.sql\z/) {
				$install{$1} = 1;
			}
		}
		closedir $dh;
		my %seen = %install;
		my @todo = keys %install;
		while (defined(my $v = shift @todo)) {
			for my $n (@{ $edges{$v} || [] }) {
				push @todo, $n unless $seen{$n}++;
			}
		}
		err("/provides/$ext", "no install script or upgrade chain in sql/ reaches default_version '$default'")
			unless $seen{$default};
	}
	my $changelog = slurp(File::Spec->catfile($root, 'debian', 'changelog'));
	if (defined $changelog && defined $meta->{version} && !ref $meta->{version}) {
		my ($debver) = $changelog =~ /\A\S+ \(([^)]+)\)/;
		my $upstream = defined $debver ? $debver : '';
		$upstream =~ s/\A\d+://;
		$upstream =~ s/-[^-]*\z//;
		err('/version', "\"$meta->{version}\" but debian/changelog packages upstream version \"$upstream\"")
			unless $upstream eq $meta->{version};
	}
}

sub validate_file {
	my ($file, $root) = @_;
	@errors = ();
	my $text = slurp($file);
	return err($file, "cannot read: $!") unless defined $text;
	my $meta = eval { JSON::PP->new->utf8->relaxed(0)->decode($text) };
	return err($file, "not valid JSON: $@") unless defined $meta;
	check_spec($meta);
	check_tree($meta, $root) if defined $root;
	return !@errors;
}

# --- self-test: the checker catches what it claims to ---------------------------

sub self_test {
	my $good = {
		name => 'pair', abstract => 'A key/value pair data type', version => '0.1.8',
		maintainer => 'theory <theory@pgxn.org>', license => 'postgresql',
		provides => { pair => { file => 'sql/pair.sql', version => '0.1.8' } },
		'meta-spec' => { version => '1.0.0' },
	};
	my @cases = (
		['the spec\'s minimal example', sub { }, 0],
		['placeholder bugtracker', sub { $_[0]{resources} = { bugtracker => { web => 'https://example.invalid/x/issues' } } }, 1],
		['placeholder mailto', sub { $_[0]{resources} = { bugtracker => { mailto => 'bugs@example.com' } } }, 1],
		['real bugtracker', sub { $_[0]{resources} = { bugtracker => { web => 'https://github.com/theory/pair/issues' } } }, 0],
		['missing license', sub { delete $_[0]{license} }, 1],
		['unknown license string', sub { $_[0]{license} = 'PostgreSQL' }, 1],
		['license map', sub { $_[0]{license} = { PostgreSQL => 'https://www.postgresql.org/about/licence' } }, 0],
		['version not semver', sub { $_[0]{version} = '1.1' }, 1],
		['version a number', sub { $_[0]{version} = 1.1 }, 1],
		['provides without file', sub { delete $_[0]{provides}{pair}{file} }, 1],
		['provides with absolute file', sub { $_[0]{provides}{pair}{file} = '/sql/pair.sql' }, 1],
		['unknown top-level key', sub { $_[0]{bugtracker} = 'x' }, 1],
		['custom key', sub { $_[0]{x_ci} = { anything => 1 } }, 0],
		['name one character', sub { $_[0]{name} = 'p' }, 1],
		['bad prereq phase', sub { $_[0]{prereqs} = { install => { requires => { x => 0 } } } }, 1],
		['bad version range', sub { $_[0]{prereqs} = { runtime => { requires => { PostgreSQL => '=> 9.0' } } } }, 1],
		['good version range', sub { $_[0]{prereqs} = { runtime => { requires => { PostgreSQL => '>= 14.0.0, < 19.0.0', plpgsql => 0 } } } }, 0],
		['bad release_status', sub { $_[0]{release_status} = 'final' }, 1],
		['meta-spec 2.0.0', sub { $_[0]{'meta-spec'}{version} = '2.0.0' }, 1],
		['tag with slash', sub { $_[0]{tags} = ['a/b'] }, 1],
		['empty maintainer list', sub { $_[0]{maintainer} = [] }, 1],
	);
	my $json = JSON::PP->new->canonical;
	my $failed = 0;
	for my $c (@cases) {
		my ($label, $mutate, $want_errors) = @$c;
		my $meta = $json->decode($json->encode($good));	# deep copy
		$mutate->($meta);
		# round-trip through JSON text, as a real file would be read
		$meta = $json->decode($json->encode($meta));
		@errors = ();
		check_spec($meta);
		my $got = @errors ? 1 : 0;
		my $verdict = $got == $want_errors ? 'ok' : 'WRONG';
		$failed++ if $got != $want_errors;
		printf "self-test %-5s %-30s %s\n", $verdict, $label,
			@errors ? "rejected: $errors[0]" : 'accepted';
	}
	print "self-test: ", scalar(@cases) - $failed, " of ", scalar(@cases), " cases as expected\n";
	return $failed == 0;
}

# --- main ----------------------------------------------------------------------

my ($root, $file, $selftest);
while (@ARGV) {
	my $a = shift @ARGV;
	if ($a eq '--root') { $root = shift @ARGV }
	elsif ($a eq '--self-test') { $selftest = 1 }
	elsif ($a =~ /\A-/) { die "usage: $0 [--root DIR] [META.json] | --self-test\n" }
	else { $file = $a }
}
if ($selftest) {
	exit(self_test() ? 0 : 1);
}
$file //= 'META.json';
$root //= dirname($file);
if (validate_file($file, $root)) {
	my $meta = JSON::PP->new->decode(slurp($file));
	printf "%s: OK (PGXN Meta Spec %s; %s %s; provides %s)\n", $file,
		$meta->{'meta-spec'}{version}, $meta->{name}, $meta->{version},
		join(', ', map { "$_ $meta->{provides}{$_}{version} ($meta->{provides}{$_}{file})" }
			sort keys %{ $meta->{provides} });
	exit 0;
}
print STDERR "$file is not valid:\n";
print STDERR "  $_\n" for @errors;
exit 1;
