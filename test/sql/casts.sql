--
-- casts: bigint, numeric, pg_lsn and text to and from sog.position
-- (README: the position type)
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\i test/type_helpers.sql

--
-- bigint -> sog.position
--
SELECT v AS bigint, expected,
       pg_temp.try(format('SELECT %L::bigint::sog.position::text', v)) AS got,
       pg_temp.try(format('SELECT %L::bigint::sog.position::text', v))
         = expected AS ok
  FROM (VALUES ('0', '0'),
               ('42', '42'),
               ('9223372036854775807', '9223372036854775807'),
               ('-1', 'ERROR 22023'),
               ('-9223372036854775808', 'ERROR 22023')) AS v(v, expected)
 ORDER BY v;

SELECT (-1)::bigint::sog.position;
\echo :LAST_ERROR_SQLSTATE

-- Casts compose with the order: bigint order is position order.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE (a::sog.position < b::sog.position) <> (a < b))
         AS failures
  FROM unnest(ARRAY[0, 1, 9, 10, 99, 100, 4294967295, 4294967296,
                    9223372036854775806, 9223372036854775807]::bigint[]) a,
       unnest(ARRAY[0, 1, 9, 10, 99, 100, 4294967295, 4294967296,
                    9223372036854775806, 9223372036854775807]::bigint[]) b;

--
-- numeric -> sog.position: non-negative integers only, at most 160 digits.
--
SELECT label,
       pg_temp.short(pg_temp.try(format('SELECT %s::sog.position::text', expr)))
         AS got,
       pg_temp.short(expected) AS expected,
       pg_temp.try(format('SELECT %s::sog.position::text', expr))
         = expected AS ok
  FROM (VALUES
	('0',               '0::numeric',                '0'),
	('12',              '12::numeric',               '12'),
	('1.5',             '1.5::numeric',              'ERROR 22023'),
	('-1',              '(-1)::numeric',             'ERROR 22023'),
	('-0.5',            '(-0.5)::numeric',           'ERROR 22023'),
	('NaN',             '''NaN''::numeric',          'ERROR 22023'),
	('Infinity',        '''Infinity''::numeric',     'ERROR 22023'),
	('-Infinity',       '''-Infinity''::numeric',    'ERROR 22023'),
	('2^64',            '18446744073709551616::numeric',
	                                                 '18446744073709551616'),
	('160 digits',      format('%L::numeric', repeat('9', 160)),
	                                                 repeat('9', 160)),
	('1e159',           '1e159::numeric',            '1' || repeat('0', 159)),
	('161 digits',      format('%L::numeric', '1' || repeat('0', 160)),
	                                                 'ERROR 22023'),
	('1e160',           '1e160::numeric',            'ERROR 22023')
       ) AS v(label, expr, expected)
 ORDER BY label;

-- Integral values written with a scale (12.0, 1000.000) are integers: the
-- value decides, not the scale.  (The contract does not say; this pins what
-- the implementation chose.)
SELECT pg_temp.try('SELECT 12.0::numeric::sog.position::text') AS "12.0",
       pg_temp.try('SELECT 0.000::numeric::sog.position::text') AS "0.000",
       pg_temp.try('SELECT 1000.000::numeric::sog.position::text') AS "1000.000";

-- One message of each kind.
SELECT 1.5::numeric::sog.position;
SELECT 'NaN'::numeric::sog.position;
SELECT ('1' || repeat('0', 160))::numeric::sog.position;

--
-- pg_lsn -> sog.position: the LSN as a 64-bit byte position.  The oracle is
-- pg_lsn's own subtraction (a numeric).  The LSN is shown as written, not
-- as pg_lsn prints it (19 pads the low half: 0/00000000).
--
SELECT lsn_text AS lsn, lsn_text::pg_lsn::sog.position AS pos, expected,
       lsn_text::pg_lsn::sog.position::text = expected
         AND lsn_text::pg_lsn::sog.position::text = (lsn_text::pg_lsn - '0/0'::pg_lsn)::text AS ok
  FROM (VALUES ('0/0', '0'),
               ('16/B374D848', '97500059720'),
               ('FFFFFFFF/FFFFFFFF', '18446744073709551615'))
       AS v(lsn_text, expected)
 ORDER BY lsn_text::pg_lsn;

--
-- sog.position -> numeric: one component only.
--
SELECT label,
       pg_temp.short(pg_temp.try(format('SELECT %L::sog.position::numeric::text', p)))
         AS got,
       pg_temp.short(expected) AS expected,
       pg_temp.try(format('SELECT %L::sog.position::numeric::text', p))
         = expected AS ok
  FROM (VALUES ('0',          '0',                    '0'),
               ('007',        '007',                  '7'),
               ('2^64',       '18446744073709551616', '18446744073709551616'),
               ('160 nines',  repeat('9', 160),       repeat('9', 160)),
               ('1-2',        '1-2',                  'ERROR 22023'),
               ('5-0',        '5-0',                  'ERROR 22023'))
       AS v(label, p, expected)
 ORDER BY label;

SELECT '1-2'::sog.position::numeric;
\echo :LAST_ERROR_SQLSTATE

-- Round trip numeric -> position -> numeric for 1, 10, ..., 10^159 and
-- 9, 99, ..., 160 nines.
SELECT count(*) AS values,
       count(*) FILTER (WHERE n::sog.position::numeric <> n
                           OR n::sog.position::text <> n::text) AS failures
  FROM (SELECT ('1' || repeat('0', g))::numeric AS n
          FROM generate_series(0, 159) g
        UNION ALL
        SELECT repeat('9', g)::numeric FROM generate_series(1, 160) g) s;

--
-- text, both ways, explicit and in assignment.
--
SELECT '007'::text::sog.position AS from_text,
       CAST('1-02'::sog.position AS text) AS to_text,
       '1-02'::sog.position::varchar AS to_varchar,
       pg_temp.try('SELECT ''1-x''::text::sog.position::text') AS bad_text;

CREATE TEMP TABLE text_sink (t text, v varchar(40));
INSERT INTO text_sink VALUES ('007'::sog.position, '1-002'::sog.position);
SELECT * FROM text_sink;

CREATE TEMP TABLE pos_sink (label text, p sog.position);
INSERT INTO pos_sink VALUES ('unknown literal', '007');
-- Assignment from a bigint or numeric expression works (assignment casts);
-- from a text expression it does not (text -> position is the explicit I/O
-- conversion, as for most types).  See pg_cast below.
SELECT pg_temp.try('INSERT INTO pos_sink SELECT ''text value'', ''0042''::text RETURNING p::text')
         AS text_assignment,
       pg_temp.try('INSERT INTO pos_sink SELECT ''bigint value'', 42::bigint RETURNING p::text')
         AS bigint_assignment,
       pg_temp.try('INSERT INTO pos_sink SELECT ''numeric value'', 42::numeric RETURNING p::text')
         AS numeric_assignment;
SELECT label, p FROM pos_sink ORDER BY label;

--
-- \dC: every cast from or to sog.position, with its context.
--
SELECT c.castsource::regtype AS source, c.casttarget::regtype AS target,
       CASE c.castcontext WHEN 'e' THEN 'explicit' WHEN 'a' THEN 'assignment'
                          WHEN 'i' THEN 'implicit' END AS context,
       CASE c.castmethod WHEN 'f' THEN 'function' WHEN 'i' THEN 'inout'
                         WHEN 'b' THEN 'binary' END AS method
  FROM pg_cast c
 WHERE c.castsource = 'sog.position'::regtype
    OR c.casttarget = 'sog.position'::regtype
 ORDER BY c.castsource::regtype::text, c.casttarget::regtype::text;

-- The casts the contract requires exist.
SELECT r.source, r.target,
       EXISTS (SELECT 1 FROM pg_cast c
                WHERE c.castsource = r.source::regtype
                  AND c.casttarget = r.target::regtype) AS present
  FROM (VALUES ('bigint', 'sog.position'), ('numeric', 'sog.position'),
               ('pg_lsn', 'sog.position'), ('sog.position', 'numeric'))
       AS r(source, target)
 ORDER BY r.source, r.target;
