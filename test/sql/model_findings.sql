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
-- (one sink transaction: a boundary is applied whole in the transaction that reaches its cursor, read_boundary)
BEGIN;
SELECT pg_temp.apply(:a, :ga, '1') AS one;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '3')$$, :a, :ga) \gx
-- the same records with another payload for 2: the hash tells
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{2,3}',
        ARRAY[pg_temp.d('2 changed'), pg_temp.d('3')])$$, :a, :ga) \gx
-- a consumer that applies what it noted closes the boundary
SELECT pg_temp.apply_batch(:a, :ga, '{2,3}') AS two_three;
COMMIT;
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
BEGIN;
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
COMMIT;

-- a page that re-reads the whole boundary promotes at once
SELECT id AS c FROM sog.register('model-recover', 'orders', '1', provider => 'kafka') \gset
SELECT generation AS gc FROM sog.claim(:c, 'w1') \gset
SELECT sog.commit_page(:c, :gc, NULL, 'T1');
SELECT sog.note_read(:c, :gc, '3', pg_temp.h('{1,2,3}'), 3);
BEGIN;
SELECT pg_temp.apply(:c, :gc, '1') AS one;
SELECT id AS rc FROM sog.begin_recovery(:c, :gc, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rc, '{1,2,3,4}') AS whole_boundary_and_more;
SELECT promoted, applied_position, reason FROM sog.promote(:rc, 'T2', '4');
COMMIT;
-- and a page that ends below the cursor cannot be checked against the
-- boundary's hash (F4, section 6): unresolved until the buffer is applied
SELECT id AS d FROM sog.register('model-recover', 'orders', '2', provider => 'kafka') \gset
SELECT generation AS gd FROM sog.claim(:d, 'w1') \gset
SELECT sog.commit_page(:d, :gd, NULL, 'T1');
SELECT sog.note_read(:d, :gd, '3', pg_temp.h('{1,2,3}'), 3);
BEGIN;
SELECT pg_temp.apply(:d, :gd, '1') AS one;
SELECT id AS rd FROM sog.begin_recovery(:d, :gd, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rd, '{1,2}') AS below_cursor;
SELECT promoted, applied_position, reason FROM sog.promote(:rd, 'T2', '2');
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '4')$$, :d, :gd) \gx
SELECT pg_temp.apply_batch(:d, :gd, '{2,3,4}') AS buffer;
SELECT promoted, applied_position, reason FROM sog.promote(:rd, 'T2', '2');
COMMIT;

--
-- 3. F3: a retention loss reported while replaying.  W1 noted (nothing, 3]
-- with a hash and crashed; W2 is replaying; record 1 is gone, and W2
-- reports it.  Before, resolving that gap (nothing, 1] returned the
-- checkpoint to running with the boundary cleared: 2 and 3 were applied
-- unverified.  Now report_gap also records (1, 3] as unverified (the hash
-- chains through the lost record, so it can never verify), and the
-- checkpoint runs again only when both are resolved.
--
SELECT id AS e FROM sog.register('model-resolve', 'orders', '0') \gset
SELECT generation AS ge1 FROM sog.claim(:e, 'w1') \gset
SELECT sog.note_read(:e, :ge1, '3', pg_temp.h('{1,2,3}'), 3);
SELECT generation AS ge2, verdict FROM sog.claim(:e, 'w2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.report_gap(:e, :ge2, '1', 'retention', 'record 1 trimmed') AS gap_id \gset
SELECT from_position, to_position, reason, resolution FROM pg_temp.gaps(:e);
SELECT sog.resolve_gap(:gap_id, 'accepted_loss', 'record 1 is gone; the business agreed');
SELECT state, source_cursor, read_hash IS NOT NULL AS boundary_kept
  FROM sog.checkpoint WHERE id = :e;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '2')$$, :e, :ge2) \gx
SELECT sog.resolve_gap(max(gap_id), 'replayed', 'the consumer re-reads 2 and 3 from the stream')
  FROM sog.gaps(:e) WHERE resolution IS NULL;
SELECT state, source_cursor, read_hash IS NULL AS boundary_cleared
  FROM sog.checkpoint WHERE id = :e;
SELECT pg_temp.apply_batch(:e, :ge2, '{2,3,4}') AS after_the_loss;

-- a recovery's retention refusal inside the owner's noted boundary does
-- the same: (1, 2] is proven gone from the source, the rest (2, 3] is
-- recorded as unverified; once both are resolved, the owner (which still
-- holds 2 and 3) applies its buffer, and the boundary closes by its hash
SELECT id AS h FROM sog.register('model-resolve', 'orders', '2', provider => 'kafka') \gset
SELECT generation AS gh FROM sog.claim(:h, 'w1') \gset
SELECT sog.commit_page(:h, :gh, NULL, 'T1');
SELECT sog.note_read(:h, :gh, '3', pg_temp.h('{1,2,3}'), 3);
BEGIN;
SELECT pg_temp.apply(:h, :gh, '1') AS one;
SELECT state, failure FROM sog.begin_recovery(:h, :gh, 'T1', NULL, '1', true, retained_from => '3');
SELECT from_position, to_position, reason FROM pg_temp.gaps(:h);
SELECT sog.resolve_gap(gap_id, 'replayed', 'the owner holds them in its buffer')
  FROM sog.gaps(:h) WHERE resolution IS NULL ORDER BY gap_id;
SELECT state FROM sog.checkpoint WHERE id = :h;
SELECT pg_temp.apply_batch(:h, :gh, '{2,3}') AS from_its_buffer;
COMMIT;

-- a gap that covers the whole boundary (no_buffer_hash) resolves to running
SELECT id AS f FROM sog.register('model-resolve', 'orders', '1') \gset
SELECT generation AS gf1 FROM sog.claim(:f, 'w1') \gset
SELECT sog.note_read(:f, :gf1, '3', NULL, 3);
SELECT generation AS gf2, verdict FROM sog.claim(:f, 'w2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.resolve_gap(max(gap_id), 'replayed', 'replayed from the source')
  FROM sog.gaps(:f) WHERE resolution IS NULL;
SELECT state, read_hash IS NULL AS boundary_cleared FROM sog.checkpoint WHERE id = :f;

-- and so does a reported loss that covers the boundary through its cursor,
-- even with a claim in between (found by the reliability harness: the
-- first version of the F3 fix counted only gaps since the last claim)
SELECT id AS k FROM sog.register('model-resolve', 'orders', '3') \gset
SELECT generation AS gk1 FROM sog.claim(:k, 'w1') \gset
SELECT pg_temp.apply_batch(:k, :gk1, pg_temp.range(1, 5)) AS first_five;
SELECT sog.note_read(:k, :gk1, '10', pg_temp.h(pg_temp.range(6, 10)), 5);
SELECT generation AS gk2, verdict FROM sog.claim(:k, 'w2') \gset
SELECT :'verdict' AS verdict;
SELECT sog.report_gap(:k, :gk2, '10', 'retention', 'trimmed by the broker') > 0 AS reported;
SELECT verdict FROM sog.claim(:k, 'w3');
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-1: gone') FROM sog.gaps(:k);
SELECT state, read_hash IS NULL AS boundary_cleared FROM sog.checkpoint WHERE id = :k;
SELECT verdict, resume_from FROM sog.claim(:k, 'w4');

--
-- 4. prune_receipts under an open recovery attempt: receipts at or above
-- its anchor are what it verifies against; pruning them failed the attempt
-- closed (found by the reliability harness).  Now refused.
--
SELECT id AS p FROM sog.register('model-prune', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS gp FROM sog.claim(:p, 'w1') \gset
SELECT pg_temp.apply_batch(:p, :gp, pg_temp.range(1, 10)) AS ten;
SELECT sog.commit_page(:p, :gp, NULL, 'T1');
SELECT id AS rp FROM sog.begin_recovery(:p, :gp, 'T1', NULL, '8', true) \gset
SELECT * FROM pg_temp.err($$SELECT sog.prune_receipts($1, '9')$$, :p) \gx
SELECT * FROM pg_temp.err($$SELECT sog.prune_receipts($1, '8')$$, :p) \gx
SELECT sog.prune_receipts(:p, '7') AS below_the_anchor;
SELECT pg_temp.page(:rp, '{8,9,10,11}') AS page;
SELECT promoted, reason FROM sog.promote(:rp, 'T2', '11');
SELECT sog.prune_receipts(:p, '9') AS after_the_attempt;

--
-- 5. Found by review.  (a) Pruning receipts of an open boundary turned its
-- check off: now refused, and retention stops at the boundary's base.
--
SELECT id AS q FROM sog.register('model-review', 'orders', '0') \gset
SELECT generation AS gq FROM sog.claim(:q, 'w1') \gset
SELECT pg_temp.apply_batch(:q, :gq, '{1,2}') AS first_two;
SELECT sog.note_read(:q, :gq, '10', pg_temp.h(pg_temp.range(3, 10)), 8);
BEGIN;
SELECT pg_temp.apply_batch(:q, :gq, '{3,4,5}') AS part;
SELECT * FROM pg_temp.err($$SELECT sog.prune_receipts($1, '4')$$, :q) \gx
SELECT sog.set_retention(checkpoint_id => :q, keep_positions => 0);
SELECT sog.retention_horizon(:q) AS horizon_at_the_base;
SELECT sog.prune_due(:q) AS pruned_through_the_base;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '10')$$, :q, :gq) \gx
SELECT pg_temp.apply_batch(:q, :gq, pg_temp.range(6, 10)) AS rest;
COMMIT;
SELECT sog.set_retention(checkpoint_id => :q);

-- (b) A count-only boundary: a loss inside it records the rest, so
-- resolving the loss does not let 10 skip 5..9.
SELECT id AS r FROM sog.register('model-review', 'orders', '1') \gset
SELECT generation AS gr FROM sog.claim(:r, 'w1') \gset
SELECT pg_temp.apply_batch(:r, :gr, '{1,2}') AS first_two;
SELECT sog.note_read(:r, :gr, '10', NULL, 8);
SELECT sog.report_gap(:r, :gr, '4', 'retention') > 0 AS reported;
SELECT from_position, to_position, reason FROM pg_temp.gaps(:r);
SELECT sog.resolve_gap(min(gap_id), 'accepted_loss', '3 and 4 are gone')
  FROM sog.gaps(:r) WHERE resolution IS NULL;
SELECT * FROM pg_temp.err($$SELECT pg_temp.apply($1, $2, '10')$$, :r, :gr) \gx

-- (c) Duplicates inside a batch that closes a boundary are answered false,
-- as before (they were folded into the hash and raised 22023).
SELECT id AS t FROM sog.register('model-review', 'orders', '2') \gset
SELECT generation AS gt FROM sog.claim(:t, 'w1') \gset
SELECT pg_temp.apply_batch(:t, :gt, pg_temp.range(1, 4)) AS first_four;
SELECT sog.note_read(:t, :gt, '7', pg_temp.h('{5,6,7}'), 3);
SELECT pg_temp.apply_batch(:t, :gt, '{4,5,6,6,7}') AS with_duplicates;

-- (d) Receipts an unpromoted recovery attempt recorded inside the boundary
-- count when an apply closes it (they gave a false SG004).
SELECT id AS u FROM sog.register('model-review', 'orders', '3', provider => 'kafka') \gset
SELECT generation AS gu FROM sog.claim(:u, 'w1') \gset
SELECT pg_temp.apply(:u, :gu, '1') AS one;
SELECT sog.commit_page(:u, :gu, NULL, 'T1');
SELECT sog.note_read(:u, :gu, '4', pg_temp.h('{2,3,4}'), 3);
SELECT id AS ru FROM sog.begin_recovery(:u, :gu, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:ru, '{1,2,3}') AS attempt_records_2_3;
SELECT pg_temp.apply_batch(:u, :gu, '{3,4}') AS closes_with_the_attempts_receipts;
SELECT pg_temp.effects(:u);

--
-- 6. F4 (found by the model after the F1 fix): a recovery page that ends
-- inside the read boundary.  The worker noted (1, 4] (records 2, 3, 4) and
-- applied 1; its token expired; record 2 was compacted away, so the page
-- from anchor 1 (inclusive) is {1, 3}.  The page ends below the cursor, so
-- the F1 check did not run: promote moved applied to 3 and record 2, noted
-- and never applied, was skipped with no gap row.  A prefix of a boundary
-- cannot be checked against the hash of the whole, so such a page is now
-- answered 'unresolved' until the worker applies its buffer.
--
SELECT id AS v FROM sog.register('model-partial', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS gv FROM sog.claim(:v, 'w1') \gset
SELECT sog.commit_page(:v, :gv, NULL, 'T1');
SELECT pg_temp.apply(:v, :gv, '1') AS one;
SELECT sog.note_read(:v, :gv, '4', pg_temp.h('{2,3,4}'), 3);
SELECT id AS rv FROM sog.begin_recovery(:v, :gv, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rv, '{1,3}') AS page_without_2;
SELECT promoted, applied_position, reason FROM sog.promote(:rv, 'T2', '3');
SELECT * FROM pg_temp.cp(:v);
-- the worker applies its buffer (3 is already recorded by the attempt),
-- which closes the boundary by its hash, and the promote goes through
SELECT pg_temp.apply_batch(:v, :gv, '{2,3,4}') AS buffer;
SELECT promoted, applied_position, reason FROM sog.promote(:rv, 'T2', '3');
SELECT pg_temp.effects(:v), (pg_temp.cp(:v)).*;
-- with no hash and no count nothing can be checked, but a short page that
-- ends inside the boundary would still leave it partly applied: it does
-- not promote either (1.1 promoted it)
SELECT id AS w FROM sog.register('model-partial', 'orders', '1', provider => 'kafka') \gset
SELECT generation AS gw FROM sog.claim(:w, 'w1') \gset
SELECT sog.commit_page(:w, :gw, NULL, 'T1');
SELECT pg_temp.apply(:w, :gw, '1') AS one;
SELECT sog.note_read(:w, :gw, '4', NULL, NULL);
SELECT id AS rw FROM sog.begin_recovery(:w, :gw, 'T1', NULL, '1', true) \gset
SELECT pg_temp.page(:rw, '{1,2}') AS short_page;
SELECT promoted, applied_position, reason FROM sog.promote(:rw, 'T2', '2');

--
-- 7. L1 (a liveness note of the model): after an operator accepted a
-- retention loss, every recovery of the expired token was refused again
-- with 'retention' (retained_from is still above the first record the
-- anchor's seek needs) and recorded the same loss as a new open gap: the
-- checkpoint could never move on.  Now the accepted loss lifts the refusal;
-- the page starts at retained_from (an inclusive seek cannot return the
-- gone anchor) and promote moves applied past the accepted gap.
--
SELECT id AS x FROM sog.register('model-accepted', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS gx FROM sog.claim(:x, 'w1') \gset
SELECT sog.commit_page(:x, :gx, NULL, 'T1');
SELECT pg_temp.apply(:x, :gx, '1') AS one;
SELECT state, failure FROM sog.begin_recovery(:x, :gx, 'T1', NULL, '1', false, retained_from => '5');
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-7: 2..4 expired at the broker')
  FROM sog.gaps(:x);
SELECT id AS rx FROM sog.begin_recovery(:x, :gx, 'T1', NULL, '1', false, retained_from => '5') \gset
SELECT state, failure FROM sog.recovery WHERE id = :rx;
SELECT pg_temp.page(:rx, '{5,6}') AS page;
SELECT promoted, applied_position, reason FROM sog.promote(:rx, 'T2', '6');
SELECT pg_temp.effects(:x), (pg_temp.cp(:x)).*;
-- an inclusive anchor (Kafka, JetStream by sequence): the page starts at
-- retained_from, and a page that starts below it is still a coverage gap
SELECT id AS y FROM sog.register('model-accepted', 'orders', '1', provider => 'kafka') \gset
SELECT generation AS gy FROM sog.claim(:y, 'w1') \gset
SELECT sog.commit_page(:y, :gy, NULL, 'T1');
SELECT pg_temp.apply(:y, :gy, '1') AS one;
SELECT state, failure FROM sog.begin_recovery(:y, :gy, 'T1', NULL, '1', true, retained_from => '5');
SELECT from_position, to_position, reason FROM pg_temp.gaps(:y);
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-8: gone') FROM sog.gaps(:y);
SELECT id AS ry FROM sog.begin_recovery(:y, :gy, 'T1', NULL, '1', true, retained_from => '5') \gset
SELECT pg_temp.page(:ry, '{5,6}') AS page;
SELECT promoted, applied_position, reason FROM sog.promote(:ry, 'T2', '6');
-- a loss larger than the accepted one is refused and recorded next to it
SELECT id AS z FROM sog.register('model-accepted', 'orders', '2', provider => 'kafka') \gset
SELECT generation AS gz FROM sog.claim(:z, 'w1') \gset
SELECT sog.commit_page(:z, :gz, NULL, 'T1');
SELECT pg_temp.apply(:z, :gz, '1') AS one;
SELECT state, failure FROM sog.begin_recovery(:z, :gz, 'T1', NULL, '1', false, retained_from => '5');
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-9: gone') FROM sog.gaps(:z);
SELECT state, failure FROM sog.begin_recovery(:z, :gz, 'T1', NULL, '1', false, retained_from => '7');
SELECT from_position, to_position, reason, resolution IS NOT NULL AS resolved FROM pg_temp.gaps(:z);
-- and an inclusive page that starts below retained_from is a coverage gap
SELECT id AS q2 FROM sog.register('model-accepted', 'orders', '3', provider => 'kafka') \gset
SELECT generation AS gq2 FROM sog.claim(:q2, 'w1') \gset
SELECT sog.commit_page(:q2, :gq2, NULL, 'T1');
SELECT pg_temp.apply(:q2, :gq2, '1') AS one;
SELECT failure FROM sog.begin_recovery(:q2, :gq2, 'T1', NULL, '1', true, retained_from => '5');
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-10: gone') FROM sog.gaps(:q2);
SELECT id AS rq2 FROM sog.begin_recovery(:q2, :gq2, 'T1', NULL, '1', true, retained_from => '5') \gset
SELECT pg_temp.page(:rq2, '{4,5}') AS below_retained_from;

-- a chain of accepted losses counts as one (found by the Python consumer):
-- a hash mismatch (1, 3] accepted, then a retention loss reported above it
-- (3, 5] accepted; the recovery with retained_from 6 needs (1, 5] accepted,
-- which the two are together.  Before, only one retention gap that starts
-- at the applied position counted: refused, and (1, 5] recorded again.
SELECT id AS ch FROM sog.register('model-accepted', 'orders', '4', provider => 'kafka') \gset
SELECT generation AS gch1 FROM sog.claim(:ch, 'w1') \gset
SELECT sog.commit_page(:ch, :gch1, NULL, 'T1');
SELECT pg_temp.apply(:ch, :gch1, '1') AS one;
SELECT sog.note_read(:ch, :gch1, '3', pg_temp.h('{2,3}'), 2);
SELECT generation AS gch2 FROM sog.claim(:ch, 'w2') \gset
SELECT sog.verify_gap(:ch, :gch2, repeat('0', 64)) AS replay_matches;
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-11: 2 and 3 changed') FROM sog.gaps(:ch);
SELECT sog.report_gap(:ch, :gch2, '5', 'retention', 'trimmed') > 0 AS reported;
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-12: 4 and 5 gone') FROM sog.gaps(:ch);
SELECT from_position, to_position, reason, resolution FROM pg_temp.gaps(:ch);
SELECT id AS rch, state FROM sog.begin_recovery(:ch, :gch2, 'T1', NULL, '1', false, retained_from => '6') \gset
SELECT :'state' AS attempt;
SELECT pg_temp.page(:rch, '{6,7}') AS page;
SELECT promoted, applied_position, reason FROM sog.promote(:rch, 'T2', '7');
SELECT count(*) AS gaps FROM sog.gaps(:ch);
SELECT generation AS gch3 FROM sog.checkpoint WHERE id = :ch \gset
-- a chain with a hole is not accepted: a loss reported from 7 to 9 and
-- accepted, retained_from 12 needs (7, 11]; the refusal records (9, 11],
-- next to the accepted loss, as report_gap does
SELECT sog.report_gap(:ch, :gch3, '9', 'retention', 'trimmed') > 0 AS reported;
SELECT sog.resolve_gap(max(gap_id), 'accepted_loss', 'INC-13: 8 and 9 gone') FROM sog.gaps(:ch);
SELECT state, failure FROM sog.begin_recovery(:ch, :gch3, 'T2', NULL, '7', false, retained_from => '12');
SELECT from_position, to_position, reason, resolution IS NOT NULL AS resolved
  FROM pg_temp.gaps(:ch) WHERE from_position >= '7';
