-- Scale: (g) with each client rotating over its own NPC checkpoints
-- (partitions client_id*NPC .. client_id*NPC+NPC-1), one per transaction.
-- NPC=1 with 4 clients is 4 partitions; NPC=16 with 4 clients is 64.  The
-- checkpoint is looked up per transaction in both cases (same work).
-- Positions keep increasing per client, so per checkpoint too.
-- Variables: B, pos (-D pos=BASE), NPC (-D NPC=...), k (-D k=0), client_id.
\set k :k + 1
\set part :client_id * :NPC + mod(:k, :NPC)
\set lo :pos + 1
\set pos :pos + :B
\startpipeline
BEGIN;
SELECT sog.apply_batch(c.id, c.gen,
         ARRAY(SELECT g::sog.position FROM generate_series(:lo::bigint, :pos::bigint) AS g),
         (SELECT d FROM bench_digests WHERE b = :B))
  FROM bench_cp AS c WHERE c.part = :part;
INSERT INTO sink (partition, pos, payload)
SELECT :part, g, rpad(g::text, 100, ' payload 0123456789abcdefghijklmnopqrstuvwxyz')
  FROM generate_series(:lo::bigint, :pos::bigint) AS g;
COMMIT;
\endpipeline
