-- test/sanitize/sqlsmith-state.sql: the state sqlsmith.sh fuzzes against,
-- run as the owner (superuser) in the fuzz database: the extension, a
-- consumer role granted two of the consumers, and checkpoints in every
-- state the guard knows (aligned with pages and tokens, a gap awaiting
-- verification, failed closed on a gap without a hash, a retention loss
-- reported, an open recovery attempt), with receipts, gaps and attempts.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION stream_offset_guard;
CREATE ROLE sog_fuzz_consumer LOGIN;

-- d(p): the payload digest of the record at p (bytes 'payload of <p>').
CREATE FUNCTION public.fuzz_d(p text) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT sog.payload_digest(convert_to('payload of ' || p, 'UTF8'))
$$;
-- h(lo, hi): the buffer hash of the records lo..hi.
CREATE FUNCTION public.fuzz_h(lo bigint, hi bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT sog.buffer_hash(g::text::sog.position, public.fuzz_d(g::text) ORDER BY g)
	  FROM generate_series(lo, hi) g
$$;
-- apply(cp, gen, lo, hi): a sink transaction's guard call for lo..hi.
CREATE FUNCTION public.fuzz_apply(cp bigint, gen bigint, lo bigint, hi bigint) RETURNS boolean[]
LANGUAGE sql AS $$
	SELECT sog.apply_batch(cp, gen,
	         ARRAY(SELECT g::text::sog.position FROM generate_series(lo, hi) g ORDER BY g),
	         ARRAY(SELECT public.fuzz_d(g::text) FROM generate_series(lo, hi) g ORDER BY g))
$$;

-- fuzz-a (kafka, paged): two pages with tokens C7 and C8 applied through
-- 105, then C8 expires: an open recovery attempt from anchor 103.
SELECT id AS a FROM sog.register('fuzz-a', 'orders', '0', 'critical', 'kafka', 'topic=orders') \gset
SELECT generation AS ga FROM sog.claim(:a, 'worker-a1') \gset
SELECT sog.note_read(:a, :ga, '102', public.fuzz_h(101, 102), 2);
SELECT public.fuzz_apply(:a, :ga, 101, 102);
SELECT sog.commit_page(:a, :ga, NULL, 'C7');
SELECT sog.note_read(:a, :ga, '105', public.fuzz_h(103, 105), 3);
-- (the same guard call with integer positions)
SELECT sog.apply_batch_int8(:a, :ga, ARRAY[103, 104, 105],
       ARRAY(SELECT public.fuzz_d(g::text) FROM generate_series(103, 105) g ORDER BY g));
-- (a dense run in one call)
SELECT sog.apply_run(:a, :ga, 106, public.fuzz_d('106') || public.fuzz_d('107'));
SELECT sog.commit_page(:a, :ga, 'C7', 'C8');
SELECT id AS ra FROM sog.begin_recovery(:a, :ga, 'C8', 'topic=orders', '103', true, '50') \gset
SELECT sog.recovery_event(:ra, '103', public.fuzz_d('103'));

-- fuzz-b: read through 200 (noted with its hash), then the worker is lost
-- before a page commits (a partly applied boundary cannot commit): a
-- successor's claim must verify (start, 200].
SELECT id AS b FROM sog.register('fuzz-b', 'orders', '1', 'critical') \gset
SELECT generation AS gb FROM sog.claim(:b, 'worker-b1') \gset
SELECT sog.note_read(:b, :gb, '200', public.fuzz_h(101, 200), 100);
SELECT verdict FROM sog.claim(:b, 'worker-b2');

-- fuzz-c: a halt without a hash over records it held: the successor fails
-- closed and an unresolved gap is recorded.
SELECT id AS c FROM sog.register('fuzz-c', 'orders', '2', 'critical') \gset
SELECT generation AS gc FROM sog.claim(:c, 'worker-c1') \gset
SELECT public.fuzz_apply(:c, :gc, 1, 10);
SELECT verdict FROM sog.halt(:c, :gc, '20', NULL, 10);
SELECT verdict, gap_id FROM sog.claim(:c, 'worker-c2');

-- fuzz-d (telemetry): a retention loss reported, then resolved as an
-- accepted loss; and a second one left open.
SELECT id AS dd FROM sog.register('fuzz-d', 'events', '0', 'telemetry') \gset
SELECT generation AS gd FROM sog.claim(:dd, 'worker-d1') \gset
SELECT public.fuzz_apply(:dd, :gd, 1, 5);
SELECT sog.report_gap(:dd, :gd, '9', 'retention', 'trimmed by XTRIM') AS gap1 \gset
SELECT sog.resolve_gap(:gap1, 'accepted_loss', 'fuzz fixture');
SELECT generation AS gd FROM sog.claim(:dd, 'worker-d2') \gset
SELECT public.fuzz_apply(:dd, :gd, 10, 12);
SELECT sog.report_gap(:dd, :gd, '20', 'retention', 'trimmed again');

-- fuzz-e: multi-component positions, a long token, pruned receipts.
SELECT id AS e FROM sog.register('fuzz-e', 'pages', '0', 'critical', 'kinesis', 'shard=all') \gset
SELECT generation AS ge FROM sog.claim(:e, 'worker-e1') \gset
SELECT sog.apply_batch(:e, :ge, '{1-1,1-2,2-1}'::sog.position[],
       ARRAY[public.fuzz_d('1-1'), public.fuzz_d('1-2'), public.fuzz_d('2-1')]);
SELECT sog.commit_page(:e, :ge, NULL, repeat('t', 5000));
SELECT sog.prune_receipts(:e, '1-2');

-- The consumer role acts on fuzz-a and fuzz-b only.
SELECT sog.grant_consumer('sog_fuzz_consumer', 'fuzz-a');
SELECT sog.grant_consumer('sog_fuzz_consumer', 'fuzz-b');
GRANT EXECUTE ON FUNCTION public.fuzz_d(text), public.fuzz_h(bigint, bigint) TO sog_fuzz_consumer;

SELECT count(*) AS checkpoints FROM sog.checkpoint;
SELECT state, count(*) FROM sog.checkpoint GROUP BY state ORDER BY state;
SELECT count(*) AS receipts FROM sog.receipt;
SELECT count(*) AS gaps, count(*) FILTER (WHERE resolved_at IS NULL) AS open_gaps FROM sog.gap;
SELECT count(*) AS recovery_attempts FROM sog.recovery;
