-- setup_sog.sql: what the extension's variants (f), (g), (g'), (r) and the
-- scale test need, loaded by bench/run.sh (and test/bench-smoke.sh) after
-- schema.sql, into the same database.
--
-- One checkpoint per partition 0..63 of consumer 'bench', stream 'orders',
-- each claimed once (generation 1 on a fresh database).  bench_cp caches
-- (partition -> checkpoint id, generation) for the scripts.
--
-- Digests: a real consumer computes SHA-256 payload digests on its own CPU
-- while it buffers and sends them as parameters.  pgbench cannot, so the
-- scripts of (f), (g) and (r) take precomputed digests from these tables
-- instead of hashing inside the measured transaction ((g') does hash
-- in-transaction, for comparison):
--   bench_digest(i, d)   digest i = sha256 of payload i, i = 1..1000
--   bench_digests(b, d)  the first b digests as one bytea[] (b = any batch size
--                        used; rows for 1..1000 are created below)
--   bench_run(b, d)      the first b digests back to back in one bytea of
--                        b x 32 bytes, as sog.apply_run takes them (r)
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS stream_offset_guard CASCADE;
CREATE EXTENSION stream_offset_guard;

DROP TABLE IF EXISTS bench_cp, bench_digest, bench_digests, bench_run;

CREATE TABLE bench_cp (
    part int PRIMARY KEY,
    id   bigint NOT NULL,
    gen  bigint NOT NULL
);
-- One statement per checkpoint keeps register and claim evaluated once each
-- ((f(x)).* would call claim once per column).
INSERT INTO bench_cp (part, id, gen)
SELECT p, c.id, (sog.claim(c.id, 'bench-worker-' || p)).generation
  FROM generate_series(0, 63) AS p,
       LATERAL sog.register('bench', 'orders', p::text) AS c
 ORDER BY p;

CREATE TABLE bench_digest (
    i int PRIMARY KEY,
    d bytea NOT NULL
);
INSERT INTO bench_digest
SELECT i, sog.payload_digest(convert_to(rpad(i::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'), 'UTF8'))
  FROM generate_series(1, 1000) AS i;

CREATE TABLE bench_digests (
    b int PRIMARY KEY,
    d bytea[] NOT NULL
);
INSERT INTO bench_digests
SELECT b, ARRAY(SELECT d FROM bench_digest WHERE i <= b ORDER BY i)
  FROM generate_series(1, 1000) AS b;

CREATE TABLE bench_run (
    b int PRIMARY KEY,
    d bytea NOT NULL
);
INSERT INTO bench_run
SELECT b, (SELECT string_agg(d, ''::bytea ORDER BY i) FROM bench_digest WHERE i <= b)
  FROM generate_series(1, 1000) AS b;

VACUUM ANALYZE bench_cp, bench_digest, bench_digests, bench_run, sog.checkpoint;
SELECT count(*) AS checkpoints, min(gen) AS min_gen, max(gen) AS max_gen FROM bench_cp;
