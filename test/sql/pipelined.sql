--
-- pipelined: one commit per page (README: consumer guide).  A worker that
-- has already fetched page k+1 while it applies page k notes page k+1's
-- read boundary inside page k's sink transaction, after page k's apply:
--
--   BEGIN; apply(page k); INSERT the new rows;
--          note_read(id, gen, cursor of k+1, buffer hash of page k+1's
--                    records above the applied position page k leaves,
--                    their count);
--   COMMIT;
--
-- Only the first page (after a claim, a rolled-back sink transaction, or
-- an idle source with no page k+1 to note) has a committed note_read of
-- its own.  What is shown: the next page's apply passes the noted-hash
-- check when its records are the noted ones and is refused (SG004) when
-- page k+1 changed between note and apply, in the apply_batch and the
-- apply_run forms; a note hashed from the applied position before page k
-- (the classic client bug) and what the guard answers to it; a rolled-back
-- page takes its note with it; a page delivered again at or below the
-- applied position is not noted; (6) a note over a boundary page k's
-- apply entered but did not reach is refused, and so is the COMMIT that
-- would leave it so; (7) a gap starts at the boundary's base.  Consumers
-- here are named pipe-*.
--
\i test/regress_helpers.sql

-- bnd(cp): the read boundary as the checkpoint holds it, and which records
-- its hash covers: h(lo..hi) when it is the buffer hash of the records
-- lo..hi (hi the cursor, payloads 'payload of N'; lo need not be read_base
-- + 1), else 'other' (or 'none').
CREATE FUNCTION pg_temp.bnd(cp bigint, OUT applied sog.position,
                            OUT source_cursor sog.position, OUT read_base sog.position,
                            OUT read_hash text, OUT read_count bigint)
LANGUAGE sql STABLE AS $$
	SELECT c.applied_position, c.source_cursor, c.read_base,
	       CASE WHEN c.read_hash IS NULL THEN 'none'
	            ELSE coalesce((SELECT format('h(%s..%s)', lo, c.source_cursor)
	                             FROM generate_series(1, c.source_cursor::text::bigint) lo
	                            WHERE pg_temp.h(pg_temp.range(lo, c.source_cursor::text::bigint)) = c.read_hash
	                            ORDER BY lo LIMIT 1), 'other') END,
	       c.read_count
	  FROM sog.checkpoint c WHERE c.id = cp
$$;

-- digs(positions, changed): the digests a worker sends for positions; the
-- record at position changed (if any) carries other bytes than were noted.
CREATE FUNCTION pg_temp.digs(positions text[], changed text DEFAULT NULL) RETURNS bytea[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY(SELECT CASE WHEN p = changed THEN pg_temp.d(p || ', changed') ELSE pg_temp.d(p) END
	               FROM unnest(positions) WITH ORDINALITY u(p, i) ORDER BY i)
$$;

-- What sog.status, the operator's view, says of the read cursor.
CREATE FUNCTION pg_temp.st(cp bigint, OUT state text, OUT applied_position sog.position,
                           OUT source_cursor sog.position, OUT lag numeric,
                           OUT buffered_count bigint, OUT open_gaps bigint)
LANGUAGE sql STABLE AS $$
	SELECT s.state, s.applied_position, s.source_cursor, s.lag, s.buffered_count, s.open_gaps
	  FROM sog.status s WHERE s.checkpoint_id = cp
$$;

--
-- 1. The apply_batch form.  Pages of ten: 1..10, 11..20, 21..30.  The first
-- page's note commits on its own.
--
SELECT id AS cp FROM sog.register('pipe-batch', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT sog.note_read(:cp, :g, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
SELECT * FROM pg_temp.bnd(:cp);

-- Page 1's transaction: the apply closes page 1's boundary (checked
-- against its hash); page 2 (11..20, fetched meanwhile) is noted above the
-- applied position page 1 leaves.
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10))) AS page_1;
SELECT * FROM pg_temp.bnd(:cp);
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT * FROM pg_temp.bnd(:cp);
COMMIT;
-- One commit made both durable: page 1's rows and page 2's boundary.
SELECT * FROM pg_temp.st(:cp);
SELECT count(*) AS rows, min(pos::text::bigint) AS lo, max(pos::text::bigint) AS hi
  FROM sink WHERE cp = :cp;

-- Page 2's transaction.  Page 2 changed between the note and the apply:
-- record 15 with other bytes, or the page without 15.  The apply that
-- reaches the noted cursor does not hash to the noted value: SG004, and
-- nothing of it is kept (the transaction goes on: err() ran it in a
-- subtransaction).
BEGIN;
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, pg_temp.range(11, 20)::sog.position[],
                                                   pg_temp.digs(pg_temp.range(11, 20), '15'))$$, :cp, :g) \gx
SELECT state, message, detail FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, '{11,12,13,14,16,17,18,19,20}',
                                               pg_temp.digs('{11,12,13,14,16,17,18,19,20}'))$$, :cp, :g) \gx
SELECT * FROM pg_temp.bnd(:cp);
-- Page 2 as it was fetched and noted: it passes; page 3 is noted.
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(11, 20))) AS page_2;
SELECT sog.note_read(:cp, :g, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
COMMIT;
SELECT * FROM pg_temp.bnd(:cp);

--
-- 2. A page transaction that rolls back takes its note with it: page 3's
-- rows and page 4's boundary go, page 3's boundary (noted in page 2's
-- transaction) stays in force, and sog.status's read cursor is page 3's.
--
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(21, 30))) AS page_3;
SELECT sog.note_read(:cp, :g, '40', pg_temp.h(pg_temp.range(31, 40)), 10);
SELECT * FROM pg_temp.st(:cp);
ROLLBACK;
SELECT * FROM pg_temp.st(:cp);
SELECT * FROM pg_temp.bnd(:cp);
SELECT count(*) AS rows_above_20 FROM sink WHERE cp = :cp AND pos > '20';
-- The retry is the same transaction: page 3's boundary is still in force.
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(21, 30))) AS page_3;
SELECT sog.note_read(:cp, :g, '40', pg_temp.h(pg_temp.range(31, 40)), 10);
COMMIT;
SELECT * FROM pg_temp.bnd(:cp);

--
-- 3. Pages delivered again.  The page fetched while page 4 (31..40) is
-- applied is 36..45 (the source re-delivered 36..40): only the records
-- above the applied position page 4 leaves, 41..45, are noted.
--
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(31, 40))) AS page_4;
SELECT sog.note_read(:cp, :g, '45', pg_temp.h(pg_temp.range(41, 45)), 5);
COMMIT;
SELECT * FROM pg_temp.bnd(:cp);
-- The page fetched while 36..45 is applied is 36..44 again, wholly at or
-- below the applied position page 36..45 leaves: nothing to note (its
-- cursor is behind the applied position, SG005), so the worker skips
-- note_read, and apply_batch answers false for each of its records.
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(36, 45))) AS page_36_45;
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '44', pg_temp.h(pg_temp.range(41, 44)), 4)$$, :cp, :g);
COMMIT;
SELECT * FROM pg_temp.bnd(:cp);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(36, 44))) AS page_36_44;
COMMIT;
SELECT * FROM pg_temp.bnd(:cp);
-- Nothing noted the next page (46..50): it is a first page again, with a
-- committed note of its own.
SELECT sog.note_read(:cp, :g, '50', pg_temp.h(pg_temp.range(46, 50)), 5);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(46, 50))) AS page_46_50;
COMMIT;
SELECT * FROM pg_temp.st(:cp);
SELECT count(*) AS rows, count(DISTINCT pos) AS distinct_positions,
       sum(pos::text::bigint) AS sum, (SELECT sum(i) FROM generate_series(1, 50) i) AS sum_1_50
  FROM sink WHERE cp = :cp;

--
-- 4. The apply_run form, with the contract's vector kafka_three (100..102,
-- payloads a, b, c) as page k+1: its noted hash is the vector's buffer
-- hash, and the run sends the vector's payload digests.
--
\set vectors `cat test/contract-v1.json`
CREATE TEMP TABLE kafka_three AS
SELECT r.ord, r.r ->> 'position' AS pos, convert_from(decode(r.r ->> 'payload_hex', 'hex'), 'UTF8') AS payload,
       decode(r.r ->> 'payload_digest_hex', 'hex') AS digest, v ->> 'buffer_hash' AS buffer_hash
  FROM json_array_elements(:'vectors'::json -> 'buffer_hash') v,
       json_array_elements(v -> 'records') WITH ORDINALITY r(r, ord)
 WHERE v ->> 'name' = 'kafka_three';
SELECT string_agg(pos, ',' ORDER BY ord) AS positions, string_agg(payload, ',' ORDER BY ord) AS payloads,
       min(buffer_hash) = sog.buffer_hash(pos::sog.position, digest ORDER BY ord) AS vector_hash_is_buffer_hash
  FROM kafka_three;
SELECT min(buffer_hash) AS k3_hash, string_agg(digest, ''::bytea ORDER BY ord) AS k3_digests
  FROM kafka_three \gset

SELECT id AS rcp FROM sog.register('pipe-run', 'orders', '0') \gset
SELECT generation AS rg FROM sog.claim(:rcp, 'worker-1') \gset
-- run_sink(first, last): the page first..last as a run, its new events
-- inserted by ordinality.
PREPARE run_sink(bigint, bigint) AS
  WITH a AS (SELECT sog.apply_run(:rcp, :rg, $1, pg_temp.digests($1, $2)) AS skip)
  INSERT INTO sink
  SELECT :rcp, ($1 + u.i - 1)::sog.position, u.payload
    FROM a, unnest(ARRAY(SELECT 'payload of ' || x FROM generate_series($1, $2) x ORDER BY x))
         WITH ORDINALITY AS u(payload, i)
   WHERE u.i > a.skip;
SELECT sog.note_read(:rcp, :rg, '50', pg_temp.h(pg_temp.range(1, 50)), 50);
BEGIN;
EXECUTE run_sink(1, 50);
SELECT sog.note_read(:rcp, :rg, '99', pg_temp.h(pg_temp.range(51, 99)), 49);
COMMIT;
SELECT * FROM pg_temp.bnd(:rcp);
BEGIN;
EXECUTE run_sink(51, 99);
SELECT sog.note_read(:rcp, :rg, '102', :'k3_hash', 3);
COMMIT;
SELECT applied_position, source_cursor, read_base, read_hash = :'k3_hash' AS read_hash_is_vector, read_count
  FROM sog.checkpoint WHERE id = :rcp;
-- Page 100..102 changed between note and apply (101's payload 'B', not
-- 'b'): the run does not fold to the noted hash: SG004, as apply_batch.
SELECT state, message, detail FROM pg_temp.err(format($$SELECT sog.apply_run($1, $2, 100, %L::bytea)$$,
       substring(:'k3_digests'::bytea FROM 1 FOR 32) || sog.payload_digest('B') || substring(:'k3_digests'::bytea FROM 65 FOR 32)),
       :rcp, :rg) \gx
-- As noted: it passes (no event was applied before: the answer is 0).
BEGIN;
WITH a AS (SELECT sog.apply_run(:rcp, :rg, 100, :'k3_digests') AS skip)
INSERT INTO sink SELECT :rcp, k.pos::sog.position, k.payload FROM a, kafka_three k WHERE k.ord > a.skip
RETURNING pos, payload;
COMMIT;
SELECT * FROM pg_temp.st(:rcp);
SELECT count(*) AS rows, count(DISTINCT pos) AS distinct_positions, sum(pos::text::bigint) AS sum
  FROM sink WHERE cp = :rcp;

--
-- 5. The classic client bug: inside page k's transaction (11..20) the
-- worker hashes page k+1 (21..30) from the applied position before page k
-- (10), i.e. over 11..30, 20 records.
--
SELECT id AS bcp FROM sog.register('pipe-bug', 'orders', '0') \gset
SELECT generation AS bg FROM sog.claim(:bcp, 'worker-1') \gset
SELECT sog.note_read(:bcp, :bg, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:bcp, :bg, pg_temp.range(1, 10))) AS page_1;
SELECT sog.note_read(:bcp, :bg, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
COMMIT;
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:bcp, :bg, pg_temp.range(11, 20))) AS page_2;
-- With the count it came with (20): more records than (20, 30] can hold,
-- 22023, refused at once.
SELECT * FROM pg_temp.err($$SELECT sog.note_read($1, $2, '30', pg_temp.h(pg_temp.range(11, 30)), 20)$$, :bcp, :bg) \gx
-- With a count that fits (10), the hash is just a value to the guard (it
-- cannot tell what it was computed over): the note is taken, and commits
-- with page 2.
SELECT sog.note_read(:bcp, :bg, '30', pg_temp.h(pg_temp.range(11, 30)), 10);
COMMIT;
SELECT * FROM pg_temp.bnd(:bcp);
-- The next page's apply reaches the cursor and does not hash to it: SG004.
SELECT * FROM pg_temp.err($$SELECT sog.apply_batch($1, $2, pg_temp.range(21, 30)::sog.position[],
                                                   pg_temp.digs(pg_temp.range(21, 30)))$$, :bcp, :bg) \gx
-- A worker that crashed here leaves that note: its successor is told to
-- replay (20, 30] with the bad hash, re-fetches 21..30, and verify_gap
-- answers false: a hash_mismatch gap, failed closed, for an operator.
-- Nothing is lost silently, but the checkpoint stops.
SELECT verdict, resume_from, verify_from, verify_to,
       expected_hash = pg_temp.h(pg_temp.range(11, 30)) AS expected_hash_is_the_bug, expected_count
  FROM sog.claim(:bcp, 'worker-2');
SELECT generation AS bg2 FROM sog.checkpoint WHERE id = :bcp \gset
SELECT sog.verify_gap(:bcp, :bg2, pg_temp.h(pg_temp.range(21, 30)));
SELECT * FROM pg_temp.st(:bcp);
SELECT from_position, to_position, reason, resolution FROM sog.gaps(:bcp);

-- The same bug the other way round: page k+1 noted BEFORE page k's apply,
-- hashed over page k+1 only.  1.1 let that note replace page k's boundary
-- with (applied before page k, cursor of k+1], so that page k's apply
-- closed nothing; now it is refused at once: page k's boundary is not
-- applied yet (read_boundary).  The right order goes through.
SELECT id AS ocp FROM sog.register('pipe-order', 'orders', '0') \gset
SELECT generation AS og FROM sog.claim(:ocp, 'worker-1') \gset
SELECT sog.note_read(:ocp, :og, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:ocp, :og, pg_temp.range(1, 10))) AS page_1;
SELECT sog.note_read(:ocp, :og, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
COMMIT;
BEGIN;
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '30', pg_temp.h(pg_temp.range(21, 30)), 10)$$, :ocp, :og);
SELECT pg_temp.rle(pg_temp.apply_batch(:ocp, :og, pg_temp.range(11, 20))) AS page_2;
SELECT sog.note_read(:ocp, :og, '30', pg_temp.h(pg_temp.range(21, 30)), 10);
COMMIT;
SELECT * FROM pg_temp.bnd(:ocp);

--
-- 6. A note does not replace a boundary it finds.  Page k's boundary is
-- checked only by an apply that reaches its cursor; 1.1 let a page k whose
-- apply stopped short of it (here: record 4 dropped from the worker's
-- buffer, the page applied as 1, 2, 3, 5) note page k+1 in the same
-- transaction, the new boundary (5, 15] replaced (start, 10] unchecked,
-- and 4 was skipped without an error (model/README.md, F6); the same in
-- the two-commit form (pipe-short-2).  Now the note is refused, and so is
-- a COMMIT that leaves the boundary partly applied: page k's boundary
-- stays as it was noted, and whoever applies it next (here a successor,
-- after verifying it against the source) applies 4 too.
--
SELECT id AS scp FROM sog.register('pipe-short', 'orders', '0') \gset
SELECT generation AS sg FROM sog.claim(:scp, 'worker-1') \gset
SELECT sog.note_read(:scp, :sg, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
BEGIN;
SELECT pg_temp.rle(pg_temp.apply_batch(:scp, :sg, '{1,2,3,5}')) AS page_k_without_4;
SELECT * FROM pg_temp.bnd(:scp);
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '15', pg_temp.h(pg_temp.range(6, 15)), 10)$$, :scp, :sg);
\set VERBOSITY sqlstate
COMMIT;
\set VERBOSITY default
SELECT * FROM pg_temp.bnd(:scp);
SELECT verdict, verify_from, verify_to FROM sog.claim(:scp, 'worker-2');
SELECT generation AS sg2 FROM sog.checkpoint WHERE id = :scp \gset
SELECT sog.verify_gap(:scp, :sg2, pg_temp.h(pg_temp.range(1, 10)));
SELECT pg_temp.rle(pg_temp.apply_batch(:scp, :sg2, pg_temp.range(1, 10))) AS page_k;
SELECT * FROM pg_temp.st(:scp);
SELECT string_agg(pos::text, ' ' ORDER BY pos) AS sink FROM sink WHERE cp = :scp;

SELECT id AS s2cp FROM sog.register('pipe-short-2', 'orders', '0') \gset
SELECT generation AS s2g FROM sog.claim(:s2cp, 'worker-1') \gset
SELECT sog.note_read(:s2cp, :s2g, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
\set VERBOSITY sqlstate
SELECT pg_temp.rle(pg_temp.apply_batch(:s2cp, :s2g, '{1,2,3,5}')) AS page_k_without_4;
\set VERBOSITY default
SELECT state, message FROM pg_temp.err($$SELECT sog.note_read($1, $2, '15', pg_temp.h(pg_temp.range(6, 15)), 10)$$, :s2cp, :s2g);
SELECT state, message FROM pg_temp.err($$SELECT pg_temp.apply_batch($1, $2, pg_temp.range(6, 15))$$, :s2cp, :s2g);
SELECT * FROM pg_temp.st(:s2cp);
SELECT coalesce(string_agg(pos::text, ' ' ORDER BY pos), '(none)') AS sink FROM sink WHERE cp = :s2cp;

--
-- 7. A hash_mismatch gap starts at the boundary's base (model/README.md,
-- F7).  The worker noted (start, 3] over 1, 2, 3, lost 1 from its buffer
-- and applied 2 alone (positions may be sparse, so the guard accepts it),
-- and crashed before the apply reached 3: that transaction does not commit
-- (1.1 committed it).  The source then
-- trimmed 1: the successor's re-fetch of (start, 3] brings 2 and 3, and
-- verify_gap is false.  The gap covers the whole boundary (start, 3]: the
-- operator who resolves it resolves 1's fate too, and nothing below the
-- applied position escapes a gap row.
--
SELECT id AS tcp FROM sog.register('pipe-trim', 'orders', '0') \gset
SELECT generation AS tg FROM sog.claim(:tcp, 'worker-1') \gset
SELECT sog.note_read(:tcp, :tg, '3', pg_temp.h(pg_temp.range(1, 3)), 3);
\set VERBOSITY sqlstate
SELECT pg_temp.rle(pg_temp.apply_batch(:tcp, :tg, '{2}')) AS page_without_1;
\set VERBOSITY default
SELECT verdict, verify_from, verify_to FROM sog.claim(:tcp, 'worker-2');
SELECT generation AS tg2 FROM sog.checkpoint WHERE id = :tcp \gset
SELECT sog.verify_gap(:tcp, :tg2, pg_temp.h('{2,3}'));
SELECT coalesce(from_position::text, 'start') AS from_position, to_position, reason FROM sog.gaps(:tcp);
SELECT sog.resolve_gap(gap_id, 'accepted_loss', 'record 1 trimmed before it was re-read')
  FROM sog.gaps(:tcp);
SELECT * FROM pg_temp.st(:tcp);
SELECT from_position, to_position, reason, resolution FROM sog.gaps(:tcp);
