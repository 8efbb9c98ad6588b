-- soak-setup.sql: the start of one run of bench/soak.sh, after schema.sql
-- and setup_sog.sql: an empty sink and receipt table, the run's checkpoints
-- (consumer soak-<run>, stream orders, partitions 0 .. n - 1, claimed once)
-- in bench_cp as parts first .. first + n - 1 (where bench/client.c looks
-- them up), the run's retention policy for that consumer (and, 1.2, the
-- checkpoints in the receipt ring), and the receipt table's statistics
-- counters reset (autovacuum_count counts this run's).
--
--   psql -v run=A -v first=1000 -v n=1 -v keep_positions=10000000 -v keep_interval= -f soak-setup.sql
--
-- keep_positions and keep_interval empty: no policy (the run without
-- retention).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
TRUNCATE sink, sog.receipt;

INSERT INTO bench_cp (part, id, gen)
SELECT :first + p, c.id, (sog.claim(c.id, 'soak-worker-' || p)).generation
  FROM generate_series(0, :n - 1) AS p,
       LATERAL sog.register('soak-' || :'run', 'orders', p::text) AS c
 ORDER BY p;

SELECT sog.set_retention(consumer => 'soak-' || :'run',
                         keep_positions => nullif(:'keep_positions', '')::numeric,
                         keep_interval => nullif(:'keep_interval', '')::interval);
-- the checkpoints with a policy into the receipt ring now (1.2), rather
-- than at the pruner's first run
SELECT sog.rotate_receipts() WHERE nullif(:'keep_positions', '') IS NOT NULL
                                OR nullif(:'keep_interval', '') IS NOT NULL;
-- the counters of sog.receipt's partitions (1.2), or of the table itself
SELECT pg_stat_reset_single_table_counters(r)
  FROM (SELECT i.inhrelid::regclass AS r FROM pg_inherits i WHERE i.inhparent = 'sog.receipt'::regclass
        UNION ALL
        SELECT 'sog.receipt'::regclass WHERE NOT EXISTS (
          SELECT FROM pg_inherits i WHERE i.inhparent = 'sog.receipt'::regclass)) x;
VACUUM ANALYZE sog.checkpoint, bench_cp;
CHECKPOINT;
