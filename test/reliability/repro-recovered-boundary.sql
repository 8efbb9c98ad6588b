-- test/reliability/repro-recovered-boundary.sql: a checkpoint that can never
-- move again, found by run.sh --portable --only timeouts --seconds 60
-- (2026-12-04, checkpoint 1 of that run) and reproduced here on both
-- editions alike (C: CREATE EXTENSION; portable: its plain script).
-- Not part of any suite; run as a superuser in a database holding either
-- edition and nothing else:
--
--   psql -X -d DB -f test/reliability/repro-recovered-boundary.sql
--
-- A recovery attempt applies events 11..15 above the applied position 10
-- and is fenced by a claim (concluded lost: receipts through 15 stay).
-- The source then loses 11..20; they are reported as retention and
-- accepted as lost.  The next worker notes (10, 25] over what the source
-- still holds (21..25, 5 records) and applies them: SG004, because the
-- boundary's check folds the stored receipts 11..15 too (10 records).  A
-- successor's verify_gap of the same hash answers true, and its apply is
-- refused the same way, for ever.  Both editions print the same answers.
\set VERBOSITY default
\pset footer off
CREATE TEMP TABLE ev AS SELECT g AS pos, sog.payload_digest(convert_to('e' || g, 'UTF8')) AS dig FROM generate_series(1, 40) g;
SELECT id AS cp FROM sog.register('repro', 'orders', 'p1', 'critical', 'kafka') \gset
-- worker A: applies 1..10, page token T10
SELECT generation AS g1 FROM sog.claim(:cp, 'A') \gset
BEGIN;
SELECT sog.apply_batch(:cp, :g1, (SELECT array_agg(pos::text::sog.position ORDER BY pos) FROM ev WHERE pos BETWEEN 1 AND 10),
                       (SELECT array_agg(dig ORDER BY pos) FROM ev WHERE pos BETWEEN 1 AND 10));
SELECT sog.commit_page(:cp, :g1, NULL, 'T10');
COMMIT;
-- the token expired: recovery from anchor 8, events 8..15 (11..15 above applied), no promote
SELECT id AS rid, state FROM sog.begin_recovery(:cp, :g1, 'T10', NULL, '8', true) \gset
BEGIN;
SELECT pos, sog.recovery_event(:rid, pos::text::sog.position, dig) FROM ev WHERE pos BETWEEN 8 AND 15 ORDER BY pos;
COMMIT;
-- worker B claims: the attempt is lost; applied stays 10, receipts through 15
SELECT generation AS g2, verdict, resume_from FROM sog.claim(:cp, 'B') \gset
SELECT :'verdict' AS verdict, :'resume_from' AS resume_from;
SELECT applied_position, recovered_through FROM sog.status WHERE checkpoint_id = :cp;
-- the source trimmed 11..20: reported as retention, accepted as lost
SELECT sog.report_gap(:cp, :g2, '20', 'retention') AS gap \gset
SELECT sog.resolve_gap(:gap, 'accepted_loss', 'the source trimmed them');
-- worker C: claims, reads what the source holds (21..25), notes it, applies it
SELECT generation AS g3, verdict, resume_from FROM sog.claim(:cp, 'C') \gset
SELECT :'verdict' AS verdict, :'resume_from' AS resume_from;
BEGIN;
SELECT sog.note_read(:cp, :g3, '25', (SELECT sog.buffer_hash(pos::text::sog.position, dig ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 25), 5);
COMMIT;
BEGIN;
SELECT sog.apply_batch(:cp, :g3, (SELECT array_agg(pos::text::sog.position ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 25),
                       (SELECT array_agg(dig ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 25));
COMMIT;
-- a successor: claim, verify the boundary with the same hash, apply again
SELECT generation AS g4, verdict, verify_from AS vfrom, verify_to AS vto, expected_count AS vcount FROM sog.claim(:cp, 'D') \gset
SELECT :'verdict' AS verdict, :'vfrom' AS verify_from, :'vto' AS verify_to, :'vcount' AS expected_count;
SELECT sog.verify_gap(:cp, :g4, (SELECT sog.buffer_hash(pos::text::sog.position, dig ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 25));
BEGIN;
SELECT sog.apply_batch(:cp, :g4, (SELECT array_agg(pos::text::sog.position ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 30),
                       (SELECT array_agg(dig ORDER BY pos) FROM ev WHERE pos BETWEEN 21 AND 30));
COMMIT;
SELECT applied_position, state FROM sog.status WHERE checkpoint_id = :cp;
