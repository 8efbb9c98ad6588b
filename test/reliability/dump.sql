-- test/reliability/dump.sql: the final database as TSV files for check.pl
-- (psql run in the dump directory).  Commit timestamps (track_commit_timestamp = on) are
-- microseconds since the epoch.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\o source.tsv
COPY (SELECT part, pos, trimmed, encode(sha256(payload), 'hex') FROM rel.source ORDER BY part, pos) TO STDOUT;
\o sink.tsv
COPY (SELECT part, pos, tag, gen, encode(sha256(payload), 'hex') FROM rel.sink ORDER BY part, pos) TO STDOUT;
\o optag.tsv
COPY (SELECT tag, kind, cp, gen, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint FROM rel.optag) TO STDOUT;
\o checkpoint.tsv
COPY (SELECT id, "partition", criticality, generation, coalesce(applied_position::text, '0'), state, coalesce(prune_horizon::text, '0'), coalesce(source_cursor::text, '0') FROM sog.checkpoint ORDER BY id) TO STDOUT;
\o gap.tsv
COPY (SELECT id, checkpoint_id, generation, coalesce(from_position::text, '0'), to_position::text, reason, resolution, resolved_at IS NOT NULL, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint FROM sog.gap ORDER BY id) TO STDOUT;
\o manifest.tsv
COPY (SELECT id, checkpoint_id, generation, kind, owner, coalesce(source_cursor::text, '0'), coalesce(applied_position::text, '0'), verdict, gap_id, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint, note FROM sog.manifest_log ORDER BY id) TO STDOUT;
\o recovery.tsv
COPY (SELECT id, checkpoint_id, generation, state, result_generation, successor_token, last_position::text, advance_through::text, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000000)::bigint, anchor::text FROM sog.recovery ORDER BY id) TO STDOUT;
\o receipts.tsv
COPY (SELECT c.id, r."position"::text, encode(r.payload_digest, 'hex') FROM sog.checkpoint c, LATERAL sog.receipts(c.id) r ORDER BY 1, 2) TO STDOUT;

\o
