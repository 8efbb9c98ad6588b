--
-- retention: receipt retention policies and sog.prune_due (1.1)
--
-- A policy keeps receipts for the last N positions below the applied one
-- and/or for an interval; a checkpoint's own policy wins over its
-- consumer's, which wins over the default.  Receipts never go above the
-- applied position nor at or above an open recovery attempt's anchor; what
-- was pruned still answers false.  Consumers here are named retention-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

-- receipts(cp): how many receipts the checkpoint keeps, and from where.
CREATE FUNCTION pg_temp.kept(cp bigint, OUT receipts bigint, OUT first sog.position,
                             OUT horizon sog.position)
LANGUAGE sql AS $$
	SELECT (SELECT count(*) FROM sog.receipts($1)),
	       (SELECT sog.min("position") FROM sog.receipts($1)),
	       (SELECT prune_horizon FROM sog.checkpoint WHERE id = $1)
$$;

SELECT id AS a FROM sog.register('retention-a', 'orders', '0', provider => 'kafka') \gset
SELECT id AS b FROM sog.register('retention-b', 'orders', '0') \gset
SELECT id AS c FROM sog.register('retention-b', 'orders', '1') \gset
SELECT generation AS ga FROM sog.claim(:a, 'w') \gset
SELECT generation AS gb FROM sog.claim(:b, 'w') \gset
SELECT generation AS gc FROM sog.claim(:c, 'w') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:a, :ga, pg_temp.range(1, 1000)));
SELECT pg_temp.rle(pg_temp.apply_batch(:b, :gb, pg_temp.range(1, 500)));
SELECT pg_temp.rle(pg_temp.apply_batch(:c, :gc, pg_temp.range(1, 300)));

--
-- 1. No policy: nothing is due.
--
SELECT count(*) AS due FROM sog.retention_due;
SELECT sog.retention_horizon(:a) AS horizon_a;

--
-- 2. Policies: the default for all, one for a consumer, one for a
-- checkpoint; the most specific applies.
--
SELECT sog.set_retention(keep_positions => 900);
SELECT sog.set_retention(consumer => 'retention-b', keep_positions => 100);
SELECT sog.set_retention(checkpoint_id => :c, keep_positions => 250);
SELECT consumer IS NULL AS all_consumers, checkpoint_id IS NOT NULL AS one_checkpoint,
       keep_positions, keep_interval IS NULL AS no_interval, updated_by = session_user AS by_me
  FROM sog.retention ORDER BY id;
SELECT consumer, "partition", applied_position, prune_horizon, through
  FROM sog.retention_due WHERE consumer LIKE 'retention-%' ORDER BY checkpoint_id;
-- setting again replaces; both limits NULL removes the policy
SELECT sog.set_retention(consumer => 'retention-b', keep_positions => 400);
SELECT sog.retention_horizon(:b) AS horizon_b;
SELECT sog.set_retention(consumer => 'retention-b');
SELECT sog.retention_horizon(:b) AS horizon_b_default;
SELECT sog.set_retention(consumer => 'retention-b', keep_positions => 100);

--
-- 3. prune_due: one checkpoint, then all of them; pruned positions still
-- answer false, newer ones are applied, nothing above applied goes.
--
SELECT sog.prune_due(:a) AS pruned_a;
SELECT * FROM pg_temp.kept(:a);
SELECT sog.prune_due(:a) AS pruned_again;
-- (its NOTICE counts what it dropped everywhere, other tests' checkpoints too)
SET client_min_messages = warning;
CALL sog.prune_due();
RESET client_min_messages;
SELECT consumer, "partition", (pg_temp.kept(checkpoint_id)).*
  FROM sog.status WHERE consumer LIKE 'retention-%' ORDER BY checkpoint_id;
SELECT pg_temp.apply_batch(:a, :ga, '{5,100,1001}') AS replay_and_new;
SELECT count(*) AS due FROM sog.retention_due WHERE consumer LIKE 'retention-%';

--
-- 4. An open recovery attempt's anchor: receipts at or above it stay; an
-- attempt that reads from the beginning keeps them all.
--
SELECT sog.commit_page(:a, :ga, NULL, 'T1');
SELECT pg_temp.rle(pg_temp.apply_batch(:a, :ga, pg_temp.range(1002, 2000)));
SELECT id AS rid FROM sog.begin_recovery(:a, :ga, 'T1', NULL, '1050', true) \gset
SELECT sog.retention_horizon(:a) AS horizon_below_anchor;
SELECT sog.prune_due(:a) > 0 AS pruned, (pg_temp.kept(:a)).first AS first_kept;
SELECT pg_temp.ev(:rid, '1050') AS anchor_still_verifies;
-- after the attempt: the policy's own horizon again
SELECT promoted, reason FROM sog.promote(:rid, 'T2', '1050');
SELECT sog.retention_horizon(:a) AS horizon_after;

--
-- 5. keep_interval: receipts written within the interval stay (the rows'
-- created_at are moved back by the table's owner to stand for time).  A
-- receipt is one batch: b now has 401..500, 501..600 and 601..700.
--
SELECT pg_temp.rle(pg_temp.apply_batch(:b, :gb, pg_temp.range(501, 600)));
SELECT pg_temp.rle(pg_temp.apply_batch(:b, :gb, pg_temp.range(601, 700)));
SELECT sog.set_retention(checkpoint_id => :b, keep_interval => '1 hour');
SELECT sog.retention_horizon(:b) AS nothing_old_enough;
UPDATE sog.receipt SET created_at = now() - interval '2 hours'
 WHERE checkpoint_id = :b AND last_position <= '600';
SELECT sog.retention_horizon(:b) AS through_old_rows;
-- with both limits, the stricter one (700 - 150 = 550 keeps more than 600)
SELECT sog.set_retention(checkpoint_id => :b, keep_positions => 150, keep_interval => '1 hour');
SELECT sog.retention_horizon(:b) AS both_limits;
SELECT sog.prune_due(:b) AS pruned_b, (pg_temp.kept(:b)).*;

--
-- 6. Tuples: keep_positions cannot count them, keep_interval can.
--
SELECT id AS t FROM sog.register('retention-tuples', 'orders', '0') \gset
SELECT generation AS gt FROM sog.claim(:t, 'w') \gset
SELECT sog.apply_batch(:t, :gt, '{1700-1,1700-2,1800-0}',
                       ARRAY[pg_temp.d('1700-1'), pg_temp.d('1700-2'), pg_temp.d('1800-0')]);
SELECT sog.set_retention(checkpoint_id => :t, keep_positions => 1);
SELECT sog.retention_horizon(:t) AS by_positions;
SELECT sog.set_retention(checkpoint_id => :t, keep_interval => '0 seconds');
SELECT sog.retention_horizon(:t) AS by_interval;

--
-- 7. Bad policies change nothing.
--
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.set_retention(consumer => 'x', checkpoint_id => 1, keep_positions => 1)$$),
               (2, $$SELECT sog.set_retention(checkpoint_id => 0, keep_positions => 1)$$),
               (3, $$SELECT sog.set_retention(keep_positions => -1)$$),
               (4, $$SELECT sog.set_retention(keep_positions => 1.5)$$),
               (5, $$SELECT sog.set_retention(keep_interval => '-1 day')$$),
               (6, $$SELECT sog.prune_due(0)$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql) e
 ORDER BY q.ord;
SELECT count(*) AS policies FROM sog.retention;

--
-- 8. The metrics view, and position_predecessor.
--
SELECT consumer, "partition", state, applied_position, lag, open_gaps,
       oldest_open_gap_seconds, seconds_since_apply < 60 AS recent, receipts, open_recoveries
  FROM sog.checkpoint_metrics WHERE consumer LIKE 'retention-%' ORDER BY checkpoint_id;
SELECT p, sog.position_predecessor(p::sog.position) AS below
  FROM unnest(ARRAY['0', '1', '100', '5-0', '5-3', '1-0-0', '7-10']) p;

--
-- 9. Bounded prunes, and what a prune must not reset: a receipt row's
-- created_at (a pruned row's remainder keeps it) and the checkpoint's
-- applied_at (seconds_since_apply does not move when receipts go).
--
SELECT id AS m FROM sog.register('retention-chunks', 'orders', '0') \gset
SELECT generation AS gm FROM sog.claim(:m, 'w') \gset
SELECT count(*) AS batches
  FROM generate_series(0, 9) b, LATERAL pg_temp.apply_batch(:m, :gm, pg_temp.range(b * 100 + 1, b * 100 + 100)) x;
UPDATE sog.receipt SET created_at = now() - interval '3 hours' WHERE checkpoint_id = :m;
UPDATE sog.checkpoint SET applied_at = now() - interval '10 minutes' WHERE id = :m;
SELECT sog.set_retention(checkpoint_id => :m, keep_positions => 0);
-- at most 150 receipts, in whole rows: two rows of 100
SELECT sog.prune_due(:m, 150) AS first_chunk, (pg_temp.kept(:m)).*;
SELECT sog.prune_due(:m, 150) AS second_chunk, (pg_temp.kept(:m)).*;
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.prune_due($1, 0)$$), (2, $$SELECT sog.prune_due($1, -5)$$)) AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :m) e ORDER BY q.ord;
-- a prune through the middle of a row: the row stays whole, with its
-- created_at, until a prune passes it (1.2; reads answer at the horizon)
SELECT sog.prune_receipts(:m, '450') AS through_a_row;
SELECT first_position, last_position, n, created_at < now() - interval '2 hours' AS still_old
  FROM sog.receipt WHERE checkpoint_id = :m ORDER BY last_position LIMIT 2;
-- everything else, in chunks, from the procedure
SET client_min_messages = warning;
CALL sog.prune_due();
RESET client_min_messages;
SELECT (pg_temp.kept(:m)).*;
SELECT seconds_since_apply >= 600 AS still_ten_minutes, receipts
  FROM sog.checkpoint_metrics WHERE checkpoint_id = :m;
SELECT pg_temp.apply_batch(:m, :gm, '{1001}') AS new_apply;
SELECT seconds_since_apply < 60 AS applied_now, applied_at IS NOT NULL AS recorded
  FROM sog.checkpoint_metrics m JOIN sog.checkpoint c ON c.id = m.checkpoint_id WHERE m.checkpoint_id = :m;
SELECT applied_at AS applied_at_1001 FROM sog.checkpoint WHERE id = :m \gset
SELECT pg_temp.apply_batch(:m, :gm, '{1001}') AS replay;
SELECT applied_at = :'applied_at_1001'::timestamptz AS replay_leaves_applied_at
  FROM sog.checkpoint WHERE id = :m;

--
-- 10. A chunk costs what it drops, not the backlog: prune_due reads the
-- receipt rows from the horizon in key order, a few at a time, until they
-- hold its chunk, and prune_receipts' delete starts above the old horizon
-- and finds the one row that can straddle the new one through the key.
-- This transaction's own statistics show it: no sequential scan of
-- sog.receipt, and about as many rows fetched as the chunk drops (two
-- batches of 64 rows to find 100, the 100 deleted, the straddling row;
-- for 1000: 16 batches and the 1000 deleted),
-- with 2000 rows due and 1000 kept (reading either would fetch thousands).
-- Rows of one receipt each (one apply call each): the chunk of 100 ends
-- in the second batch.
--
SELECT id AS k FROM sog.register('retention-cost', 'orders', '0') \gset
SELECT generation AS gk FROM sog.claim(:k, 'w') \gset
SELECT count(*) FILTER (WHERE x) AS applied
  FROM generate_series(1, 3000) p, LATERAL pg_temp.apply(:k, :gk, p::text) x;
SELECT sog.set_retention(checkpoint_id => :k, keep_positions => 1000);
ANALYZE sog.receipt;
-- (the counters before and after the call, in one transaction block: the
-- backend's pending counters can still hold earlier transactions' counts)
BEGIN;
SELECT seq_scan AS s0, idx_tup_fetch AS f0 FROM pg_stat_xact_user_tables
 WHERE relid = 'sog.receipt_0'::regclass \gset
SELECT sog.prune_due(:k, 100) AS first_chunk;
SELECT seq_scan - :s0 AS sequential_scans, idx_tup_fetch - :f0 BETWEEN 100 AND 400 AS fetched_about_the_chunk
  FROM pg_stat_xact_user_tables WHERE relid = 'sog.receipt_0'::regclass;
COMMIT;
BEGIN;
SELECT seq_scan AS s0, idx_tup_fetch AS f0 FROM pg_stat_xact_user_tables
 WHERE relid = 'sog.receipt_0'::regclass \gset
SELECT sog.prune_due(:k, 1000) AS second_chunk;
SELECT seq_scan - :s0 AS sequential_scans, idx_tup_fetch - :f0 BETWEEN 1000 AND 3000 AS fetched_about_the_chunk
  FROM pg_stat_xact_user_tables WHERE relid = 'sog.receipt_0'::regclass;
COMMIT;
SELECT (pg_temp.kept(:k)).*;
-- the rest: 900 due, fewer than the chunk; then nothing, and 1000 kept
SELECT sog.prune_due(:k, 1000) AS last_chunk;
SELECT sog.prune_due(:k, 1000) AS nothing_due, (pg_temp.kept(:k)).*;
SELECT pg_temp.apply(:k, :gk, '2000') AS pruned_still_false, pg_temp.apply(:k, :gk, '2001') AS kept_still_false;

SELECT sog.set_retention(keep_positions => NULL);
DELETE FROM sog.retention;
