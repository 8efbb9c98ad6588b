--
-- skew: the temporal-skew rule on every path that can move the applied
-- position (README: the consumer guide, expired-token recovery and what each SQLSTATE tells the consumer; issue 8, defect 1)
--
-- "Nothing above an unverified or unresolved gap": while a checkpoint is
-- replaying (a predecessor's read boundary awaits verify_gap) or
-- failed_closed, no position above applied_position is applied, recorded or
-- advanced through, whichever function is called: apply and apply_batch
-- (tested in gaps.sql), recovery_event and promote (here), skip_gap (here).
-- The order a consumer follows when a replay and an expired token are both
-- pending is: verify the gap first, then recover.  The other order fails
-- safe: recovery_event raises SG004 and promote answers 'unresolved'.
-- Consumers here are named skew-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

--
-- 1. The silent loss of issue 8: a replay and an expired token pending, the
-- consumer recovers first with a page that lacks position 15, which the
-- predecessor had read.
--
SELECT id AS cp FROM sog.register('skew-recover-first', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.commit_page(:cp, :g, NULL, 'T1');
-- worker-1 read (10, 20], noted it with its hash, and crashed before applying.
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT generation AS g, verdict, verify_from, verify_to
  FROM sog.claim(:cp, 'worker-2') \gset
SELECT :'verdict' AS verdict, :'verify_from' AS verify_from, :'verify_to' AS verify_to;
-- Token T1 has expired too.  The wrong order: recovery before verification.
SELECT id AS rid, state FROM sog.begin_recovery(:cp, :g, 'T1', NULL, '10', true) \gset
SELECT :'state' AS attempt_state;
-- The anchor itself is at the applied position: verified.  The first event
-- above it is refused, as apply would refuse it, and nothing is recorded.
-- The page lacks 15: before issue 8 every event answered 'apply' and the
-- promotion below advanced to 20 and set the state to running, so 15 was
-- lost with no gap row.
SELECT pg_temp.page(:rid, '{10}');
SELECT * FROM pg_temp.err($$SELECT pg_temp.page($1, '{11,12,13,14,16,17,18,19,20}')$$, :rid) \gx
-- Nothing above applied was recorded, so nothing can be promoted; and even
-- the anchor-only page does not promote while the gap is unverified.
SELECT promoted, applied_position, provider_token, reason
  FROM sog.promote(:rid, 'T2', '20');
SELECT promoted, applied_position, provider_token, reason
  FROM sog.promote(:rid, 'T2', '10');
SELECT * FROM pg_temp.cp(:cp);
SELECT pg_temp.effects(:cp);
-- The right order: verify (10, 20] first ...
SELECT sog.verify_gap(:cp, :g, pg_temp.h(pg_temp.range(11, 20)));
-- ... then the same attempt re-reads and applies (10, 20] and promotes.
SELECT pg_temp.page(:rid, pg_temp.range(11, 20));
SELECT promoted, applied_position, provider_token, reason
  FROM sog.promote(:rid, 'T2', '20');
SELECT * FROM pg_temp.cp(:cp);
SELECT pg_temp.effects(:cp);

--
-- 2. A page that skips a position the predecessor read is caught by the
-- verification, whatever the order: the hash of (10, 20] without 15 does
-- not match, a gap covering the read range is recorded, and nothing is
-- promoted.
--
SELECT id AS cp FROM sog.register('skew-skipped-position', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.commit_page(:cp, :g, NULL, 'T1');
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT generation AS g FROM sog.claim(:cp, 'worker-2') \gset
SELECT id AS rid FROM sog.begin_recovery(:cp, :g, 'T1', NULL, '10', true) \gset
SELECT sog.verify_gap(:cp, :g,
                      pg_temp.h(pg_temp.range(11, 14) || pg_temp.range(16, 20)));
SELECT * FROM pg_temp.gaps(:cp);
SELECT pg_temp.page(:rid, '{10}');
SELECT * FROM pg_temp.err($$SELECT pg_temp.ev($1, '11')$$, :rid) \gx
SELECT promoted, applied_position, reason FROM sog.promote(:rid, 'T2', '10');
SELECT * FROM pg_temp.cp(:cp);

--
-- 3. Receipts another attempt wrote above the applied position (effects
-- durable, never promoted) are not "duplicate" while the successor's gap is
-- unverified: SG004 too, until verify_gap.
--
-- The claim below prints a NOTICE that names the attempt and the
-- checkpoint by id: ids of this section start at 20000, so that they do not
-- depend on how many the tests before it created.
SELECT setval(pg_get_serial_sequence('sog.checkpoint', 'id'), 20000) IS NOT NULL AS ids_set,
       setval(pg_get_serial_sequence('sog.recovery', 'id'), 20000) IS NOT NULL AS attempt_ids_set;
SELECT id AS cp FROM sog.register('skew-duplicate', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.commit_page(:cp, :g, NULL, 'T1');
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
-- worker-1's own recovery writes 11 and 12, then it crashes before promote.
SELECT id AS rid FROM sog.begin_recovery(:cp, :g, 'T1', NULL, '10', true) \gset
SELECT pg_temp.page(:rid, '{10,11,12}');
SELECT generation AS g, verdict FROM sog.claim(:cp, 'worker-2') \gset
SELECT :'verdict' AS verdict;
SELECT id AS rid FROM sog.begin_recovery(:cp, :g, 'T1', NULL, '10', true) \gset
SELECT pg_temp.page(:rid, '{10}');
SELECT * FROM pg_temp.err($$SELECT pg_temp.ev($1, '11')$$, :rid) \gx
SELECT sog.verify_gap(:cp, :g, pg_temp.h(pg_temp.range(11, 20)));
SELECT pg_temp.page(:rid, pg_temp.range(11, 20));
SELECT promoted, applied_position, reason FROM sog.promote(:rid, 'T2', '20');
SELECT pg_temp.effects(:cp);
SELECT * FROM pg_temp.cp(:cp);

--
-- 4. An attempt begun while running, whose checkpoint then gets a gap: its
-- events above applied are refused and its promotion is 'unresolved'.
--
SELECT id AS cp FROM sog.register('skew-gap-after-begin', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.commit_page(:cp, :g, NULL, 'T1');
SELECT id AS rid FROM sog.begin_recovery(:cp, :g, 'T1', NULL, '10', true) \gset
SELECT pg_temp.page(:rid, '{10,11}');
-- The broker trimmed (11, 30] before the worker could read it.
SELECT sog.report_gap(:cp, :g, '30', 'retention') > 0 AS reported;
SELECT * FROM pg_temp.err($$SELECT pg_temp.ev($1, '12')$$, :rid) \gx
SELECT promoted, applied_position, reason FROM sog.promote(:rid, 'T2', '11');
SELECT * FROM pg_temp.cp(:cp);

--
-- 5. skip_gap (telemetry) moves the applied position to the read cursor;
-- what it skips is always recorded as a gap, resolved as skipped.
--
-- 5a. Replaying: the unverified range becomes a gap row (before issue 8 it
-- was skipped without one).
SELECT id AS cp FROM sog.register('skew-skip-replaying', 'metrics', '0', 'telemetry') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT generation AS g, verdict FROM sog.claim(:cp, 'worker-2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.skip_gap(:cp, :g, 'metrics: the last 10 samples may be dropped');
SELECT * FROM pg_temp.gaps(:cp);
SELECT * FROM pg_temp.cp(:cp);
-- 5b. Running with a noted buffer: the buffered records are skipped, and
-- recorded.
SELECT sog.note_read(:cp, :g, '25', pg_temp.h(pg_temp.range(21, 25)), 5);
SELECT sog.skip_gap(:cp, :g, 'dropping the buffer');
SELECT * FROM pg_temp.gaps(:cp);
-- 5c. Failed closed: the open gap covers the cursor; no second row.
SELECT sog.note_read(:cp, :g, '30', NULL, NULL);
SELECT generation AS g, verdict FROM sog.claim(:cp, 'worker-3') \gset
SELECT :'verdict' AS verdict;
SELECT sog.skip_gap(:cp, :g, 'no hash was kept');
SELECT * FROM pg_temp.gaps(:cp);
SELECT * FROM pg_temp.cp(:cp);
-- 5d. Nothing to skip: nothing recorded.
SELECT sog.skip_gap(:cp, :g, 'nothing');
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;

--
-- 6. Records that were read - noted with their count, and after a handoff
-- verified - are not skipped: an event above the read cursor while some of
-- them are not applied is SG004 (found by the JetStream demo's consumer
-- resuming from its own cursor: before, 2 and 3 were lost without a gap).
--
SELECT id AS cp FROM sog.register('skew-skip-verified', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.apply(:cp, :g, '1');
SELECT sog.note_read(:cp, :g, '3', pg_temp.h('{2,3}'), 2);
SELECT generation AS g, verdict FROM sog.claim(:cp, 'worker-2') \gset
SELECT sog.verify_gap(:cp, :g, pg_temp.h('{2,3}'));
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '4')$$, :cp, :g) \gx
SELECT state FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{2,4}')$$, :cp, :g);
-- Applied in order, the boundary is crossed without complaint.
SELECT pg_temp.apply_batch(:cp, :g, '{2,3,4}');
SELECT * FROM pg_temp.cp(:cp);
-- The same for a worker's own noted buffer, across two batches of one
-- sink transaction.
SELECT sog.note_read(:cp, :g, '10', pg_temp.h(pg_temp.range(5, 10)), 6);
BEGIN;
SELECT pg_temp.apply_batch(:cp, :g, '{5,6,7}');
SELECT state FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{8,9,11}')$$, :cp, :g);
SELECT pg_temp.apply_batch(:cp, :g, '{8,9,10,11}');
COMMIT;
-- A sparse stream: the count, not the positions, says what was held.
SELECT sog.note_read(:cp, :g, '30', pg_temp.h('{15,20,30}'), 3);
SELECT state FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{15,31}')$$, :cp, :g);
SELECT pg_temp.apply_batch(:cp, :g, '{15,20,30,31}');
-- Without a count nothing can be told, and nothing is refused.
SELECT sog.note_read(:cp, :g, '40', NULL, NULL);
SELECT pg_temp.apply_batch(:cp, :g, '{41}');
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
