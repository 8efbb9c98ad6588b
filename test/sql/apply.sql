--
-- apply: sog.apply and sog.apply_batch, the guarded sink transaction, and
-- sog.receipts (README: the consumer guide)
--
-- The caller's pattern: in one transaction, sog.apply (or apply_batch)
-- decides, and the effect is written only for new events; the receipt and
-- the advance of applied_position commit or roll back with it.  The helpers
-- pg_temp.apply() and pg_temp.apply_batch() below are that pattern, writing
-- one row of the temp table "sink" per new event.  Consumers here are named
-- apply-*; checkpoint ids and generations are looked up, never assumed.
--
\i test/regress_helpers.sql

SELECT id AS cp FROM sog.register('apply-a', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT generation, state, applied_position, source_cursor
  FROM sog.checkpoint WHERE id = :cp;

--
-- 1. One event: the caller's statement, written out.  True once, then a
-- duplicate (same digest): false, and the effect is not written twice.
--
BEGIN;
INSERT INTO sink (cp, pos, payload)
SELECT :cp, '1', 'payload of 1'
 WHERE sog.apply(:cp, :g, '1', sog.payload_digest(convert_to('payload of 1', 'UTF8')));
COMMIT;
BEGIN;
INSERT INTO sink (cp, pos, payload)
SELECT :cp, '1', 'payload of 1'
 WHERE sog.apply(:cp, :g, '1', sog.payload_digest(convert_to('payload of 1', 'UTF8')));
COMMIT;
SELECT pos, payload FROM sink WHERE cp = :cp ORDER BY pos;

-- Applying raised source_cursor (nothing was noted as read) to applied.
SELECT applied_position, source_cursor, read_base, read_hash, read_count
  FROM sog.checkpoint WHERE id = :cp;

-- Sparse positions are fine: anything above applied_position is new.
SELECT pg_temp.apply(:cp, :g, '2') AS p2, pg_temp.apply(:cp, :g, '5') AS p5;
SELECT pg_temp.apply(:cp, :g, '5') AS p5_again, pg_temp.apply(:cp, :g, '2') AS p2_again,
       pg_temp.apply(:cp, :g, '1') AS p1_again;

-- The same position with another digest: SG003.
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '5', pg_temp.d('5, altered'))$$, :cp, :g) \gx
-- At or below applied_position with no receipt (3 and 4 were never
-- applied): out of order, SG005.
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '3', pg_temp.d('3'))$$, :cp, :g) \gx
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '4', pg_temp.d('4'))$$, :cp, :g);
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '0', pg_temp.d('0'))$$, :cp, :g);

--
-- 2. apply_batch: element i answers for event i.
--
SELECT pg_temp.apply_batch(:cp, :g, '{6,7,8}');
SELECT pg_temp.apply_batch(:cp, :g, '{6,7,8}');
SELECT pg_temp.apply_batch(:cp, :g, '{8,9,10}');
-- Duplicates inside one batch: the second is a verified duplicate.
SELECT pg_temp.apply_batch(:cp, :g, '{11,11,12,12}');
-- ... unless its digest differs: SG003, and nothing of the batch is kept.
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{13,13}', ARRAY[pg_temp.d('13'), pg_temp.d('13, altered')])$$, :cp, :g) \gx
-- Out of order inside one batch: 13 comes after 14 and has no receipt.
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{14,13}', ARRAY[pg_temp.d('14'), pg_temp.d('13')])$$, :cp, :g) \gx
-- A batch that conflicts or is out of order changes nothing.
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;
SELECT count(*) FROM sog.receipts(:cp, '13', '14');
-- A conflict with a stored receipt inside a batch: SG003.
SELECT state, message FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{12,13}', ARRAY[pg_temp.d('12, altered'), pg_temp.d('13')])$$, :cp, :g);
-- Out of order against the stored receipts: SG005.
SELECT state, message FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{9,4}', ARRAY[pg_temp.d('9'), pg_temp.d('4')])$$, :cp, :g);

-- An empty batch: an empty answer, nothing changes.
SELECT sog.apply_batch(:cp, :g, '{}', '{}') AS empty,
       array_length(sog.apply_batch(:cp, :g, '{}', '{}'), 1) AS len;
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;

--
-- 3. Receipts are stored in runs, one row per call: dense runs (consecutive
-- one-component positions) store no positions, sparse runs do.
--
SELECT pg_temp.apply_batch(:cp, :g, '{20,22,25}') AS sparse,
       pg_temp.apply_batch(:cp, :g, pg_temp.range(26, 30)) AS dense;
SELECT first_position, last_position, n, positions IS NULL AS dense,
       octet_length(digests) = 32 * n AS digests_ok
  FROM sog.receipt WHERE checkpoint_id = :cp
 ORDER BY last_position;

-- Duplicates and conflicts are found inside dense and sparse runs alike; a
-- position between two runs, or inside a sparse run's range but not in
-- it, has no receipt.
SELECT pg_temp.apply(:cp, :g, '28') AS dense_dup, pg_temp.apply(:cp, :g, '22') AS sparse_dup,
       pg_temp.apply(:cp, :g, '26') AS dense_first, pg_temp.apply(:cp, :g, '30') AS dense_last;
SELECT q.ord, e.state
  FROM (VALUES (1, $$SELECT sog.apply($1, $2, '28', pg_temp.d('28, altered'))$$),
               (2, $$SELECT sog.apply($1, $2, '25', pg_temp.d('25, altered'))$$),
               (3, $$SELECT sog.apply($1, $2, '15', pg_temp.d('15'))$$),
               (4, $$SELECT sog.apply($1, $2, '21', pg_temp.d('21'))$$),
               (5, $$SELECT sog.apply($1, $2, '19', pg_temp.d('19'))$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :g) e
 ORDER BY q.ord;

--
-- 4. receipts(): what was applied, in position order, both bounds
-- inclusive; the same as the sink's rows.
--
SELECT position, payload_digest = pg_temp.d(position::text) AS digest_ok
  FROM sog.receipts(:cp)
 ORDER BY position;
SELECT (SELECT array_agg(position ORDER BY position) FROM sog.receipts(:cp))
     = (SELECT array_agg(pos ORDER BY pos) FROM sink WHERE cp = :cp) AS receipts_are_sink,
       (SELECT count(*) FROM sink WHERE cp = :cp)
     = (SELECT count(DISTINCT pos) FROM sink WHERE cp = :cp) AS each_once;
SELECT array_agg(position ORDER BY position) AS "6..9"
  FROM sog.receipts(:cp, '6', '9');
SELECT array_agg(position ORDER BY position) AS "21..25"
  FROM sog.receipts(:cp, '21', '25');
SELECT array_agg(position ORDER BY position) AS "..2"
  FROM sog.receipts(:cp, NULL, '2');
SELECT array_agg(position ORDER BY position) AS "27.."
  FROM sog.receipts(:cp, '27');
SELECT array_agg(position ORDER BY position) AS "27..27"
  FROM sog.receipts(:cp, '27', '27');
SELECT count(*) AS "9..6" FROM sog.receipts(:cp, '9', '6');
SELECT count(*) AS "13..19" FROM sog.receipts(:cp, '13', '19');
SELECT * FROM pg_temp.err($$SELECT * FROM sog.receipts(0)$$) \gx
SELECT state, message FROM pg_temp.err($$SELECT * FROM sog.receipts(NULL)$$);

--
-- 5. The read boundary: note_read records (applied, cursor] with its hash;
-- applying raises source_cursor to at least applied_position, and once
-- they meet the read hash, base and count are cleared.  A boundary is
-- applied whole in the transaction that reaches its cursor (one that
-- stops short does not commit: read_boundary), in one call or several.
--
SELECT sog.note_read(:cp, :g, '40', pg_temp.h(pg_temp.range(31, 40)), 10);
SELECT applied_position, source_cursor, read_base,
       read_hash = pg_temp.h(pg_temp.range(31, 40)) AS read_hash_ok, read_count
  FROM sog.checkpoint WHERE id = :cp;
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(31, 35)));
SELECT applied_position, source_cursor, read_base, read_hash IS NOT NULL AS has_hash, read_count
  FROM sog.checkpoint WHERE id = :cp;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(36, 40)));
COMMIT;
SELECT applied_position, source_cursor, read_base, read_hash, read_count
  FROM sog.checkpoint WHERE id = :cp;
-- Applying beyond the cursor raises it and clears the boundary too.
SELECT sog.note_read(:cp, :g, '45', pg_temp.h(pg_temp.range(41, 45)), 5);
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(41, 50)));
SELECT applied_position, source_cursor, read_base, read_hash, read_count
  FROM sog.checkpoint WHERE id = :cp;

--
-- 6. A sink transaction that rolls back leaves no receipt, no advance and
-- no effect; the same events are new again afterwards.
--
BEGIN;
SELECT pg_temp.apply_batch(:cp, :g, '{51,52}');
SELECT applied_position, source_cursor FROM sog.checkpoint WHERE id = :cp;
ROLLBACK;
SELECT applied_position, source_cursor FROM sog.checkpoint WHERE id = :cp;
SELECT count(*) AS receipts FROM sog.receipts(:cp, '51');
SELECT count(*) AS effects FROM sink WHERE cp = :cp AND pos > '50';
-- The same when a later statement of the transaction fails (the error is
-- shown by its SQLSTATE only: its message names the checkpoint id).
BEGIN;
SELECT pg_temp.apply(:cp, :g, '51');
\set VERBOSITY sqlstate
SELECT sog.apply(:cp, :g, '5', pg_temp.d('5, altered'));
\set VERBOSITY default
ROLLBACK;
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;
SELECT pg_temp.apply_batch(:cp, :g, '{51,52}');

--
-- 7. The prune horizon: at or below it, a position without a receipt is a
-- verified duplicate (it was applied; its receipt was pruned).
--
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '3', pg_temp.d('3'))$$, :cp, :g);
SELECT sog.prune_receipts(:cp, '10');
SELECT prune_horizon FROM sog.checkpoint WHERE id = :cp;
SELECT pg_temp.apply(:cp, :g, '3') AS p3, pg_temp.apply(:cp, :g, '10') AS p10,
       pg_temp.apply(:cp, :g, '0') AS p0;
SELECT pg_temp.apply_batch(:cp, :g, '{1,4,9,10}');
-- Above the horizon nothing changed.
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '15', pg_temp.d('15'))$$, :cp, :g);
SELECT pg_temp.apply(:cp, :g, '11') AS p11;

--
-- 8. Fencing: after another claim the old generation is stale, and a
-- generation that was never claimed is refused too: SG001 both.
--
SELECT generation AS g2 FROM sog.claim(:cp, 'worker-2') \gset
SELECT :g2 = :g + 1 AS incremented;
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '60', pg_temp.d('60'))$$, :cp, :g) \gx
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2 + 1, '60', pg_temp.d('60'))$$, :cp, :g2) \gx
SELECT state, message FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{60}', ARRAY[pg_temp.d('60')])$$, :cp, :g);
-- Fencing is checked first, even for a duplicate or an empty batch.
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '52', pg_temp.d('52'))$$, :cp, :g);
SELECT state FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{}', '{}')$$, :cp, :g);
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, -1, '60', pg_temp.d('60'))$$, :cp);
SELECT count(*) AS effects FROM sink WHERE cp = :cp AND pos >= '60';
SELECT pg_temp.apply(:cp, :g2, '60') AS p60;

--
-- 9. Bad arguments: 22023.
--
SELECT q.ord, e.*
  FROM (VALUES (1, $$SELECT sog.apply(NULL, $2, '61', pg_temp.d('61'))$$),
               (2, $$SELECT sog.apply($1, NULL, '61', pg_temp.d('61'))$$),
               (3, $$SELECT sog.apply($1, $2, NULL, pg_temp.d('61'))$$),
               (4, $$SELECT sog.apply($1, $2, '61', NULL)$$),
               (5, $$SELECT sog.apply(0, $2, '61', pg_temp.d('61'))$$),
               (6, $$SELECT sog.apply($1, $2, '61', substr(pg_temp.d('61'), 1, 31))$$),
               (7, $$SELECT sog.apply($1, $2, '61', pg_temp.d('61') || '\x00'::bytea)$$),
               (8, $$SELECT sog.apply($1, $2, '61', '')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :g2) e
 ORDER BY q.ord \gx
SELECT q.ord, e.*
  FROM (VALUES (1, $$SELECT sog.apply_batch(NULL, $2, '{61}', ARRAY[pg_temp.d('61')])$$),
               (2, $$SELECT sog.apply_batch($1, NULL, '{61}', ARRAY[pg_temp.d('61')])$$),
               (3, $$SELECT sog.apply_batch($1, $2, NULL, ARRAY[pg_temp.d('61')])$$),
               (4, $$SELECT sog.apply_batch($1, $2, '{61}', NULL)$$),
               (5, $$SELECT sog.apply_batch($1, $2, '{61,62}', ARRAY[pg_temp.d('61')])$$),
               (6, $$SELECT sog.apply_batch($1, $2, '{61}', ARRAY[pg_temp.d('61'), pg_temp.d('62')])$$),
               (7, $$SELECT sog.apply_batch($1, $2, '{61,NULL}', ARRAY[pg_temp.d('61'), pg_temp.d('62')])$$),
               (8, $$SELECT sog.apply_batch($1, $2, '{61,62}', ARRAY[pg_temp.d('61'), NULL])$$),
               (9, $$SELECT sog.apply_batch($1, $2, '{{61,62},{63,64}}', ARRAY[pg_temp.d('61'), pg_temp.d('62'), pg_temp.d('63'), pg_temp.d('64')])$$),
               (10, $$SELECT sog.apply_batch($1, $2, '{61,62}', ARRAY[ARRAY[pg_temp.d('61')], ARRAY[pg_temp.d('62')]])$$),
               (11, $$SELECT sog.apply_batch($1, $2, '{61,62}', ARRAY[pg_temp.d('61'), '\x0102'::bytea])$$),
               (12, $$SELECT sog.apply_batch(0, $2, '{61}', ARRAY[pg_temp.d('61')])$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :g2) e
 ORDER BY q.ord \gx
-- None of them changed anything.
SELECT applied_position, generation FROM sog.checkpoint WHERE id = :cp;
SELECT count(*) AS receipts FROM sog.receipts(:cp, '61');

--
-- 10. Multi-component positions (Redis stream ids): sparse runs, ordered
-- component by component, a prefix before its extensions.
--
SELECT id AS rcp FROM sog.register('apply-redis', 'events', 'stream:orders') \gset
SELECT generation AS rg FROM sog.claim(:rcp, 'worker-r') \gset
CREATE TEMP TABLE redis_ids (ord int, id text);
INSERT INTO redis_ids VALUES (1, '1700000000000-0'), (2, '1700000000000-1'),
  (3, '1700000000000-2'), (4, '1700000000003-0'), (5, '1700000000003-7'),
  (6, '1700000000010-0');
SELECT pg_temp.apply_batch(:rcp, :rg, ARRAY(SELECT id FROM redis_ids ORDER BY ord));
SELECT pg_temp.apply_batch(:rcp, :rg, '{1700000000003-7,1700000000010-0-0,1700000000011}');
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '1700000000003-5', pg_temp.d('1700000000003-5'))$$, :rcp, :rg);
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '1700000000010', pg_temp.d('1700000000010'))$$, :rcp, :rg);
SELECT first_position, last_position, n, positions IS NULL AS dense
  FROM sog.receipt WHERE checkpoint_id = :rcp
 ORDER BY last_position;
-- receipts() gives back exactly the inputs, with their digests.
SELECT position, payload_digest = pg_temp.d(position::text) AS digest_ok
  FROM sog.receipts(:rcp)
 ORDER BY position;
SELECT (SELECT array_agg(position::text ORDER BY position) FROM sog.receipts(:rcp))
     = (SELECT array_agg(id ORDER BY ord) FROM redis_ids)
       || '{1700000000010-0-0,1700000000011}'::text[] AS receipts_are_inputs,
       (SELECT array_agg(position ORDER BY position) FROM sog.receipts(:rcp))
     = (SELECT array_agg(pos ORDER BY pos) FROM sink WHERE cp = :rcp) AS receipts_are_sink;
-- Bounds are inclusive, and need not be receipts themselves.
SELECT array_agg(position ORDER BY position) AS inclusive
  FROM sog.receipts(:rcp, '1700000000000-1', '1700000000003-0');
SELECT array_agg(position ORDER BY position) AS between
  FROM sog.receipts(:rcp, '1700000000000-1-0', '1700000000003');
SELECT array_agg(position ORDER BY position) AS prefix
  FROM sog.receipts(:rcp, '1700000000010', '1700000000010-0');
SELECT applied_position, source_cursor FROM sog.checkpoint WHERE id = :rcp;

--
-- 11. One-component positions beyond 64 bits (Kinesis sequence numbers),
-- and a batch that crosses 2^64: stored as sparse runs, found again.
--
SELECT id AS kcp FROM sog.register('apply-kinesis', 'events', 'shardId-000000000000') \gset
SELECT generation AS kg FROM sog.claim(:kcp, 'worker-k') \gset
SELECT pg_temp.apply_batch(:kcp, :kg, '{18446744073709551614,18446744073709551615,18446744073709551616}');
SELECT pg_temp.apply_batch(:kcp, :kg, '{49590338271490256608559692538361571095921575989136588898,49590338271490256608559692538361571095921575989136588899}');
SELECT pg_temp.apply_batch(:kcp, :kg, '{18446744073709551615,18446744073709551616,49590338271490256608559692538361571095921575989136588899}');
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '18446744073709551616', pg_temp.d('other'))$$, :kcp, :kg);
SELECT first_position, last_position, n, positions IS NULL AS dense
  FROM sog.receipt WHERE checkpoint_id = :kcp
 ORDER BY last_position;
SELECT position, payload_digest = pg_temp.d(position::text) AS digest_ok
  FROM sog.receipts(:kcp)
 ORDER BY position;

--
-- 12. commit_page: the provider token's compare-and-swap, in the sink
-- transaction of a page; a NULL expected token matches no token yet.
--
SELECT id AS tcp FROM sog.register('apply-paged', 'orders', 'pages') \gset
SELECT generation AS tg FROM sog.claim(:tcp, 'worker-p') \gset
BEGIN;
SELECT pg_temp.apply_batch(:tcp, :tg, '{1,2,3}');
SELECT sog.commit_page(:tcp, :tg, NULL, 'page-2');
COMMIT;
SELECT provider_token, applied_position FROM sog.checkpoint WHERE id = :tcp;
-- Another transaction won the page: SG006, and the page's events roll
-- back with it.
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{4,5}'), sog.commit_page($1, $2, 'page-1', 'page-3')$$, :tcp, :tg) \gx
SELECT state, detail FROM pg_temp.err($$SELECT sog.commit_page($1, $2, NULL, 'page-3')$$, :tcp, :tg);
SELECT state, message FROM pg_temp.err($$SELECT sog.commit_page($1, $2 - 1, 'page-2', 'page-3')$$, :tcp, :tg);
SELECT provider_token, applied_position FROM sog.checkpoint WHERE id = :tcp;
-- A page transaction that rolls back leaves the token.
BEGIN;
SELECT pg_temp.apply_batch(:tcp, :tg, '{4,5}');
SELECT sog.commit_page(:tcp, :tg, 'page-2', 'page-3');
ROLLBACK;
SELECT provider_token, applied_position FROM sog.checkpoint WHERE id = :tcp;
BEGIN;
SELECT pg_temp.apply_batch(:tcp, :tg, '{4,5}');
SELECT sog.commit_page(:tcp, :tg, 'page-2', 'page-3');
COMMIT;
SELECT provider_token, applied_position FROM sog.checkpoint WHERE id = :tcp;
SELECT generation, verdict, resume_from, provider_token FROM sog.claim(:tcp, 'worker-q');

--
-- 13. Large batches: however the receipts are stored, every one is found
-- again, and duplicates and conflicts are detected throughout.
--
SELECT id AS bcp FROM sog.register('apply-big', 'orders', 'big') \gset
SELECT generation AS bg FROM sog.claim(:bcp, 'worker-b') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:bcp, :bg, pg_temp.range(1, 1000))) AS dense,
       pg_temp.rle(pg_temp.apply_batch(:bcp, :bg,
         ARRAY(SELECT (2000 + 3 * i)::text FROM generate_series(1, 1000) i ORDER BY i))) AS sparse;
SELECT count(*) AS receipts, count(DISTINCT position) AS distinct_positions,
       bool_and(payload_digest = pg_temp.d(position::text)) AS digests_ok,
       sog.min(position) AS first, sog.max(position) AS last
  FROM sog.receipts(:bcp);
SELECT sum(n) AS stored, bool_and(octet_length(digests) = 32 * n) AS digests_ok,
       bool_and(first_position <= last_position) AS ordered,
       count(*) FILTER (WHERE positions IS NULL) > 0 AS has_dense_rows,
       count(*) FILTER (WHERE positions IS NOT NULL) > 0 AS has_sparse_rows
  FROM sog.receipt WHERE checkpoint_id = :bcp;
-- No two stored rows overlap.
SELECT count(*) AS overlaps
  FROM sog.receipt a JOIN sog.receipt b
    ON a.checkpoint_id = b.checkpoint_id AND a.last_position < b.last_position
   AND b.first_position <= a.last_position
 WHERE a.checkpoint_id = :bcp;
SELECT pg_temp.rle(pg_temp.apply_batch(:bcp, :bg, pg_temp.range(1, 1000))) AS dense_again,
       pg_temp.rle(pg_temp.apply_batch(:bcp, :bg,
         ARRAY(SELECT (2000 + 3 * i)::text FROM generate_series(1, 1000) i ORDER BY i))) AS sparse_again;
SELECT pg_temp.rle(pg_temp.apply_batch(:bcp, :bg,
         ARRAY(SELECT i::text FROM generate_series(1, 1000, 37) i ORDER BY i))) AS dense_sample,
       pg_temp.rle(pg_temp.apply_batch(:bcp, :bg,
         ARRAY(SELECT (2000 + 3 * i)::text FROM generate_series(1, 1000, 41) i ORDER BY i))) AS sparse_sample;
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.apply($1, $2, '777', pg_temp.d('777, altered'))$$),
               (2, $$SELECT sog.apply($1, $2, '4400', pg_temp.d('4400, altered'))$$),
               (3, $$SELECT sog.apply($1, $2, '4401', pg_temp.d('4401'))$$),
               (4, $$SELECT sog.apply($1, $2, '1001', pg_temp.d('1001'))$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :bcp, :bg) e
 ORDER BY q.ord;

--
-- 14. apply_batch_int8: apply_batch for integer positions (bigint[]), the
-- caller's statement as a client with int8 offsets sends it: the sink rows
-- are inserted from the same unnest, only where the answer is true.
--
SELECT id AS icp FROM sog.register('apply-int8', 'orders', '0') \gset
SELECT generation AS ig FROM sog.claim(:icp, 'worker-1') \gset
PREPARE int8_batch(bigint[]) AS
  INSERT INTO sink
  SELECT :icp, u.p::sog.position, 'payload of ' || u.p
    FROM unnest($1, sog.apply_batch_int8(:icp, :ig, $1,
                  ARRAY(SELECT pg_temp.d(x::text) FROM unnest($1) WITH ORDINALITY v(x, i) ORDER BY i)))
         AS u(p, fresh)
   WHERE u.fresh;
EXECUTE int8_batch('{1,2,3}');
-- Duplicates (in the batch, and of the stored receipts) insert nothing;
-- the answers are apply_batch's.
EXECUTE int8_batch('{3,4,4,5}');
SELECT sog.apply_batch_int8(:icp, :ig, '{5,6,6}', ARRAY[pg_temp.d('5'), pg_temp.d('6'), pg_temp.d('6')]) AS int8,
       sog.apply_batch(:icp, :ig, '{6,7}', ARRAY[pg_temp.d('6'), pg_temp.d('7')]) AS position;
SELECT count(*) AS rows, string_agg(pos::text, ',' ORDER BY pos) AS positions FROM sink WHERE cp = :icp;
SELECT applied_position FROM sog.checkpoint WHERE id = :icp;
-- The receipts are the ones apply_batch would have stored: the same runs.
SELECT count(*) AS receipt_rows, sum(n) AS receipts FROM sog.receipt WHERE checkpoint_id = :icp;
SELECT string_agg(position::text || '=' || (payload_digest = pg_temp.d(position::text))::text, ' ' ORDER BY position)
  FROM sog.receipts(:icp);
-- The result keeps the positions' subscripts; an empty batch answers {}.
SELECT sog.apply_batch_int8(:icp, :ig, '[0:1]={7,8}', ARRAY[pg_temp.d('7'), pg_temp.d('8')]) AS lbound_0,
       sog.apply_batch_int8(:icp, :ig, '{}', '{}') AS empty;
-- Beyond 2^53 and up to 2^63 - 1: the positions the cast gives.
SELECT sog.apply_batch_int8(:icp, :ig, ARRAY[9007199254740993, 9223372036854775807],
                            ARRAY[pg_temp.d('9007199254740993'), pg_temp.d('9223372036854775807')]) AS big;
SELECT applied_position FROM sog.checkpoint WHERE id = :icp;
-- Bad arguments: apply_batch's errors; a negative position is 22023 naming
-- the element; a stale generation names apply_batch_int8.  None changes
-- anything.
SELECT id AS icp2 FROM sog.register('apply-int8', 'orders', '1') \gset
SELECT generation AS ig2 FROM sog.claim(:icp2, 'worker-1') \gset
SELECT q.ord, e.*
  FROM (VALUES (1, $$SELECT sog.apply_batch_int8(NULL, $2, '{61}', ARRAY[pg_temp.d('61')])$$),
               (2, $$SELECT sog.apply_batch_int8($1, NULL, '{61}', ARRAY[pg_temp.d('61')])$$),
               (3, $$SELECT sog.apply_batch_int8($1, $2, NULL, ARRAY[pg_temp.d('61')])$$),
               (4, $$SELECT sog.apply_batch_int8($1, $2, '{61}', NULL)$$),
               (5, $$SELECT sog.apply_batch_int8($1, $2, '{61,62}', ARRAY[pg_temp.d('61')])$$),
               (6, $$SELECT sog.apply_batch_int8($1, $2, '{61,NULL}', ARRAY[pg_temp.d('61'), pg_temp.d('62')])$$),
               (7, $$SELECT sog.apply_batch_int8($1, $2, '{61,-62}', ARRAY[pg_temp.d('61'), pg_temp.d('62')])$$),
               (8, $$SELECT sog.apply_batch_int8($1, $2, '{{61,62},{63,64}}', ARRAY[pg_temp.d('61'), pg_temp.d('62'), pg_temp.d('63'), pg_temp.d('64')])$$),
               (9, $$SELECT sog.apply_batch_int8($1, $2, '{61,62}', ARRAY[pg_temp.d('61'), '\x0102'::bytea])$$),
               (10, $$SELECT sog.apply_batch_int8($1, $2 - 1, '{61}', ARRAY[pg_temp.d('61')])$$),
               (11, $$SELECT sog.apply_batch_int8(0, $2, '{61}', ARRAY[pg_temp.d('61')])$$),
               (12, $$SELECT sog.apply_batch_int8($1, $2, '{62,61}', ARRAY[pg_temp.d('62'), pg_temp.d('61')])$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :icp2, :ig2) e
 ORDER BY q.ord \gx
SELECT applied_position, generation FROM sog.checkpoint WHERE id = :icp2;
SELECT count(*) AS receipts FROM sog.receipts(:icp2);
-- An overload would have made these calls ambiguous; they resolve to
-- sog.apply_batch as they always did.
SELECT sog.apply_batch(:icp2, :ig2, '{1}', ARRAY[pg_temp.d('1')]) AS untyped,
       sog.apply_batch(:icp2, :ig2, ARRAY[1, 2], ARRAY[pg_temp.d('1'), pg_temp.d('2')]) AS int4_array;

-- The sink holds each applied event once, and each has a receipt unless
-- it was pruned.
SELECT c.consumer, count(*) AS effects, count(DISTINCT s.pos) AS distinct_positions,
       bool_and(r.position IS NOT NULL OR s.pos <= c.prune_horizon) AS all_covered,
       count(*) FILTER (WHERE r.position IS NULL) AS pruned
  FROM sink s
  JOIN sog.checkpoint c ON c.id = s.cp
  LEFT JOIN LATERAL sog.receipts(s.cp, s.pos, s.pos) r ON true
 GROUP BY c.consumer
 ORDER BY c.consumer;
