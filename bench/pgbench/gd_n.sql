-- (gd) as (g), B>1, but the B payload digests are computed inside the
-- measured transaction (sog.payload_digest of each sink row's payload).
\if :ready = 0
SELECT id AS cp, gen FROM bench_cp WHERE part = :client_id \gset
\set ready 1
\endif
-- Variables: B (events per txn, -D B=...), pos (per-client position, -D pos=BASE),
-- client_id (= partition). Events :lo..:pos.
\set lo :pos + 1
\set pos :pos + :B
\startpipeline
BEGIN;
SELECT sog.apply_batch(:cp, :gen,
         ARRAY(SELECT g::sog.position FROM generate_series(:lo::bigint, :pos::bigint) AS g),
         ARRAY(SELECT sog.payload_digest(convert_to(rpad(g::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz'), 'UTF8'))
                 FROM generate_series(:lo::bigint, :pos::bigint) AS g));
INSERT INTO sink (partition, pos, payload)
SELECT :client_id, g, rpad(g::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz')
  FROM generate_series(:lo::bigint, :pos::bigint) AS g;
COMMIT;
\endpipeline
