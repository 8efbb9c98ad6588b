-- Probe used while prune_receipts runs on another checkpoint: one event per
-- transaction through sog.apply on checkpoint :cp (generation :gen), with a
-- sink row, like (f) at B=1.  Variables: cp, gen, pos (-D ...).
\set pos :pos + 1
\startpipeline
BEGIN;
SELECT sog.apply(:cp, :gen, :pos::bigint::sog.position, (SELECT d FROM bench_digest WHERE i = 1));
INSERT INTO sink (partition, pos, payload)
VALUES (99, :pos, rpad(:pos::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'));
COMMIT;
\endpipeline
