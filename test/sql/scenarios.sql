--
-- scenarios: the failure modes the guard exists for, as narrated stories
-- with a sink table (README: pure halt evaluation, the consumer guide and the operator guide)
--
--   1. gap loss: records read but not applied when a worker dies are
--      neither lost nor applied twice;
--   2. duplicate replay: an at-least-once redelivery changes nothing;
--   3. temporal skew: nothing newer lands while an older gap is unverified,
--      and a stalled worker that wakes up is fenced;
--   plus fail closed without a hash, a telemetry skip, divergence, and a
--   changed source identity.
--
-- "source" plays the provider: the records of each stream, by position.
-- "ledger" is the sink: one row per applied record, in application order.
-- Consumers here are named scen-*; ids and generations are looked up.
--
\i test/regress_helpers.sql

CREATE TEMP TABLE source (stream text, pos bigint, payload text,
                          PRIMARY KEY (stream, pos));
INSERT INTO source
SELECT s, i, format('{"stream": "%s", "order": %s, "amount": %s}', s, i, (i * 37) % 1000)
  FROM unnest(ARRAY['gaploss', 'dup', 'skew', 'nohash', 'metrics', 'diverge',
                    'ident']) s,
       generate_series(1, 300) i;
CREATE TEMP TABLE ledger (seq bigserial, consumer text, pos bigint, payload text);

-- fetch_hash(stream, lo, hi): the buffer hash of the records in (lo, hi],
-- as a worker computes it while it buffers them (or re-fetches them).
CREATE FUNCTION pg_temp.fetch_hash(s text, lo bigint, hi bigint) RETURNS text
LANGUAGE sql AS $$
	SELECT sog.buffer_hash(pos::sog.position,
	                       sog.payload_digest(convert_to(payload, 'UTF8')) ORDER BY pos)
	  FROM source WHERE stream = s AND pos > lo AND pos <= hi
$$;

-- consume(cp, gen, stream, lo, hi): the worker's sink transaction for the
-- records (lo, hi] it fetched: one apply_batch, and a ledger row for each
-- record that is new.  Returns the answers as runs.
CREATE FUNCTION pg_temp.consume(cp bigint, gen bigint, s text, lo bigint, hi bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean[];
BEGIN
	ok := sog.apply_batch(cp, gen,
	        ARRAY(SELECT pos::sog.position FROM source
	               WHERE stream = s AND pos > lo AND pos <= hi ORDER BY pos),
	        ARRAY(SELECT sog.payload_digest(convert_to(payload, 'UTF8')) FROM source
	               WHERE stream = s AND pos > lo AND pos <= hi ORDER BY pos));
	INSERT INTO ledger (consumer, pos, payload)
	SELECT (SELECT consumer FROM sog.checkpoint WHERE id = cp), r.pos, r.payload
	  FROM (SELECT pos, payload, row_number() OVER (ORDER BY pos) AS i
	          FROM source WHERE stream = s AND pos > lo AND pos <= hi) r
	 WHERE ok[r.i]
	 ORDER BY r.pos;
	RETURN pg_temp.rle(ok);
END
$$;

-- book(consumer): the ledger of a consumer: rows, distinct positions, the
-- range, and whether the rows were written in position order.
CREATE FUNCTION pg_temp.book(c text, OUT rows bigint, OUT distinct_positions bigint,
                             OUT first bigint, OUT last bigint, OUT in_order boolean)
LANGUAGE sql AS $$
	SELECT count(*), count(DISTINCT pos), min(pos), max(pos),
	       coalesce(bool_and(prev IS NULL OR pos > prev), true)
	  FROM (SELECT pos, lag(pos) OVER (ORDER BY seq) AS prev
	          FROM ledger WHERE consumer = c) l
$$;

-- Plans of claims, kept for verify_resume and \gset.
CREATE TEMP TABLE plans (label text PRIMARY KEY, p sog.resume_plan);
CREATE FUNCTION pg_temp.m(p sog.resume_plan) RETURNS sog.manifest
LANGUAGE sql IMMUTABLE AS $$
	SELECT ROW(p.verdict, p.resume_from, p.gap_size, p.manifest_digest)::sog.manifest
$$;

--
-- 1. Gap loss.  Worker A reads 101..200 and dies in the middle of the
-- sink transaction that applies them.  Resuming from the read cursor would
-- lose 101..200; resuming without a proof would re-apply what cannot be
-- checked.
--
SELECT id AS cp FROM sog.register('scen-gaploss', 'orders', '0') \gset
SELECT generation AS ga FROM sog.claim(:cp, 'worker-a') \gset
SELECT pg_temp.consume(:cp, :ga, 'gaploss', 0, 100);
-- A fetches 101..200 and records the read boundary with the hash it
-- computed while buffering, before it applies any of them.
SELECT sog.note_read(:cp, :ga, '200', pg_temp.fetch_hash('gaploss', 100, 200), 100);
BEGIN;
SELECT pg_temp.consume(:cp, :ga, 'gaploss', 100, 150);
-- ... and A crashes here, before COMMIT (a COMMIT here would be refused
-- too: a read boundary is applied whole in the transaction that reaches
-- its cursor, read_boundary).
ROLLBACK;
SELECT state, applied_position, source_cursor, read_base, read_count
  FROM sog.checkpoint WHERE id = :cp;

-- Successor B claims: replay required, resume after 100, but first verify
-- (100, 200].
INSERT INTO plans SELECT 'gaploss-b', sog.claim(:cp, 'worker-b')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).verify_from,
          (p).verify_to, (p).expected_count, (p).gap_size,
          (p).expected_hash = pg_temp.fetch_hash('gaploss', 100, 200) AS expected_hash_ok;
SELECT (p).generation AS gb, (p).verify_from AS vf, (p).verify_to AS vt
  FROM plans WHERE label = 'gaploss-b' \gset
-- Resuming from the read cursor is refused; from resume_from it is not.
SELECT v.* FROM plans, sog.verify_resume(pg_temp.m(p), '200') v WHERE label = 'gaploss-b';
SELECT v.* FROM plans, sog.verify_resume(pg_temp.m(p), '100') v WHERE label = 'gaploss-b';
-- A is fenced if it comes back.
SELECT state, message FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'gaploss', 150, 200)$$, :cp, :ga);
-- B re-fetches (verify_from, verify_to] from the source and hashes it.
SELECT sog.verify_gap(:cp, :gb, pg_temp.fetch_hash('gaploss', :'vf'::numeric::bigint,
                                                   :'vt'::numeric::bigint));
-- B applies 101..200, all new, and the apply that reaches 200 finds them
-- exactly as A noted them.
SELECT pg_temp.consume(:cp, :gb, 'gaploss', 100, 200);
-- Every record 1..200 is in the sink exactly once.
SELECT * FROM pg_temp.book('scen-gaploss');
SELECT count(*) AS rows_101_200, count(DISTINCT pos) AS distinct_101_200
  FROM ledger WHERE consumer = 'scen-gaploss' AND pos > 100 AND pos <= 200;
SELECT state, applied_position, source_cursor, read_hash
  FROM sog.checkpoint WHERE id = :cp;

--
-- 2. Duplicate replay.  A committed batch is delivered again (at least
-- once): every event is a verified duplicate and the sink is unchanged.
--
SELECT id AS dcp FROM sog.register('scen-dup', 'orders', '0') \gset
SELECT generation AS dg FROM sog.claim(:dcp, 'worker-a') \gset
SELECT pg_temp.consume(:dcp, :dg, 'dup', 0, 50);
SELECT count(*) AS rows, md5(string_agg(payload, '|' ORDER BY pos)) AS book
  FROM ledger WHERE consumer = 'scen-dup' \gset before_
SELECT pg_temp.consume(:dcp, :dg, 'dup', 0, 50);
SELECT pg_temp.consume(:dcp, :dg, 'dup', 40, 60);
SELECT pg_temp.consume(:dcp, :dg, 'dup', 55, 60);
SELECT count(*) - :before_rows AS new_rows FROM ledger WHERE consumer = 'scen-dup';
SELECT md5(string_agg(payload, '|' ORDER BY pos) FILTER (WHERE pos <= 50)) = :'before_book'
         AS first_50_unchanged
  FROM ledger WHERE consumer = 'scen-dup';
SELECT * FROM pg_temp.book('scen-dup');
-- A redelivery whose bytes changed is not a duplicate: SG003, and the
-- whole sink transaction rolls back.
UPDATE source SET payload = payload || ' (edited)' WHERE stream = 'dup' AND pos = 45;
SELECT state, message FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'dup', 40, 60)$$, :dcp, :dg);
SELECT * FROM pg_temp.book('scen-dup');
UPDATE source SET payload = replace(payload, ' (edited)', '') WHERE stream = 'dup' AND pos = 45;

--
-- 3. Temporal skew.  Worker A stalls (it is not dead) after reading
-- 41..100, before its sink transaction; B takes over.  B must not apply
-- the newest records it sees while (40, 100] is unverified, and A, waking
-- up, must not apply anything at all.
--
SELECT id AS scp FROM sog.register('scen-skew', 'orders', '0') \gset
SELECT generation AS sa FROM sog.claim(:scp, 'worker-a') \gset
SELECT pg_temp.consume(:scp, :sa, 'skew', 0, 40);
SELECT sog.note_read(:scp, :sa, '100', pg_temp.fetch_hash('skew', 40, 100), 60);
-- ... A stalls.  B claims.
INSERT INTO plans SELECT 'skew-b', sog.claim(:scp, 'worker-b')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).verify_from, (p).verify_to;
SELECT (p).generation AS sb FROM plans WHERE label = 'skew-b' \gset
-- B fetches the live tail 101..120 first: refused while the gap is open.
SELECT * FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'skew', 100, 120)$$, :scp, :sb) \gx
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'skew', 40, 41)$$, :scp, :sb);
-- A wakes up and applies the rest of its buffer: fenced.
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'skew', 40, 100)$$, :scp, :sa);
SELECT state FROM pg_temp.err($$SELECT sog.note_read($1, $2, '120', NULL, NULL)$$, :scp, :sa);
-- Nothing newer than 40 landed.
SELECT * FROM pg_temp.book('scen-skew');
-- B verifies the gap, then applies 41..120 in order.
SELECT sog.verify_gap(:scp, :sb, pg_temp.fetch_hash('skew', 40, 100));
SELECT pg_temp.consume(:scp, :sb, 'skew', 40, 120);
SELECT * FROM pg_temp.book('scen-skew');
SELECT state, applied_position, source_cursor FROM sog.checkpoint WHERE id = :scp;

--
-- 4. Fail closed without a hash.  A applied through 30, read 31..50
-- without hashing the buffer, and died.  Nothing can prove (30, 50]: the
-- claim fails closed and records a gap, and nothing beyond 30 is accepted
-- until an operator resolves it.
--
SELECT id AS ncp FROM sog.register('scen-nohash', 'orders', '0') \gset
SELECT generation AS na FROM sog.claim(:ncp, 'worker-a') \gset
SELECT pg_temp.consume(:ncp, :na, 'nohash', 0, 30);
SELECT sog.note_read(:ncp, :na, '50', NULL, 20);
INSERT INTO plans SELECT 'nohash-b', sog.claim(:ncp, 'worker-b')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).gap_size,
          (p).manifest_digest, (p).gap_id IS NOT NULL AS has_gap;
SELECT (p).generation AS nb, (p).gap_id AS ngap FROM plans WHERE label = 'nohash-b' \gset
SELECT v.* FROM plans, sog.verify_resume(pg_temp.m(p), '30') v WHERE label = 'nohash-b';
SELECT consumer, stream, "partition", criticality, from_position, to_position, reason,
       gap_id = :ngap AS plan_gap, age >= interval '0' AS age_ok
  FROM sog.unresolved_gaps WHERE checkpoint_id = :ncp;
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'nohash', 30, 50)$$, :ncp, :nb);
SELECT state FROM pg_temp.err($$SELECT sog.verify_gap($1, $2, pg_temp.fetch_hash('nohash', 30, 50))$$, :ncp, :nb);
SELECT pg_temp.consume(:ncp, :nb, 'nohash', 0, 30);
-- The operator arranges for 31..50 to be consumed again and resolves.
SELECT sog.resolve_gap(:ngap, 'replayed', 'worker-b re-consumes 31..50 from the broker');
SELECT state, applied_position, source_cursor FROM sog.checkpoint WHERE id = :ncp;
SELECT pg_temp.consume(:ncp, :nb, 'nohash', 30, 50);
SELECT * FROM pg_temp.book('scen-nohash');

--
-- 5. Telemetry skip.  Sampled metrics: losing a gap is acceptable, with a
-- reason on record.
--
SELECT id AS mcp FROM sog.register('scen-metrics', 'metrics', '0', 'telemetry') \gset
SELECT generation AS ma FROM sog.claim(:mcp, 'worker-a') \gset
SELECT pg_temp.consume(:mcp, :ma, 'metrics', 0, 30);
SELECT sog.note_read(:mcp, :ma, '100', NULL, 70);
INSERT INTO plans SELECT 'metrics-b', sog.claim(:mcp, 'worker-b')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).gap_size;
SELECT (p).generation AS mb FROM plans WHERE label = 'metrics-b' \gset
SELECT sog.skip_gap(:mcp, :mb, 'sampled CPU metrics; a gap of 70 points is acceptable');
SELECT pg_temp.consume(:mcp, :mb, 'metrics', 100, 110);
SELECT * FROM pg_temp.book('scen-metrics');
SELECT count(*) AS rows_31_100 FROM ledger WHERE consumer = 'scen-metrics' AND pos BETWEEN 31 AND 100;
SELECT g.reason, g.from_position, g.to_position, g.resolution, g.note
  FROM sog.gap g WHERE g.checkpoint_id = :mcp;
SELECT kind, source_cursor, applied_position, verdict, note
  FROM sog.manifest_log WHERE checkpoint_id = :mcp ORDER BY id;

--
-- 6. Divergence.  The source was truncated and rewound: at its graceful
-- halt, A reports a read cursor of 40, but the sink applied through 50.
--
SELECT id AS vcp FROM sog.register('scen-diverge', 'orders', '0') \gset
SELECT generation AS va FROM sog.claim(:vcp, 'worker-a') \gset
SELECT pg_temp.consume(:vcp, :va, 'diverge', 0, 50);
SELECT verdict, resume_from, gap_size FROM sog.halt(:vcp, :va, '40', NULL, NULL);
SELECT from_position, to_position, reason FROM sog.unresolved_gaps WHERE checkpoint_id = :vcp;
INSERT INTO plans SELECT 'diverge-b', sog.claim(:vcp, 'worker-b')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).gap_size;
SELECT (p).generation AS vb FROM plans WHERE label = 'diverge-b' \gset
SELECT v.* FROM plans, sog.verify_resume(pg_temp.m(p), '50') v WHERE label = 'diverge-b';
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :vcp;
-- The rewound source now has other records at 41..: refused (SG003 for a
-- position with a receipt, SG004 above applied).
UPDATE source SET payload = payload || ' (after rewind)' WHERE stream = 'diverge' AND pos > 40;
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'diverge', 40, 50)$$, :vcp, :vb);
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'diverge', 50, 60)$$, :vcp, :vb);
SELECT * FROM pg_temp.book('scen-diverge');
-- After an audit the operator accepts it.
SELECT sog.resolve_gap(id, 'accepted_loss', 'source rewound to 40; 41..50 audited and kept')
  FROM sog.gap WHERE checkpoint_id = :vcp AND resolved_at IS NULL;
SELECT state, applied_position, source_cursor FROM sog.checkpoint WHERE id = :vcp;

--
-- 7. A changed source identity.  The topic was deleted and re-created
-- under the same name: offsets start again at 1.  A successor that
-- connects to the new topic is stopped before it writes anything.
--
SELECT id AS icp FROM sog.register('scen-ident', 'orders', '0',
                                   source_identity => 'kafka-a/topic-7f3e') \gset
SELECT generation AS ia FROM sog.claim(:icp, 'worker-a', 'kafka-a/topic-7f3e') \gset
SELECT pg_temp.consume(:icp, :ia, 'ident', 0, 50);
UPDATE source SET payload = payload || ' (new topic)' WHERE stream = 'ident';
INSERT INTO plans SELECT 'ident-b', sog.claim(:icp, 'worker-b', 'kafka-a/topic-9b21')
RETURNING (p).generation, (p).verdict, (p).resume_from, (p).gap_size;
SELECT (p).generation AS ib FROM plans WHERE label = 'ident-b' \gset
SELECT from_position, to_position, reason FROM sog.unresolved_gaps WHERE checkpoint_id = :icp;
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'ident', 0, 10)$$, :icp, :ib);
SELECT state FROM pg_temp.err($$SELECT pg_temp.consume($1, $2, 'ident', 50, 60)$$, :icp, :ib);
SELECT * FROM pg_temp.book('scen-ident');
SELECT source_identity, state, applied_position FROM sog.checkpoint WHERE id = :icp;
-- The new topic is a different setup: it gets its own consumer name.
SELECT state FROM pg_temp.err($$SELECT sog.register('scen-ident', 'orders', '0', source_identity => 'kafka-a/topic-9b21')$$);
SELECT consumer, source_identity, generation, state
  FROM sog.register('scen-ident-9b21', 'orders', '0', source_identity => 'kafka-a/topic-9b21');

-- All the stories: every ledger row once, written in position order.
SELECT c.consumer, c.state, c.applied_position, b.*
  FROM sog.checkpoint c, pg_temp.book(c.consumer) b
 WHERE c.consumer LIKE 'scen-%'
 ORDER BY c.consumer;
