--
-- apply_page: a whole page in one call (README: one call per page).
-- sog.apply_run_page and sog.apply_batch_page do what a pipelined sink
-- transaction does with three calls - apply_run or apply_batch for page k,
-- note_read for page k+1, commit_page - on one lock of the checkpoint and
-- with one write of its row.  What is shown: (1) the same history sent as
-- three calls to one checkpoint and as one call to another leaves the two
-- rows and their receipts the same, page after page, in both forms, with
-- and without a next page or a token; (2) every refusal of the three calls
-- is the page call's, and the page call then changes nothing (SG001,
-- SG006, SG004 for a page that is not the noted one, SG004 for a note over
-- a boundary the page entered but did not reach, SG005, the commit check);
-- (3) bad page arguments are refused before anything is read; (4) a
-- consumer grant gives the two functions, a role without one is refused.
-- Consumers here are named page-*.
--
\i test/regress_helpers.sql

-- cpstate(cp): what a checkpoint's row holds, but its id, names and times.
CREATE FUNCTION pg_temp.cpstate(cp bigint) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT format('gen %s, applied %s, cursor %s, base %s, hash %s, count %s, token %s, receipts through %s, %s, gap floor %s',
	              c.generation, c.applied_position, c.source_cursor, c.read_base,
	              coalesce(left(c.read_hash, 8), 'none'), coalesce(c.read_count::text, 'none'),
	              coalesce(c.provider_token, 'none'), c.receipts_through, c.state,
	              coalesce(c.read_gap_floor::text, 'none'))
	  FROM sog.checkpoint c WHERE c.id = cp
$$;

-- same(a, b): do the two checkpoints hold the same row and receipts?
CREATE FUNCTION pg_temp.same(a bigint, b bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT pg_temp.cpstate(a) = pg_temp.cpstate(b)
	   AND ARRAY(SELECT (r.position, r.payload_digest)::text FROM sog.receipts(a) r)
	     = ARRAY(SELECT (r.position, r.payload_digest)::text FROM sog.receipts(b) r)
$$;

-- positions(lo, hi) and digs(lo, hi) for the apply_batch form.
CREATE FUNCTION pg_temp.positions(lo bigint, hi bigint) RETURNS sog.position[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT pg_temp.range(lo, hi)::sog.position[]
$$;
CREATE FUNCTION pg_temp.digs(lo bigint, hi bigint) RETURNS bytea[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY(SELECT pg_temp.d(i::text) FROM generate_series(lo, hi) i ORDER BY i)
$$;

--
-- 1. The same history, as three calls (cp3) and as one (cp1).  The first
-- page's note commits alone, as in every pipelined consumer.
--
SELECT id AS cp3 FROM sog.register('page-three', 'orders', '0') \gset
SELECT id AS cp1 FROM sog.register('page-one', 'orders', '0') \gset
SELECT generation AS g3 FROM sog.claim(:cp3, 'worker') \gset
SELECT generation AS g1 FROM sog.claim(:cp1, 'worker') \gset
SELECT sog.note_read(:cp3, :g3, '10', pg_temp.h(pg_temp.range(1, 10)), 10);
SELECT sog.note_read(:cp1, :g1, '10', pg_temp.h(pg_temp.range(1, 10)), 10);

-- Page 1 (1..10, run form): page 2 noted, the first token set.
BEGIN;
SELECT sog.apply_run(:cp3, :g3, 1, pg_temp.digests(1, 10));
SELECT sog.note_read(:cp3, :g3, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT sog.commit_page(:cp3, :g3, NULL, 'T10');
COMMIT;
BEGIN;
SELECT sog.apply_run_page(:cp1, :g1, 1, pg_temp.digests(1, 10),
                          '20', pg_temp.h(pg_temp.range(11, 20)), 10, NULL, 'T10');
COMMIT;
SELECT pg_temp.cpstate(:cp1) AS after_page_1, pg_temp.same(:cp3, :cp1);

-- Page 2 (11..20, batch form), named arguments: page 3 noted by its hash
-- alone, the token moved.
BEGIN;
SELECT pg_temp.rle(sog.apply_batch(:cp3, :g3, pg_temp.positions(11, 20), pg_temp.digs(11, 20)));
SELECT sog.note_read(:cp3, :g3, '30', pg_temp.h(pg_temp.range(21, 30)), NULL);
SELECT sog.commit_page(:cp3, :g3, 'T10', 'T20');
COMMIT;
BEGIN;
SELECT pg_temp.rle(sog.apply_batch_page(:cp1, :g1, pg_temp.positions(11, 20), pg_temp.digs(11, 20),
                                        next_cursor => '30',
                                        next_buffer_hash => pg_temp.h(pg_temp.range(21, 30)),
                                        expected_token => 'T10', successor_token => 'T20'));
COMMIT;
SELECT pg_temp.cpstate(:cp1) AS after_page_2, pg_temp.same(:cp3, :cp1);

-- Page 3 (21..30): no next page held (an idle source), the token moved.
BEGIN;
SELECT sog.apply_run(:cp3, :g3, 21, pg_temp.digests(21, 30));
SELECT sog.commit_page(:cp3, :g3, 'T20', 'T30');
COMMIT;
SELECT sog.apply_run_page(:cp1, :g1, 21, pg_temp.digests(21, 30),
                          expected_token => 'T20', successor_token => 'T30');
SELECT pg_temp.cpstate(:cp1) AS after_page_3, pg_temp.same(:cp3, :cp1);

-- Page 4 (31..35): a source without tokens, the next page (36..40) noted
-- by its count alone.  Both tokens NULL leave the token as it is.
SELECT sog.note_read(:cp3, :g3, '35', pg_temp.h(pg_temp.range(31, 35)), 5);
SELECT sog.note_read(:cp1, :g1, '35', pg_temp.h(pg_temp.range(31, 35)), 5);
BEGIN;
SELECT sog.apply_run(:cp3, :g3, 31, pg_temp.digests(31, 35));
SELECT sog.note_read(:cp3, :g3, '40', NULL, 5);
COMMIT;
SELECT sog.apply_run_page(:cp1, :g1, 31, pg_temp.digests(31, 35), '40', NULL, 5);
SELECT pg_temp.cpstate(:cp1) AS after_page_4, pg_temp.same(:cp3, :cp1);
-- (commit_page(NULL, NULL) is another thing: it expects no token, and the
-- checkpoint holds T30)
SELECT * FROM pg_temp.err(format('SELECT sog.commit_page(%s, %s, NULL, NULL)', :cp1, :g1));

-- Page 4 delivered again (duplicates: 5 skipped) with page 5 applied in
-- the same call: the answers are apply_run's and apply_batch's.
BEGIN;
SELECT sog.apply_run(:cp3, :g3, 31, pg_temp.digests(31, 35)) AS skipped_3;
SELECT pg_temp.rle(sog.apply_batch(:cp3, :g3, pg_temp.positions(36, 40), pg_temp.digs(36, 40)));
COMMIT;
BEGIN;
SELECT sog.apply_run_page(:cp1, :g1, 31, pg_temp.digests(31, 35)) AS skipped_1;
SELECT pg_temp.rle(sog.apply_batch_page(:cp1, :g1, pg_temp.positions(36, 40), pg_temp.digs(36, 40)));
COMMIT;
SELECT pg_temp.cpstate(:cp1) AS after_page_5, pg_temp.same(:cp3, :cp1);

--
-- 2. Every refusal is the three calls' refusal, and the page call then
-- changes nothing: the statement's error rolls back what its apply wrote.
-- Page 6 (41..50) is noted; each attempt below is its own transaction.
--
SELECT sog.note_read(:cp1, :g1, '50', pg_temp.h(pg_temp.range(41, 50)), 10);
SELECT pg_temp.cpstate(:cp1) AS before;
-- a stale generation (SG001)
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 41, pg_temp.digests(41, 50), ''60'', NULL, 10, ''T30'', ''T50'')', :cp1, :g1 - 1));
-- another token than the checkpoint's (SG006): the apply before it is undone
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 41, pg_temp.digests(41, 50), ''60'', NULL, 10, ''T40'', ''T50'')', :cp1, :g1));
-- the same in the batch form
SELECT * FROM pg_temp.err(format('SELECT sog.apply_batch_page(%s, %s, pg_temp.positions(41, 50), pg_temp.digs(41, 50), ''60'', NULL, 10, ''T40'', ''T50'')', :cp1, :g1));
-- a record of the page is not the noted one (SG004)
SELECT * FROM pg_temp.err(format('SELECT sog.apply_batch_page(%s, %s, pg_temp.positions(41, 50), pg_temp.digs(41, 49) || pg_temp.d(''50, changed''), ''60'', NULL, 10, ''T30'', ''T50'')', :cp1, :g1));
-- the page stops short of the noted cursor and notes the next one: the
-- open boundary is not replaced (SG004)
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 41, pg_temp.digests(41, 45), ''60'', NULL, 10, ''T30'', ''T45'')', :cp1, :g1));
-- a next cursor behind the page's last record (SG005)
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 41, pg_temp.digests(41, 50), ''49'', NULL, NULL, ''T30'', ''T50'')', :cp1, :g1));
SELECT pg_temp.cpstate(:cp1) AS unchanged, (SELECT count(*) FROM sog.receipts(:cp1, '41')) AS receipts_above_40;
-- a page that stops short of the noted cursor with no next page: the call
-- passes, the COMMIT is refused (SG004), as after apply_run
BEGIN;
SELECT sog.apply_run_page(:cp1, :g1, 41, pg_temp.digests(41, 45), expected_token => 'T30', successor_token => 'T45');
\set VERBOSITY sqlstate
COMMIT;
\set VERBOSITY default
SELECT pg_temp.cpstate(:cp1) AS unchanged, (SELECT count(*) FROM sog.receipts(:cp1, '41')) AS receipts_above_40;
-- and the whole page passes
SELECT sog.apply_run_page(:cp1, :g1, 41, pg_temp.digests(41, 50), expected_token => 'T30', successor_token => 'T50');
SELECT pg_temp.cpstate(:cp1) AS after_page_6;

--
-- 3. Bad page arguments: refused (22023) before the checkpoint is read.
--
-- a hash or a count without the cursor they describe
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 51, pg_temp.digests(51, 52), NULL, pg_temp.h(pg_temp.range(53, 54)))', :cp1, :g1));
SELECT * FROM pg_temp.err(format('SELECT sog.apply_batch_page(%s, %s, pg_temp.positions(51, 52), pg_temp.digs(51, 52), next_buffered_count => 2)', :cp1, :g1));
-- a hash that is not one
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 51, pg_temp.digests(51, 52), ''54'', ''xyz'')', :cp1, :g1));
-- digests that are not whole, a NULL generation
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 51, ''\x0102''::bytea)', :cp1, :g1));
SELECT * FROM pg_temp.err(format('SELECT sog.apply_batch_page(%s, NULL, pg_temp.positions(51, 52), pg_temp.digs(51, 52))', :cp1));
SELECT pg_temp.cpstate(:cp1) AS unchanged;

--
-- 4. Who may call them: a consumer grant gives both; a role without one
-- is refused.
--
CREATE ROLE regress_page_consumer;
CREATE ROLE regress_page_none;
SELECT sog.grant_consumer('regress_page_consumer', 'page-one');
SELECT p.proname, has_function_privilege('regress_page_consumer', p.oid, 'EXECUTE') AS consumer,
       has_function_privilege('regress_page_none', p.oid, 'EXECUTE') AS none
  FROM pg_proc p WHERE p.pronamespace = 'sog'::regnamespace AND p.proname LIKE 'apply_%_page'
 ORDER BY 1;
SET ROLE regress_page_consumer;
SELECT sog.apply_run_page(:cp1, :g1, 51, pg_temp.digests(51, 52), expected_token => 'T50', successor_token => 'T52');
RESET ROLE;
SET ROLE regress_page_none;
SELECT * FROM pg_temp.err(format('SELECT sog.apply_run_page(%s, %s, 53, pg_temp.digests(53, 54))', :cp1, :g1));
RESET ROLE;
SELECT pg_temp.cpstate(:cp1) AS after_page_7;
SELECT sog.revoke_consumer('regress_page_consumer', 'page-one');
DROP OWNED BY regress_page_consumer, regress_page_none;
DROP ROLE regress_page_consumer, regress_page_none;
