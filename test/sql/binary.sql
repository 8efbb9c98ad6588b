--
-- binary: send/receive of sog.position through COPY (FORMAT binary)
-- (README: the position type)
--
-- Server-side COPY to and from a file needs superuser, which pg_regress is.
-- The files are /tmp/sog_regress_binary_<backend pid>_*.copy and are removed
-- at the end.
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\set VERBOSITY default
\set SHOW_CONTEXT never

\set vectors `cat test/contract-v1.json`

SELECT '/tmp/sog_regress_binary_' || pg_backend_pid() AS binprefix \gset
SELECT :'binprefix' || '_roundtrip.copy' AS binfile \gset

-- send and receive are declared.
SELECT typsend <> 0 AS has_send, typreceive <> 0 AS has_receive
  FROM pg_type WHERE oid = 'sog.position'::regtype;

--
-- Round trip: every canonical vector, the order list, extremes and a NULL.
--
CREATE TEMP TABLE bin_src (id int, p sog.position);
INSERT INTO bin_src
SELECT x.ord, (x.v ->> 'canonical')::sog.position
  FROM json_array_elements(:'vectors'::json -> 'positions')
       WITH ORDINALITY AS x(v, ord)
 WHERE x.v ->> 'canonical' IS NOT NULL;
INSERT INTO bin_src
SELECT 100 + x.ord, x.t::sog.position
  FROM json_array_elements_text(:'vectors'::json -> 'order')
       WITH ORDINALITY AS x(t, ord);
INSERT INTO bin_src VALUES
	(200, rtrim(repeat(repeat('9', 160) || '-', 8), '-')::sog.position),
	(201, '0-0-0-0-0-0-0-0'),
	(202, '18446744073709551616'),
	(203, NULL);

SELECT count(*) AS rows, count(p) AS non_null FROM bin_src;

COPY bin_src TO :'binfile' WITH (FORMAT binary);
CREATE TEMP TABLE bin_dst (LIKE bin_src);
COPY bin_dst FROM :'binfile' WITH (FORMAT binary);

SELECT count(*) AS rows, count(p) AS non_null FROM bin_dst;
SELECT 'src minus dst' AS diff, count(*)
  FROM (SELECT * FROM bin_src EXCEPT ALL SELECT * FROM bin_dst) d
UNION ALL
SELECT 'dst minus src', count(*)
  FROM (SELECT * FROM bin_dst EXCEPT ALL SELECT * FROM bin_src) d;
-- And by text, row by row.
SELECT count(*) AS mismatches
  FROM bin_src s FULL JOIN bin_dst d USING (id)
 WHERE s.p::text IS DISTINCT FROM d.p::text;

--
-- The wire format, seen by reading the same file into a bytea column: COPY
-- BINARY frames a field the same way whatever its type, so the bytes are
-- what send produced.  Documented in src/type/position.c: version byte 1, then
-- the canonical text.
--
CREATE TEMP TABLE bin_raw (id int, b bytea);
COPY bin_raw FROM :'binfile' WITH (FORMAT binary);
SELECT r.id, s.p, r.b,
       r.b IS NOT DISTINCT FROM
         '\x01'::bytea || convert_to(s.p::text, 'SQL_ASCII') AS ok
  FROM bin_raw r JOIN bin_src s USING (id)
 WHERE r.id IN (1, 2, 5, 8, 102, 201, 203)
 ORDER BY r.id;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE r.b IS DISTINCT FROM
                        '\x01'::bytea || convert_to(s.p::text, 'SQL_ASCII'))
         AS not_version_1_plus_text
  FROM bin_raw r JOIN bin_src s USING (id);

--
-- Hand-built messages.  A bytea column written with COPY BINARY gives a file
-- whose field bytes are exactly the bytea, so reading that file into a
-- sog.position column hands those bytes to the receive function.
--
CREATE TEMP TABLE bin_one (p sog.position);

-- recv_bytes(bytes): what the receive function makes of the bytes: the
-- canonical text, or 'ERROR <sqlstate>: <message>'.
CREATE FUNCTION pg_temp.recv_bytes(prefix text, n int, b bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	f text := prefix || '_msg' || n || '.copy';
	r text;
BEGIN
	EXECUTE format('COPY (SELECT %L::bytea) TO %L WITH (FORMAT binary)', b, f);
	TRUNCATE bin_one;
	EXECUTE format('COPY bin_one FROM %L WITH (FORMAT binary)', f);
	SELECT p::text INTO r FROM bin_one;
	RETURN r;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END
$$;

SELECT n, label, left(pg_temp.recv_bytes(:'binprefix', n, b), 72) AS got,
       expected,
       CASE WHEN expected = 'error'
            THEN pg_temp.recv_bytes(:'binprefix', n, b) LIKE 'ERROR %'
            ELSE pg_temp.recv_bytes(:'binprefix', n, b) = expected END AS ok
  FROM (VALUES
	(1,  'version 1, "42"',          '\x013432'::bytea,        '42'),
	(2,  'version 1, "1-2-3"',       '\x01312d322d33'::bytea,  '1-2-3'),
	(3,  'empty message',            '\x'::bytea,              'error'),
	(4,  'version byte only',        '\x01'::bytea,            'error'),
	(5,  'version 0',                '\x003432'::bytea,        'error'),
	(6,  'version 2',                '\x023432'::bytea,        'error'),
	(7,  'version 255',              '\xff3432'::bytea,        'error'),
	(8,  'text without version',     '\x3432'::bytea,          'error'),
	(9,  'letters',                  '\x01616263'::bytea,      'error'),
	(10, 'embedded NUL',             '\x01340032'::bytea,      'error'),
	(11, 'trailing NUL',             '\x013400'::bytea,        'error'),
	(12, 'high bytes',               '\x01ffd9a3'::bytea,      'error'),
	(13, 'double dash',              '\x01312d2d32'::bytea,    'error'),
	(14, 'nine components',
	     '\x01' || convert_to('1-2-3-4-5-6-7-8-9', 'SQL_ASCII'),   'error'),
	(15, '161 digits',
	     '\x01' || convert_to(repeat('9', 161), 'SQL_ASCII'),      'error'),
	(16, 'on-disk encoding of 42',   '\x010142'::bytea,        'error'),
	-- the text follows the input function's rules (src/type/position.c)
	(17, 'leading zeros "007"',      '\x01303037'::bytea,      '7'),
	(18, 'surrounding spaces',       '\x01203520'::bytea,      '5')
       ) AS v(n, label, b, expected)
 ORDER BY n;

-- The session survived all of that.
SELECT 1 AS alive;

-- Remove the files.
SELECT 'rm -f ' || :'binprefix' || '_*.copy' AS rmcmd \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'rmcmd';
SELECT count(*) AS files_left
  FROM pg_ls_dir('/tmp') AS f
 WHERE f LIKE 'sog_regress_binary_' || pg_backend_pid() || '_%';
