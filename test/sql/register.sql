--
-- register: sog.register (README: the consumer guide)
--
-- Creates the checkpoint of (consumer, stream, partition) or returns the
-- existing one; a conflicting re-register and blank or invalid arguments
-- are 22023.  Consumers here are named reg-*.  Checkpoint ids are looked
-- up, never assumed; errors are shown through pg_temp.err() with their
-- SQLSTATE, message, detail and hint.
--
\i test/regress_helpers.sql

--
-- 1. Create: generation 0, state running, criticality critical by default,
-- nothing read, applied or owned.
--
SELECT consumer, stream, "partition", criticality, provider, query_scope,
       source_identity, generation, owner, provider_token, source_cursor,
       read_base, read_hash, read_count, applied_position, prune_horizon,
       state, id IS NOT NULL AS has_id, updated_at IS NOT NULL AS has_updated_at
  FROM sog.register('reg-orders', 'orders', '0') \gx
SELECT id AS cp FROM sog.checkpoint WHERE consumer = 'reg-orders' \gset

-- register returns the checkpoint's row type.
SELECT p.prorettype::regtype
  FROM pg_proc p
 WHERE p.oid = 'sog.register(text, text, text, text, text, text, text)'::regprocedure;

--
-- 2. Idempotent: registering again returns the same row, and creates
-- nothing.
--
SELECT r.id = :cp AS same_id,
       r::text = (SELECT c::text FROM sog.checkpoint c WHERE c.id = :cp) AS same_row
  FROM sog.register('reg-orders', 'orders', '0') r;
SELECT (sog.register('reg-orders', 'orders', '0', 'critical')).id = :cp AS same_id;
SELECT count(*) FROM sog.checkpoint WHERE consumer = 'reg-orders';

-- A different partition or stream is another checkpoint.
SELECT (sog.register('reg-orders', 'orders', '1')).id <> :cp AS other_partition,
       (sog.register('reg-orders', 'refunds', '0')).id <> :cp AS other_stream;
SELECT stream, "partition", generation, state
  FROM sog.checkpoint WHERE consumer = 'reg-orders'
 ORDER BY stream, "partition";

--
-- 3. All settings, in named notation ("partition" is a keyword there).
--
SELECT consumer, stream, "partition", criticality, provider, query_scope,
       source_identity, generation, state
  FROM sog.register(consumer => 'reg-kafka', stream => 'orders',
                    "partition" => '3', criticality => 'telemetry',
                    provider => 'kafka', query_scope => 'topic=orders',
                    source_identity => 'cluster-a/4f1c') \gx
SELECT id AS kcp FROM sog.checkpoint WHERE consumer = 'reg-kafka' \gset

-- Named notation, defaults for the rest.
SELECT criticality, provider, query_scope, source_identity
  FROM sog.register("partition" => '0', stream => 'orders', consumer => 'reg-named');

-- Re-registering with the same settings, or with NULL for any of provider,
-- query_scope and source_identity ("no opinion"), returns the same row.
SELECT (sog.register('reg-kafka', 'orders', '3', 'telemetry', 'kafka',
                     'topic=orders', 'cluster-a/4f1c')).id = :kcp AS all_same,
       (sog.register('reg-kafka', 'orders', '3', 'telemetry')).id = :kcp AS nulls,
       (sog.register('reg-kafka', 'orders', '3', 'telemetry', NULL, NULL,
                     'cluster-a/4f1c')).id = :kcp AS identity_only;

--
-- 4. Conflicting re-registers: 22023, and the row is unchanged.
--
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-kafka', 'orders', '3', 'critical', 'kafka', 'topic=orders', 'cluster-a/4f1c')$$) \gx
-- The default criticality is critical: leaving it out conflicts too.
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-kafka', 'orders', '3')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-kafka', 'orders', '3', 'telemetry', 'kinesis')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-kafka', 'orders', '3', 'telemetry', 'kafka', 'topic=payments')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-kafka', 'orders', '3', 'telemetry', 'kafka', 'topic=orders', 'cluster-b/77e0')$$) \gx
-- A setting registered as NULL cannot be set later by re-registering.
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-orders', 'orders', '0', 'critical', 'kafka')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-orders', 'orders', '0', 'critical', NULL, 'topic=orders')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('reg-orders', 'orders', '0', 'critical', NULL, NULL, 'cluster-a/4f1c')$$) \gx

SELECT criticality, provider, query_scope, source_identity, generation, state
  FROM sog.checkpoint WHERE id IN (:cp, :kcp)
 ORDER BY consumer;

--
-- 5. Blank names and invalid criticality: 22023, nothing created.
--
SELECT * FROM pg_temp.err($$SELECT sog.register('', 'orders', '0')$$) \gx
-- White space is the ASCII set: space, \t, \n, \v (\x0B), \f, \r.  The
-- detail shows control characters as '?' here.
SELECT q.ord, e.state, regexp_replace(e.detail, '[\t\n\v\f\r]', '?', 'g') AS detail
  FROM (VALUES (1, $$SELECT sog.register(NULL, 'orders', '0')$$),
               (2, $$SELECT sog.register(E' \t\n\x0B\f\r', 'orders', '0')$$),
               (3, $$SELECT sog.register('reg-blank', '', '0')$$),
               (4, $$SELECT sog.register('reg-blank', NULL, '0')$$),
               (5, $$SELECT sog.register('reg-blank', '  ', '0')$$),
               (6, $$SELECT sog.register('reg-blank', 'orders', '')$$),
               (7, $$SELECT sog.register('reg-blank', 'orders', NULL)$$),
               (8, $$SELECT sog.register('reg-blank', 'orders', E'\t')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql) e
 ORDER BY q.ord;

SELECT * FROM pg_temp.err($$SELECT sog.register('reg-bad', 'orders', '0', 'urgent')$$) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.register('reg-bad', 'orders', '0', NULL)$$),
               (2, $$SELECT sog.register('reg-bad', 'orders', '0', '')$$),
               (3, $$SELECT sog.register('reg-bad', 'orders', '0', 'Critical')$$),
               (4, $$SELECT sog.register('reg-orders', 'orders', '0', 'urgent')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql) e
 ORDER BY q.ord;

SELECT count(*) AS created FROM sog.checkpoint
 WHERE consumer IN ('reg-blank', 'reg-bad', '', E' \t\n\x0B\f\r');

-- Names are blank only when they are all white space: the letter v is a
-- name like any other.
SELECT consumer, stream, "partition", state
  FROM sog.register('reg-v', 'v', 'vv');

-- Everything this file registered.
SELECT consumer, stream, "partition", criticality, provider, generation, state
  FROM sog.checkpoint WHERE consumer LIKE 'reg-%'
 ORDER BY consumer, stream, "partition";
