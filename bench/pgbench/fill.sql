-- Fill: receipts only (no sink rows): sog.apply_batch of B events per
-- transaction on checkpoint :cp, for the receipts-per-event and prune
-- figures.  Variables: cp, gen, B, pos (-D ...).  Digests precomputed.
\set lo :pos + 1
\set pos :pos + :B
SELECT cardinality(sog.apply_batch(:cp, :gen,
         ARRAY(SELECT g::sog.position FROM generate_series(:lo::bigint, :pos::bigint) AS g),
         (SELECT d FROM bench_digests WHERE b = :B)));
