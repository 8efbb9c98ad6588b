-- (gd) as (g), B=1, but the payload digest is computed inside the measured
-- transaction (sog.payload_digest of the sink row's payload): the upper
-- bound of what hashing adds when it cannot be done on the client.
\if :ready = 0
SELECT id AS cp, gen FROM bench_cp WHERE part = :client_id \gset
\set ready 1
\endif
-- Variables: pos (per-client position, -D pos=BASE), client_id (= partition).
\set pos :pos + 1
\startpipeline
BEGIN;
SELECT sog.apply_batch(:cp, :gen, ARRAY[:pos::bigint::sog.position],
         ARRAY[sog.payload_digest(convert_to(rpad(:pos::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'), 'UTF8'))]);
INSERT INTO sink (partition, pos, payload)
VALUES (:client_id, :pos, rpad(:pos::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'));
COMMIT;
\endpipeline
