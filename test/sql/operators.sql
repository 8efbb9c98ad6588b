--
-- operators: sog.status, sog.unresolved_gaps, NOTIFY sog_gap,
-- sog.prune_receipts, the monotonicity trigger, and privileges
-- (README: the consumer guide, the operator guide and roles and grants, backup and restore)
--
-- Consumers here are named ops-*; ids and generations are looked up.
--
\i test/regress_helpers.sql

--
-- 1. The views' columns, as the contract names them.
--
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute
 WHERE attrelid = 'sog.status'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute
 WHERE attrelid = 'sog.unresolved_gaps'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;

--
-- 2. sog.status: lag = cursor - applied for one-component positions,
-- buffered_count = what the worker said it holds, open_gaps.
--
SELECT id AS lcp FROM sog.register('ops-lag', 'orders', '0') \gset
SELECT generation AS lg FROM sog.claim(:lcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:lcp, :lg, pg_temp.range(1, 10)));
SELECT sog.note_read(:lcp, :lg, '30', pg_temp.h(pg_temp.range(11, 30)), 20);

SELECT id AS rcp FROM sog.register('ops-redis', 'events', 'stream:orders') \gset
SELECT generation AS rg FROM sog.claim(:rcp, 'worker-1') \gset
SELECT pg_temp.apply_batch(:rcp, :rg, '{1700000000000-0}');
SELECT sog.note_read(:rcp, :rg, '1700000000005-0', NULL, 3);

SELECT id AS gcp FROM sog.register('ops-gap', 'orders', '1', 'telemetry') \gset
SELECT generation AS gg FROM sog.claim(:gcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:gcp, :gg, pg_temp.range(1, 5)));
SELECT sog.note_read(:gcp, :gg, '9', NULL, NULL);
SELECT generation AS gg, gap_id AS gap FROM sog.claim(:gcp, 'worker-2') \gset

SELECT id AS icp FROM sog.register('ops-idle', 'orders', '2') \gset

SELECT consumer, stream, "partition", state, owner, generation, applied_position,
       source_cursor, lag, buffered_count, open_gaps, open_recoveries,
       updated_at <= now() AS updated_ok
  FROM sog.status WHERE consumer LIKE 'ops-%'
 ORDER BY consumer;
SELECT count(*) = (SELECT count(*) FROM sog.checkpoint) AS one_row_per_checkpoint
  FROM sog.status;

--
-- 3. sog.unresolved_gaps: open gaps with their checkpoint; resolved ones
-- leave the view.
--
SELECT gap_id = :gap AS plan_gap, checkpoint_id = :gcp AS own_checkpoint, consumer,
       stream, "partition", criticality, from_position, to_position, reason,
       detected_at <= now() AS detected_ok, age >= interval '0' AS age_ok
  FROM sog.unresolved_gaps WHERE consumer LIKE 'ops-%'
 ORDER BY gap_id;
SELECT sog.skip_gap(:gcp, :gg, 'sampled');
SELECT count(*) AS open FROM sog.unresolved_gaps WHERE consumer LIKE 'ops-%';
SELECT consumer, state, applied_position, source_cursor, lag, buffered_count, open_gaps
  FROM sog.status WHERE checkpoint_id = :gcp;

--
-- 4. NOTIFY sog_gap.  A gap is announced only when its transaction
-- commits: a rolled-back claim delivers nothing to a listener (psql would
-- print "Asynchronous notification ..." below the statements otherwise).
-- The payload of a committed gap is JSON naming it:
--   {"gap_id": N, "checkpoint_id": N, "consumer": "...", "stream": "...",
--    "partition": "...", "reason": "...", "from_position": "..." or null,
--    "to_position": "..." or null}
-- Its delivery carries the notifying backend's PID, which pg_regress output
-- cannot hold; it is left to an isolation or TAP test.  Here: the fields
-- that go into it, from the gap row.
--
SELECT id AS ncp FROM sog.register('ops-notify', 'orders', '0') \gset
SELECT generation AS ng FROM sog.claim(:ncp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:ncp, :ng, pg_temp.range(1, 3)));
SELECT sog.note_read(:ncp, :ng, '7', NULL, NULL);
LISTEN sog_gap;
BEGIN;
SELECT verdict, gap_id IS NOT NULL AS has_gap FROM sog.claim(:ncp, 'worker-2');
ROLLBACK;
SELECT 1 AS nothing_delivered;
UNLISTEN sog_gap;
SELECT count(*) AS gaps, (SELECT generation FROM sog.checkpoint WHERE id = :ncp) AS generation
  FROM sog.gap WHERE checkpoint_id = :ncp;
-- Committed (nobody listening): the row the payload describes.
SELECT verdict, gap_id AS ngap FROM sog.claim(:ncp, 'worker-2') \gset
SELECT g.id = :ngap AS gap_id_ok, g.checkpoint_id = :ncp AS checkpoint_id_ok,
       c.consumer, c.stream, c."partition", g.reason, g.from_position, g.to_position
  FROM sog.gap g JOIN sog.checkpoint c ON c.id = g.checkpoint_id
 WHERE g.checkpoint_id = :ncp;

--
-- 5. prune_receipts: drops receipts at or below "through" (whole runs, and
-- the lower part of a run that straddles it), raises the prune horizon,
-- and returns how many receipts it dropped.
--
SELECT id AS pcp FROM sog.register('ops-prune', 'orders', '0') \gset
SELECT generation AS pg FROM sog.claim(:pcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:pcp, :pg, pg_temp.range(1, 10))) AS "1..10",
       pg_temp.rle(pg_temp.apply_batch(:pcp, :pg, pg_temp.range(11, 20))) AS "11..20",
       pg_temp.rle(pg_temp.apply_batch(:pcp, :pg, '{21,23,25}')) AS "21,23,25",
       pg_temp.rle(pg_temp.apply_batch(:pcp, :pg, pg_temp.range(26, 30))) AS "26..30";
SELECT first_position, last_position, n, positions IS NULL AS dense
  FROM sog.receipt WHERE checkpoint_id = :pcp ORDER BY last_position;

-- Through 15: the run 1..10 and 11..15 of the run 11..20 (the row 11..20
-- stays whole until a prune passes it: reads answer at the horizon, 1.2).
SELECT sog.prune_receipts(:pcp, '15');
SELECT prune_horizon, applied_position FROM sog.checkpoint WHERE id = :pcp;
SELECT first_position, last_position, n, positions IS NULL AS dense
  FROM sog.receipt WHERE checkpoint_id = :pcp ORDER BY last_position;
SELECT array_agg(position ORDER BY position) AS receipts FROM sog.receipts(:pcp);
SELECT bool_and(payload_digest = pg_temp.d(position::text)) AS digests_kept
  FROM sog.receipts(:pcp);
-- Again, or lower: nothing to drop, and the horizon does not go down.
SELECT sog.prune_receipts(:pcp, '15') AS again, sog.prune_receipts(:pcp, '12') AS lower;
SELECT prune_horizon FROM sog.checkpoint WHERE id = :pcp;
-- Through 23: the run 16..20 and 21, 23 of the sparse run (whose row stays).
SELECT sog.prune_receipts(:pcp, '23');
SELECT first_position, last_position, n, positions IS NULL AS dense
  FROM sog.receipt WHERE checkpoint_id = :pcp ORDER BY last_position;
SELECT array_agg(position ORDER BY position) AS receipts FROM sog.receipts(:pcp);
-- Through a position that is not a receipt (24) and then applied itself.
SELECT sog.prune_receipts(:pcp, '24') AS "24", sog.prune_receipts(:pcp, '30') AS "30";
SELECT count(*) AS receipt_rows FROM sog.receipt WHERE checkpoint_id = :pcp;
SELECT count(*) AS receipts FROM sog.receipts(:pcp);
SELECT prune_horizon, applied_position FROM sog.checkpoint WHERE id = :pcp;
-- Pruned positions are verified duplicates; new ones are receipts again.
SELECT pg_temp.apply_batch(:pcp, :pg, '{3,22,30,31}');
SELECT array_agg(position ORDER BY position) AS receipts FROM sog.receipts(:pcp);

-- Errors: through above applied_position, and bad arguments.
SELECT * FROM pg_temp.err($$SELECT sog.prune_receipts($1, '32')$$, :pcp) \gx
SELECT q.ord, e.state, e.message, e.detail
  FROM (VALUES (1, $$SELECT sog.prune_receipts($1, NULL)$$),
               (2, $$SELECT sog.prune_receipts(NULL, '1')$$),
               (3, $$SELECT sog.prune_receipts(0, '1')$$),
               (4, $$SELECT sog.prune_receipts($2, '0')$$),
               (5, $$SELECT sog.prune_receipts($1, '31-0')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :pcp, :icp) e
 ORDER BY q.ord;
SELECT prune_horizon, applied_position FROM sog.checkpoint WHERE id = :pcp;

--
-- 6. The monotonicity trigger: an UPDATE that moves applied_position,
-- prune_horizon or generation backward fails with SG005, even for a
-- superuser; forward is allowed.
--
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
SELECT applied_position, prune_horizon, generation FROM sog.checkpoint WHERE id = :pcp;
SELECT * FROM pg_temp.err($$UPDATE sog.checkpoint SET applied_position = '20' WHERE id = $1$$, :pcp) \gx
SELECT * FROM pg_temp.err($$UPDATE sog.checkpoint SET prune_horizon = '10' WHERE id = $1$$, :pcp) \gx
SELECT * FROM pg_temp.err($$UPDATE sog.checkpoint SET generation = 0 WHERE id = $1$$, :pcp) \gx
SELECT q.ord, e.state, e.detail
  FROM (VALUES (1, $$UPDATE sog.checkpoint SET applied_position = NULL WHERE id = $1$$),
               (2, $$UPDATE sog.checkpoint SET prune_horizon = NULL WHERE id = $1$$),
               (3, $$UPDATE sog.checkpoint SET generation = NULL WHERE id = $1$$),
               (4, $$UPDATE sog.checkpoint SET applied_position = '30-9' WHERE id = $1$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :pcp) e
 ORDER BY q.ord;
-- One row moving backward fails the whole statement.
SELECT state, message FROM pg_temp.err($$UPDATE sog.checkpoint SET generation = generation - 1 WHERE consumer LIKE 'ops-%' AND generation > 0$$);
SELECT applied_position, prune_horizon, generation FROM sog.checkpoint WHERE id = :pcp;
-- Forward by hand: an operator fences a stuck worker by raising the
-- generation, and moves the horizon and applied_position up.
UPDATE sog.checkpoint SET generation = generation + 1, prune_horizon = '31',
       applied_position = '40'
 WHERE id = :pcp;
SELECT applied_position, prune_horizon, generation FROM sog.checkpoint WHERE id = :pcp;
SELECT state, message FROM pg_temp.err($$SELECT sog.apply($1, $2, '41', pg_temp.d('41'))$$, :pcp, :pg);
-- Unchanged values pass.
UPDATE sog.checkpoint SET applied_position = applied_position, generation = generation
 WHERE id = :pcp;

--
-- 7. Privileges: a role with no grants can use the position type, the
-- hashes and the pure halt functions, and nothing stateful (42501).
--
CREATE ROLE regress_sog_nobody;
SET ROLE regress_sog_nobody;
SELECT '1700000000000-3'::sog.position > '1700000000000'::sog.position AS gt,
       sog.position(42::bigint) AS from_bigint,
       encode(sog.payload_digest('\x01'), 'hex') = encode(sha256('\x01'), 'hex') AS digest_ok,
       sog.buffer_hash(ARRAY['1']::sog.position[], ARRAY[sog.payload_digest('\x01')]) IS NOT NULL AS hash_ok;
SELECT * FROM sog.evaluate_halt('20', '15', 'abc', 'orders-0');
SELECT * FROM sog.verify_resume(sog.evaluate_halt('20', '15', 'abc', 'orders-0'), '15');
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, 1, '1', sog.payload_digest('\x01'))$$, :pcp) \gx
SELECT * FROM pg_temp.err($$SELECT * FROM sog.checkpoint$$) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.register('ops-nobody', 'orders', '0')$$),
               (2, $$SELECT sog.claim($1, 'nobody')$$),
               (3, $$SELECT sog.note_read($1, 1, '1', NULL, NULL)$$),
               (4, $$SELECT sog.apply_batch($1, 1, '{1}', ARRAY[sog.payload_digest('\x01')])$$),
               (5, $$SELECT sog.halt($1, 1, NULL, NULL, NULL)$$),
               (6, $$SELECT sog.verify_gap($1, 1, 'x')$$),
               (7, $$SELECT sog.skip_gap($1, 1, 'x')$$),
               (8, $$SELECT sog.resolve_gap(1, 'replayed', NULL)$$),
               (9, $$SELECT sog.commit_page($1, 1, NULL, 'x')$$),
               (10, $$SELECT * FROM sog.receipts($1)$$),
               (11, $$SELECT sog.prune_receipts($1, '1')$$),
               (12, $$SELECT * FROM sog.status$$),
               (13, $$SELECT * FROM sog.unresolved_gaps$$),
               (14, $$SELECT * FROM sog.receipt$$),
               (15, $$SELECT * FROM sog.gap$$),
               (16, $$SELECT * FROM sog.manifest_log$$),
               (17, $$UPDATE sog.checkpoint SET owner = 'nobody'$$),
               (18, $$INSERT INTO sog.gap (checkpoint_id, generation, reason, verdict) VALUES ($1, 1, 'retention', 'fail_closed')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :pcp) e
 ORDER BY q.ord;
RESET ROLE;
SELECT generation, owner, state FROM sog.checkpoint WHERE id = :pcp;
DROP ROLE regress_sog_nobody;

-- grant_consumer lets a role run a consumer, not repair; grant_operator
-- lets a role watch and repair, not apply.
CREATE ROLE regress_sog_consumer;
CREATE ROLE regress_sog_operator;
SELECT sog.grant_consumer('regress_sog_consumer');
SELECT sog.grant_operator('regress_sog_operator');
SELECT id AS ocp FROM sog.register('ops-roles', 'orders', '0') \gset
SET ROLE regress_sog_consumer;
SELECT generation AS og FROM sog.claim(:ocp, 'consumer-role') \gset
SELECT sog.apply(:ocp, :og, '1', pg_temp.d('1')) AS applied;
SELECT consumer, state, applied_position FROM sog.status WHERE checkpoint_id = :ocp;
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.resolve_gap(1, 'replayed', NULL)$$),
               (2, $$SELECT sog.prune_receipts($1, '1')$$),
               (3, $$SELECT * FROM sog.unresolved_gaps$$),
               (4, $$SELECT * FROM sog.checkpoint$$),
               (5, $$UPDATE sog.checkpoint SET applied_position = '9' WHERE id = $1$$),
               (6, $$DELETE FROM sog.receipt$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :ocp) e
 ORDER BY q.ord;
SET ROLE regress_sog_operator;
SELECT count(*) AS open FROM sog.unresolved_gaps WHERE checkpoint_id = :ocp;
SELECT array_agg(position) AS receipts FROM sog.receipts(:ocp);
SELECT sog.prune_receipts(:ocp, '1');
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.apply($1, 1, '2', pg_temp.d('2'))$$),
               (2, $$SELECT sog.claim($1, 'operator-role')$$),
               (3, $$SELECT * FROM sog.checkpoint$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :ocp) e
 ORDER BY q.ord;
RESET ROLE;
-- Only the extension's owner (or a superuser) may grant.
SET ROLE regress_sog_operator;
SELECT state, message FROM pg_temp.err($$SELECT sog.grant_consumer('regress_sog_operator')$$);
RESET ROLE;
SELECT applied_position, prune_horizon FROM sog.checkpoint WHERE id = :ocp;
DROP OWNED BY regress_sog_consumer, regress_sog_operator;
DROP ROLE regress_sog_consumer;
DROP ROLE regress_sog_operator;
-- and their grant rows, as docs/operations.md says to after dropping a
-- granted role: no test after this one depends on what this one left
DELETE FROM sog.role_grant WHERE role IN ('regress_sog_consumer', 'regress_sog_operator');
