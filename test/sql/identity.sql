--
-- identity: the source identity is checked on every claim (README: the
-- consumer guide; issue 8, defect 5)
--
-- A claim whose source_identity differs from the registered one is an
-- unrecoverable divergence with an identity_changed gap, whatever state
-- the checkpoint is in.  Before issue 8, a claim of a checkpoint that had
-- already failed closed returned the old gap's verdict and recorded
-- nothing, so once that gap was resolved, events of the other source were
-- applied.  Consumers here are named identity-*.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

SELECT id AS cp FROM sog.register('identity-failed', 'orders', '0',
                                  source_identity => 'orders@2026-01-01') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1', 'orders@2026-01-01') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
-- worker-1 read beyond applied without a hash: the next claim fails closed.
SELECT sog.note_read(:cp, :g, '15', NULL, NULL);
SELECT generation AS g, verdict, gap_id AS gap1 FROM sog.claim(:cp, 'worker-2', 'orders@2026-01-01') \gset
SELECT :'verdict' AS verdict;
-- A worker of a recreated stream claims the failed-closed checkpoint.
SELECT generation AS g, verdict, gap_id AS gap2, resume_from
  FROM sog.claim(:cp, 'worker-3', 'orders@2026-06-30') \gset
SELECT :'verdict' AS verdict, :gap2 <> :gap1 AS new_gap, :'resume_from' AS resume_from;
SELECT * FROM pg_temp.gaps(:cp);
SELECT reason, detail FROM sog.gap WHERE id = :gap2;
-- Claiming again with the other identity records no second gap.
SELECT generation AS g, verdict, gap_id = :gap2 AS same_gap
  FROM sog.claim(:cp, 'worker-3', 'orders@2026-06-30');
SELECT count(*) AS gaps FROM sog.gap WHERE checkpoint_id = :cp;
SELECT generation AS g FROM sog.checkpoint WHERE id = :cp \gset
-- The operator resolves the first gap: the identity gap keeps the
-- checkpoint failed closed, and nothing of the other source is applied.
SELECT sog.resolve_gap(:gap1, 'replayed', 'the producer re-sent 11..15');
SELECT * FROM pg_temp.cp(:cp);
SELECT state, message FROM pg_temp.err($$SELECT sog.apply($1, $2, '11', pg_temp.d('11'))$$, :cp, :g);
-- To accept the new source under this name, the operator records its
-- identity and resolves the gap; a claim from the old source is now the
-- divergence.
SELECT source_identity FROM sog.reconfigure(:cp, source_identity => 'orders@2026-06-30',
                                            note => 'INC-7: stream recreated, same data');
SELECT sog.resolve_gap(:gap2, 'accepted_loss', 'INC-7: verified by hand');
SELECT verdict, gap_id IS NULL AS no_gap FROM sog.claim(:cp, 'worker-4', 'orders@2026-06-30');
SELECT verdict, gap_id IS NOT NULL AS gap FROM sog.claim(:cp, 'worker-5', 'orders@2026-01-01');
SELECT reason, detail FROM sog.gap WHERE checkpoint_id = :cp ORDER BY id DESC LIMIT 1;

-- While replaying, too.
SELECT id AS cp FROM sog.register('identity-replaying', 'orders', '0',
                                  source_identity => 'orders@1') \gset
SELECT generation AS g FROM sog.claim(:cp, 'worker-1') \gset
SELECT pg_temp.rle(pg_temp.apply_batch(:cp, :g, pg_temp.range(1, 10)));
SELECT sog.note_read(:cp, :g, '20', pg_temp.h(pg_temp.range(11, 20)), 10);
SELECT verdict FROM sog.claim(:cp, 'worker-2', 'orders@1');
SELECT verdict FROM sog.claim(:cp, 'worker-3', 'orders@2');
SELECT * FROM pg_temp.cp(:cp);
-- A claim without an identity is not checked; the first one given is
-- recorded when none was registered.
SELECT id AS cp FROM sog.register('identity-first', 'orders', '0') \gset
SELECT verdict FROM sog.claim(:cp, 'worker-1');
SELECT verdict FROM sog.claim(:cp, 'worker-2', 'orders@1');
SELECT source_identity FROM sog.checkpoint WHERE id = :cp;
SELECT verdict FROM sog.claim(:cp, 'worker-3');
SELECT verdict FROM sog.claim(:cp, 'worker-4', 'orders@2');
