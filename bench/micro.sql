-- micro.sql: micro-figures inside PostgreSQL (run by bench/run.sh, and by
-- test/bench-smoke.sh on small sizes).
--   psql -v N=1000000 -v RUNS=5 -At -F'|' -f micro.sql
-- Output lines: name|n|median_s|min_s|max_s|extra
-- Timing is server-side (clock_timestamp around EXECUTE), one warm-up and
-- RUNS timed executions; single core (no parallel workers, no JIT).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SET work_mem = '256MB';

CREATE OR REPLACE FUNCTION pg_temp.bench_time(q text, n int)
RETURNS double precision[] LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; res double precision[] := '{}';
BEGIN
  EXECUTE q;                                   -- warm-up
  FOR i IN 1..n LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    res := res || extract(epoch FROM clock_timestamp() - t0)::double precision;
  END LOOP;
  RETURN res;
END $$;

-- Records 1..N: position i, 100-byte payload (the same bytes as hashloop.c).
DROP TABLE IF EXISTS bench_hashsrc, bench_pos, bench_micro_run;
CREATE TABLE bench_hashsrc (i bigint NOT NULL, p bytea NOT NULL);
INSERT INTO bench_hashsrc
SELECT i, convert_to(rpad(i::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'), 'UTF8')
  FROM generate_series(1, :N) AS i;
VACUUM ANALYZE bench_hashsrc;

-- Positions: a < b, one component (Kafka-like offsets around 10^12), and
-- the same values as bigint and as text.
CREATE TABLE bench_pos (a sog.position, b sog.position, x bigint, y bigint, s text);
INSERT INTO bench_pos
SELECT (1000000000000 + g)::sog.position, (1000000000000 + g + 1)::sog.position,
       1000000000000 + g, 1000000000000 + g + 1, (1000000000000 + g)::text
  FROM generate_series(1, :N) AS g;
VACUUM ANALYZE bench_pos;

-- The read boundary's check: sog.apply_run of M = N / 10 events (their
-- digests back to back) on a running checkpoint, alone and closing a read
-- boundary noted over exactly them with their buffer hash; each execution
-- rolls back (a subtransaction), so every one applies the same run.  The
-- difference is what the check costs per record.
\set M (:N / 10)
SELECT id AS bench_cp FROM sog.register('bench-micro', 'micro', '0') \gset
SELECT generation AS bench_gen FROM sog.claim(:bench_cp, 'micro') \gset
CREATE TABLE bench_micro_run AS
SELECT string_agg(sog.payload_digest(p), ''::bytea ORDER BY i) AS digests,
       sog.buffer_hash(i::sog.position, sog.payload_digest(p) ORDER BY i) AS hash
  FROM bench_hashsrc WHERE i <= :M;
CREATE OR REPLACE FUNCTION pg_temp.run_rolled_back(cp bigint, gen bigint, m bigint, noted boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    IF noted THEN
      PERFORM sog.note_read(cp, gen, m::text::sog.position, (SELECT hash FROM bench_micro_run), m);
    END IF;
    PERFORM sog.apply_run(cp, gen, 1, (SELECT digests FROM bench_micro_run));
    RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'roll back';
  EXCEPTION WHEN raise_exception THEN NULL;
  END;
END $$;

\pset format unaligned
\pset fieldsep '|'
\pset tuples_only on
WITH cases(ord, name, q) AS (VALUES
  (1,  'buffer_hash agg (digest + chain, ORDER BY i)',
       $q$SELECT sog.buffer_hash(i::sog.position, sog.payload_digest(p) ORDER BY i) FROM bench_hashsrc$q$),
  (2,  'buffer_hash agg, scan order (no ORDER BY)',
       $q$SELECT sog.buffer_hash(i::sog.position, sog.payload_digest(p)) FROM bench_hashsrc$q$),
  (3,  'payload_digest only (count)',
       $q$SELECT count(sog.payload_digest(p)) FROM bench_hashsrc$q$),
  (4,  'scan only (count(p))',
       $q$SELECT count(p) FROM bench_hashsrc$q$),
  (10, 'empty: a, b not null',
       $q$SELECT count(*) FILTER (WHERE a IS NOT NULL AND b IS NOT NULL) FROM bench_pos$q$),
  (11, 'position compare a < b',
       $q$SELECT count(*) FILTER (WHERE a OPERATOR(sog.<) b) FROM bench_pos$q$),
  (12, 'empty: x, y not null',
       $q$SELECT count(*) FILTER (WHERE x IS NOT NULL AND y IS NOT NULL) FROM bench_pos$q$),
  (13, 'bigint compare x < y',
       $q$SELECT count(*) FILTER (WHERE x < y) FROM bench_pos$q$),
  (20, 'empty: count(s)',
       $q$SELECT count(s) FROM bench_pos$q$),
  (21, 'position input s::sog.position',
       $q$SELECT count(s::sog.position) FROM bench_pos$q$),
  (22, 'bigint input s::bigint',
       $q$SELECT count(s::bigint) FROM bench_pos$q$),
  (30, 'empty: count(a)',
       $q$SELECT count(a) FROM bench_pos$q$),
  (31, 'position output a::text',
       $q$SELECT count(a::text) FROM bench_pos$q$),
  (32, 'empty: count(x)',
       $q$SELECT count(x) FROM bench_pos$q$),
  (33, 'bigint output x::text',
       $q$SELECT count(x::text) FROM bench_pos$q$),
  (40, 'apply_run of N/10 events, no read boundary',
       format($q$SELECT pg_temp.run_rolled_back(%s, %s, %s, false)$q$, :bench_cp, :bench_gen, :M)),
  (41, 'apply_run of N/10 events closing a noted read boundary',
       format($q$SELECT pg_temp.run_rolled_back(%s, %s, %s, true)$q$, :bench_cp, :bench_gen, :M))
), timed AS (
  SELECT ord, name, pg_temp.bench_time(q, :RUNS) AS t FROM cases ORDER BY ord
)
SELECT name, :N,
       (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(t) x),
       (SELECT min(x) FROM unnest(t) x),
       (SELECT max(x) FROM unnest(t) x),
       CASE WHEN ord IN (1, 2) THEN
         (SELECT sog.buffer_hash(i::sog.position, sog.payload_digest(p) ORDER BY i) FROM bench_hashsrc)
       END
  FROM timed ORDER BY ord;

DROP TABLE bench_hashsrc, bench_pos, bench_micro_run;
