--
-- gaps: verify_gap, skip_gap, resolve_gap, and what a pending gap refuses
-- (README: the consumer guide and what each SQLSTATE tells the consumer)
--
-- While a checkpoint is replaying (an unverified gap) or failed_closed (an
-- open gap), nothing above applied_position is accepted (SG004), nor a new
-- read boundary; duplicates at or below it still answer false.  Consumers
-- here are named gaps-*; ids and generations are looked up.
--
\i test/regress_helpers.sql

-- state(cp): the columns of the read boundary and the state.
CREATE FUNCTION pg_temp.state(cp bigint,
    OUT state text, OUT applied_position sog.position, OUT source_cursor sog.position,
    OUT read_base sog.position, OUT has_read_hash boolean, OUT read_count bigint,
    OUT open_gaps bigint)
LANGUAGE sql AS $$
	SELECT c.state, c.applied_position, c.source_cursor, c.read_base,
	       c.read_hash IS NOT NULL, c.read_count,
	       (SELECT count(*) FROM sog.gap g
	         WHERE g.checkpoint_id = c.id AND g.resolved_at IS NULL)
	  FROM sog.checkpoint c WHERE c.id = cp
$$;

--
-- 1. verify_gap: a match returns to running.
--
SELECT id AS cp FROM sog.register('gaps-verify', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
-- Nothing to verify while running: 55000.
SELECT * FROM pg_temp.err($$SELECT sog.verify_gap($1, $2, repeat('0', 64))$$, :cp, :g) \gx
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT generation AS g, verdict, resume_from, verify_from, verify_to
  FROM sog.claim(:cp, 'worker-2') \gset
SELECT :'verdict' AS verdict, :'resume_from' AS resume_from,
       :'verify_from' AS verify_from, :'verify_to' AS verify_to;
SELECT * FROM pg_temp.state(:cp);

-- While replaying: SG004 above applied, for apply, apply_batch and
-- note_read; duplicates at or below applied are still false.
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '13', pg_temp.d('13'))$$, :cp, :g) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.apply_batch($1, $2, '{12,13}', ARRAY[pg_temp.d('12'), pg_temp.d('13')])$$),
               (2, $$SELECT sog.apply($1, $2, '21', pg_temp.d('21'))$$),
               (3, $$SELECT sog.note_read($1, $2, '30', NULL, NULL)$$),
               (4, $$SELECT sog.note_read($1, $2, '20', pg_temp.h(pg_temp.range(11, 20)), 10)$$),
               (5, $$SELECT sog.note_read($1, $2, '5', NULL, NULL)$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :g) e
 ORDER BY q.ord;
SELECT pg_temp.apply(:cp, :g, '10') AS p10, pg_temp.apply(:cp, :g, '5') AS p5,
       pg_temp.apply_batch(:cp, :g, '{8,9,10}') AS batch;
SELECT * FROM pg_temp.state(:cp);

-- Bad calls of verify_gap.
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.verify_gap($1, $2, NULL)$$),
               (2, $$SELECT sog.verify_gap($1, NULL, repeat('0', 64))$$),
               (3, $$SELECT sog.verify_gap(NULL, $2, repeat('0', 64))$$),
               (4, $$SELECT sog.verify_gap(0, $2, repeat('0', 64))$$),
               (5, $$SELECT sog.verify_gap($1, $2 - 1, pg_temp.h(pg_temp.range(11, 20)))$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :g) e
 ORDER BY q.ord;

-- The successor re-fetched (10, 20] and hashed it: a match.
SELECT sog.verify_gap(:cp, :g, pg_temp.h(pg_temp.range(11, 20)));
SELECT * FROM pg_temp.state(:cp);
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
-- Verified once: nothing left to verify.
SELECT state, message, detail FROM pg_temp.err($$SELECT sog.verify_gap($1, $2, pg_temp.h(pg_temp.range(11, 20)))$$, :cp, :g);
SELECT pg_temp.apply_batch(:cp, :g, pg_temp.range(11, 20));
SELECT * FROM pg_temp.state(:cp);

--
-- 2. verify_gap: a mismatch records a gap (hash_mismatch), fails closed,
-- and returns false (the gap row commits: no error).
--
SELECT id AS mcp FROM sog.register('gaps-mismatch', 'orders', '0') \gset
SELECT generation AS mg FROM sog.claim(:mcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:mcp, :mg, pg_temp.range(1, 5)));
SELECT sog.note_read(:mcp, :mg, '10', pg_temp.h(pg_temp.range(6, 10)), 5);
SELECT generation AS mg FROM sog.claim(:mcp, 'worker-2') \gset
-- The re-fetched records differ: record 8 came back with other bytes.
SELECT sog.verify_gap(:mcp, :mg,
         sog.buffer_hash(ARRAY['6', '7', '8', '9', '10']::sog.position[],
                         ARRAY[pg_temp.d('6'), pg_temp.d('7'), pg_temp.d('8, altered'),
                               pg_temp.d('9'), pg_temp.d('10')]));
SELECT * FROM pg_temp.state(:mcp);
SELECT generation = :mg AS gap_generation, from_position, to_position, reason, verdict,
       resolved_at IS NULL AS open
  FROM sog.gap WHERE checkpoint_id = :mcp;
SELECT id AS mgap FROM sog.gap WHERE checkpoint_id = :mcp \gset

-- While failed_closed: SG004 above applied, for apply, apply_batch and
-- note_read; duplicates are still false; there is nothing to verify.
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '6', pg_temp.d('6'))$$, :mcp, :mg) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.apply_batch($1, $2, '{5,6}', ARRAY[pg_temp.d('5'), pg_temp.d('6')])$$),
               (2, $$SELECT sog.note_read($1, $2, '10', pg_temp.h(pg_temp.range(6, 10)), 5)$$),
               (3, $$SELECT sog.verify_gap($1, $2, pg_temp.h(pg_temp.range(6, 10)))$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :mcp, :mg) e
 ORDER BY q.ord;
SELECT state, detail FROM pg_temp.err($$SELECT sog.verify_gap($1, $2, pg_temp.h(pg_temp.range(6, 10)))$$, :mcp, :mg);
SELECT pg_temp.apply(:mcp, :mg, '5') AS p5, pg_temp.apply_batch(:mcp, :mg, '{1,2,3}') AS batch;
SELECT * FROM pg_temp.state(:mcp);
-- A halt now hands over the failed-closed state: the recorded hash is
-- known not to match, so its manifest must not allow a resume.
SELECT verdict, resume_from, gap_size, manifest_digest
  FROM sog.halt(:mcp, :mg, NULL, NULL, NULL);
SELECT v.* FROM sog.verify_resume(sog.halt(:mcp, :mg, NULL, NULL, NULL), '5') v;
SELECT * FROM pg_temp.state(:mcp);

--
-- 3. resolve_gap: for operators; replayed or accepted_loss (with a note).
--
SELECT * FROM pg_temp.err($$SELECT sog.resolve_gap($1, 'fixed', 'x')$$, :mgap) \gx
SELECT * FROM pg_temp.err($$SELECT sog.resolve_gap($1, 'accepted_loss', NULL)$$, :mgap) \gx
SELECT * FROM pg_temp.err($$SELECT sog.resolve_gap(9223372036854775807, 'replayed', NULL)$$) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.resolve_gap($1, 'skipped_telemetry', 'x')$$),
               (2, $$SELECT sog.resolve_gap($1, NULL, 'x')$$),
               (3, $$SELECT sog.resolve_gap($1, 'Replayed', 'x')$$),
               (4, $$SELECT sog.resolve_gap($1, 'accepted_loss', '')$$),
               (5, $$SELECT sog.resolve_gap($1, 'accepted_loss', E' \t\n')$$),
               (6, $$SELECT sog.resolve_gap(NULL, 'replayed', 'x')$$),
               (7, $$SELECT sog.resolve_gap(0, 'replayed', 'x')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :mgap) e
 ORDER BY q.ord;
-- None of them resolved anything.
SELECT resolved_at IS NULL AS open, resolution FROM sog.gap WHERE id = :mgap;

-- replayed (no note needed): the last open gap is closed, so the read
-- boundary returns to applied_position and the checkpoint runs again;
-- applied_position does not move.
SELECT sog.resolve_gap(:mgap, 'replayed', NULL);
SELECT resolved_at IS NOT NULL AS resolved, resolution, note,
       resolved_by = session_user AS by_session_user
  FROM sog.gap WHERE id = :mgap;
SELECT * FROM pg_temp.state(:mcp);
-- Resolved already: 55000.
SELECT * FROM pg_temp.err($$SELECT sog.resolve_gap($1, 'replayed', NULL)$$, :mgap) \gx
SELECT state FROM pg_temp.err($$SELECT sog.resolve_gap($1, 'accepted_loss', 'again')$$, :mgap);
-- The same owner continues from applied_position.
SELECT pg_temp.apply_batch(:mcp, :mg, pg_temp.range(6, 10));
SELECT * FROM pg_temp.state(:mcp);

--
-- 4. Two open gaps: the checkpoint runs again only once both are resolved.
-- The second gap row is written by hand, as a refused recovery would.
--
SELECT id AS tcp FROM sog.register('gaps-two', 'orders', '0') \gset
SELECT generation AS tg FROM sog.claim(:tcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:tcp, :tg, pg_temp.range(1, 5)));
SELECT sog.note_read(:tcp, :tg, '10', NULL, NULL);
SELECT generation AS tg, gap_id AS gap1 FROM sog.claim(:tcp, 'worker-2') \gset
INSERT INTO sog.gap (checkpoint_id, generation, from_position, to_position, reason, verdict)
VALUES (:tcp, :tg, '5', '10', 'retention', 'fail_closed')
RETURNING id AS gap2 \gset
SELECT * FROM pg_temp.state(:tcp);
-- A critical checkpoint's gap cannot be skipped: SG007, whatever the reason.
SELECT * FROM pg_temp.err($$SELECT sog.skip_gap($1, $2, 'metrics are sampled')$$, :tcp, :tg) \gx
SELECT state FROM pg_temp.err($$SELECT sog.skip_gap($1, $2, '')$$, :tcp, :tg);
SELECT * FROM pg_temp.state(:tcp);
-- A claim now reports the newest open gap, and records none.
SELECT verdict, resume_from, gap_id = :gap2 AS newest_gap
  FROM sog.claim(:tcp, 'worker-3');
SELECT generation AS tg FROM sog.checkpoint WHERE id = :tcp \gset
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :tcp;
SELECT sog.resolve_gap(:gap1, 'accepted_loss', 'records 6..10 were test data');
SELECT * FROM pg_temp.state(:tcp);
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '6', pg_temp.d('6'))$$, :tcp, :tg);
SELECT sog.resolve_gap(:gap2, 'replayed', 'replayed by hand');
SELECT * FROM pg_temp.state(:tcp);
SELECT reason, resolution, note FROM sog.gap WHERE checkpoint_id = :tcp ORDER BY id;
SELECT pg_temp.apply(:tcp, :tg, '6') AS p6;

--
-- 5. skip_gap: telemetry checkpoints only (SG007 for critical ones, above).
--
SELECT id AS kcp FROM sog.register('gaps-telemetry', 'metrics', '0', 'telemetry') \gset
SELECT generation AS kg FROM sog.claim(:kcp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:kcp, :kg, pg_temp.range(1, 5)));
SELECT sog.note_read(:kcp, :kg, '20', NULL, NULL);
SELECT generation AS kg, verdict FROM sog.claim(:kcp, 'worker-2') \gset
SELECT :'verdict' AS verdict;
SELECT * FROM pg_temp.state(:kcp);
-- A skip needs a reason: 22023.
SELECT * FROM pg_temp.err($$SELECT sog.skip_gap($1, $2, '  ')$$, :kcp, :kg) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.skip_gap($1, $2, NULL)$$),
               (2, $$SELECT sog.skip_gap($1, $2, '')$$),
               (3, $$SELECT sog.skip_gap($1, $2 - 1, 'metrics are sampled')$$),
               (4, $$SELECT sog.skip_gap(0, $2, 'metrics are sampled')$$),
               (5, $$SELECT sog.skip_gap(NULL, $2, 'metrics are sampled')$$),
               (6, $$SELECT sog.skip_gap($1, NULL, 'metrics are sampled')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :kcp, :kg) e
 ORDER BY q.ord;
SELECT * FROM pg_temp.state(:kcp);
-- The skip resolves the open gaps as skipped_telemetry with the reason,
-- and moves applied_position to the read cursor.
SELECT sog.skip_gap(:kcp, :kg, 'metrics are sampled; losing 6..20 is fine');
SELECT * FROM pg_temp.state(:kcp);
SELECT reason, resolution, note, resolved_at IS NOT NULL AS resolved,
       resolved_by = session_user AS by_session_user
  FROM sog.gap WHERE checkpoint_id = :kcp ORDER BY id;
SELECT kind, generation, source_cursor, applied_position, verdict, resume_from, note
  FROM sog.manifest_log WHERE checkpoint_id = :kcp AND kind = 'skip';
SELECT count(*) AS receipts FROM sog.receipts(:kcp, '6', '20');
SELECT pg_temp.apply(:kcp, :kg, '21') AS p21;
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '15', pg_temp.d('15'))$$, :kcp, :kg);

-- A skip while replaying (an unverified gap, no gap row yet) moves applied
-- too; what it skips is recorded as a gap (reason unverified), resolved as
-- skipped (skew.sql has the other cases).
SELECT sog.note_read(:kcp, :kg, '30', pg_temp.h(pg_temp.range(22, 30)), 9);
SELECT generation AS kg, verdict FROM sog.claim(:kcp, 'worker-3') \gset
SELECT :'verdict' AS verdict;
SELECT sog.skip_gap(:kcp, :kg, 'no time to re-fetch');
SELECT * FROM pg_temp.state(:kcp);
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :kcp;

--
-- 6. note_read: a cursor behind applied is SG005; other bad arguments are
-- 22023; a cursor at applied records no boundary.
--
SELECT * FROM pg_temp.err($$SELECT sog.note_read($1, $2, '3', NULL, NULL)$$, :kcp, :kg) \gx
SELECT * FROM pg_temp.err($$SELECT sog.note_read($1, $2, '40', NULL, -1)$$, :kcp, :kg) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.note_read($1, $2, NULL, NULL, NULL)$$),
               (2, $$SELECT sog.note_read($1, NULL, '40', NULL, NULL)$$),
               (3, $$SELECT sog.note_read(NULL, $2, '40', NULL, NULL)$$),
               (4, $$SELECT sog.note_read(0, $2, '40', NULL, NULL)$$),
               (5, $$SELECT sog.note_read($1, $2 - 1, '40', NULL, NULL)$$),
               (6, $$SELECT sog.note_read($1, $2, '29', NULL, NULL)$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :kcp, :kg) e
 ORDER BY q.ord;
SELECT sog.note_read(:kcp, :kg, '40', pg_temp.h(pg_temp.range(31, 40)), 10);
SELECT * FROM pg_temp.state(:kcp);
-- While it is not applied, another note is refused and the same one
-- changes nothing (read_boundary); once it is applied, a note at the
-- applied position records nothing.
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '45', pg_temp.h(pg_temp.range(31, 45)), 15)$$, :kcp, :kg);
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '30', NULL, 0)$$, :kcp, :kg);
SELECT sog.note_read(:kcp, :kg, '40', pg_temp.h(pg_temp.range(31, 40)), 10) AS same_again;
SELECT * FROM pg_temp.state(:kcp);
SELECT pg_temp.rle(pg_temp.apply_batch(:kcp, :kg, pg_temp.range(31, 40)));
SELECT sog.note_read(:kcp, :kg, '40', NULL, 0);
SELECT * FROM pg_temp.state(:kcp);
