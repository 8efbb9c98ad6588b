-- (r) sog.apply_run per transaction, B=1: a dense run of one event (its
-- digest as a bytea of 32 bytes) and (b)'s sink INSERT in one transaction.
-- Digest precomputed (bench_run, see setup_sog.sql).
\if :ready = 0
SELECT id AS cp, gen FROM bench_cp WHERE part = :client_id \gset
\set ready 1
\endif
-- Variables: pos (per-client position, -D pos=BASE), client_id (= partition).
\set pos :pos + 1
\startpipeline
BEGIN;
SELECT sog.apply_run(:cp, :gen, :pos::bigint, (SELECT d FROM bench_run WHERE b = 1));
INSERT INTO sink (partition, pos, payload)
VALUES (:client_id, :pos, rpad(:pos::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'));
COMMIT;
\endpipeline
