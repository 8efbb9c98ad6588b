--
-- read_boundary: a read boundary (note_read or halt) is never dropped, for
-- any client.  It is discharged only by an apply that reaches its cursor
-- with the noted records, a verify_gap that matches, or a gap row that
-- covers it; a sink transaction that applies part of it and stops short
-- of its cursor does not commit.  Each section is a call sequence that a
-- plausible client makes and that 1.1 accepted while losing a record with
-- no error and no gap row; each now ends with an error that names the
-- boundary, or with every record applied once (a successor verifies the
-- boundary against the source and replays it), or with a gap row that
-- covers the loss from the boundary's base.  Consumers here are named rb-*.
--
\i test/regress_helpers.sql

-- bnd(cp): the checkpoint's read boundary and state as a line, with the
-- records its hash covers (h(lo..hi), or 'other'), the sink rows and the
-- open gaps.
CREATE FUNCTION pg_temp.bnd(cp bigint) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT format('%s, applied %s, boundary (%s, %s] %s count %s; sink %s; open gaps %s',
	              c.state, coalesce(c.applied_position::text, '-'),
	              coalesce(c.read_base::text, '-'), coalesce(c.source_cursor::text, '-'),
	              CASE WHEN c.read_hash IS NULL THEN 'no hash'
	                   ELSE coalesce((SELECT format('h(%s..%s)', lo, hi)
	                                    FROM generate_series(1, 40) lo, generate_series(1, 40) hi
	                                   WHERE lo <= hi AND pg_temp.h(pg_temp.range(lo, hi)) = c.read_hash
	                                   LIMIT 1), 'other') END,
	              coalesce(c.read_count::text, '-'),
	              coalesce((SELECT string_agg(s.pos::text, ' ' ORDER BY s.pos) FROM sink s WHERE s.cp = c.id), '-'),
	              coalesce((SELECT string_agg(format('(%s, %s] %s', coalesce(g.from_position::text, '-'),
	                                                 coalesce(g.to_position::text, '-'), g.reason), ', ' ORDER BY g.id)
	                          FROM sog.gap g WHERE g.checkpoint_id = c.id AND g.resolved_at IS NULL), 'none'))
	  FROM sog.checkpoint c WHERE c.id = cp
$$;

-- digs(positions): their digests, as a worker sends them.
CREATE FUNCTION pg_temp.digs(positions text[]) RETURNS bytea[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY(SELECT pg_temp.d(p) FROM unnest(positions) WITH ORDINALITY u(p, i) ORDER BY i)
$$;

-- start(consumer): a checkpoint whose first page, 1..10, is applied and
-- whose second, 11..20, is noted in the same transaction (the pipelined
-- form): applied 10, read boundary (10, 20] with the hash of 11..20.
CREATE FUNCTION pg_temp.start(consumer text, OUT cp bigint, OUT g bigint)
LANGUAGE plpgsql AS $$
BEGIN
	cp := (sog.register(consumer, 'orders', '0')).id;
	g := (sog.claim(cp, 'w1')).generation;
	PERFORM sog.note_read(cp, g, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
	PERFORM pg_temp.apply_batch(cp, g, pg_temp.range(1, 10));
	PERFORM sog.note_read(cp, g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
END
$$;

-- successor(cp, lo, hi): what a successor does after the worker stopped:
-- claims (as w2), verifies the boundary with the source's honest re-fetch
-- of lo..hi, and replays lo..hi; its claim's answer, verify_gap's and the
-- replay's, as a line.
CREATE FUNCTION pg_temp.successor(cp bigint, lo bigint, hi bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	p record;
	verified boolean;
	replayed text;
BEGIN
	SELECT * INTO p FROM sog.claim(cp, 'w2');
	verified := sog.verify_gap(cp, p.generation, pg_temp.h(pg_temp.range(lo, hi)));
	replayed := pg_temp.rle(pg_temp.apply_batch(cp, p.generation, pg_temp.range(lo, hi)));
	RETURN format('claim %s, verify (%s, %s], %s records, the hash of %s..%s: %s; verify_gap %s; replay %s',
				  p.verdict, p.verify_from, p.verify_to, p.expected_count, lo, hi,
				  p.expected_hash = pg_temp.h(pg_temp.range(lo, hi)), verified, replayed);
END
$$;

-- A COMMIT the guard refuses prints its SQLSTATE only; section 2 shows the
-- whole error once.
\set VERBOSITY sqlstate

--
-- 1. A page lost after a savepoint rollback.  Page 2's transaction runs its
-- apply inside a savepoint that the client rolls back (JDBC autosave,
-- psycopg's nested transaction() blocks, an ORM catching an error), then
-- goes on: it notes page 3 (21..30), hashed from the position page 2 would
-- have left, and commits.  1.1 replaced the unapplied boundary (10, 20]
-- with (10, 30] and applied 21..30 against it: 11..20 were lost.
--
SELECT cp AS c1, g AS g1 FROM pg_temp.start('rb-savepoint') \gset
SELECT pg_temp.bnd(:c1);
BEGIN;
SAVEPOINT page;
SELECT pg_temp.rle(pg_temp.apply_batch(:c1, :g1, pg_temp.range(11, 20))) AS page_2;
ROLLBACK TO SAVEPOINT page;
SELECT * FROM pg_temp.err($$SELECT sog.note_read($1, $2, '30', pg_temp.h(pg_temp.range(21, 30)), 10)$$, :c1, :g1) \gx
-- nor may page 3 be applied over the unapplied page 2
SELECT state, message FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, pg_temp.range(21, 30))$$, :c1, :g1);
COMMIT;
SELECT pg_temp.bnd(:c1);
-- The right way on: the transaction retried whole.
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c1, :g1, pg_temp.range(11, 20))) AS page_2;
SELECT sog.note_read(:c1, :g1, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
COMMIT;
SELECT pg_temp.bnd(:c1);

--
-- 2. The last record of a short page.  Page 2's transaction applies 11..19
-- (an off-by-one, a filter) and notes page 3.  1.1 accepted it and 20 was
-- lost when page 3 applied.  Now the note is refused, and so is a COMMIT
-- that would leave the boundary partly applied.
--
SELECT cp AS c2, g AS g2 FROM pg_temp.start('rb-short') \gset
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c2, :g2, pg_temp.range(11, 19))) AS page_2_short;
SELECT * FROM pg_temp.err($$SELECT sog.note_read($1, $2, '30', pg_temp.h(pg_temp.range(21, 30)), 10)$$, :c2, :g2) \gx
-- what COMMIT answers (its message names the checkpoint, not its id)
\set VERBOSITY default
COMMIT;
\set VERBOSITY sqlstate
SELECT pg_temp.bnd(:c2);
-- The same in autocommit, one call per transaction: the apply's COMMIT is
-- the one refused.
SELECT pg_temp.apply(:c2, :g2, '11');
SELECT pg_temp.bnd(:c2);
-- A successor (the worker stopped) verifies (10, 20] against the source
-- and replays the whole page: 20 is applied.
SELECT pg_temp.successor(:c2, 11, 20);
SELECT pg_temp.bnd(:c2);

--
-- 2b. A session with session_replication_role = replica (a superuser's bulk
-- load, a replication tool) skips ordinary triggers; the guard's checks
-- still hold there: the partly applied COMMIT is refused, and so is moving
-- the applied position back by hand.
--
SELECT cp AS c2r, g AS g2r FROM pg_temp.start('rb-replica') \gset
SET session_replication_role = replica;
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c2r, :g2r, pg_temp.range(11, 19))) AS page_2_short;
COMMIT;
SELECT pg_temp.bnd(:c2r);
SELECT state FROM pg_temp.err($$UPDATE sog.checkpoint SET applied_position = '5' WHERE id = $1$$, :c2r);
RESET session_replication_role;
SELECT pg_temp.bnd(:c2r);

--
-- 3. A graceful handoff inside a boundary.  The worker applies 11..14 and
-- 16 (15 lost from its buffer), then halts with the records it still holds,
-- (16, 20] as 17..20.  1.1 asked the successor to verify (16, 20] only, the
-- source's honest re-fetch matched, and 15 was gone with no gap row.
--
SELECT cp AS c3, g AS g3 FROM pg_temp.start('rb-halt') \gset
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c3, :g3, '{11,12,13,14,16}')) AS applied;
SELECT verdict, resume_from FROM sog.halt(:c3, :g3, '20', pg_temp.h(pg_temp.range(17, 20)), 4);
COMMIT;
SELECT pg_temp.bnd(:c3);
-- Nothing of that transaction stayed.  A halt on its own keeps the noted
-- boundary, whatever hash it brings, for the successor to verify whole.
SELECT verdict, resume_from, gap_size FROM sog.halt(:c3, :g3, '20', pg_temp.h(pg_temp.range(17, 20)), 4);
SELECT kind, source_cursor, buffered_count, verdict, note FROM sog.manifest_log
 WHERE checkpoint_id = :c3 ORDER BY id DESC LIMIT 1;
SELECT pg_temp.successor(:c3, 11, 20);
SELECT pg_temp.bnd(:c3);

--
-- 4. A read cursor moved backward.  Noted (10, 20], then a note at 10 (or
-- at 15), or 11..15 applied and a halt at 15 with nothing held.  1.1
-- accepted each and erased the noted range: the successor's claim answered
-- aligned, and a source that forgets what it delivered (a work queue) lost
-- 11..20 or 16..20 without a record.  A read cursor moves back only
-- through claim.
--
SELECT cp AS c4, g AS g4 FROM pg_temp.start('rb-back') \gset
SELECT state, message, detail, hint FROM pg_temp.err($$SELECT sog.note_read($1, $2, '10', NULL, NULL)$$, :c4, :g4) \gx
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '15', pg_temp.h(pg_temp.range(11, 15)), 5)$$, :c4, :g4);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c4, :g4, pg_temp.range(11, 15))) AS applied;
SELECT * FROM pg_temp.err($$SELECT sog.halt($1, $2, '15', NULL, NULL)$$, :c4, :g4) \gx
ROLLBACK;
-- a halt that holds nothing new passes no cursor: the noted boundary stays
SELECT verdict, resume_from FROM sog.halt(:c4, :g4, NULL, NULL, NULL);
SELECT verdict, resume_from, verify_from, verify_to FROM sog.claim(:c4, 'w2');
SELECT pg_temp.bnd(:c4);

--
-- 5. A failed boundary check.  One transaction applied 11..14 and 16 (15
-- skipped) and committed; the next applied 17..20 and got SG004, and
-- nothing durable said so: a successor verified (10, 20] against the
-- source and hit the same SG004 for ever, and report_gap recorded (16, 20].
-- Now the first COMMIT is refused, so what was applied of a boundary is
-- always checked in the transaction that reaches its cursor, and a failed
-- check leaves the boundary as it was noted: a successor verifies it
-- against the source and replays it, and if the source lost records the
-- gap starts at the boundary's base.
--
SELECT cp AS c5, g AS g5 FROM pg_temp.start('rb-check') \gset
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c5, :g5, '{11,12,13,14,16}')) AS applied;
COMMIT;
BEGIN;
SELECT state, message, detail FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{11,12,13,14,16,17,18,19,20}')$$, :c5, :g5) \gx
ROLLBACK;
SELECT pg_temp.bnd(:c5);
-- The worker stops (the hint).  Its successor verifies and replays.
SELECT pg_temp.successor(:c5, 11, 20);
SELECT pg_temp.bnd(:c5);
-- The same, but the source no longer has 15 either: the successor's
-- re-fetch does not match, and the gap covers the whole boundary from its
-- base; sog.status shows it failed closed.
SELECT cp AS c5x, g AS g5x FROM pg_temp.start('rb-check-lost') \gset
SELECT verdict FROM sog.claim(:c5x, 'w2');
SELECT generation AS g5y FROM sog.checkpoint WHERE id = :c5x \gset
SELECT sog.verify_gap(:c5x, :g5y, pg_temp.h('{11,12,13,14,16,17,18,19,20}'));
SELECT pg_temp.bnd(:c5x);
SELECT state, open_gaps FROM sog.status WHERE checkpoint_id = :c5x;
-- A worker that sees the loss itself reports it from the boundary's base.
SELECT cp AS c5r, g AS g5r FROM pg_temp.start('rb-check-report') \gset
SELECT sog.report_gap(:c5r, :g5r, '20', 'retention', '15 gone') > 0 AS reported;
SELECT pg_temp.bnd(:c5r);
-- A report inside a transaction that entered the boundary does not commit
-- either: roll back, then report.
SELECT cp AS c5s, g AS g5s FROM pg_temp.start('rb-check-report-inside') \gset
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:c5s, :g5s, '{11,12,13,14}')) AS applied;
SELECT sog.report_gap(:c5s, :g5s, '20', 'retention') > 0 AS reported;
SELECT pg_temp.bnd(:c5s);
COMMIT;
SELECT pg_temp.bnd(:c5s);

--
-- 6. A note after verify_gap.  A consumer that followed 1.1's state table
-- noted the page it re-fetched for verify_gap: that replaced the proven
-- boundary, and a record it then dropped from its buffer was skipped with
-- no error.  The same note is now the same boundary (nothing changes), any
-- other is refused, and the dropped record is SG004.
--
SELECT cp AS c6, g AS g6 FROM pg_temp.start('rb-verified') \gset
SELECT verdict, verify_from, verify_to FROM sog.claim(:c6, 'w2');
SELECT generation AS g6b FROM sog.checkpoint WHERE id = :c6 \gset
SELECT sog.verify_gap(:c6, :g6b, pg_temp.h(pg_temp.range(11, 20)));
SELECT sog.note_read(:c6, :g6b, '20', pg_temp.h(pg_temp.range(11, 20)), 10) AS same_note;
SELECT pg_temp.bnd(:c6);
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '25', pg_temp.h(pg_temp.range(11, 25)), 15)$$, :c6, :g6b);
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '20', pg_temp.h(pg_temp.range(12, 20)), 9)$$, :c6, :g6b);
SELECT state, message FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, '{11,12,13,14,16,17,18,19,20}')$$, :c6, :g6b);
SELECT pg_temp.rle(pg_temp.apply_batch(:c6, :g6b, pg_temp.range(11, 20))) AS page_2;
SELECT pg_temp.bnd(:c6);

--
-- 7. The way out of every gap.  A worker read (10, 20] and crashed; its
-- successor's re-fetch shows the source trimmed 11..13, and it reports
-- that loss: (10, 13] retention, and the rest of the boundary, which the
-- hash no longer proves, (13, 20] unverified.  The operator accepts the
-- loss and resolves the unverified range 'replayed' (the consumer is to
-- replay it from the source); the checkpoint is running again, and the
-- consumer's next claim resumes from the applied position and applies
-- what the source still holds, once.
--
SELECT cp AS c7, g AS g7 FROM pg_temp.start('rb-way-out') \gset
SELECT verdict FROM sog.claim(:c7, 'w2');
SELECT generation AS g7b FROM sog.checkpoint WHERE id = :c7 \gset
SELECT sog.report_gap(:c7, :g7b, '13', 'retention', 'trimmed before the re-fetch') AS lost \gset
SELECT pg_temp.bnd(:c7);
-- reporting the same loss again, or a part of it, changes nothing
SELECT sog.report_gap(:c7, :g7b, '13', 'retention') = :lost AS same_gap,
       sog.report_gap(:c7, :g7b, '12', 'retention') = :lost AS inside_it,
       sog.report_gap(:c7, :g7b, '16', 'retention') = (SELECT id FROM sog.gap WHERE checkpoint_id = :c7 AND reason = 'unverified') AS inside_the_rest;
SELECT sog.resolve_gap(:lost, 'accepted_loss', 'retention: 11..13 gone before anyone applied them');
SELECT pg_temp.bnd(:c7);
SELECT sog.resolve_gap(id, 'replayed', 'the consumer replays it from the source')
  FROM sog.gap WHERE checkpoint_id = :c7 AND reason = 'unverified' AND resolved_at IS NULL;
SELECT pg_temp.bnd(:c7);
SELECT verdict, resume_from FROM sog.claim(:c7, 'w3');
SELECT generation AS g7c FROM sog.checkpoint WHERE id = :c7 \gset
-- the accepted loss is on the record: reported again, nothing changes
SELECT sog.report_gap(:c7, :g7c, '13', 'retention') = :lost AS accepted_already;
SELECT pg_temp.bnd(:c7);
-- the source now starts at 14: note and apply what it holds
SELECT sog.note_read(:c7, :g7c, '20', pg_temp.h(pg_temp.range(14, 20)), 7);
SELECT pg_temp.rle(pg_temp.apply_batch(:c7, :g7c, pg_temp.range(14, 20))) AS replayed;
SELECT pg_temp.bnd(:c7);

--
-- 7b. report_gap's ranges: a loss beyond an open gap is recorded next to
-- it, not over it, and a loss right after an accepted one on its own.
--
SELECT sog.report_gap(:c7, :g7c, '23', 'retention') AS l23 \gset
SELECT sog.report_gap(:c7, :g7c, '25', 'retention') AS l25 \gset
SELECT pg_temp.bnd(:c7);
SELECT sog.resolve_gap(:l23, 'accepted_loss', '21..23 gone'), sog.resolve_gap(:l25, 'accepted_loss', '24..25 gone');
SELECT verdict, resume_from FROM sog.claim(:c7, 'w4');
SELECT generation AS g7d FROM sog.checkpoint WHERE id = :c7 \gset
SELECT sog.report_gap(:c7, :g7d, '25', 'retention') = :l25 AS accepted_already;
SELECT sog.report_gap(:c7, :g7d, '27', 'retention') > 0 AS reported;
SELECT from_position, to_position, reason, resolution FROM sog.gaps(:c7) ORDER BY gap_id;

--
-- 7c. Records a lost recovery attempt applied above the applied position,
-- which the source has trimmed since: a worker that reads after the trim
-- cannot deliver them again, and its boundary over what the source still
-- holds closes (the reliability loops found every successor refused for
-- ever: the check folded those receipts, verify_gap did not).  Each
-- record is applied once and the recovered ones stay.  A worker that read
-- them before the trim delivers them again and closes it as well (7d).
--
-- recovered(consumer): applied 1..20 with page token T20; a recovery
-- attempt from anchor 18 records 18..25 (21..25 above the applied
-- position, their effects in the sink) and loses to a claim by w2, whose
-- generation g is returned: applied 20, receipts through 25.
CREATE FUNCTION pg_temp.recovered(consumer text, OUT cp bigint, OUT g bigint)
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
BEGIN
	cp := (sog.register(consumer, 'orders', '0', provider => 'kafka')).id;
	g := (sog.claim(cp, 'w1')).generation;
	PERFORM pg_temp.apply_batch(cp, g, pg_temp.range(1, 20));
	PERFORM sog.commit_page(cp, g, NULL, 'T20');
	r := (sog.begin_recovery(cp, g, 'T20', NULL, '18', true)).id;
	INSERT INTO sink
	SELECT cp, p::sog.position, 'payload of ' || p
	  FROM unnest(pg_temp.range(18, 25)) p
	 WHERE sog.recovery_event(r, p::sog.position, pg_temp.d(p)) = 'apply';
	g := (sog.claim(cp, 'w2')).generation;
END
$$;
SELECT cp AS c8, g AS g8 FROM pg_temp.recovered('rb-recovered') \gset
SELECT applied_position, recovered_through FROM sog.status WHERE checkpoint_id = :c8;
-- the source trimmed 21..30; reported and accepted as lost
SELECT sog.report_gap(:c8, :g8, '30', 'retention') AS l8 \gset
SELECT sog.resolve_gap(:l8, 'accepted_loss', '21..30 trimmed');
SELECT verdict, resume_from FROM sog.claim(:c8, 'w3');
SELECT generation AS g8c FROM sog.checkpoint WHERE id = :c8 \gset
-- the worker reads what the source holds after 20: 31..35
SELECT sog.note_read(:c8, :g8c, '35', pg_temp.h(pg_temp.range(31, 35)), 5);
SELECT pg_temp.rle(pg_temp.apply_batch(:c8, :g8c, pg_temp.range(31, 35))) AS after_trim;
SELECT pg_temp.bnd(:c8);
-- 7d. read before the trim: 21..25 delivered again (answered false) with 26..30
SELECT cp AS c9, g AS g9 FROM pg_temp.recovered('rb-recovered-read') \gset
SELECT sog.note_read(:c9, :g9, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
SELECT pg_temp.rle(pg_temp.apply_batch(:c9, :g9, pg_temp.range(21, 30))) AS read_before;
SELECT pg_temp.bnd(:c9);
-- a worker that read them may deliver them again or not (their receipts
-- count); one that drops a record it read above them is refused, and a
-- successor verifies the boundary and replays it
SELECT cp AS c10, g AS g10 FROM pg_temp.recovered('rb-recovered-part') \gset
SELECT sog.note_read(:c10, :g10, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
SELECT pg_temp.rle(pg_temp.apply_batch(:c10, :g10, ARRAY['21', '22', '23', '24', '25', '26', '28', '29', '30']));
SELECT pg_temp.rle(pg_temp.apply_batch(:c10, :g10, ARRAY['26', '28', '29', '30']));
SELECT pg_temp.bnd(:c10);
SELECT pg_temp.successor(:c10, 21, 30);
SELECT pg_temp.bnd(:c10);
SELECT cp AS c11, g AS g11 FROM pg_temp.recovered('rb-recovered-some') \gset
SELECT sog.note_read(:c11, :g11, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
SELECT pg_temp.rle(pg_temp.apply_batch(:c11, :g11, pg_temp.range(23, 30))) AS some_again;
SELECT pg_temp.bnd(:c11);

--
-- 8. Every refusal above changed nothing: no partly applied boundary was
-- left by any transaction of this file.
--
SELECT count(*) AS partly_applied
  FROM sog.checkpoint c
 WHERE c.consumer LIKE 'rb-%'
   AND c.source_cursor > c.applied_position
   AND c.read_base IS DISTINCT FROM c.applied_position;
