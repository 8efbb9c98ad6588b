-- test/portable/upgrade_state.sql: state for the update test of
-- test/portable/upgrade.sh, made through the public functions: two
-- checkpoints, a claim, a page applied, a gap reported.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT id AS a FROM sog.register('upgrade', 'orders', '0') \gset
SELECT id AS b FROM sog.register('upgrade', 'orders', '1') \gset
SELECT generation AS ga FROM sog.claim(:a, 'w1') \gset
SELECT generation AS gb FROM sog.claim(:b, 'w1') \gset
SELECT sog.apply_batch(:a, :ga, ARRAY['1', '2', '3']::sog.position[],
	ARRAY[sog.payload_digest('one'), sog.payload_digest('two'), sog.payload_digest('three')]);
SELECT sog.report_gap(:b, :gb, '5', 'retention', 'trimmed by the source');
