-- (r) sog.apply_run per transaction, B>1: one call for the dense run of B
-- events (the first position :lo and B precomputed digests back to back in
-- one bytea, no positions array) and (b)'s sink INSERT of the B rows, in one
-- transaction.  The answer (how many leading events were applied before)
-- goes back to the client, as it would to a real one.
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
SELECT sog.apply_run(:cp, :gen, :lo::bigint, (SELECT d FROM bench_run WHERE b = :B));
INSERT INTO sink (partition, pos, payload)
SELECT :client_id, g, rpad(g::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz')
  FROM generate_series(:lo::bigint, :pos::bigint) AS g;
COMMIT;
\endpipeline
