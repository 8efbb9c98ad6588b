# SogTest.pm: what every TAP test of stream_offset_guard shares.
#
#   use lib $FindBin::Bin;
#   use SogTest;
#   SogTest::storage_verifies($node, 'postgres');   # before stopping the node

package SogTest;

use strict;
use warnings;

use Test::More;

# amcheck over every table, TOAST table and btree index of the extension in
# database $db (sog.verify_storage: verify_heapam, bt_index_check with
# heapallindexed): one test, which fails with the problems it found.
sub storage_verifies
{
	my ($node, $db) = @_;

	# (on a standby amcheck must come from the primary: nothing is created)
	$node->safe_psql($db, 'CREATE EXTENSION amcheck')
	  if $node->safe_psql($db, q{SELECT count(*) FROM pg_extension WHERE extname = 'amcheck'}) eq '0';
	my $problems = $node->safe_psql($db,
		q{SELECT coalesce(string_agg(relation || ': ' || problem, E'\n'), '') FROM sog.verify_storage()});
	is($problems, '', "amcheck finds nothing in the extension's relations of $db");
	return;
}

1;
