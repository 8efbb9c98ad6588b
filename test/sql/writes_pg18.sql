--
-- writes_pg18: what PostgreSQL 18 added to the constraints the executor
-- enforces, enforced in the extension's writes too (src/store/writer.c keeps the
-- planned CHECK constraints across calls; compat.h says what changed).
--
-- On 18 and later: a NOT ENFORCED CHECK is not evaluated, and a CHECK over
-- a virtual generated column is (its expression expanded first, as
-- ExecRelCheck does; unexpanded, the executor fails on the column's
-- reference).  Before 18 neither exists: the test says so and stops, and
-- writes_pg18_1.out is that output (the contrib way of an output that
-- differs by major).
--
SELECT current_setting('server_version_num')::int >= 180000 AS pg18 \gset
\if :pg18
\else
\echo 'PostgreSQL before 18: no NOT ENFORCED constraints and no virtual generated columns'
\quit
\endif
\i test/regress_common.sql
SELECT id AS cp FROM sog.register('writes18', 'orders', '0') \gset
SELECT generation AS g FROM sog.claim(:cp, 'w') \gset

-- a NOT ENFORCED CHECK that every row violates: the executor skips it
ALTER TABLE sog.receipt ADD CONSTRAINT writes18_not_enforced CHECK (n < 0) NOT ENFORCED;
SELECT sog.apply_batch(:cp, :g, ARRAY['1', '2', '3']::sog.position[],
                       ARRAY[pg_temp.d('1'), pg_temp.d('2'), pg_temp.d('3')]) AS not_enforced_skipped;
ALTER TABLE sog.receipt DROP CONSTRAINT writes18_not_enforced;

-- a CHECK over a virtual generated column, for this checkpoint's new rows
-- (NOT VALID: other tests' receipts stay unchecked): a run of 5 passes, a
-- run of 60 (120 > 100) is refused with the executor's error (naming the
-- partition the checkpoint writes, sog.receipt_0) and stores
-- nothing
ALTER TABLE sog.receipt ADD COLUMN writes18_twice int GENERATED ALWAYS AS (n * 2) VIRTUAL;
ALTER TABLE sog.receipt ADD CONSTRAINT writes18_virtual
	CHECK (checkpoint_id <> :cp OR writes18_twice <= 100) NOT VALID;
SELECT count(*) AS applied FROM unnest(sog.apply_batch(:cp, :g, ARRAY(SELECT g::sog.position FROM generate_series(4, 8) g),
                                                   ARRAY(SELECT pg_temp.d(g::text) FROM generate_series(4, 8) g))) a WHERE a;
SELECT state, message FROM pg_temp.err(format($$SELECT sog.apply_batch(%s, %s, ARRAY(SELECT g::sog.position FROM generate_series(9, 68) g),
                                             ARRAY(SELECT pg_temp.d(g::text) FROM generate_series(9, 68) g))$$, :cp, :g));
SELECT applied_position FROM sog.checkpoint WHERE id = :cp;
ALTER TABLE sog.receipt DROP CONSTRAINT writes18_virtual;
ALTER TABLE sog.receipt DROP COLUMN writes18_twice;
-- and with them gone, the run applies
SELECT count(*) AS applied FROM unnest(sog.apply_batch(:cp, :g, ARRAY(SELECT g::sog.position FROM generate_series(9, 68) g),
                                                   ARRAY(SELECT pg_temp.d(g::text) FROM generate_series(9, 68) g))) a WHERE a;
