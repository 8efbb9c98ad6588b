--
-- loss: what a loss records (README: expired-token recovery, the operator guide and the SQL reference; issue 8,
-- defect 2 and the consumer's report_gap and gaps)
--
-- A gap row covers (from_position, to_position]: from is the applied
-- position, to the last position the gap may hold, NULL meaning "unknown:
-- every position above from is suspect".  A retention refusal knows exactly
-- what is gone: (applied, the last position below retained_from].  A
-- consumer that sees the broker discarded records it never applied reports
-- them with report_gap.  Consumers here are named loss-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

-- refuse(cp, gen, token, anchor, inclusive, retained_from): begin a recovery
-- that retention refuses; the attempt's state and the gap's range.
CREATE FUNCTION pg_temp.refuse(cp bigint, gen bigint, token text, anchor text,
                               inclusive boolean, retained text,
                               OUT attempt text, OUT gap text)
LANGUAGE plpgsql AS $$
DECLARE
	r sog.recovery;
BEGIN
	r := sog.begin_recovery(cp, gen, token, NULL, anchor::sog.position, inclusive,
	                        retained::sog.position);
	attempt := r.state || coalesce(' ' || r.failure, '');
	SELECT format('%s (%s, %s]', g.reason, coalesce(g.from_position::text, 'null'),
	              coalesce(g.to_position::text, 'null'))
	  INTO gap FROM sog.gap g WHERE g.id = r.gap_id;
END
$$;

-- fresh(name, upto, provider): a claimed checkpoint that applied 1..upto (or
-- nothing) with token T1; returns id and generation.
CREATE FUNCTION pg_temp.fresh(name text, upto int, provider text DEFAULT 'kafka',
                              OUT cp bigint, OUT gen bigint)
LANGUAGE plpgsql AS $$
BEGIN
	cp := (sog.register(name, 'orders', '0', provider => provider)).id;
	gen := (sog.claim(cp, 'worker-1')).generation;
	IF upto > 0 THEN
		PERFORM pg_temp.apply_batch(cp, gen, pg_temp.range(1, upto));
	END IF;
	PERFORM sog.commit_page(cp, gen, NULL, 'T1');
END
$$;

--
-- 1. Retention refusals record exactly what retained_from proves lost.
--
-- Applied through 10, the provider retains from 16: 11..15 are gone, and
-- the gap is (10, 15], whatever was read (before issue 8: to NULL, or the
-- read cursor).
SELECT cp, gen FROM pg_temp.fresh('loss-retention', 10) \gset
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '10', true, '16');
-- The same with a read cursor beyond the retained start: still (10, 15];
-- 16..40 are retained and can be re-read.
SELECT cp, gen FROM pg_temp.fresh('loss-retention-read', 10) \gset
SELECT sog.note_read(:cp, :gen, '40', NULL, NULL);
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '10', true, '16');
-- An exclusive anchor: the seek needs 11; retained from 12 loses 11 only.
SELECT cp, gen FROM pg_temp.fresh('loss-retention-exclusive', 10) \gset
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '10', false, '12');
-- Nothing applied yet: retained from 5 loses 0..4, (null, 4].
SELECT cp, gen FROM pg_temp.fresh('loss-retention-empty', 0) \gset
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', NULL, false, '5');
-- The anchor's own records are gone but nothing unapplied is: an inclusive
-- anchor 8 with retained_from 9 and applied 10.  The gap is empty, from = to
-- = 10: the refusal stands (the overlap cannot be verified), the loss is
-- nothing; begin again with an anchor at or above 9.
SELECT cp, gen FROM pg_temp.fresh('loss-retention-anchor', 10) \gset
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '8', true, '9');
-- Tuples (Redis stream IDs): the last position below 1700-5 among positions
-- of two components is 1700-4; below 1700-0 it is 1700 (in the type's
-- order 1700 < 1700-0, and 1699-* < 1700).
SELECT id AS cp FROM sog.register('loss-retention-tuple', 's', '0', provider => 'redis_streams') \gset
SELECT generation AS gen FROM sog.claim(:cp, 'worker-1') \gset
SELECT sog.apply(:cp, :gen, '1600-3', pg_temp.d('1600-3'));
SELECT sog.commit_page(:cp, :gen, NULL, 'T1');
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '1600-3', true, '1700-5');
SELECT id AS cp FROM sog.register('loss-retention-tuple-zero', 's', '0', provider => 'redis_streams') \gset
SELECT generation AS gen FROM sog.claim(:cp, 'worker-1') \gset
SELECT sog.apply(:cp, :gen, '1600-3', pg_temp.d('1600-3'));
SELECT sog.commit_page(:cp, :gen, NULL, 'T1');
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '1600-3', true, '1700-0');
-- sog.gaps shows the consumer the same range (the NOTIFY carries only
-- the gap's id: see the isolation spec notify_gap).
SELECT cp, gen FROM pg_temp.fresh('loss-retention-notify', 10) \gset
SELECT * FROM pg_temp.refuse(:cp, :gen, 'T1', '10', true, '21');
SELECT from_position, to_position, reason FROM sog.gaps(:cp);

--
-- 2. Gaps whose end is unknown are NULL, and only those: a divergence (the
-- source is behind the sink) and a refusal before anything above applied
-- was read.
--
SELECT cp, gen FROM pg_temp.fresh('loss-unknown-end', 10) \gset
SELECT state, failure FROM sog.begin_recovery(:cp, :gen, 'T1', 'other-scope', '10', true);
SELECT from_position, to_position, reason FROM sog.gaps(:cp);

--
-- 3. report_gap: the consumer reports what the broker discarded.
--
SELECT cp, gen FROM pg_temp.fresh('loss-report', 10) \gset
SELECT sog.report_gap(:cp, :gen, '25', 'retention', 'XTRIM MINID 26 on orders') AS gap \gset
SELECT gap_id = :gap AS same_id, from_position, to_position, reason,
       resolution IS NULL AS open, note FROM sog.gaps(:cp);
SELECT detail FROM sog.gap WHERE id = :gap;
SELECT * FROM pg_temp.cp(:cp);
-- The checkpoint is failed_closed: nothing above 10 is applied, duplicates
-- still answer false.
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '11', pg_temp.d('11'))$$, :cp, :gen);
SELECT pg_temp.apply(:cp, :gen, '10') AS dup10;
-- Again, or for a smaller range: covered, the same id, nothing new.
SELECT sog.report_gap(:cp, :gen, '25', 'retention') = :gap AS same,
       sog.report_gap(:cp, :gen, '12', 'retention') = :gap AS covered;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
-- A larger range is a new gap, next to the first ((25, 30], not over it).
SELECT sog.report_gap(:cp, :gen, '30', 'retention') <> :gap AS new_gap;
SELECT from_position, to_position, reason FROM sog.gaps(:cp);
-- Refusals change nothing: at or below applied, an unknown reason, NULLs,
-- a stale generation, an unknown checkpoint.
SELECT q.ord, e.state, e.message, e.detail
  FROM (VALUES (1, $$SELECT sog.report_gap($1, $2, '10', 'retention')$$),
               (2, $$SELECT sog.report_gap($1, $2, '5', 'retention')$$),
               (3, $$SELECT sog.report_gap($1, $2, '40', 'lost')$$),
               (4, $$SELECT sog.report_gap($1, $2, '40', 'skipped_telemetry')$$),
               (5, $$SELECT sog.report_gap($1, $2, '40', NULL)$$),
               (6, $$SELECT sog.report_gap($1, $2, NULL, 'retention')$$),
               (7, $$SELECT sog.report_gap($1, NULL, '40', 'retention')$$),
               (8, $$SELECT sog.report_gap(NULL, $2, '40', 'retention')$$),
               (9, $$SELECT sog.report_gap($1, $2 - 1, '40', 'retention')$$),
               (10, $$SELECT sog.report_gap(0, $2, '40', 'retention')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp, :gen) e
 ORDER BY q.ord;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
-- The operator accepts both losses; the consumer sees where they end and
-- resumes after them.
SELECT sog.resolve_gap(gap_id, 'accepted_loss', 'INC-1: trimmed by ops') FROM sog.gaps(:cp);
SELECT from_position, to_position, reason, resolution, note FROM sog.gaps(:cp);
SELECT sog.max(to_position) AS lost_through FROM sog.gaps(:cp) WHERE resolution = 'accepted_loss';
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :gen, pg_temp.range(31, 35)));
SELECT * FROM pg_temp.cp(:cp);
-- With nothing applied, the gap starts at NULL (the beginning).
SELECT cp, gen FROM pg_temp.fresh('loss-report-empty', 0) \gset
SELECT sog.report_gap(:cp, :gen, '0', 'retention') > 0 AS reported;
SELECT from_position, to_position FROM sog.gaps(:cp);
SELECT sog.report_gap(:cp, :gen, '0', 'retention') = max(gap_id) AS same FROM sog.gaps(:cp);
-- report_gap while replaying: recorded, failed_closed (the replay is moot).
SELECT cp, gen FROM pg_temp.fresh('loss-report-replaying', 10) \gset
SELECT sog.note_read(:cp, :gen, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT generation AS gen FROM sog.claim(:cp, 'worker-2') \gset
SELECT sog.report_gap(:cp, :gen, '15', 'retention') > 0 AS reported;
SELECT * FROM pg_temp.cp(:cp);
SELECT * FROM pg_temp.err($$SELECT sog.verify_gap($1, $2, pg_temp.h(pg_temp.range(11, 20)))$$, :cp, :gen) \gx

--
-- 4. gaps(): unknown and NULL ids.
--
SELECT * FROM pg_temp.err($$SELECT * FROM sog.gaps(0)$$) \gx
SELECT * FROM pg_temp.err($$SELECT * FROM sog.gaps(NULL)$$) \gx
