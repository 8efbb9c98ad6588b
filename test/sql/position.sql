--
-- position: text I/O and order of sog.position (README: the position type)
--
-- The vectors are loaded from test/contract-v1.json, never retyped, and
-- every check compares the extension's answer with the vector.
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\i test/type_helpers.sql

\set vectors `cat test/contract-v1.json`

-- pos_in(text): canonical output, or 'ERROR <sqlstate>'.
CREATE FUNCTION pg_temp.pos_in(t text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN t::sog.position::text;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE;
END
$$;

--
-- 1. Every "positions" vector: canonical output, or 22P02.
--
CREATE TEMP TABLE pos_vec AS
SELECT x.ord, x.v ->> 'input' AS input,
       coalesce(x.v ->> 'canonical',
                CASE x.v ->> 'error'
                     WHEN 'invalid_text_representation' THEN 'ERROR 22P02'
                     ELSE 'unknown error name ' || (x.v ->> 'error') END)
         AS expected
  FROM json_array_elements(:'vectors'::json -> 'positions')
       WITH ORDINALITY AS x(v, ord);

SELECT ord, pg_temp.short(input) AS input, pg_temp.short(expected) AS expected,
       pg_temp.pos_in(input) IS NOT DISTINCT FROM expected AS ok
  FROM pos_vec
 ORDER BY ord;

-- Failures in full (none expected).
SELECT ord, input, expected, pg_temp.pos_in(input) AS got
  FROM pos_vec
 WHERE pg_temp.pos_in(input) IS DISTINCT FROM expected
 ORDER BY ord;

SELECT count(*) AS vectors,
       count(*) FILTER (WHERE pg_temp.pos_in(input) = expected) AS passed
  FROM pos_vec;

-- The canonical output reads back as itself.
SELECT count(*) AS canonical_vectors,
       count(*) FILTER (WHERE expected::sog.position::text = expected)
         AS idempotent
  FROM pos_vec
 WHERE expected NOT LIKE 'ERROR%';

-- The message text is pinned once per kind of failure.
SELECT 'abc'::sog.position;
SELECT '1--2'::sog.position;
-- a leading "-" before a digit reads as a sign: said so
SELECT '-5'::sog.position;
SELECT ' -5'::sog.position;
SELECT ''::sog.position;
SELECT '1-2-3-4-5-6-7-8-9'::sog.position;
\echo :LAST_ERROR_SQLSTATE

--
-- 2. Edge cases beyond the vectors.  The expected value is written from the
-- contract: surrounding white space allowed, leading zeros dropped, 1 to 8
-- components of at most 160 significant digits, ASCII digits only.
--
CREATE TEMP TABLE pos_edge (label text, input text, expected text);
INSERT INTO pos_edge VALUES
	-- surrounding white space of each kind
	('space around',      ' 5 ',                              '5'),
	('tab around',        chr(9) || '5' || chr(9),            '5'),
	('newline around',    chr(10) || '5' || chr(10),          '5'),
	('vtab around',       chr(11) || '5' || chr(11),          '5'),
	('formfeed around',   chr(12) || '5' || chr(12),          '5'),
	('cr around',         chr(13) || '5' || chr(13),          '5'),
	('all six around',    E' \t\n\013\f\r1-2 \t\n\013\f\r',   '1-2'),
	('only white space',  E' \t\n\013\f\r',                   'ERROR 22P02'),
	-- internal white space
	('space inside',      '1 2',                              'ERROR 22P02'),
	('space before dash', '1 -2',                             'ERROR 22P02'),
	('space after dash',  '1- 2',                             'ERROR 22P02'),
	('tab inside',        '1' || chr(9) || '2',               'ERROR 22P02'),
	-- non-ASCII digits and white space
	('arabic-indic 3',    U&'\0663',                          'ERROR 22P02'),
	('fullwidth 3',       U&'\FF13',                          'ERROR 22P02'),
	('superscript 2',     U&'\00B2',                          'ERROR 22P02'),
	('ascii then arabic', U&'5\0663',                         'ERROR 22P02'),
	('no-break space',    U&'\00A05\00A0',                    'ERROR 22P02'),
	-- other characters
	('dash at start',     '-5',                               'ERROR 22P02'),
	('dot',               '5.',                               'ERROR 22P02'),
	('hex',               '0x10',                             'ERROR 22P02'),
	('exponent',          '1e3',                              'ERROR 22P02'),
	('underscore',        '1_000',                            'ERROR 22P02'),
	('colon separator',   '1:2',                              'ERROR 22P02'),
	('slash separator',   '1/2',                              'ERROR 22P02'),
	-- leading zeros
	('000',               '000',                              '0'),
	('0-0',               '0-0',                              '0-0'),
	('00-007-0100',       '00-007-0100',                      '0-7-100'),
	('200 zeros then 5',  repeat('0', 200) || '5',            '5'),
	('1000 zeros, 160 9s', repeat('0', 1000) || repeat('9', 160),
	                                                          repeat('9', 160)),
	('200 zeros',         repeat('0', 200),                   '0'),
	-- component length
	('160 digits',        '1' || repeat('0', 159),            '1' || repeat('0', 159)),
	('161 digits',        '1' || repeat('0', 160),            'ERROR 22P02'),
	('161 digits second', '1-' || repeat('9', 161),           'ERROR 22P02'),
	-- component count
	('8 zeros',           '0-0-0-0-0-0-0-0',                  '0-0-0-0-0-0-0-0'),
	('9 zeros',           '0-0-0-0-0-0-0-0-0',                'ERROR 22P02'),
	('8 x 160 digits',    rtrim(repeat(repeat('9', 160) || '-', 8), '-'),
	                      rtrim(repeat(repeat('9', 160) || '-', 8), '-')),
	('9 x 160 digits',    rtrim(repeat(repeat('9', 160) || '-', 9), '-'),
	                      'ERROR 22P02');

SELECT label, pg_temp.short(expected) AS expected,
       pg_temp.short(pg_temp.pos_in(input)) AS got,
       pg_temp.pos_in(input) IS NOT DISTINCT FROM expected AS ok
  FROM pos_edge
 ORDER BY label;

SELECT count(*) AS edge_cases,
       count(*) FILTER (WHERE pg_temp.pos_in(input) IS DISTINCT FROM expected)
         AS failures
  FROM pos_edge;

-- NULL: the I/O functions are strict, NULL in gives NULL out.
SELECT NULL::sog.position IS NULL AS null_literal,
       (NULL::text)::sog.position IS NULL AS null_text,
       ('5'::sog.position < NULL) IS NULL AS null_comparison;

SELECT f.role, p.proisstrict
  FROM pg_type t
       CROSS JOIN LATERAL (VALUES ('input', t.typinput), ('output', t.typoutput),
                                  ('receive', t.typreceive), ('send', t.typsend))
         AS f(role, oid)
       JOIN pg_proc p ON p.oid = f.oid
 WHERE t.oid = 'sog.position'::regtype
 ORDER BY f.role;

--
-- 3. Order: the "order" vector list is in increasing order.  Every pair,
-- every operator, must agree with the list index.
--
CREATE TEMP TABLE ord_vec AS
SELECT x.ord, x.t
  FROM json_array_elements_text(:'vectors'::json -> 'order')
       WITH ORDINALITY AS x(t, ord);

CREATE TEMP TABLE ord_pairs AS
SELECT a.ord AS i, b.ord AS j, a.t AS a, b.t AS b,
       (a.t::sog.position <  b.t::sog.position) = (a.ord <  b.ord) AS lt,
       (a.t::sog.position <= b.t::sog.position) = (a.ord <= b.ord) AS le,
       (a.t::sog.position =  b.t::sog.position) = (a.ord =  b.ord) AS eq,
       (a.t::sog.position <> b.t::sog.position) = (a.ord <> b.ord) AS ne,
       (a.t::sog.position >= b.t::sog.position) = (a.ord >= b.ord) AS ge,
       (a.t::sog.position >  b.t::sog.position) = (a.ord >  b.ord) AS gt
  FROM ord_vec a CROSS JOIN ord_vec b;

SELECT count(*) AS pairs,
       count(*) FILTER (WHERE NOT (lt AND le AND eq AND ne AND ge AND gt))
         AS failures
  FROM ord_pairs;

SELECT * FROM ord_pairs
 WHERE NOT (lt AND le AND eq AND ne AND ge AND gt)
 ORDER BY i, j;

-- ORDER BY gives the list order, whatever the order of the rows.
SELECT array_agg(ord ORDER BY t::sog.position) = array_agg(ord ORDER BY ord)
         AS asc_ok,
       array_agg(ord ORDER BY t::sog.position DESC)
         = array_agg(ord ORDER BY ord DESC) AS desc_ok
  FROM ord_vec;

SELECT t::sog.position AS pos FROM ord_vec ORDER BY 1;

-- The prefix rule: 5 < 5-0 < 5-1 < 6, and numeric (not text) order.
SELECT a, b, a::sog.position < b::sog.position AS lt,
       b::sog.position > a::sog.position AS gt_reversed,
       a::sog.position = b::sog.position AS eq
  FROM (VALUES ('5', '5-0'), ('5-0', '5-1'), ('5-1', '6'), ('5', '6'),
               ('5-0', '5-0-0'), ('5-9', '5-10'), ('9', '10'),
               ('9-9-9', '10'), ('1700000000000-9', '1700000000000-15'),
               ('0', '0-0'), ('99', '100-0-0'))
       AS v(a, b)
 ORDER BY a, b;

-- Equal positions written differently are equal.
SELECT '007'::sog.position = '7'::sog.position AS eq,
       '00-01'::sog.position = ' 0-1 '::sog.position AS eq_multi,
       '7'::sog.position <> '7-0'::sog.position AS prefix_differs;

--
-- 4. A larger set against an independent oracle: numeric[] compares element
-- by element and sorts a proper prefix first, which is the contract's order.
--
CREATE TEMP TABLE ord_gen AS
SELECT i, t, string_to_array(t, '-')::numeric[] AS key
  FROM (SELECT i,
               (SELECT string_agg(
                         CASE (h.x & 7)
                              WHEN 0 THEN '0'
                              WHEN 1 THEN '00' || (abs(h.x) % 10)::text
                              WHEN 2 THEN (abs(h.x) % 10)::text
                              WHEN 3 THEN (abs(h.x) % 1000)::text
                              WHEN 4 THEN (abs(h.x) % 100)::text
                              WHEN 5 THEN (abs(h.x)::numeric * 10000000000000)::text
                              WHEN 6 THEN repeat('9', (1 + abs(h.x) % 160)::int)
                              ELSE '1' || repeat('0', (abs(h.x) % 160)::int)
                         END, '-' ORDER BY k)
                  FROM generate_series(1, 1 + i % 4) AS k,
                       LATERAL (SELECT hashint4(i * 31 + k)::bigint AS x) AS h) AS t
          FROM generate_series(1, 3000) AS i) s;

SELECT count(*) AS generated,
       count(DISTINCT t::sog.position) AS distinct_positions,
       count(DISTINCT key) AS distinct_keys
  FROM ord_gen;

-- Same sort (ties broken by canonical text, which equal positions share).
SELECT array_agg(t::sog.position::text ORDER BY t::sog.position,
                 t::sog.position::text)
       = array_agg(t::sog.position::text ORDER BY key, t::sog.position::text)
         AS same_order
  FROM ord_gen;

-- Every pair of the first 300 rows, every operator.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE
           (a.t::sog.position <  b.t::sog.position) <> (a.key <  b.key) OR
           (a.t::sog.position <= b.t::sog.position) <> (a.key <= b.key) OR
           (a.t::sog.position =  b.t::sog.position) <> (a.key =  b.key) OR
           (a.t::sog.position <> b.t::sog.position) <> (a.key <> b.key) OR
           (a.t::sog.position >= b.t::sog.position) <> (a.key >= b.key) OR
           (a.t::sog.position >  b.t::sog.position) <> (a.key >  b.key))
         AS failures
  FROM ord_gen a JOIN ord_gen b ON a.i <= 300 AND b.i <= 300;

--
-- 5. The comparison operators live in schema sog (1.2; before, in
-- pg_catalog): a query finds them bare with sog on its search_path, or
-- names them OPERATOR(sog.<).  None is left in pg_catalog.
--
SELECT o.oprname, o.oprnamespace::regnamespace AS schema,
       o.oprleft::regtype AS left, o.oprright::regtype AS right,
       o.oprresult::regtype AS result,
       o.oprcom <> 0 AS has_commutator, o.oprnegate <> 0 AS has_negator,
       o.oprcanmerge, o.oprcanhash
  FROM pg_operator o
 WHERE o.oprname IN ('=', '<>', '<', '<=', '>', '>=')
   AND (o.oprleft = 'sog.position'::regtype
        OR o.oprright = 'sog.position'::regtype)
 ORDER BY o.oprname, o.oprleft::regtype::text, o.oprright::regtype::text;

SELECT '5'::sog.position < '6'::sog.position AS lt,
       '5'::sog.position = '005'::sog.position AS eq;
CREATE TEMP TABLE sp (pos sog.position);
INSERT INTO sp VALUES ('50'), ('150'), ('100-1'), ('100');
SELECT pos FROM sp WHERE pos > '100' ORDER BY pos;
SET search_path = public;
\set VERBOSITY terse
SELECT pos FROM sp WHERE pos > '100' ORDER BY pos;
\set VERBOSITY default
SELECT pos FROM sp WHERE pos OPERATOR(sog.>) '100' ORDER BY pos;
-- ORDER BY, DISTINCT, min/max and indexes use the operator class: no name
SELECT sog.max(pos) AS max, sog.min(pos) AS min, array_agg(DISTINCT pos ORDER BY pos) AS sorted FROM sp;
SET search_path = public, sog;
