--
-- halt: sog.evaluate_halt and sog.verify_resume (README: pure halt evaluation)
--
-- Oracles: the "evaluate_halt" and "verify_resume" vectors of
-- test/contract-v1.json (loaded, not retyped), and for the extra cases the
-- contract's rules, with every manifest digest recomputed by pgcrypto from
-- a preimage written by hand here: "ALIGNED", "DIVERGED", or the JSON text
-- Python's json.dumps({...}, sort_keys=True) writes (", " and ": "
-- separators, non-ASCII as \uXXXX, '"' and '\' escaped).
--
-- The database must be UTF8 (the non-ASCII buffer hashes below).
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\i test/type_helpers.sql

\set vectors `cat test/contract-v1.json`

SELECT getdatabaseencoding();

-- halt(cursor, commit, hash, key): the manifest's fields as text, or the
-- SQLSTATE in err.
CREATE FUNCTION pg_temp.halt(c text, s text, h text, k text,
                             OUT verdict text, OUT resume_from text,
                             OUT gap_size numeric, OUT manifest_digest text,
                             OUT err text)
LANGUAGE plpgsql AS $$
DECLARE
	m sog.manifest;
BEGIN
	m := sog.evaluate_halt(c::sog.position, s::sog.position, h, k);
	verdict := m.verdict::text;
	resume_from := m.resume_from::text;
	gap_size := m.gap_size;
	manifest_digest := m.manifest_digest;
EXCEPTION WHEN OTHERS THEN
	err := SQLSTATE;
END
$$;

-- sha(preimage): lowercase hex SHA-256 of the UTF-8 bytes, by pgcrypto.
CREATE FUNCTION pg_temp.sha(t text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT encode(digest(convert_to(t, 'UTF8'), 'sha256'), 'hex')
$$;

-- The composite type and the enum, as the contract names them.
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute
 WHERE attrelid = 'sog.manifest'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT enumsortorder, enumlabel
  FROM pg_enum WHERE enumtypid = 'sog.verdict'::regtype
 ORDER BY enumsortorder;

--
-- 1. Every "evaluate_halt" vector.
--
CREATE TEMP TABLE ehv AS
SELECT x.ord,
       x.v ->> 'source_cursor' AS c, x.v ->> 'sink_commit' AS s,
       x.v ->> 'buffer_hash' AS h, x.v ->> 'idempotency_key' AS k,
       x.v ->> 'verdict' AS verdict, x.v ->> 'resume_from' AS resume_from,
       (x.v ->> 'gap_size')::numeric AS gap_size,
       x.v ->> 'manifest_digest' AS manifest_digest,
       CASE x.v ->> 'error'
            WHEN 'fail_closed' THEN 'SG002'
            WHEN 'missing_idempotency_key' THEN '22023'
            ELSE x.v ->> 'error' END AS err
  FROM json_array_elements(:'vectors'::json -> 'evaluate_halt')
       WITH ORDINALITY AS x(v, ord);

SELECT e.ord, e.c, e.s, left(e.h, 8) AS h, e.k,
       coalesce(g.verdict, 'ERROR ' || g.err) AS got,
       g.resume_from, g.gap_size,
       (g.verdict, g.resume_from, g.gap_size, g.manifest_digest, g.err)
         IS NOT DISTINCT FROM
       (e.verdict, e.resume_from, e.gap_size, e.manifest_digest, e.err) AS ok
  FROM ehv e, LATERAL pg_temp.halt(e.c, e.s, e.h, e.k) g
 ORDER BY e.ord;

-- Failures in full (none expected).
SELECT e.*, g.*
  FROM ehv e, LATERAL pg_temp.halt(e.c, e.s, e.h, e.k) g
 WHERE (g.verdict, g.resume_from, g.gap_size, g.manifest_digest, g.err)
       IS DISTINCT FROM
       (e.verdict, e.resume_from, e.gap_size, e.manifest_digest, e.err)
 ORDER BY e.ord;

-- The vector digests are the documented preimages.
SELECT e.ord, e.verdict,
       e.manifest_digest = pg_temp.sha(
         CASE e.verdict
              WHEN 'aligned' THEN 'ALIGNED'
              WHEN 'unrecoverable_divergence' THEN 'DIVERGED'
              ELSE format('{"hash": "%s", "sink": "%s", "src": "%s"}',
                          e.h, e.s, e.c) END) AS preimage_ok
  FROM ehv e
 WHERE e.verdict IS NOT NULL
 ORDER BY e.ord;

-- The errors, once each.
SELECT sog.evaluate_halt('200', '100', '', 'orders-0');
\echo :LAST_ERROR_SQLSTATE
SELECT sog.evaluate_halt('200', '100', 'ab', '   ');
\echo :LAST_ERROR_SQLSTATE

--
-- 2. Every "verify_resume" vector: the manifest is built by evaluate_halt
-- from the vector's fields.
--
CREATE TEMP TABLE vrv AS
SELECT x.ord,
       x.v ->> 'source_cursor' AS c, x.v ->> 'sink_commit' AS s,
       x.v ->> 'buffer_hash' AS h, x.v ->> 'idempotency_key' AS k,
       x.v ->> 'requested' AS requested,
       (x.v ->> 'admissible')::boolean AS admissible,
       x.v ->> 'message' AS message
  FROM json_array_elements(:'vectors'::json -> 'verify_resume')
       WITH ORDINALITY AS x(v, ord);

SELECT v.ord, v.c, v.s, v.requested, r.admissible, r.message,
       (r.admissible, r.message) IS NOT DISTINCT FROM (v.admissible, v.message)
         AS ok
  FROM vrv v,
       LATERAL sog.verify_resume(
         sog.evaluate_halt(v.c::sog.position, v.s::sog.position, v.h, v.k),
         v.requested::sog.position) r
 ORDER BY v.ord;

SELECT count(*) AS vectors,
       count(*) FILTER (WHERE (r.admissible, r.message)
                              IS NOT DISTINCT FROM (v.admissible, v.message))
         AS passed
  FROM vrv v,
       LATERAL sog.verify_resume(
         sog.evaluate_halt(v.c::sog.position, v.s::sog.position, v.h, v.k),
         v.requested::sog.position) r;

--
-- 3. evaluate_halt beyond the vectors.  "pre" is the digest's preimage.
--
CREATE TEMP TABLE ehx (label text, c text, s text, h text, k text,
                       verdict text, resume_from text, gap_size numeric,
                       pre text, err text);
INSERT INTO ehx VALUES
	-- NULL positions: "nothing yet", below every position
	('null/null',            NULL, NULL, 'ab', 'k',
	 'aligned', NULL, 0, 'ALIGNED', NULL),
	('null/null no hash',    NULL, NULL, NULL, 'k',
	 'aligned', NULL, 0, 'ALIGNED', NULL),
	('null cursor',          NULL, '5', '', 'k',
	 'unrecoverable_divergence', '5', 0, 'DIVERGED', NULL),
	('null commit',          '5', NULL, 'ab', 'k',
	 'gap_replay_required', NULL, NULL,
	 '{"hash": "ab", "sink": null, "src": "5"}', NULL),
	('null commit no hash',  '5', NULL, NULL, 'k',
	 NULL, NULL, NULL, NULL, 'SG002'),
	('null commit empty hash', '5', NULL, '', 'k',
	 NULL, NULL, NULL, NULL, 'SG002'),
	-- positions compare and print canonically
	('aligned 007 = 7',      '007', '7', '', 'k',
	 'aligned', '7', 0, 'ALIGNED', NULL),
	('aligned with a hash',  '300', '300', 'beef', 'k',
	 'aligned', '300', 0, 'ALIGNED', NULL),
	('divergence with hash', '5-0', '5-1', 'beef', 'k',
	 'unrecoverable_divergence', '5-1', 0, 'DIVERGED', NULL),
	('canonical in json',    '0200', '00100', 'ab', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "ab", "sink": "100", "src": "200"}', NULL),
	('prefix gap',           '5-0', '5', 'ab', 'k',
	 'gap_replay_required', '5', NULL,
	 '{"hash": "ab", "sink": "5", "src": "5-0"}', NULL),
	('both two components',  '5-3', '5-1', 'ab', 'k',
	 'gap_replay_required', '5-1', NULL,
	 '{"hash": "ab", "sink": "5-1", "src": "5-3"}', NULL),
	('big gap',              '1' || repeat('0', 100), '1', 'ab', 'k',
	 'gap_replay_required', '1', ('1' || repeat('0', 100))::numeric - 1,
	 '{"hash": "ab", "sink": "1", "src": "1' || repeat('0', 100) || '"}', NULL),
	-- JSON escaping of the buffer hash text
	('hash with e-acute, quote, backslash', '200', '100', 'é"\', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "\u00e9\"\\", "sink": "100", "src": "200"}', NULL),
	('hash CJK',             '200', '100', '日本', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "\u65e5\u672c", "sink": "100", "src": "200"}', NULL),
	('hash outside the BMP', '200', '100', U&'\+01F600', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "\ud83d\ude00", "sink": "100", "src": "200"}', NULL),
	('hash control chars',   '200', '100',
	 'a' || chr(10) || 'b' || chr(9) || chr(8) || chr(12) || chr(13)
	     || chr(1) || chr(31) || chr(127) || '/', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "a\nb\t\b\f\r\u0001\u001f\u007f/", "sink": "100", "src": "200"}',
	 NULL),
	('hash white space only', '200', '100', '  ', 'k',
	 'gap_replay_required', '100', 100,
	 '{"hash": "  ", "sink": "100", "src": "200"}', NULL),
	-- idempotency keys: NULL, empty, or only ASCII white space is 22023
	('key NULL',             '200', '100', 'ab', NULL,
	 NULL, NULL, NULL, NULL, '22023'),
	('key empty',            '200', '100', 'ab', '',
	 NULL, NULL, NULL, NULL, '22023'),
	('key space',            '200', '100', 'ab', ' ',
	 NULL, NULL, NULL, NULL, '22023'),
	('key tab',              '200', '100', 'ab', chr(9),
	 NULL, NULL, NULL, NULL, '22023'),
	('key newline',          '200', '100', 'ab', chr(10),
	 NULL, NULL, NULL, NULL, '22023'),
	('key vtab',             '200', '100', 'ab', chr(11),
	 NULL, NULL, NULL, NULL, '22023'),
	('key formfeed',         '200', '100', 'ab', chr(12),
	 NULL, NULL, NULL, NULL, '22023'),
	('key cr',               '200', '100', 'ab', chr(13),
	 NULL, NULL, NULL, NULL, '22023'),
	('key all six',          '200', '100', 'ab', E' \t\n\013\f\r',
	 NULL, NULL, NULL, NULL, '22023'),
	('key blank, aligned',   '100', '100', '', ' ',
	 NULL, NULL, NULL, NULL, '22023'),
	('key blank, fail closed', '200', '100', NULL, ' ',
	 NULL, NULL, NULL, NULL, '22023'),
	-- a key with text, or non-ASCII white space, is a key
	('key padded',           '200', '100', 'ab', ' k ',
	 'gap_replay_required', '100', 100,
	 '{"hash": "ab", "sink": "100", "src": "200"}', NULL),
	('key no-break space',   '200', '100', 'ab', U&'\00A0',
	 'gap_replay_required', '100', 100,
	 '{"hash": "ab", "sink": "100", "src": "200"}', NULL);

SELECT x.label, coalesce(g.verdict, 'ERROR ' || g.err) AS got,
       g.resume_from, left(g.gap_size::text, 12) AS gap_size,
       (g.verdict, g.resume_from, g.gap_size, g.manifest_digest, g.err)
         IS NOT DISTINCT FROM
       (x.verdict, x.resume_from, x.gap_size, pg_temp.sha(x.pre), x.err) AS ok
  FROM ehx x, LATERAL pg_temp.halt(x.c, x.s, x.h, x.k) g
 ORDER BY x.label;

-- Failures in full (none expected).
SELECT x.label, g.*, pg_temp.sha(x.pre) AS expected_digest
  FROM ehx x, LATERAL pg_temp.halt(x.c, x.s, x.h, x.k) g
 WHERE (g.verdict, g.resume_from, g.gap_size, g.manifest_digest, g.err)
       IS DISTINCT FROM
       (x.verdict, x.resume_from, x.gap_size, pg_temp.sha(x.pre), x.err)
 ORDER BY x.label;

-- The idempotency key does not enter the digest.
SELECT (sog.evaluate_halt('200', '100', 'ab', 'one')).manifest_digest
       = (sog.evaluate_halt('200', '100', 'ab', 'two')).manifest_digest
         AS key_independent;

--
-- 4. verify_resume beyond the vectors.
--
CREATE TEMP TABLE vrx (label text, m sog.manifest, requested text,
                       admissible boolean, message text);
INSERT INTO vrx VALUES
	-- a fail_closed manifest, built by hand as claim and halt log them
	('fail_closed below',  ROW('fail_closed', '100', 100, NULL)::sog.manifest,
	 '50', false,
	 'FAIL_CLOSED: Uncommitted gap cannot be verified. Operator resolution required.'),
	('fail_closed at',     ROW('fail_closed', '100', 100, NULL)::sog.manifest,
	 '100', false,
	 'FAIL_CLOSED: Uncommitted gap cannot be verified. Operator resolution required.'),
	('fail_closed above',  ROW('fail_closed', '100', 100, NULL)::sog.manifest,
	 '200', false,
	 'FAIL_CLOSED: Uncommitted gap cannot be verified. Operator resolution required.'),
	-- a divergence refuses every cursor
	('divergence below',   sog.evaluate_halt('100', '300', '', 'k'),
	 '0', false, 'HALT: Sink is ahead of source. Manual audit required.'),
	('divergence above',   sog.evaluate_halt('100', '300', '', 'k'),
	 '1000', false, 'HALT: Sink is ahead of source. Manual audit required.'),
	-- unknown gap size (multi-component positions)
	('unknown size above', sog.evaluate_halt('1700000000001-5', '1700000000000-9', 'cafe', 'k'),
	 '1700000000001-0', false,
	 'CURSOR_SKIP: Requested 1700000000001-0 exceeds safe 1700000000000-9. Replay gap of unknown size.'),
	('unknown size, 10 > 9', sog.evaluate_halt('1700000000001-5', '1700000000000-9', 'cafe', 'k'),
	 '1700000000000-10', false,
	 'CURSOR_SKIP: Requested 1700000000000-10 exceeds safe 1700000000000-9. Replay gap of unknown size.'),
	('unknown size, prefix above', sog.evaluate_halt('1700000000001-5', '1700000000000-9', 'cafe', 'k'),
	 '1700000000000-9-0', false,
	 'CURSOR_SKIP: Requested 1700000000000-9-0 exceeds safe 1700000000000-9. Replay gap of unknown size.'),
	('unknown size at',    sog.evaluate_halt('1700000000001-5', '1700000000000-9', 'cafe', 'k'),
	 '1700000000000-9', true, 'RESUME_ADMISSIBLE'),
	('unknown size below', sog.evaluate_halt('1700000000001-5', '1700000000000-9', 'cafe', 'k'),
	 '1700000000000', true, 'RESUME_ADMISSIBLE'),
	-- resume_from NULL: F is "start", every requested cursor exceeds it
	('start, gap',         sog.evaluate_halt('5', NULL, 'ab', 'k'),
	 '0', false,
	 'CURSOR_SKIP: Requested 0 exceeds safe start. Replay gap of unknown size.'),
	('start, aligned',     sog.evaluate_halt(NULL, NULL, '', 'k'),
	 '0', false,
	 'CURSOR_SKIP: Requested 0 exceeds safe start. Replay gap of 0.'),
	('start, hand-built',  ROW('gap_replay_required', NULL, 7, NULL)::sog.manifest,
	 '3-1', false,
	 'CURSOR_SKIP: Requested 3-1 exceeds safe start. Replay gap of 7.'),
	-- requested and safe positions are printed canonically
	('canonical text',     sog.evaluate_halt('200', '100', 'beef', 'k'),
	 '000150', false,
	 'CURSOR_SKIP: Requested 150 exceeds safe 100. Replay gap of 100.'),
	('big gap',            sog.evaluate_halt(('1' || repeat('0', 30))::sog.position, '1', 'ab', 'k'),
	 '2', false,
	 'CURSOR_SKIP: Requested 2 exceeds safe 1. Replay gap of 999999999999999999999999999999.'),
	('aligned at',         sog.evaluate_halt('300', '300', '', 'k'),
	 '300', true, 'RESUME_ADMISSIBLE'),
	('aligned, 300-0 above', sog.evaluate_halt('300', '300', '', 'k'),
	 '300-0', false,
	 'CURSOR_SKIP: Requested 300-0 exceeds safe 300. Replay gap of 0.');

SELECT x.label, x.requested, r.admissible, r.message,
       (r.admissible, r.message) IS NOT DISTINCT FROM (x.admissible, x.message)
         AS ok
  FROM vrx x, LATERAL sog.verify_resume(x.m, x.requested::sog.position) r
 ORDER BY x.label;

SELECT count(*) AS cases,
       count(*) FILTER (WHERE (r.admissible, r.message)
                              IS DISTINCT FROM (x.admissible, x.message))
         AS failures
  FROM vrx x, LATERAL sog.verify_resume(x.m, x.requested::sog.position) r;

-- One row per call.
SELECT count(*) AS rows
  FROM sog.verify_resume(sog.evaluate_halt('200', '100', 'beef', 'k'), '100');

-- NULL arguments.  The contract is silent; this pins what the
-- implementation chose: a NULL requested cursor is "from the start", below
-- every position, so it is admissible unless the manifest refuses every
-- cursor; a NULL manifest or verdict is an error (22023).
SELECT label, pg_temp.try_message(q) AS got
  FROM (VALUES
	('requested NULL',
	 $q$SELECT admissible || ' ' || message
	      FROM sog.verify_resume(sog.evaluate_halt('200', '100', 'beef', 'k'), NULL)$q$),
	('requested NULL, start',
	 $q$SELECT admissible || ' ' || message
	      FROM sog.verify_resume(sog.evaluate_halt('5', NULL, 'beef', 'k'), NULL)$q$),
	('requested NULL, divergence',
	 $q$SELECT admissible || ' ' || message
	      FROM sog.verify_resume(sog.evaluate_halt('100', '300', '', 'k'), NULL)$q$),
	('manifest NULL',
	 $q$SELECT admissible || ' ' || message
	      FROM sog.verify_resume(NULL, '100')$q$),
	('verdict NULL',
	 $q$SELECT admissible || ' ' || message
	      FROM sog.verify_resume(ROW(NULL, '100', 0, NULL)::sog.manifest, '100')$q$)
       ) AS v(label, q)
 ORDER BY label;
