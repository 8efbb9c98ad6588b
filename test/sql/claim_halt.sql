--
-- claim_halt: sog.claim and sog.halt (README: pure halt evaluation and the consumer guide)
--
-- A claim takes over a checkpoint (generation + 1) and evaluates its
-- predecessor's read boundary; a halt records the boundary at a graceful
-- handoff.  Both log a manifest whose digest is the one sog.evaluate_halt
-- gives for the same boundary, recomputed here with pgcrypto as well;
-- boundaries that cannot be proven become gap rows, never errors.
-- Consumers here are named ch-*; ids and generations are looked up.
--
\i test/regress_helpers.sql

-- sha(t): hex SHA-256 of the UTF-8 text, by pgcrypto (the oracle).
CREATE FUNCTION pg_temp.sha(t text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT encode(digest(convert_to(t, 'UTF8'), 'sha256'), 'hex')
$$;

-- claim(cp, owner, identity): sog.claim; every plan is kept in plan_log.
CREATE TEMP TABLE plan_log (n serial PRIMARY KEY, plan sog.resume_plan NOT NULL);
CREATE FUNCTION pg_temp.claim(cp bigint, owner text, identity text DEFAULT NULL)
RETURNS SETOF sog.resume_plan
LANGUAGE sql AS $$
	INSERT INTO plan_log (plan) SELECT sog.claim(cp, owner, identity)
	RETURNING (plan).*
$$;
-- last(): the newest plan; m(plan): its manifest, for sog.verify_resume.
CREATE FUNCTION pg_temp.last() RETURNS sog.resume_plan
LANGUAGE sql AS $$ SELECT plan FROM plan_log ORDER BY n DESC LIMIT 1 $$;
CREATE FUNCTION pg_temp.m(p sog.resume_plan) RETURNS sog.manifest
LANGUAGE sql IMMUTABLE AS $$
	SELECT ROW(p.verdict, p.resume_from, p.gap_size, p.manifest_digest)::sog.manifest
$$;

-- The plan type, as the contract names it.
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute
 WHERE attrelid = 'sog.resume_plan'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;

SELECT id AS cp FROM sog.register('ch-a', 'orders', '0', provider => 'kafka') \gset

--
-- 1. Bad claims: 22023, and nothing changes.
--
SELECT * FROM pg_temp.err($$SELECT sog.claim(0, 'worker-1')$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.claim($1, '')$$, :cp) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.claim(NULL, 'worker-1')$$),
               (2, $$SELECT sog.claim($1, NULL)$$),
               (3, $$SELECT sog.claim($1, E' \t\n')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :cp) e
 ORDER BY q.ord;
SELECT generation, owner, state FROM sog.checkpoint WHERE id = :cp;

--
-- 2. aligned: nothing applied yet, so resume_from is NULL (start from the
-- provider's beginning).  The digest is SHA-256 of "ALIGNED".
--
SELECT checkpoint_id = :cp AS own_checkpoint, generation, verdict, resume_from,
       verify_from, verify_to, expected_hash, expected_count, gap_size,
       provider_token, manifest_digest = pg_temp.sha('ALIGNED') AS digest_ok,
       manifest_digest = (sog.evaluate_halt(NULL, NULL, NULL, 'k')).manifest_digest AS evaluate_halt_ok,
       gap_id
  FROM pg_temp.claim(:cp, 'worker-1') \gx
SELECT (plan).generation AS g FROM plan_log ORDER BY n DESC LIMIT 1 \gset
SELECT generation, owner, state, source_cursor, applied_position
  FROM sog.checkpoint WHERE id = :cp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), NULL);
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '1');

-- aligned after applying: resume_from is applied_position; the provider
-- token comes back.
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.commit_page(:cp, :g, NULL, 'tok-10');
SELECT generation, verdict, resume_from, gap_size, provider_token,
       manifest_digest = pg_temp.sha('ALIGNED') AS digest_ok, gap_id
  FROM pg_temp.claim(:cp, 'worker-2');
SELECT :g + 1 AS g2 \gset
SELECT generation = :g2 AS incremented, owner, state FROM sog.checkpoint WHERE id = :cp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '10');
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '11');
-- The first worker is fenced.
SELECT state, message FROM pg_temp.err($$SELECT sog.apply($1, $2, '11', pg_temp.d('11'))$$, :cp, :g);
SELECT state, message FROM pg_temp.err($$SELECT sog.commit_page($1, $2, 'tok-10', 'tok-11')$$, :cp, :g);
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '20', NULL, NULL)$$, :cp, :g);

--
-- 3. gap_replay_required: worker 2 read through 20 with the hash of
-- 11..20 and stopped before the sink transaction that applies them
-- committed (one that applied only 11..15 would not commit:
-- read_boundary).  The successor must re-fetch (verify_from, verify_to] =
-- (10, 20] and verify it; it resumes from 10.
--
SELECT sog.note_read(:cp, :g2, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT (sog.evaluate_halt(source_cursor, applied_position, read_hash, 'k')).manifest_digest AS want
  FROM sog.checkpoint WHERE id = :cp \gset
SELECT generation, verdict, resume_from, verify_from, verify_to,
       expected_hash = pg_temp.h(pg_temp.range(11, 20)) AS expected_hash_ok,
       expected_count, gap_size, provider_token,
       manifest_digest = :'want' AS evaluate_halt_ok,
       manifest_digest = pg_temp.sha(format('{"hash": "%s", "sink": "10", "src": "20"}',
                                            pg_temp.h(pg_temp.range(11, 20)))) AS digest_ok,
       gap_id
  FROM pg_temp.claim(:cp, 'worker-3') \gx
SELECT :g2 + 1 AS g3 \gset
SELECT generation = :g3 AS incremented, owner, state, source_cursor, read_base,
       read_count, applied_position
  FROM sog.checkpoint WHERE id = :cp;
-- No gap row: the gap can still be proven.
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '10');
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '20');

-- The successor dies before verifying: the next one gets the same plan.
SELECT generation, verdict, resume_from, verify_from, verify_to,
       expected_hash = pg_temp.h(pg_temp.range(11, 20)) AS expected_hash_ok,
       expected_count, gap_size, manifest_digest = :'want' AS evaluate_halt_ok, gap_id
  FROM pg_temp.claim(:cp, 'worker-4') \gx
SELECT :g3 + 1 AS g4 \gset
SELECT sog.verify_gap(:cp, :g4, pg_temp.h(pg_temp.range(11, 20)));
SELECT pg_temp.apply_batch(:cp, :g4, pg_temp.range(11, 20));
SELECT state, source_cursor, read_base, read_hash, read_count, applied_position
  FROM sog.checkpoint WHERE id = :cp;

--
-- 4. fail_closed: 21..22 applied, then read through 30 without a hash.
-- The claim records a gap (no_buffer_hash) instead of raising; the plan
-- has resume_from = applied, the gap size, and no digest.
--
SELECT pg_temp.apply_batch(:cp, :g4, '{21,22}');
SELECT sog.note_read(:cp, :g4, '30', NULL, NULL);
SELECT generation, verdict, resume_from, verify_from, verify_to, expected_hash,
       expected_count, gap_size, provider_token, manifest_digest,
       gap_id IS NOT NULL AS has_gap
  FROM pg_temp.claim(:cp, 'worker-5') \gx
SELECT :g4 + 1 AS g5 \gset
SELECT (plan).gap_id AS gap FROM plan_log ORDER BY n DESC LIMIT 1 \gset
SELECT :gap = max(id) AS gap_id_is_the_new_gap FROM sog.gap WHERE checkpoint_id = :cp;
SELECT generation = :g5 AS gap_generation, from_position, to_position, reason,
       verdict, resolved_at IS NULL AS open
  FROM sog.gap WHERE id = :gap;
SELECT generation = :g5 AS incremented, owner, state, source_cursor, applied_position
  FROM sog.checkpoint WHERE id = :cp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '22');
-- evaluate_halt raises for the same boundary; claim records it instead.
SELECT state, message FROM pg_temp.err($$SELECT sog.evaluate_halt('30', '22', NULL, 'k')$$);

-- A claim of a checkpoint that already failed closed: the newest open gap,
-- and no new gap.
SELECT generation, verdict, resume_from, gap_size, manifest_digest,
       gap_id = :gap AS same_gap
  FROM pg_temp.claim(:cp, 'worker-6');
SELECT :g5 + 1 AS g6 \gset
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
SELECT generation = :g6 AS incremented, owner, state FROM sog.checkpoint WHERE id = :cp;
SELECT sog.resolve_gap(:gap, 'accepted_loss', 'upstream re-sent 23..30 as 31..38');
SELECT state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :cp;

--
-- 5. unrecoverable_divergence: the read cursor behind applied_position.
-- note_read refuses that, so set it by hand (a restored checkpoint row).
-- The digest is SHA-256 of "DIVERGED"; a gap row (divergence) is recorded.
--
UPDATE sog.checkpoint SET source_cursor = '12' WHERE id = :cp;
SELECT generation, verdict, resume_from, verify_from, verify_to, gap_size,
       manifest_digest = pg_temp.sha('DIVERGED') AS digest_ok,
       manifest_digest = (sog.evaluate_halt('12', '22', NULL, 'k')).manifest_digest AS evaluate_halt_ok,
       gap_id IS NOT NULL AS has_gap
  FROM pg_temp.claim(:cp, 'worker-7');
SELECT :g6 + 1 AS g7 \gset
SELECT (plan).gap_id AS gap FROM plan_log ORDER BY n DESC LIMIT 1 \gset
SELECT :gap = max(id) AS gap_id_is_the_new_gap FROM sog.gap WHERE checkpoint_id = :cp;
SELECT generation = :g7 AS gap_generation, from_position, to_position, reason, verdict
  FROM sog.gap WHERE id = :gap;
SELECT state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :cp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '22');
-- Claimed again: the same verdict and gap, no new gap.
SELECT generation, verdict, resume_from, gap_size,
       manifest_digest = pg_temp.sha('DIVERGED') AS digest_ok, gap_id = :gap AS same_gap
  FROM pg_temp.claim(:cp, 'worker-8');
SELECT :g7 + 1 AS g8 \gset
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
SELECT sog.resolve_gap(:gap, 'replayed', NULL);
SELECT state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :cp;

-- Every claim logged its manifest, and each digest is evaluate_halt's for
-- the logged boundary (none for fail_closed).
SELECT m.kind, m.generation, m.owner, m.source_cursor, m.applied_position,
       m.buffer_hash IS NOT NULL AS has_hash, m.buffered_count, m.verdict,
       m.resume_from, m.gap_size,
       CASE WHEN m.verdict = 'fail_closed' THEN m.manifest_digest IS NULL
            ELSE m.manifest_digest = (sog.evaluate_halt(m.source_cursor, m.applied_position,
                                                        m.buffer_hash, 'k')).manifest_digest
       END AS digest_ok,
       (SELECT g.reason FROM sog.gap g WHERE g.id = m.gap_id) AS gap
  FROM sog.manifest_log m
 WHERE m.checkpoint_id = :cp
 ORDER BY m.id;
-- ... and the plans returned what was logged.
SELECT count(*) AS plans,
       count(*) FILTER (WHERE (p.plan).manifest_digest IS NOT DISTINCT FROM m.manifest_digest
                          AND (p.plan).verdict = m.verdict
                          AND (p.plan).resume_from IS NOT DISTINCT FROM m.resume_from
                          AND (p.plan).gap_size IS NOT DISTINCT FROM m.gap_size
                          AND (p.plan).gap_id IS NOT DISTINCT FROM m.gap_id) AS same
  FROM plan_log p
  JOIN sog.manifest_log m ON m.checkpoint_id = (p.plan).checkpoint_id
                         AND m.generation = (p.plan).generation AND m.kind = 'claim'
 WHERE (p.plan).checkpoint_id = :cp;

--
-- 6. Source identity.  A checkpoint registered with one: claiming with the
-- same or with none is aligned; with another is a divergence
-- (identity_changed gap), and the registered identity stays.
--
SELECT id AS icp FROM sog.register('ch-id', 'orders', '0', source_identity => 'cluster-a/4f1c') \gset
SELECT generation, verdict, resume_from, gap_id FROM pg_temp.claim(:icp, 'worker-1', 'cluster-a/4f1c');
SELECT pg_temp.apply_batch(:icp, 1, pg_temp.range(1, 5));
SELECT generation, verdict, resume_from, gap_id FROM pg_temp.claim(:icp, 'worker-2');
SELECT generation, verdict, resume_from, verify_from, verify_to, gap_size,
       manifest_digest = pg_temp.sha('DIVERGED') AS digest_ok,
       gap_id IS NOT NULL AS has_gap
  FROM pg_temp.claim(:icp, 'worker-3', 'cluster-b/77e0');
SELECT (plan).gap_id AS igap FROM plan_log ORDER BY n DESC LIMIT 1 \gset
SELECT :igap = max(id) AS gap_id_is_the_new_gap FROM sog.gap WHERE checkpoint_id = :icp;
SELECT generation, from_position, to_position, reason, verdict
  FROM sog.gap WHERE id = :igap;
SELECT source_identity, state, applied_position FROM sog.checkpoint WHERE id = :icp;
SELECT * FROM sog.verify_resume(pg_temp.m(pg_temp.last()), '5');
-- Nothing beyond applied is accepted now.
SELECT state FROM pg_temp.err($$SELECT sog.apply($1, $2, '6', pg_temp.d('6'))$$, :icp, 3);
-- Even the registered identity gets the open gap back, and no new one.
SELECT generation, verdict, gap_id = :igap AS same_gap
  FROM pg_temp.claim(:icp, 'worker-4', 'cluster-a/4f1c');
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :icp;
-- A halt of the failed-closed checkpoint hands over the open gap's verdict
-- too: its manifest must not let a successor resume.
SELECT verdict, resume_from, gap_size,
       manifest_digest = pg_temp.sha('DIVERGED') AS digest_ok
  FROM sog.halt(:icp, 4, NULL, NULL, NULL);
SELECT v.* FROM sog.verify_resume(sog.halt(:icp, 4, NULL, NULL, NULL), '5') v;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :icp;

-- A checkpoint registered without an identity records the first one a
-- claim brings; a later different one is a change.
SELECT id AS ncp FROM sog.register('ch-noid', 'orders', '0') \gset
SELECT generation, verdict, gap_id FROM pg_temp.claim(:ncp, 'worker-1', 'cluster-x/1');
SELECT source_identity, state FROM sog.checkpoint WHERE id = :ncp;
SELECT generation, verdict, gap_id IS NOT NULL AS has_gap FROM pg_temp.claim(:ncp, 'worker-2', 'cluster-x/1');
SELECT generation, verdict, gap_id IS NOT NULL AS has_gap FROM pg_temp.claim(:ncp, 'worker-3', 'cluster-y/2');
SELECT source_identity, state FROM sog.checkpoint WHERE id = :ncp;
SELECT reason, from_position, to_position FROM sog.gap WHERE checkpoint_id = :ncp;

--
-- 7. halt: a graceful handoff records the read boundary, evaluates it,
-- logs the manifest and releases ownership.
--
SELECT id AS hcp FROM sog.register('ch-h', 'orders', '1') \gset
SELECT * FROM pg_temp.err($$SELECT sog.halt(0, 1, '5', NULL, NULL)$$) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.halt(NULL, 1, '5', NULL, NULL)$$),
               (2, $$SELECT sog.halt($1, NULL, '5', NULL, NULL)$$),
               (3, $$SELECT sog.halt($1, 1, '5', NULL, NULL)$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :hcp) e
 ORDER BY q.ord;
-- (3: generation 1 was never claimed.)

-- The manifests of the halts below are kept in halts.
CREATE TEMP TABLE halts (n serial, m sog.manifest);

-- aligned, nothing read or applied: resume_from NULL.
SELECT generation AS hg FROM pg_temp.claim(:hcp, 'worker-1') \gset
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, NULL, NULL, NULL);
SELECT (m).verdict, (m).resume_from, (m).gap_size,
       (m).manifest_digest = pg_temp.sha('ALIGNED') AS digest_ok,
       (m).manifest_digest = (sog.evaluate_halt(NULL, NULL, NULL, 'k')).manifest_digest AS evaluate_halt_ok
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT generation, owner, state, source_cursor, applied_position
  FROM sog.checkpoint WHERE id = :hcp;

-- aligned at the applied position.
SELECT generation AS hg FROM pg_temp.claim(:hcp, 'worker-2') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:hcp, :hg, pg_temp.range(1, 5)));
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, '5', NULL, NULL);
SELECT (m).verdict, (m).resume_from, (m).gap_size,
       (m).manifest_digest = pg_temp.sha('ALIGNED') AS digest_ok
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT owner, state FROM sog.checkpoint WHERE id = :hcp;
SELECT v.* FROM halts h, sog.verify_resume(h.m, '5') v WHERE h.n = (SELECT max(n) FROM halts);
SELECT v.* FROM halts h, sog.verify_resume(h.m, '6') v WHERE h.n = (SELECT max(n) FROM halts);

-- gap with a hash: read through 12, applied through 8, the hash of 9..12.
SELECT generation AS hg FROM pg_temp.claim(:hcp, 'worker-3') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:hcp, :hg, pg_temp.range(6, 8)));
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, '12', pg_temp.h(pg_temp.range(9, 12)), 4);
SELECT (m).verdict, (m).resume_from, (m).gap_size,
       (m).manifest_digest = (sog.evaluate_halt('12', '8', pg_temp.h(pg_temp.range(9, 12)), 'k')).manifest_digest AS evaluate_halt_ok,
       (m).manifest_digest = pg_temp.sha(format('{"hash": "%s", "sink": "8", "src": "12"}',
                                                pg_temp.h(pg_temp.range(9, 12)))) AS digest_ok
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT (m).manifest_digest AS hwant FROM halts ORDER BY n DESC LIMIT 1 \gset
SELECT owner, state, source_cursor, read_base,
       read_hash = pg_temp.h(pg_temp.range(9, 12)) AS read_hash_ok, read_count, applied_position
  FROM sog.checkpoint WHERE id = :hcp;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :hcp;
SELECT v.* FROM halts h, sog.verify_resume(h.m, '8') v WHERE h.n = (SELECT max(n) FROM halts);
SELECT v.* FROM halts h, sog.verify_resume(h.m, '12') v WHERE h.n = (SELECT max(n) FROM halts);
-- The successor's claim carries the halt's manifest.
SELECT generation, verdict, resume_from, verify_from, verify_to, expected_count, gap_size,
       manifest_digest = :'hwant' AS same_digest_as_halt
  FROM pg_temp.claim(:hcp, 'worker-4');
SELECT :hg + 1 AS hg \gset
-- A halt while the gap is unverified keeps the recorded boundary, whatever
-- cursor it is given.
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, '50', NULL, NULL);
SELECT (m).verdict, (m).resume_from, (m).gap_size,
       (m).manifest_digest = :'hwant' AS same_digest
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT owner, state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :hcp;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :hcp;
SELECT generation AS hg FROM pg_temp.claim(:hcp, 'worker-5') \gset
SELECT sog.verify_gap(:hcp, :hg, pg_temp.h(pg_temp.range(9, 12)));
SELECT pg_temp.apply_batch(:hcp, :hg, pg_temp.range(9, 12));

-- fail_closed: a real gap without a hash is recorded, not raised.
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, '20', NULL, NULL);
SELECT (m).verdict, (m).resume_from, (m).gap_size, (m).manifest_digest
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT g.generation = :hg AS gap_generation, g.from_position, g.to_position, g.reason,
       g.verdict, g.resolved_at IS NULL AS open
  FROM sog.gap g WHERE g.checkpoint_id = :hcp;
SELECT owner, state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :hcp;
SELECT v.* FROM halts h, sog.verify_resume(h.m, '12') v WHERE h.n = (SELECT max(n) FROM halts);
SELECT * FROM pg_temp.err($$SELECT sog.evaluate_halt('20', '12', NULL, 'k')$$) \gx
SELECT generation, verdict, resume_from, gap_size, manifest_digest,
       gap_id = (SELECT max(id) FROM sog.gap WHERE checkpoint_id = :hcp) AS same_gap
  FROM pg_temp.claim(:hcp, 'worker-6');
SELECT :hg + 1 AS hg \gset
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :hcp;
SELECT sog.resolve_gap(max(id), 'replayed', 'replayed 13..20 from the archive')
  FROM sog.gap WHERE checkpoint_id = :hcp;

-- divergence: the source reports a cursor behind what was applied.
INSERT INTO halts (m) SELECT sog.halt(:hcp, :hg, '3', NULL, NULL);
SELECT (m).verdict, (m).resume_from, (m).gap_size,
       (m).manifest_digest = pg_temp.sha('DIVERGED') AS digest_ok
  FROM halts ORDER BY n DESC LIMIT 1;
SELECT from_position, to_position, reason, verdict
  FROM sog.gap WHERE checkpoint_id = :hcp AND resolved_at IS NULL;
SELECT owner, state, source_cursor, applied_position FROM sog.checkpoint WHERE id = :hcp;
SELECT v.* FROM halts h, sog.verify_resume(h.m, '12') v WHERE h.n = (SELECT max(n) FROM halts);
SELECT sog.resolve_gap(max(id), 'accepted_loss', 'source truncated; audited')
  FROM sog.gap WHERE checkpoint_id = :hcp;

-- A stale worker cannot halt.
SELECT * FROM pg_temp.err($$SELECT sog.halt($1, $2 - 1, '12', NULL, NULL)$$, :hcp, :hg) \gx

-- Every halt and claim logged its manifest; each digest is evaluate_halt's
-- for the logged boundary (none for fail_closed).
SELECT m.kind, m.generation, m.owner, m.source_cursor, m.applied_position,
       m.buffer_hash IS NOT NULL AS has_hash, m.buffered_count, m.verdict,
       m.resume_from, m.gap_size,
       CASE WHEN m.verdict = 'fail_closed' THEN m.manifest_digest IS NULL
            ELSE m.manifest_digest = (sog.evaluate_halt(m.source_cursor, m.applied_position,
                                                        m.buffer_hash, 'k')).manifest_digest
       END AS digest_ok,
       (SELECT g.reason FROM sog.gap g WHERE g.id = m.gap_id) AS gap
  FROM sog.manifest_log m
 WHERE m.checkpoint_id = :hcp
 ORDER BY m.id;
-- ... and the halts returned what was logged.
SELECT count(*) AS halts,
       count(*) FILTER (WHERE (h.m).manifest_digest IS NOT DISTINCT FROM l.manifest_digest
                          AND (h.m).verdict = l.verdict
                          AND (h.m).resume_from IS NOT DISTINCT FROM l.resume_from
                          AND (h.m).gap_size IS NOT DISTINCT FROM l.gap_size) AS same
  FROM (SELECT n, m, row_number() OVER (ORDER BY n) AS k FROM halts) h
  JOIN (SELECT *, row_number() OVER (ORDER BY id) AS k FROM sog.manifest_log
         WHERE checkpoint_id = :hcp AND kind = 'halt') l USING (k);

--
-- 8. halt with a NULL source_cursor: nothing new was read beyond the
-- recorded boundary.  With nothing recorded it is aligned at applied; with
-- a recorded boundary and hash, that boundary (and its hash) stand.
--
SELECT id AS ncp2 FROM sog.register('ch-hnull', 'orders', '2') \gset
SELECT generation AS ng FROM pg_temp.claim(:ncp2, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:ncp2, :ng, pg_temp.range(1, 12)));
SELECT verdict, resume_from, gap_size, manifest_digest = pg_temp.sha('ALIGNED') AS digest_ok
  FROM sog.halt(:ncp2, :ng, NULL, NULL, NULL);
SELECT generation AS ng FROM pg_temp.claim(:ncp2, 'worker-2') \gset
SELECT sog.note_read(:ncp2, :ng, '16', pg_temp.h(pg_temp.range(13, 16)), 4);
SELECT verdict, resume_from, gap_size,
       manifest_digest = (sog.evaluate_halt('16', '12', pg_temp.h(pg_temp.range(13, 16)), 'k')).manifest_digest AS evaluate_halt_ok
  FROM sog.halt(:ncp2, :ng, NULL, NULL, NULL);
SELECT state, source_cursor, read_base,
       read_hash = pg_temp.h(pg_temp.range(13, 16)) AS read_hash_ok, read_count, applied_position
  FROM sog.checkpoint WHERE id = :ncp2;
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :ncp2;

-- A negative buffered count is refused, as by note_read (22023).
SELECT id AS ccp FROM sog.register('ch-hcount', 'orders', '3') \gset
SELECT generation AS cg FROM pg_temp.claim(:ccp, 'worker-1') \gset
SELECT pg_temp.apply(:ccp, :cg, '5');
SELECT state, message FROM pg_temp.err($$SELECT sog.halt($1, $2, '9', pg_temp.h('{6,7,8,9}'), -4)$$, :ccp, :cg);
SELECT state, owner, source_cursor, read_count FROM sog.checkpoint WHERE id = :ccp;
