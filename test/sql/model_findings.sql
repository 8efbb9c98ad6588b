--
-- model_findings: the silent losses the spin model of the protocol found in
-- the fixed 1.0 protocol (model/README.md, F1 and F3), and one of the same
-- kind on the apply path, each as the SQL a consumer could send.  Before
-- the fix each sequence lost a record with no gap row; now each is refused
-- (SG004, 'unresolved') or fails closed, and the consumer's right order
-- still works.  Consumers here are named model-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

--
-- 1. The apply path: a read boundary closes exactly at its cursor.  The
-- worker noted (0, 3] (records 1, 2, 3) and applies 1 and 3: record 2
-- would be skipped.  Before, only an event above the cursor was checked.
--
SELECT id AS a FROM sog.register('model-apply', 'orders', '0') \gset
SELECT generation AS ga FROM sog.claim(:a, 'w1') \gset
SELECT sog.note_read(:a, :ga, '3', pg_temp.h('{1,2,3}'), 3);
SELECT pg_temp.apply(:a, :ga, '1') AS one;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '3')$$, :a, :ga) \gx
-- the same records with another payload for 2: the hash tells
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{2,3}',
        ARRAY[pg_temp.d('2 changed'), pg_temp.d('3')])$$, :a, :ga) \gx
-- a consumer that applies what it noted closes the boundary
SELECT pg_temp.apply_batch(:a, :ga, '{2,3}') AS two_three;
SELECT applied_position, source_cursor, read_hash IS NULL AS boundary_closed
  FROM sog.checkpoint WHERE id = :a;

--
-- 2. F1: a recovery promotes past the worker's own noted records.  The
-- worker noted (0, 3], applied 1; its token expired; record 2 is gone from
-- the source, so the recovery page (anchor 1, inclusive) is {1, 3}.
-- Promoting would move applied to 3 and clear the read hash unverified.
--
SELECT id AS b FROM sog.register('model-recover', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS gb FROM sog.claim(:b, 'w1') \gset
SELECT sog.commit_page(:b, :gb, NULL, 'T1');
SELECT sog.note_read(:b, :gb, '3', pg_temp.h('{1,2,3}'), 3);
SELECT pg_temp.apply(:b, :gb, '1') AS one;
SELECT id AS rb FROM sog.begin_recovery(:b, :gb, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rb, '{1,3}') AS page_without_2;
SELECT promoted, applied_position, reason FROM sog.promote(:rb, 'T2', '3');
SELECT * FROM pg_temp.cp(:b);
-- the worker applies its buffer (3 is already recorded by the attempt) and
-- promotes again: the boundary's records all applied, by their hash
SELECT pg_temp.apply_batch(:b, :gb, '{2,3}') AS buffer;
SELECT promoted, applied_position, reason FROM sog.promote(:rb, 'T2', '3');
SELECT pg_temp.effects(:b), (pg_temp.cp(:b)).*;

-- a page that re-reads the whole boundary promotes at once
SELECT id AS c FROM sog.register('model-recover', 'orders', '1', provider => 'kafka') \gset
SELECT generation AS gc FROM sog.claim(:c, 'w1') \gset
SELECT sog.commit_page(:c, :gc, NULL, 'T1');
SELECT sog.note_read(:c, :gc, '3', pg_temp.h('{1,2,3}'), 3);
SELECT pg_temp.apply(:c, :gc, '1') AS one;
SELECT id AS rc FROM sog.begin_recovery(:c, :gc, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rc, '{1,2,3,4}') AS whole_boundary_and_more;
SELECT promoted, applied_position, reason FROM sog.promote(:rc, 'T2', '4');
-- and a page that stays below the cursor leaves the boundary for later
SELECT id AS d FROM sog.register('model-recover', 'orders', '2', provider => 'kafka') \gset
SELECT generation AS gd FROM sog.claim(:d, 'w1') \gset
SELECT sog.commit_page(:d, :gd, NULL, 'T1');
SELECT sog.note_read(:d, :gd, '3', pg_temp.h('{1,2,3}'), 3);
SELECT pg_temp.apply(:d, :gd, '1') AS one;
SELECT id AS rd FROM sog.begin_recovery(:d, :gd, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rd, '{1,2}') AS below_cursor;
SELECT promoted, applied_position, reason, generation AS gd2 FROM sog.promote(:rd, 'T2', '2') \gset
SELECT :'promoted' AS promoted, :'applied_position' AS applied, :'reason' AS reason;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '4')$$, :d, :gd2) \gx
SELECT pg_temp.apply_batch(:d, :gd2, '{3,4}') AS rest;

--
-- 3. F3: a retention loss reported while replaying, then resolved.  W1
-- noted (nothing, 3] with a hash and crashed; W2 is replaying; record 1 is
-- gone, and W2 reports it (gap (nothing, 1]).  Resolving that gap said
-- nothing about 2 and 3: before, the checkpoint went back to running with
-- the boundary cleared, and a record could be lost unverified.
--
SELECT id AS e FROM sog.register('model-resolve', 'orders', '0') \gset
SELECT generation AS ge1 FROM sog.claim(:e, 'w1') \gset
SELECT sog.note_read(:e, :ge1, '3', pg_temp.h('{1,2,3}'), 3);
SELECT generation AS ge2, verdict FROM sog.claim(:e, 'w2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.report_gap(:e, :ge2, '1', 'retention', 'record 1 trimmed') AS gap_id \gset
SELECT sog.resolve_gap(:gap_id, 'accepted_loss', 'record 1 is gone; the business agreed');
SELECT state, source_cursor, read_hash IS NOT NULL AS boundary_kept
  FROM sog.checkpoint WHERE id = :e;
-- nothing is applied before the rest is verified
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '2')$$, :e, :ge2) \gx
-- the re-read {2, 3} does not hash like {1, 2, 3}: a gap through the cursor
SELECT sog.verify_gap(:e, :ge2, pg_temp.h('{2,3}')) AS verified;
SELECT from_position, to_position, reason, resolution FROM pg_temp.gaps(:e);
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'the re-read differs: audited')
  FROM sog.gaps(:e) WHERE resolution IS NULL;
-- that gap covered the boundary: running, the boundary cleared
SELECT state, source_cursor, read_hash IS NULL AS boundary_cleared
  FROM sog.checkpoint WHERE id = :e;
SELECT pg_temp.apply_batch(:e, :ge2, '{2,3,4}') AS after_the_loss;

-- a gap that covers the whole boundary (no_buffer_hash) resolves to running
SELECT id AS f FROM sog.register('model-resolve', 'orders', '1') \gset
SELECT generation AS gf1 FROM sog.claim(:f, 'w1') \gset
SELECT sog.note_read(:f, :gf1, '3', NULL, 3);
SELECT generation AS gf2, verdict FROM sog.claim(:f, 'w2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.resolve_gap(max(gap_id), 'replayed', 'replayed from the source')
  FROM sog.gaps(:f) WHERE resolution IS NULL;
SELECT state, read_hash IS NULL AS boundary_cleared FROM sog.checkpoint WHERE id = :f;
