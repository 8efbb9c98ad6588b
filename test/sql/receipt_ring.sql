--
-- receipt_ring: receipts in a ring of partitions (1.2)
--
-- A checkpoint with a retention policy writes its receipts to the ring's
-- current partition (sog.receipt_1 .. sog.receipt_4); one without writes
-- to sog.receipt_0, pruned by DELETE as before.  Pruning the ring only
-- raises the horizon: the rows stay until sog.rotate_receipts() empties
-- their whole partition, and every answer is given at the horizon as if
-- they were gone.  In a database of its own: the ring is one per
-- database, and the other tests' checkpoints would be in it.
--
CREATE DATABASE regress_sog_ring TEMPLATE template0;
\c regress_sog_ring
SET client_min_messages = warning;
CREATE EXTENSION stream_offset_guard;
RESET client_min_messages;
\i test/regress_helpers.sql

-- rows_of(cp): the checkpoint's receipt rows per partition
CREATE FUNCTION pg_temp.rows_of(cp bigint) RETURNS TABLE (ring smallint, rows bigint, receipts bigint,
                                                          first sog.position, last sog.position)
LANGUAGE sql AS $$
	SELECT r.ring, count(*), sum(r.n), sog.min(r.first_position), sog.max(r.last_position)
	  FROM sog.receipt r WHERE r.checkpoint_id = $1 GROUP BY r.ring ORDER BY r.ring
$$;
-- kept(cp): what sog.receipts() returns, and the metrics' count
CREATE FUNCTION pg_temp.kept(cp bigint, OUT receipts bigint, OUT first sog.position,
                             OUT last sog.position, OUT horizon sog.position, OUT metric numeric)
LANGUAGE sql AS $$
	SELECT (SELECT count(*) FROM sog.receipts($1)),
	       (SELECT sog.min("position") FROM sog.receipts($1)),
	       (SELECT sog.max("position") FROM sog.receipts($1)),
	       (SELECT prune_horizon FROM sog.checkpoint WHERE id = $1),
	       (SELECT receipts FROM sog.checkpoint_metrics WHERE checkpoint_id = $1)
$$;
-- the partitions as operators see them (without the times)
CREATE VIEW pg_temp.storage AS
	SELECT ring, "partition", role, writers, holders FROM sog.receipt_storage ORDER BY ring;

--
-- 1. The partitions; a new checkpoint writes to sog.receipt_0.
--
SELECT ring, "partition", role, bytes > 0 AS has_pages FROM sog.receipt_storage ORDER BY ring;
SELECT id AS a FROM sog.register('ring-a', 'orders', '0') \gset
SELECT id AS b FROM sog.register('ring-b', 'orders', '0') \gset
SELECT generation AS ga FROM sog.claim(:a, 'w') \gset
SELECT generation AS gb FROM sog.claim(:b, 'w') \gset
SELECT id, receipt_ring FROM sog.checkpoint WHERE id IN (:a, :b) ORDER BY id;
SELECT sog.apply_run(:a, :ga, 1, pg_temp.digests(1, 300)) AS dup_a,
       sog.apply_run(:b, :gb, 1, pg_temp.digests(1, 300)) AS dup_b;

--
-- 2. A policy puts the checkpoint in the ring at the next rotation; one
-- without stays in sog.receipt_0.
--
SELECT sog.set_retention(checkpoint_id => :a, keep_positions => 100);
SELECT sog.rotate_receipts() AS rotated;
SELECT id = :a AS is_a, receipt_ring FROM sog.checkpoint WHERE id IN (:a, :b) ORDER BY id;
SELECT sog.apply_run(:a, :ga, 301, pg_temp.digests(301, 600)) AS dup_a,
       sog.apply_run(:b, :gb, 301, pg_temp.digests(301, 600)) AS dup_b;
SELECT * FROM pg_temp.rows_of(:a);
SELECT * FROM pg_temp.rows_of(:b);

--
-- 3. Pruning: sog.receipt_0's rows go (DELETE), the ring's stay; the count
-- is every receipt at or below the new horizon, wherever it was.
--
SELECT sog.prune_due(:a) AS dropped;
SELECT * FROM pg_temp.rows_of(:a);
SELECT (pg_temp.kept(:a)).*;
-- at or below the horizon: false whatever the bytes (the row still stores
-- them); above it, the stored digest decides
SELECT sog.apply(:a, :ga, '400', pg_temp.d('other')) AS below_other_bytes,
       sog.apply(:a, :ga, '550', pg_temp.d('550')) AS above_same_bytes;
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply(%s, %s, '550', pg_temp.d('other'))$$, :a, :ga));
SELECT array_agg("position" ORDER BY "position") AS receipts_390_to_505
  FROM sog.receipts(:a, '390', '505');
-- a prune through the middle of a ring row counts only its part
SELECT sog.prune_receipts(:a, '510') AS dropped_501_510, (pg_temp.kept(:a)).*;

--
-- 4. Rotation: the next partition becomes current; a partition still
-- holding receipts above a horizon is held; one that does not is emptied
-- by a call that moves no checkpoint (CALL sog.prune_due() calls again
-- until nothing is left to do), once no older snapshot is in use.
--
SELECT sog.rotate_receipts() AS rotated;
SELECT * FROM pg_temp.storage;
SELECT sog.apply_run(:a, :ga, 601, pg_temp.digests(601, 700)) AS dup_a;
SELECT * FROM pg_temp.rows_of(:a);
SELECT sog.prune_due(:a) AS dropped;
SELECT sog.rotate_receipts() AS rotated;
SELECT * FROM pg_temp.storage;
SELECT sog.rotate_receipts() AS rotated;
SELECT * FROM pg_temp.storage;
SELECT * FROM pg_temp.rows_of(:a);
-- nothing any answer depends on went
SELECT (pg_temp.kept(:a)).*;
SELECT sog.apply(:a, :ga, '450', pg_temp.d('other')) AS pruned_false,
       sog.apply(:a, :ga, '650', pg_temp.d('650')) AS kept_false;
-- nothing more to do
SELECT sog.rotate_receipts() AS rotated;

--
-- 5. A checkpoint that stops advancing holds the partition its receipts
-- are in; once the current partition has grown to twice the size of the
-- held one, the holder's receipts above its horizon move to
-- sog.receipt_0 (with a warning) and the ring turns.  Its answers do not
-- change.
--
SELECT id AS c FROM sog.register('ring-c', 'orders', '0') \gset
SELECT generation AS gc FROM sog.claim(:c, 'w') \gset
SELECT sog.set_retention(consumer => 'ring-c', keep_positions => 10);
SELECT sog.rotate_receipts() AS rotated;
SELECT sog.apply_run(:c, :gc, 1, pg_temp.digests(1, 50)) AS dup_c;
SELECT sog.prune_due(:c) AS dropped_c;
-- c's receipts 41..50 are kept in the current partition
SELECT * FROM pg_temp.rows_of(:c);
SELECT sog.rotate_receipts() AS rotated;
-- a goes on writing; c does not
SELECT sog.apply_run(:a, :ga, 701, pg_temp.digests(701, 800)) AS dup_a;
SELECT sog.prune_due(:a) AS dropped;
SELECT sog.rotate_receipts() AS rotated;
SELECT sog.rotate_receipts() AS rotated;
SELECT sog.apply_run(:a, :ga, 801, pg_temp.digests(801, 900)) AS dup_a;
SELECT sog.prune_due(:a) AS dropped;
SELECT sog.rotate_receipts() AS rotated;
SELECT sog.rotate_receipts() AS rotated;
SELECT * FROM pg_temp.storage;
-- the ring needs c's partition next: a writes until its partition is twice
-- the size of it
SELECT sog.apply_run(:a, :ga, 901, pg_temp.digests(901, 2000)) AS dup_a;
SELECT sog.prune_due(:a) AS dropped;
SELECT sog.rotate_receipts() AS rotated;
SELECT * FROM pg_temp.storage;
SELECT id = :c AS is_c, receipt_ring FROM sog.checkpoint WHERE id IN (:a, :c) ORDER BY id;
SELECT * FROM pg_temp.rows_of(:c);
SELECT (pg_temp.kept(:c)).*;
SELECT sog.apply(:c, :gc, '45', pg_temp.d('45')) AS kept_false,
       sog.apply(:c, :gc, '30', pg_temp.d('other')) AS pruned_false;
-- it rejoins the ring at the next run; its rows in sog.receipt_0 are
-- pruned by DELETE as it advances
SELECT sog.rotate_receipts() AS rotated;
SELECT id = :c AS is_c, receipt_ring > 0 AS in_ring FROM sog.checkpoint WHERE id IN (:a, :c) ORDER BY id;
SELECT sog.apply_run(:c, :gc, 51, pg_temp.digests(51, 100)) AS dup_c;
SELECT sog.prune_due(:c) AS dropped_c;
SELECT * FROM pg_temp.rows_of(:c);
SELECT (pg_temp.kept(:c)).*;

--
-- 6. Without a policy a checkpoint leaves the ring at the next run.
--
SELECT sog.set_retention(checkpoint_id => :a);
SELECT sog.rotate_receipts() AS rotated;
SELECT id = :a AS is_a, receipt_ring FROM sog.checkpoint WHERE id IN (:a, :c) ORDER BY id;

--
-- 7. Refusals: a receipt_ring outside the partitions (set by hand), and
-- roles without an operator grant.
--
UPDATE sog.checkpoint SET receipt_ring = 7 WHERE id = :b;
SELECT state, message, detail, hint
  FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 601, pg_temp.digests(601, 601))$$, :b, :gb));
SELECT (pg_temp.kept(:b)).receipts;
UPDATE sog.checkpoint SET receipt_ring = 0 WHERE id = :b;
CREATE ROLE regress_ring_consumer;
SELECT sog.grant_consumer('regress_ring_consumer', 'ring-b');
SET ROLE regress_ring_consumer;
SELECT state, message FROM pg_temp.err($$SELECT sog.rotate_receipts()$$);
SELECT state, message FROM pg_temp.err($$SELECT * FROM sog.receipt_storage$$);
RESET ROLE;
SELECT sog.revoke_consumer('regress_ring_consumer', 'ring-b');
DROP ROLE regress_ring_consumer;

\c contrib_regression
DROP DATABASE regress_sog_ring;
