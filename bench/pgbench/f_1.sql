-- (f) sog.apply per event, B=1: the guard call and (b)'s sink INSERT in one
-- transaction; the receipt and the advance of applied_position commit with
-- the sink row.  The payload digest is precomputed (bench_digest, see
-- bench/setup_sog.sql): a real client hashes on its own CPU and sends it.
-- Once per connection: look up this client's checkpoint (partition = client_id)
-- and its generation (ready is initialised with -D ready=0).
\if :ready = 0
SELECT id AS cp, gen FROM bench_cp WHERE part = :client_id \gset
\set ready 1
\endif
-- Variables: pos (per-client position, -D pos=BASE), client_id (= partition).
\set pos :pos + 1
\startpipeline
BEGIN;
SELECT sog.apply(:cp, :gen, :pos::bigint::sog.position, (SELECT d FROM bench_digest WHERE i = 1));
INSERT INTO sink (partition, pos, payload)
VALUES (:client_id, :pos, rpad(:pos::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'));
COMMIT;
\endpipeline
