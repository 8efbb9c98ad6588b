-- (f) sog.apply per event, B>1: B calls of sog.apply in one statement, in
-- position order, and (b)'s sink INSERT of the B rows, in one transaction.
-- Digests precomputed (bench_digests row B holds B digests; see setup_sog.sql).
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
SELECT count(*) FILTER (WHERE sog.apply(:cp, :gen, (:lo::bigint + i - 1)::sog.position, x.ds[i]))
  FROM (SELECT d AS ds FROM bench_digests WHERE b = :B) AS x,
       generate_series(1, :B) AS i;
INSERT INTO sink (partition, pos, payload)
SELECT :client_id, g, rpad(g::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz')
  FROM generate_series(:lo::bigint, :pos::bigint) AS g;
COMMIT;
\endpipeline
