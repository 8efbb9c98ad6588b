--
-- index: btree and hash operator classes of sog.position (README:
-- the position type): the planner uses them, they answer like a sequential scan,
-- uniqueness follows position equality, and amcheck finds the btree sound.
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\set VERBOSITY default
\set SHOW_CONTEXT never

-- The default operator classes.
SELECT am.amname, opc.opcname, opc.opcnamespace::regnamespace AS schema,
       opc.opcdefault
  FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
 WHERE opc.opcintype = 'sog.position'::regtype
 ORDER BY am.amname, opc.opcname;

--
-- 10000 distinct positions: one, two and three components, some with
-- leading zeros in the input.  "key" is an independent oracle of the order:
-- numeric[] compares element by element and sorts a proper prefix first.
--
CREATE TABLE idx_pos (
	id int PRIMARY KEY,
	b sog.position,				-- btree
	h sog.position,				-- hash
	key numeric[]
);
INSERT INTO idx_pos
SELECT i, t::sog.position, t::sog.position,
       string_to_array(t, '-')::numeric[]
  FROM (SELECT i,
               CASE i % 3
                    WHEN 0 THEN i::text
                    WHEN 1 THEN '00' || (i / 7)::text || '-' || (i % 7)::text
                    ELSE (i / 100)::text || '-' || (i % 100)::text || '-0'
               END AS t
          FROM generate_series(1, 10000) AS i) s;
CREATE INDEX idx_pos_b ON idx_pos USING btree (b);
CREATE INDEX idx_pos_h ON idx_pos USING hash (h);
VACUUM ANALYZE idx_pos;

SELECT count(*) AS rows, count(DISTINCT b) AS distinct_positions,
       count(DISTINCT key) AS distinct_keys
  FROM idx_pos;

-- The answers of every query below, computed with the oracle key and a
-- sequential scan.
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
CREATE TEMP TABLE oracle AS
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos
         WHERE key = '{4998}') AS eq,
       (SELECT array_agg(id ORDER BY id) FROM idx_pos
         WHERE key = '{714,1}') AS eq_multi,
       (SELECT count(*) FROM idx_pos WHERE key < '{50}') AS lt,
       (SELECT sum(id) FROM idx_pos WHERE key < '{50}') AS lt_sum,
       (SELECT count(*) FROM idx_pos
         WHERE key BETWEEN '{20,5}' AND '{30,1,0}') AS between,
       (SELECT sum(id) FROM idx_pos
         WHERE key BETWEEN '{20,5}' AND '{30,1,0}') AS between_sum,
       (SELECT array_agg(id ORDER BY key) FROM idx_pos) AS ordered;
RESET enable_indexscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;

SET enable_seqscan = off;

-- = through the btree
EXPLAIN (COSTS OFF) SELECT id FROM idx_pos WHERE b = '4998';
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE b = '4998')
       = eq AS ok FROM oracle;
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE b = '714-1')
       = eq_multi AS ok FROM oracle;
-- a position written differently finds the same row
SELECT array_agg(id) AS ids FROM idx_pos WHERE b = '000714-01';

-- = through the hash index
EXPLAIN (COSTS OFF) SELECT id FROM idx_pos WHERE h = '4998';
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE h = '4998')
       = eq AS ok FROM oracle;
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE h = '714-1')
       = eq_multi AS ok FROM oracle;
SELECT array_agg(id) AS ids FROM idx_pos WHERE h = '000714-01';

-- < and BETWEEN through the btree
EXPLAIN (COSTS OFF) SELECT count(*), sum(id) FROM idx_pos WHERE b < '50';
SELECT (SELECT count(*) FROM idx_pos WHERE b < '50') = lt
         AND (SELECT sum(id) FROM idx_pos WHERE b < '50') = lt_sum AS ok
  FROM oracle;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(id) FROM idx_pos WHERE b BETWEEN '20-5' AND '30-1-0';
SELECT (SELECT count(*) FROM idx_pos WHERE b BETWEEN '20-5' AND '30-1-0')
         = between
         AND (SELECT sum(id) FROM idx_pos
               WHERE b BETWEEN '20-5' AND '30-1-0') = between_sum AS ok
  FROM oracle;

-- ORDER BY through the btree, both directions
EXPLAIN (COSTS OFF) SELECT id FROM idx_pos ORDER BY b;
SELECT (SELECT array_agg(id) FROM (SELECT id FROM idx_pos ORDER BY b) s)
       = ordered AS ok FROM oracle;
EXPLAIN (COSTS OFF) SELECT id FROM idx_pos ORDER BY b DESC LIMIT 5;
SELECT array_agg(id) = (SELECT ordered[9996:10000] FROM oracle) AS ok
  FROM (SELECT id FROM (SELECT id, b FROM idx_pos ORDER BY b DESC LIMIT 5) s
         ORDER BY b) t;

RESET enable_seqscan;

-- The same queries with the index scans off agree with the oracle too
-- (the planner falls back to a sequential scan and a sort).
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM idx_pos ORDER BY b;
SELECT (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE b = '4998') = eq
         AND (SELECT array_agg(id ORDER BY id) FROM idx_pos WHERE h = '714-1')
             = eq_multi
         AND (SELECT count(*) FROM idx_pos WHERE b < '50') = lt
         AND (SELECT sum(id) FROM idx_pos
               WHERE b BETWEEN '20-5' AND '30-1-0') = between_sum
         AND (SELECT array_agg(id) FROM (SELECT id FROM idx_pos ORDER BY b) s)
             = ordered AS ok
  FROM oracle;
RESET enable_indexscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;

-- A hash join and a merge join on positions.
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM idx_pos x JOIN idx_pos y ON x.b = y.h;
SELECT count(*) FROM idx_pos x JOIN idx_pos y ON x.b = y.h;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM idx_pos x JOIN idx_pos y ON x.b = y.h;
SELECT count(*) FROM idx_pos x JOIN idx_pos y ON x.b = y.h;
RESET enable_hashjoin;
RESET enable_nestloop;

--
-- amcheck: the btree is sound, and every heap tuple is in it.
--
CREATE EXTENSION amcheck;
SELECT bt_index_check('idx_pos_b', true);
SELECT bt_index_parent_check('idx_pos_b', true);

--
-- Uniqueness is position equality: '007' is '7'.
--
CREATE TABLE idx_unique (p sog.position);
CREATE UNIQUE INDEX idx_unique_p ON idx_unique (p);
INSERT INTO idx_unique VALUES ('7'), ('7-0'), ('70');
INSERT INTO idx_unique VALUES ('007');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO idx_unique VALUES (' 7-00 ');
\echo :LAST_ERROR_SQLSTATE
SELECT p FROM idx_unique ORDER BY p;
SELECT bt_index_check('idx_unique_p', true);

--
-- sog.position as a primary key.
--
CREATE TABLE idx_pk (pos sog.position PRIMARY KEY, note text);
INSERT INTO idx_pk VALUES ('1700000000000-0', 'a'), ('1700000000000-1', 'b');
INSERT INTO idx_pk VALUES ('1700000000000-01', 'c');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO idx_pk VALUES ('1700000000000-01', 'c')
    ON CONFLICT (pos) DO UPDATE SET note = idx_pk.note || excluded.note;
SELECT pos, note FROM idx_pk ORDER BY pos;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT note FROM idx_pk WHERE pos = '1700000000000-1';
SELECT note FROM idx_pk WHERE pos = '1700000000000-1';
RESET enable_seqscan;
SELECT bt_index_check('idx_pk_pkey', true);

DROP TABLE idx_pos, idx_unique, idx_pk;
