--
-- apply_run: a dense run of events in one call (issue 22)
--
-- sog.apply_run(checkpoint_id, generation, first_position bigint,
-- payload_digests bytea) -> integer: the events first_position,
-- first_position + 1, ... (a Kafka or JetStream batch), their 32-byte
-- digests back to back in one bytea.  It decides every event as apply_batch
-- does and answers how many leading events were applied before; the sink
-- statement inserts the rest, by their ordinality, with no positions array
-- and no boolean[].  Consumers here are named run-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

--
-- 1. The sink transaction of a run, as a client sends it: payloads and the
-- first position; the events past the answer are inserted.
--
SELECT id AS cp FROM sog.register('run-sink', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
PREPARE run_sink(bigint, bigint, bigint) AS
  WITH a AS (SELECT sog.apply_run(:cp, :g, $1, pg_temp.digests($1, $2)) AS skip)
  INSERT INTO sink
  SELECT :cp, ($1 + u.i - 1)::sog.position, u.payload
    FROM a, unnest(ARRAY(SELECT 'payload of ' || x FROM generate_series($1, $2) x ORDER BY x))
         WITH ORDINALITY AS u(payload, i)
   WHERE u.i > a.skip;
EXECUTE run_sink(1, 200, 0);
SELECT count(*) AS rows, min(pos::text::bigint) AS lo, max(pos::text::bigint) AS hi FROM sink WHERE cp = :cp;
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;
-- A redelivered page overlapping the applied position: its first events are
-- duplicates (answered by count, digests checked), the rest are new.
EXECUTE run_sink(151, 260, 0);
SELECT count(*) AS rows, count(DISTINCT pos) AS distinct_positions, max(pos::text::bigint) AS hi FROM sink WHERE cp = :cp;
-- The same page again: every event a duplicate, nothing inserted.
SELECT sog.apply_run(:cp, :g, 151, pg_temp.digests(151, 260)) AS skipped_all;
SELECT sog.apply_run(:cp, :g, 1, pg_temp.digests(1, 1)) AS skipped_first;
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;

--
-- 2. The receipts are the rows apply_batch_int8 stores for the same events
-- (dense rows of at most 121 receipts, positions NULL), and answer the same.
--
SELECT id AS cpb FROM sog.register('run-batch', 'orders', '0') \gset
SELECT generation AS gb FROM sog.claim(:cpb, 'worker-1') \gset
SELECT pg_temp.rle(sog.apply_batch_int8(:cpb, :gb, ARRAY(SELECT i FROM generate_series(1, 200) i),
                                        ARRAY(SELECT pg_temp.d(i::text) FROM generate_series(1, 200) i ORDER BY i)));
SELECT pg_temp.rle(sog.apply_batch_int8(:cpb, :gb, ARRAY(SELECT i FROM generate_series(201, 260) i),
                                        ARRAY(SELECT pg_temp.d(i::text) FROM generate_series(201, 260) i ORDER BY i)));
SELECT (SELECT array_agg((first_position, last_position, n, positions IS NULL, digests)::text ORDER BY last_position)
          FROM sog.receipt WHERE checkpoint_id = :cp)
     = (SELECT array_agg((first_position, last_position, n, positions IS NULL, digests)::text ORDER BY last_position)
          FROM sog.receipt WHERE checkpoint_id = :cpb) AS same_rows,
       (SELECT string_agg(format('%s-%s:%s:%s', first_position, last_position, n, positions IS NULL), ' ' ORDER BY last_position)
          FROM sog.receipt WHERE checkpoint_id = :cp) AS rows;
SELECT pg_temp.rle(sog.apply_batch_int8(:cp, :g, '{120,121,122,261}',
                                        ARRAY[pg_temp.d('120'), pg_temp.d('121'), pg_temp.d('122'), pg_temp.d('261')])) AS batch_on_run_receipts;

--
-- 3. A duplicate with another digest is a receipt conflict (SG003), and
-- changes nothing; positions at or below the prune horizon are duplicates
-- without a digest to compare.
--
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 259, pg_temp.d('259') || '\x%s'::bytea)$$,
                                              :cp, :g, repeat('00', 32)));
SELECT sog.prune_receipts(:cp, '100');
SELECT sog.apply_run(:cp, :g, 50, pg_temp.digests(50, 101)) AS skipped_across_horizon;
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;

--
-- 4. The temporal-skew rule: a failed-closed checkpoint applies nothing
-- above its applied position (SG004), and a read boundary is checked as
-- apply_batch checks it: applying past it without its records is SG004,
-- applying them closes it.
--
SELECT id AS fcp FROM sog.register('run-failed', 'orders', '0') \gset
SELECT generation AS fg FROM sog.claim(:fcp, 'worker-1') \gset
SELECT sog.apply_run(:fcp, :fg, 1, pg_temp.digests(1, 10));
SELECT sog.note_read(:fcp, :fg, '20', NULL, 10);
SELECT generation AS fg FROM sog.claim(:fcp, 'worker-2') \gset
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 11, pg_temp.digests(11, 20))$$, :fcp, :fg));
SELECT sog.apply_run(:fcp, :fg, 5, pg_temp.digests(5, 10)) AS duplicates_still_answered;
SELECT id AS bcp FROM sog.register('run-boundary', 'orders', '0') \gset
SELECT generation AS bg FROM sog.claim(:bcp, 'worker-1') \gset
SELECT sog.apply_run(:bcp, :bg, 1, pg_temp.digests(1, 10));
SELECT sog.note_read(:bcp, :bg, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 15, pg_temp.digests(15, 25))$$, :bcp, :bg));
-- a run that carries another digest for a noted record does not close it
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 11, pg_temp.digests(11, 14) || '\x%s'::bytea || pg_temp.digests(16, 25))$$,
                                              :bcp, :bg, repeat('00', 32)));
SELECT sog.apply_run(:bcp, :bg, 11, pg_temp.digests(11, 25)) AS closes_boundary;
SELECT applied_position, source_cursor FROM sog.checkpoint WHERE id = :bcp;
-- the receipts of a run that closed a boundary are the dense rows
SELECT string_agg(format('%s-%s:%s:%s', first_position, last_position, n, positions IS NULL), ' ' ORDER BY last_position) AS rows
  FROM sog.receipt WHERE checkpoint_id = :bcp;
-- a boundary noted with a count only: the run's events up to the cursor
-- must make it up
SELECT sog.note_read(:bcp, :bg, '35', NULL, 10);
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 30, pg_temp.digests(30, 40))$$, :bcp, :bg));
SELECT sog.apply_run(:bcp, :bg, 26, pg_temp.digests(26, 40)) AS closes_counted;
SELECT applied_position, source_cursor, read_hash, read_count FROM sog.checkpoint WHERE id = :bcp;

--
-- 5. Receipts above the applied position (a recovery attempt recorded
-- them): leading duplicates are counted; a duplicate after a new event has
-- no count for an answer (55000, nothing changes).
--
SELECT id AS rcp FROM sog.register('run-recovered', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS rg FROM sog.claim(:rcp, 'worker-1') \gset
SELECT sog.apply_run(:rcp, :rg, 1, pg_temp.digests(1, 10));
SELECT sog.commit_page(:rcp, :rg, NULL, 'T1');
SELECT id AS rid FROM sog.begin_recovery(:rcp, :rg, 'T1', NULL, '10', true) \gset
SELECT pg_temp.page(:rid, '{10,11,12,14}');
SELECT applied_position, receipts_through FROM sog.checkpoint WHERE id = :rcp;
SELECT state, message, detail FROM pg_temp.err(format($$SELECT sog.apply_run(%s, %s, 11, pg_temp.digests(11, 15))$$, :rcp, :rg));
SELECT sog.apply_run(:rcp, :rg, 11, pg_temp.digests(11, 12)) AS leading_recorded;
SELECT applied_position FROM sog.checkpoint WHERE id = :rcp;

--
-- 6. Bad arguments: 22023 with the values, SG001 for a stale generation
-- naming apply_run; none changes anything.
--
SELECT id AS ecp FROM sog.register('run-errors', 'orders', '0') \gset
SELECT generation AS eg FROM sog.claim(:ecp, 'worker-1') \gset
SELECT q.ord, e.*
  FROM (VALUES (1, $$SELECT sog.apply_run(NULL, $2, 1, pg_temp.digests(1, 1))$$),
               (2, $$SELECT sog.apply_run($1, NULL, 1, pg_temp.digests(1, 1))$$),
               (3, $$SELECT sog.apply_run($1, $2, NULL, pg_temp.digests(1, 1))$$),
               (4, $$SELECT sog.apply_run($1, $2, 1, NULL)$$),
               (5, $$SELECT sog.apply_run($1, $2, -1, pg_temp.digests(1, 1))$$),
               (6, $$SELECT sog.apply_run($1, $2, 1, ''::bytea)$$),
               (7, $$SELECT sog.apply_run($1, $2, 1, pg_temp.digests(1, 2) || '\x00'::bytea)$$),
               (8, $$SELECT sog.apply_run($1, $2, 9223372036854775807, pg_temp.digests(1, 2))$$),
               (9, $$SELECT sog.apply_run($1, $2 - 1, 1, pg_temp.digests(1, 1))$$),
               (10, $$SELECT sog.apply_run(0, $2, 1, pg_temp.digests(1, 1))$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :ecp, :eg) e
 ORDER BY q.ord \gx
SELECT applied_position, generation FROM sog.checkpoint WHERE id = :ecp;
SELECT count(*) AS receipts FROM sog.receipts(:ecp);
-- The largest position a bigint holds is a run of one.
SELECT sog.apply_run(:ecp, :eg, 9223372036854775807, pg_temp.d('9223372036854775807')) AS top;
SELECT applied_position FROM sog.checkpoint WHERE id = :ecp;
