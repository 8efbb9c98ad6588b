--
-- hash: sog.payload_digest and sog.buffer_hash (README: hash definitions)
--
-- Oracles: the "buffer_hash" vectors of test/contract-v1.json (loaded, not
-- retyped), and pgcrypto's digest(), with which the chain is recomputed in
-- plain SQL:
--   h0 = sha256('sog:buffer:v1')
--   hi = sha256(h(i-1) || be16(len(Pi)) || Pi || Di)
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\i test/type_helpers.sql

\set vectors `cat test/contract-v1.json`

-- The vectors, one row per record (vectors without records have none here).
CREATE TEMP TABLE hv AS
SELECT b.vord, b.v ->> 'name' AS name, b.v ->> 'buffer_hash' AS buffer_hash,
       b.v -> 'records' AS records
  FROM json_array_elements(:'vectors'::json -> 'buffer_hash')
       WITH ORDINALITY AS b(v, vord);
CREATE TEMP TABLE hr AS
SELECT hv.vord, hv.name, r.rord, r.r ->> 'position' AS pos,
       decode(r.r ->> 'payload_hex', 'hex') AS payload,
       r.r ->> 'payload_digest_hex' AS digest_hex
  FROM hv, json_array_elements(hv.records) WITH ORDINALITY AS r(r, rord);

SELECT vord, name, json_array_length(records) AS records FROM hv ORDER BY vord;

--
-- 1. payload_digest = pgcrypto sha256 = the vector's payload_digest_hex.
--
SELECT vord, name, rord, octet_length(payload) AS payload_bytes,
       encode(sog.payload_digest(payload), 'hex') = digest_hex AS vector_ok,
       sog.payload_digest(payload) = digest(payload, 'sha256') AS pgcrypto_ok
  FROM hr
 ORDER BY vord, rord;

SELECT encode(sog.payload_digest(''), 'hex') AS empty_payload,
       sog.payload_digest(NULL) IS NULL AS null_gives_null;

-- Larger payloads, against pgcrypto.
SELECT count(*) AS payloads,
       count(*) FILTER (WHERE sog.payload_digest(p) <> digest(p, 'sha256'))
         AS failures
  FROM (SELECT convert_to(repeat(md5(g::text), g), 'UTF8') AS p
          FROM generate_series(0, 300, 7) g) s;

--
-- 2. The aggregate over each vector's records, in position order.  A scalar
-- subquery keeps the vector without records: the aggregate over no rows
-- must give the hex of h0.
--
SELECT vord, name,
       (SELECT sog.buffer_hash(pos::sog.position, decode(digest_hex, 'hex')
                               ORDER BY pos::sog.position)
          FROM hr WHERE hr.vord = hv.vord) AS got,
       (SELECT sog.buffer_hash(pos::sog.position, decode(digest_hex, 'hex')
                               ORDER BY pos::sog.position)
          FROM hr WHERE hr.vord = hv.vord)
         IS NOT DISTINCT FROM buffer_hash AS ok
  FROM hv
 ORDER BY vord;

-- With the digest computed in the query, as a sink would.
SELECT vord, name,
       (SELECT sog.buffer_hash(pos::sog.position, sog.payload_digest(payload)
                               ORDER BY pos::sog.position)
          FROM hr WHERE hr.vord = hv.vord)
         IS NOT DISTINCT FROM buffer_hash AS ok
  FROM hv
 ORDER BY vord;

-- h0 is sha256('sog:buffer:v1'); the "empty" vector is that.
SELECT encode(digest('sog:buffer:v1', 'sha256'), 'hex') AS h0,
       encode(digest('sog:buffer:v1', 'sha256'), 'hex') = buffer_hash
         AS empty_vector_is_h0
  FROM hv WHERE name = 'empty';

-- The aggregate over zero rows, directly.
SELECT sog.buffer_hash(p, d ORDER BY p) AS zero_rows,
       sog.buffer_hash(p, d ORDER BY p)
         IS NOT DISTINCT FROM encode(digest('sog:buffer:v1', 'sha256'), 'hex')
         AS ok
  FROM (VALUES ('1'::sog.position, digest('x', 'sha256'))) AS v(p, d)
 WHERE false;

--
-- 3. The array form on each vector.
--
SELECT vord, name,
       sog.buffer_hash(
         ARRAY(SELECT pos::sog.position FROM hr
                WHERE hr.vord = hv.vord ORDER BY rord),
         ARRAY(SELECT decode(digest_hex, 'hex') FROM hr
                WHERE hr.vord = hv.vord ORDER BY rord))
         IS NOT DISTINCT FROM buffer_hash AS ok
  FROM hv
 ORDER BY vord;

--
-- 4. An independent oracle in plain SQL with pgcrypto: the chain as a
-- recursive CTE.  be16 is the two-byte big-endian length of the canonical
-- position text.
--
CREATE FUNCTION pg_temp.oracle_hash(pos text[], dig bytea[]) RETURNS text
LANGUAGE sql AS $$
	WITH RECURSIVE chain(i, h) AS (
		SELECT 0, digest('sog:buffer:v1', 'sha256')
		UNION ALL
		SELECT c.i + 1,
		       digest(c.h
		              || decode(lpad(to_hex(octet_length(pos[c.i + 1])), 4, '0'),
		                        'hex')
		              || convert_to(pos[c.i + 1], 'SQL_ASCII')
		              || dig[c.i + 1],
		              'sha256')
		  FROM chain c
		 WHERE c.i < coalesce(array_length(pos, 1), 0)
	)
	SELECT encode(h, 'hex') FROM chain ORDER BY i DESC LIMIT 1
$$;

-- The oracle reproduces every vector (so it is a valid oracle) ...
SELECT vord, name,
       pg_temp.oracle_hash(
         ARRAY(SELECT pos FROM hr WHERE hr.vord = hv.vord ORDER BY rord),
         ARRAY(SELECT digest(payload, 'sha256') FROM hr
                WHERE hr.vord = hv.vord ORDER BY rord)) = buffer_hash AS ok
  FROM hv
 ORDER BY vord;

-- ... and agrees with the aggregate on kafka_sparse and redis_ids.
SELECT name,
       pg_temp.oracle_hash(
         ARRAY(SELECT pos FROM hr WHERE hr.vord = hv.vord ORDER BY rord),
         ARRAY(SELECT digest(payload, 'sha256') FROM hr
                WHERE hr.vord = hv.vord ORDER BY rord))
       = (SELECT sog.buffer_hash(pos::sog.position, sog.payload_digest(payload)
                                 ORDER BY pos::sog.position)
            FROM hr WHERE hr.vord = hv.vord) AS ok
  FROM hv
 WHERE name IN ('kafka_sparse', 'redis_ids')
 ORDER BY name;

-- A generated stream of 1000 records: positions of one and two components
-- and growing length, written with leading zeros in the input (the hash
-- covers the canonical text), payloads of varying size.
CREATE TEMP TABLE stream AS
SELECT i,
       (i::bigint * i * i)::text
         || CASE WHEN i % 3 = 0 THEN '-' || (i % 11)::text ELSE '' END
         AS canonical,
       '00' || (i::bigint * i * i)::text
         || CASE WHEN i % 3 = 0 THEN '-0' || (i % 11)::text ELSE '' END
         AS input,
       convert_to(repeat('record-' || i, 1 + i % 5), 'UTF8') AS payload
  FROM generate_series(1, 1000) AS i;

SELECT count(*) AS records,
       count(*) FILTER (WHERE input::sog.position::text <> canonical)
         AS canonical_mismatches
  FROM stream;

SELECT pg_temp.oracle_hash(array_agg(canonical ORDER BY i),
                           array_agg(digest(payload, 'sha256') ORDER BY i))
       = sog.buffer_hash(input::sog.position, sog.payload_digest(payload)
                         ORDER BY input::sog.position) AS aggregate_ok,
       pg_temp.oracle_hash(array_agg(canonical ORDER BY i),
                           array_agg(digest(payload, 'sha256') ORDER BY i))
       = sog.buffer_hash(array_agg(input::sog.position ORDER BY i),
                         array_agg(sog.payload_digest(payload) ORDER BY i))
         AS array_ok
  FROM stream;

-- Every byte matters: one changed payload changes the hash.
SELECT sog.buffer_hash(canonical::sog.position, digest(payload, 'sha256')
                       ORDER BY canonical::sog.position)
       <> sog.buffer_hash(canonical::sog.position, digest(payload || '\x00'::bytea, 'sha256')
                          ORDER BY canonical::sog.position)
         AS payload_sensitive
  FROM stream WHERE i <= 10;

-- Grouped use: one hash per group.
SELECT i % 4 AS grp,
       sog.buffer_hash(canonical::sog.position, digest(payload, 'sha256')
                       ORDER BY canonical::sog.position)
       = pg_temp.oracle_hash(array_agg(canonical ORDER BY i),
                             array_agg(digest(payload, 'sha256') ORDER BY i))
         AS ok
  FROM stream
 GROUP BY i % 4
 ORDER BY grp;

--
-- 5. Errors (22023): positions not strictly increasing, digest not 32
-- bytes, arrays of different lengths.
--
SELECT label, pg_temp.try(q) AS got, expected, pg_temp.try(q) = expected AS ok
  FROM (VALUES
	('agg: equal positions',
	 $q$SELECT sog.buffer_hash(p::sog.position, digest(p, 'sha256') ORDER BY n)
	      FROM (VALUES (1, '5'), (2, '005')) v(n, p)$q$, 'ERROR 22023'),
	('agg: decreasing positions',
	 $q$SELECT sog.buffer_hash(p::sog.position, digest(p, 'sha256') ORDER BY n)
	      FROM (VALUES (1, '6'), (2, '5')) v(n, p)$q$, 'ERROR 22023'),
	('agg: prefix after longer',
	 $q$SELECT sog.buffer_hash(p::sog.position, digest(p, 'sha256') ORDER BY n)
	      FROM (VALUES (1, '5-0'), (2, '5')) v(n, p)$q$, 'ERROR 22023'),
	('agg: digest 31 bytes',
	 $q$SELECT sog.buffer_hash('1'::sog.position, substr(digest('x', 'sha256'), 1, 31))$q$,
	 'ERROR 22023'),
	('agg: digest 33 bytes',
	 $q$SELECT sog.buffer_hash('1'::sog.position, digest('x', 'sha256') || '\x00'::bytea)$q$,
	 'ERROR 22023'),
	('agg: digest empty',
	 $q$SELECT sog.buffer_hash('1'::sog.position, ''::bytea)$q$, 'ERROR 22023'),
	('array: equal positions',
	 $q$SELECT sog.buffer_hash('{5,005}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256')])$q$,
	 'ERROR 22023'),
	('array: decreasing positions',
	 $q$SELECT sog.buffer_hash('{6,5}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256')])$q$,
	 'ERROR 22023'),
	('array: digest 31 bytes',
	 $q$SELECT sog.buffer_hash('{1}'::sog.position[],
	                           ARRAY[substr(digest('a', 'sha256'), 1, 31)])$q$,
	 'ERROR 22023'),
	('array: more positions',
	 $q$SELECT sog.buffer_hash('{1,2}'::sog.position[],
	                           ARRAY[digest('a', 'sha256')])$q$, 'ERROR 22023'),
	('array: more digests',
	 $q$SELECT sog.buffer_hash('{1}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256')])$q$,
	 'ERROR 22023'),
	('array: no positions, one digest',
	 $q$SELECT sog.buffer_hash('{}'::sog.position[],
	                           ARRAY[digest('a', 'sha256')])$q$, 'ERROR 22023')
       ) AS v(label, q, expected)
 ORDER BY label;

-- Empty arrays: no records, h0.
SELECT sog.buffer_hash('{}'::sog.position[], '{}'::bytea[])
       = encode(digest('sog:buffer:v1', 'sha256'), 'hex') AS empty_arrays_h0;

-- NULLs and a two-dimensional array.  The contract is silent; this pins
-- what the implementation chose: a record with a NULL position or digest is
-- an error (22023), never silently skipped; a NULL array gives NULL (the
-- function is strict); a two-dimensional array is read in storage order,
-- like the flat one.
SELECT label, pg_temp.try_message(q) AS got
  FROM (VALUES
	('agg: NULL position row',
	 $q$SELECT sog.buffer_hash(p::sog.position, digest('x', 'sha256') ORDER BY n)
	      FROM (VALUES (1, '5'), (2, NULL)) v(n, p)$q$),
	('agg: NULL digest row',
	 $q$SELECT sog.buffer_hash(p::sog.position, CASE WHEN n = 1 THEN digest('x', 'sha256') END ORDER BY n)
	      FROM (VALUES (1, '5'), (2, '6')) v(n, p)$q$),
	('agg: only NULL rows',
	 $q$SELECT sog.buffer_hash(NULL::sog.position, NULL::bytea)$q$),
	('array: NULL positions array',
	 $q$SELECT sog.buffer_hash(NULL::sog.position[], '{}'::bytea[])$q$),
	('array: NULL position element',
	 $q$SELECT sog.buffer_hash(ARRAY['1', NULL]::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256')])$q$),
	('array: NULL digest element',
	 $q$SELECT sog.buffer_hash('{1,2}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), NULL])$q$),
	('array: two-dimensional',
	 $q$SELECT sog.buffer_hash('{{1,2},{3,4}}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256'),
	                                 digest('c', 'sha256'), digest('d', 'sha256')])
	           = sog.buffer_hash('{1,2,3,4}'::sog.position[],
	                           ARRAY[digest('a', 'sha256'), digest('b', 'sha256'),
	                                 digest('c', 'sha256'), digest('d', 'sha256')])$q$)
       ) AS v(label, q)
 ORDER BY label;

-- Each message once.
SELECT sog.buffer_hash(p::sog.position, digest(p, 'sha256') ORDER BY n)
  FROM (VALUES (1, '6'), (2, '5')) v(n, p);
\echo :LAST_ERROR_SQLSTATE
SELECT sog.buffer_hash(p::sog.position, digest(p, 'sha256') ORDER BY n)
  FROM (VALUES (1, '5'), (2, '5')) v(n, p);
\echo :LAST_ERROR_SQLSTATE
SELECT sog.buffer_hash('1'::sog.position, '\x0102'::bytea);
\echo :LAST_ERROR_SQLSTATE
SELECT sog.buffer_hash('{1,2}'::sog.position[], ARRAY[digest('a', 'sha256')]);
\echo :LAST_ERROR_SQLSTATE
