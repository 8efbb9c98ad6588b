--
-- recovery: expired-token recovery (README: expired-token recoverywith 5, 7 and 8)
--
-- A provider permanently rejects the checkpoint's continuation token.  The
-- consumer opens an attempt with sog.begin_recovery from an anchor it can
-- prove, re-reads from it, checks every event with sog.recovery_event in its
-- sink transaction, and concludes the page with sog.promote, a
-- compare-and-swap on the attempt's base token and generation.  Runs after
-- setup in the same database; consumers here are named recovery-*, and ids
-- (checkpoints, attempts, gaps) are looked up, never written down.
--
\i test/regress_helpers.sql
\i test/recovery_helpers.sql

-- receipts(cp): the receipts of a checkpoint, each checked against d().
CREATE FUNCTION pg_temp.receipts(cp bigint) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(r."position"::text
	                           || CASE WHEN r.payload_digest = pg_temp.d(r."position"::text)
	                                   THEN '' ELSE '(other digest)' END,
	                           ' ' ORDER BY r."position"), '(none)')
	  FROM sog.receipts($1) r
$$;

-- cp_token(id): the checkpoint as recovery sees it (its provider token too),
-- with the counts of sog.status.
CREATE FUNCTION pg_temp.cp_token(id bigint,
    OUT generation bigint, OUT provider_token text,
    OUT applied_position sog.position, OUT source_cursor sog.position,
    OUT state text, OUT open_gaps bigint, OUT open_recoveries bigint)
LANGUAGE sql AS $$
	SELECT c.generation, c.provider_token, c.applied_position, c.source_cursor,
	       c.state, s.open_gaps, s.open_recoveries
	  FROM sog.checkpoint c JOIN sog.status s ON s.checkpoint_id = c.id
	 WHERE c.id = $1
$$;

-- attempt(rid): an attempt's state and counts, and the checkpoint it
-- reports after its conclusion (result_*).
CREATE FUNCTION pg_temp.attempt(rid bigint,
    OUT state text, OUT failure text, OUT last_position sog.position,
    OUT verified bigint, OUT applied bigint, OUT duplicate bigint,
    OUT successor_token text, OUT result_generation bigint,
    OUT result_applied sog.position, OUT result_token text)
LANGUAGE sql AS $$
	SELECT r.state, r.failure, r.last_position, r.events_verified,
	       r.events_applied, r.events_duplicate, r.successor_token,
	       r.result_generation, r.result_applied_position, r.result_provider_token
	  FROM sog.recovery r WHERE r.id = $1
$$;

-- gap(rid): the gap row an attempt's refusal or stop recorded.
CREATE FUNCTION pg_temp.gap(rid bigint,
    OUT reason text, OUT verdict sog.verdict, OUT same_generation boolean,
    OUT from_position sog.position, OUT to_position sog.position, OUT open boolean)
LANGUAGE sql AS $$
	SELECT g.reason, g.verdict, g.generation = r.generation, g.from_position,
	       g.to_position, g.resolved_at IS NULL
	  FROM sog.recovery r JOIN sog.gap g ON g.id = r.gap_id
	 WHERE r.id = $1
$$;

-- resolve(rid): the operator closes the gap of a refused or stopped
-- attempt, so that the next case starts from a running checkpoint (as
-- replayed: an accepted retention loss would lift the next refusal of the
-- same range, model_findings section 7).
CREATE FUNCTION pg_temp.resolve(rid bigint) RETURNS void
LANGUAGE sql AS $$
	SELECT sog.resolve_gap(r.gap_id, 'replayed', 'regress: next case')
	  FROM sog.recovery r WHERE r.id = $1
$$;

-- prepare(consumer, provider, scope): a checkpoint like the reference's
-- after its first claim: generation 1, 101..105 applied (receipts and sink
-- rows) in two page transactions, the provider token now C8.
CREATE FUNCTION pg_temp.prepare(consumer text, provider text, scope text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	id bigint;
BEGIN
	id := (sog.register(consumer, 'orders', '0', 'critical', provider, scope)).id;
	PERFORM sog.claim(id, 'worker-1');
	PERFORM pg_temp.apply_batch(id, 1, '{101,102}');
	PERFORM sog.commit_page(id, 1, NULL, 'C7');
	PERFORM pg_temp.apply_batch(id, 1, '{103,104,105}');
	PERFORM sog.commit_page(id, 1, 'C7', 'C8');
	RETURN id;
END
$$;

-- refusal(cp, gen, token, scope, anchor, inclusive, retained_from,
-- finalized_through): a sog.begin_recovery call: the attempt, its gap
-- (reason and range), the checkpoint right after (nothing advanced); then,
-- if it was refused, its gap is resolved and the state after that is shown.
CREATE FUNCTION pg_temp.refusal(cp bigint, gen bigint, token text, scope text,
                                anchor text, inclusive boolean,
                                retained text DEFAULT NULL, finalized text DEFAULT NULL,
                                OUT attempt text, OUT gap text,
                                OUT checkpoint text, OUT after_resolve text)
LANGUAGE plpgsql AS $$
DECLARE
	r sog.recovery;
	g record;
	c record;
BEGIN
	r := sog.begin_recovery(cp, gen, token, scope, anchor::sog.position, inclusive,
	                        retained::sog.position, finalized::sog.position);
	attempt := r.state || coalesce(' ' || r.failure, '');
	SELECT * INTO g FROM pg_temp.gap(r.id);
	IF FOUND THEN
		gap := format('%s (%s, %s] %s%s', g.reason, coalesce(g.from_position::text, 'null'),
		              coalesce(g.to_position::text, 'null'), g.verdict,
		              CASE WHEN g.open THEN '' ELSE ' resolved' END);
	END IF;
	SELECT * INTO c FROM pg_temp.cp_token(cp);
	checkpoint := format('%s gen %s token %s applied %s', c.state, c.generation,
	                     c.provider_token, coalesce(c.applied_position::text, 'null'));
	IF r.state = 'failed' THEN
		PERFORM pg_temp.resolve(r.id);
		after_resolve := (SELECT x.state FROM pg_temp.cp_token(cp) x);
	END IF;
END
$$;

--
-- 1. The reference example: token C8, applied 105, generation 12, provider
-- kafka.  C8 expires; an inclusive seek at 103 returns 103..106 and the next
-- token N1; 103..105 match their receipts, 106 is new; promotion stores N1
-- and applied 106 and bumps the generation to 13.
--
SELECT id AS ref FROM sog.register('recovery-reference', 'orders', '0', 'critical',
                                   'kafka', 'topic=orders') \gset
DO $$
BEGIN
	FOR i IN 1..12 LOOP
		PERFORM sog.claim((SELECT c.id FROM sog.checkpoint c
		                    WHERE c.consumer = 'recovery-reference'), 'worker-' || i);
	END LOOP;
END
$$;
BEGIN;
SELECT pg_temp.apply_batch(:ref, 12, '{101,102}');
SELECT sog.commit_page(:ref, 12, NULL, 'C7');
COMMIT;
BEGIN;
SELECT pg_temp.apply_batch(:ref, 12, '{103,104,105}');
SELECT sog.commit_page(:ref, 12, 'C7', 'C8');
COMMIT;
SELECT * FROM pg_temp.cp_token(:ref);

-- C8 is rejected for good.  Kafka seeks inclusively and needs no finality
-- (it does not backfill); retention starts at 50.
-- begin_recovery returns the attempt row.
CREATE TEMP TABLE reference_attempt AS
SELECT * FROM sog.begin_recovery(:ref, 12, 'C8', 'topic=orders', '103', true, '50');
SELECT id AS rid FROM reference_attempt \gset
SELECT state, failure, gap_id, generation, expired_token, query_scope, provider, anchor,
       anchor_inclusive, retained_from, finalized_through, applied_at_start,
       checkpoint_state_at_start, last_position
  FROM reference_attempt \gx
SELECT * FROM pg_temp.cp_token(:ref);

-- The page transaction: the fetched events, then the promotion.
BEGIN;
SELECT pg_temp.page(:rid, '{103,104,105,106}');
SELECT * FROM sog.promote(:rid, 'N1', '106');
COMMIT;
SELECT * FROM pg_temp.cp_token(:ref);
SELECT * FROM pg_temp.attempt(:rid);
SELECT pg_temp.receipts(:ref) AS receipts, pg_temp.effects(:ref) AS effects;

-- A retry after an unknown commit outcome converges; another successor
-- token is refused (55000), and nothing changes.
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.err($$SELECT sog.promote($1, 'N2', '106')$$, :rid) \gx
SELECT * FROM pg_temp.err($$SELECT sog.promote($1, NULL, '106')$$, :rid) \gx
-- The attempt is concluded: no more events (55000).
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event($1, '107', pg_temp.d('107'))$$, :rid) \gx
SELECT * FROM pg_temp.cp_token(:ref);
-- Promotion bumped the generation: generation 12 is fenced (SG001), and the
-- consumer continues with generation 13 and token N1.
SELECT * FROM pg_temp.err($$SELECT sog.commit_page($1, 12, 'N1', 'N2')$$, :ref) \gx
BEGIN;
SELECT pg_temp.apply_batch(:ref, 13, '{106,107}');
SELECT sog.commit_page(:ref, 13, 'N1', 'N2');
COMMIT;
SELECT * FROM pg_temp.cp_token(:ref);
SELECT pg_temp.effects(:ref) AS effects;

--
-- 2. The page transaction fails: 103..106 were checked and 106's effect was
-- written, then the transaction rolls back.  Nothing of it remains: the
-- attempt has recorded no event, so promote answers page_incomplete, N1 is
-- not installed and the token stays C8.  The page is fetched again and
-- concluded.
--
SELECT pg_temp.prepare('recovery-rollback', 'kafka', 'topic=orders') AS rb \gset
SELECT id AS rid FROM sog.begin_recovery(:rb, 1, 'C8', 'topic=orders', '103', true) \gset
BEGIN;
SELECT pg_temp.page(:rid, '{103,104,105,106}');
SELECT pg_temp.effects(:rb) AS effects;
-- the sink fails
SELECT 1 / 0;
ROLLBACK;
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:rb);
SELECT pg_temp.receipts(:rb) AS receipts, pg_temp.effects(:rb) AS effects;
-- Only the first events committed: the page is still incomplete.
SELECT pg_temp.page(:rid, '{103,104,105}');
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.attempt(:rid);
-- 106 in its own transaction, which rolls back again.
BEGIN;
SELECT pg_temp.page(:rid, '{106}');
ROLLBACK;
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.cp_token(:rb);
-- 106 commits: now page_last 106 is the last recorded event.  A promote
-- naming another last event is still incomplete.
SELECT pg_temp.page(:rid, '{106}');
SELECT * FROM sog.promote(:rid, 'N1', '105');
SELECT * FROM sog.promote(:rid, 'N1', NULL);
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.attempt(:rid);
SELECT pg_temp.receipts(:rb) AS receipts, pg_temp.effects(:rb) AS effects;

--
-- 3. Another worker changes the checkpoint first: the attempt loses, and
-- its promote answers with the winner's checkpoint.
--
-- 3a. A normal page commits first (C8 -> C9, same generation).
SELECT pg_temp.prepare('recovery-lost-page', 'kafka', 'topic=orders') AS lp \gset
SELECT id AS rid FROM sog.begin_recovery(:lp, 1, 'C8', 'topic=orders', '104', true) \gset
SELECT pg_temp.page(:rid, '{104,105,106}');
SELECT sog.commit_page(:lp, 1, 'C8', 'C9');
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:lp);
-- Retried: lost again, the same answer, nothing changes.
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM sog.promote(:rid, 'other', NULL);
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event($1, '107', pg_temp.d('107'))$$, :rid) \gx
-- The lost attempt's effect of 106 committed with its receipt: the normal
-- path finds the receipt and skips the effect, so 106 is in the sink once.
SELECT pg_temp.apply_batch(:lp, 1, '{106,107}');
SELECT * FROM pg_temp.cp_token(:lp);
SELECT pg_temp.receipts(:lp) AS receipts, pg_temp.effects(:lp) AS effects;

-- 3b. Two attempts from the same token; the second sees the receipt the
-- first recorded for 106 (duplicate: skip the effect), applies 107 and wins.
SELECT pg_temp.prepare('recovery-duplicate', 'kafka', 'topic=orders') AS dp \gset
SELECT id AS ra FROM sog.begin_recovery(:dp, 1, 'C8', 'topic=orders', '104', true) \gset
SELECT pg_temp.page(:ra, '{104,105,106}');
SELECT id AS rb2 FROM sog.begin_recovery(:dp, 1, 'C8', 'topic=orders', '105', true) \gset
SELECT * FROM pg_temp.cp_token(:dp);
SELECT pg_temp.page(:rb2, '{105,106,107}');
SELECT * FROM pg_temp.attempt(:rb2);
SELECT * FROM sog.promote(:rb2, 'NB', '107');
-- The winner's promotion concluded the first attempt as lost: its next event
-- is refused (55000), and its promote is lost, showing the winner's
-- generation, applied position and token.
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event($1, '107', pg_temp.d('107'))$$, :ra) \gx
SELECT * FROM sog.promote(:ra, 'NA', '106');
SELECT * FROM sog.promote(:ra, 'NA', '106');
SELECT * FROM pg_temp.attempt(:ra);
SELECT * FROM pg_temp.cp_token(:dp);
SELECT pg_temp.receipts(:dp) AS receipts, pg_temp.effects(:dp) AS effects;

--
-- 4. Refusals of begin_recovery, in the contract's order.  Each fails the
-- attempt (no error: the gap row commits), records a gap, advances nothing
-- and leaves the checkpoint failed_closed; the gap is then resolved.
--
SELECT pg_temp.prepare('recovery-refusals', 'kafka', 'topic=orders') AS rf \gset

-- 4.1 scope_changed: the attempt reads another scope than the checkpoint.
SELECT id AS rid FROM sog.begin_recovery(:rf, 1, 'C8', 'topic=orders-v2', '103', true) \gset
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.gap(:rid);
SELECT * FROM pg_temp.cp_token(:rf);
-- While it is failed_closed, the normal path is refused above applied.
SELECT state, message FROM pg_temp.err($$SELECT sog.apply($1, 1, '106', pg_temp.d('106'))$$, :rf);
SELECT pg_temp.resolve(:rid);
SELECT * FROM pg_temp.cp_token(:rf);
-- No scope (NULL) is another scope too.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', NULL, '103', true);
-- scope_changed comes first: every later check would refuse this one too.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'other', '200', false, '300', NULL);

-- 4.2 retention: the first record the seek needs is no longer retained.
-- Inclusive: the anchor itself.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '103', true, '104');
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:rf, 1, 'C8', 'topic=orders', '103', true, '103');
ROLLBACK;
-- Exclusive, one component: the record after the anchor, anchor + 1.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '103', false, '105');
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:rf, 1, 'C8', 'topic=orders', '103', false, '104');
ROLLBACK;
-- retention comes before receipts_pruned, coverage_unproven and no_finality.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '200', false, '300');

-- Exclusive, tuples (Redis stream IDs): the next ID after 1700000000000-2
-- may be 1700000000000-3 or 1700000000001-0, so anything retained above the
-- anchor itself may have lost it.
SELECT id AS tp FROM sog.register('recovery-tuples', 'events', '0', 'critical',
                                  'redis_streams', 'stream=events') \gset
SELECT generation AS tg FROM sog.claim(:tp, 'worker-1') \gset
SELECT sog.apply_batch(:tp, :tg, '{1700000000000-1,1700000000000-2}',
                       ARRAY[pg_temp.d('1700000000000-1'), pg_temp.d('1700000000000-2')]);
SELECT sog.commit_page(:tp, :tg, NULL, '1700000000000-2');
SELECT * FROM pg_temp.refusal(:tp, :tg, '1700000000000-2', 'stream=events',
                              '1700000000000-2', false, '1700000000000-3');
SELECT * FROM pg_temp.refusal(:tp, :tg, '1700000000000-2', 'stream=events',
                              '1700000000000-2', false, '1700000000000-2-0');
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:tp, :tg, '1700000000000-2', 'stream=events',
                                              '1700000000000-2', false, '1700000000000-2');
ROLLBACK;
-- Inclusive tuples: the anchor itself, as for one component.
SELECT * FROM pg_temp.refusal(:tp, :tg, '1700000000000-2', 'stream=events',
                              '1700000000000-1', true, '1700000000000-1-0');
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:tp, :tg, '1700000000000-2', 'stream=events',
                                              '1700000000000-1', true, '1700000000000-1');
ROLLBACK;

-- Nothing applied yet: the seek starts from the beginning, so anything
-- retained above '0' may have lost records.
SELECT id AS fr FROM sog.register('recovery-fresh', 'orders', '0', 'critical',
                                  'kafka', 'topic=orders') \gset
SELECT generation AS fg FROM sog.claim(:fr, 'worker-1') \gset
SELECT sog.commit_page(:fr, :fg, NULL, 'F1');
SELECT * FROM pg_temp.refusal(:fr, :fg, 'F1', 'topic=orders', NULL, false, '1');
SELECT * FROM pg_temp.refusal(:fr, :fg, 'F1', 'topic=orders', NULL, false, '0-0');
-- Retained from '0': everything is there; the attempt opens, applies the
-- first events and promotes.
SELECT id AS rid FROM sog.begin_recovery(:fr, :fg, 'F1', 'topic=orders', NULL, false, '0') \gset
SELECT state, failure FROM pg_temp.attempt(:rid);
SELECT pg_temp.page(:rid, '{0,1,2}');
SELECT * FROM sog.promote(:rid, 'F2', '2');
SELECT pg_temp.receipts(:fr) AS receipts, pg_temp.effects(:fr) AS effects;

-- 4.3 receipts_pruned: the anchor is at or below the prune horizon, so the
-- overlap cannot be verified.
SELECT sog.prune_receipts(:rf, '103');
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '103', true);
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '102', false);
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:rf, 1, 'C8', 'topic=orders', '104', true);
ROLLBACK;
-- retention comes first.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '102', true, '103');

-- 4.4 coverage_unproven: an anchor above applied would skip 106.
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '107', true);
SELECT * FROM pg_temp.refusal(:rf, 1, 'C8', 'topic=orders', '106', false);
-- Exactly applied with an exclusive seek is allowed for kafka, which
-- declares no_late_arrivals ...
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:rf, 1, 'C8', 'topic=orders', '105', false);
ROLLBACK;
-- ... and refused for kinesis, which does not, and for a user's provider
-- row that keeps the default no_late_arrivals (false).  Inclusive at
-- applied is allowed for kinesis.
SELECT pg_temp.prepare('recovery-kinesis', 'kinesis', 'shard=0') AS ks \gset
SELECT * FROM pg_temp.refusal(:ks, 1, 'C8', 'shard=0', '105', false);
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:ks, 1, 'C8', 'shard=0', '105', true);
SELECT state, failure FROM sog.begin_recovery(:ks, 1, 'C8', 'shard=0', '104', false);
ROLLBACK;
INSERT INTO sog.provider (name, seek_inclusive) VALUES ('regress_unordered', true);
SELECT pg_temp.prepare('recovery-unordered', 'regress_unordered', NULL) AS un \gset
SELECT * FROM pg_temp.refusal(:un, 1, 'C8', NULL, '105', false, NULL, '105');
-- receipts_pruned comes before coverage_unproven.
SELECT sog.prune_receipts(:ks, '105');
SELECT * FROM pg_temp.refusal(:ks, 1, 'C8', 'shard=0', '105', false);

-- 4.5 no_finality: a provider that may backfill needs finalized_through at
-- or above applied.
SELECT pg_temp.prepare('recovery-dynamodb', 'dynamodb_streams', 'shard=7') AS dy \gset
SELECT * FROM pg_temp.refusal(:dy, 1, 'C8', 'shard=7', '103', true);
SELECT * FROM pg_temp.refusal(:dy, 1, 'C8', 'shard=7', '103', true, NULL, '104');
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:dy, 1, 'C8', 'shard=7', '103', true, NULL, '105');
SELECT state, failure FROM sog.begin_recovery(:dy, 1, 'C8', 'shard=7', '103', true, NULL, '200');
ROLLBACK;
-- coverage_unproven comes first.
SELECT * FROM pg_temp.refusal(:dy, 1, 'C8', 'shard=7', '106', true);
-- http_paged may backfill too, and cannot seek inclusively.
SELECT pg_temp.prepare('recovery-http', 'http_paged', 'q=orders') AS hp \gset
SELECT * FROM pg_temp.refusal(:hp, 1, 'C8', 'q=orders', '104', false);
BEGIN;
SELECT state, failure FROM sog.begin_recovery(:hp, 1, 'C8', 'q=orders', '104', false, NULL, '105');
ROLLBACK;

-- None of the refusals advanced anything; every gap is resolved.
SELECT c.consumer, c.generation, c.provider_token, c.applied_position, c.state,
       s.open_gaps, s.open_recoveries
  FROM sog.checkpoint c JOIN sog.status s ON s.checkpoint_id = c.id
 WHERE c.id IN (:rf, :tp, :ks, :un, :dy, :hp)
 ORDER BY c.consumer;
SELECT r.failure, count(*) AS attempts, count(g.id) AS gaps,
       count(*) FILTER (WHERE g.reason = r.failure AND g.verdict = 'fail_closed'
                          AND g.from_position IS NOT DISTINCT FROM r.applied_at_start) AS matching_gaps
  FROM sog.recovery r JOIN sog.checkpoint c ON c.id = r.checkpoint_id
       LEFT JOIN sog.gap g ON g.id = r.gap_id
 WHERE c.consumer LIKE 'recovery-%' AND r.state = 'failed'
 GROUP BY r.failure ORDER BY r.failure;

--
-- 5. Errors of begin_recovery, recovery_event and promote.
--
-- SG001: the generation is not current.
SELECT * FROM pg_temp.err($$SELECT sog.begin_recovery($1, 0, 'C8', 'topic=orders', '103', true)$$, :rf) \gx
SELECT state, message, detail FROM pg_temp.err($$SELECT sog.begin_recovery($1, 2, 'C8', 'topic=orders', '103', true)$$, :rf);
-- SG006: the token is not the checkpoint's current one.
SELECT * FROM pg_temp.err($$SELECT sog.begin_recovery($1, 1, 'C7', 'topic=orders', '103', true)$$, :rf) \gx
SELECT state, detail FROM pg_temp.err($$SELECT sog.begin_recovery($1, 1, NULL, 'topic=orders', '103', true)$$, :rf);
SELECT state, detail FROM pg_temp.err($$SELECT sog.begin_recovery($1, $2 + 1, 'x', 'topic=orders', NULL, false)$$, :fr, :fg);
-- 22023: an inclusive seek on a provider that cannot perform it.
SELECT * FROM pg_temp.err($$SELECT sog.begin_recovery($1, 1, 'C8', 'q=orders', '104', true)$$, :hp) \gx
-- 22023: the checkpoint's provider is not described in sog.provider.
-- register refuses an unknown provider (see register.sql); here the row is
-- deleted by its owner after the checkpoint was registered with it.
INSERT INTO sog.provider (name) VALUES ('regress_no_such_provider');
SELECT pg_temp.prepare('recovery-unknown-provider', 'regress_no_such_provider', NULL) AS up \gset
DELETE FROM sog.provider WHERE name = 'regress_no_such_provider';
SELECT * FROM pg_temp.err($$SELECT sog.begin_recovery($1, 1, 'C8', NULL, '104', false)$$, :up) \gx
-- 22023: unknown ids, NULL arguments, a digest that is not 32 bytes.
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event(-1, '1', pg_temp.d('1'))$$) \gx
SELECT * FROM pg_temp.err($$SELECT sog.promote(-1, 'x', '1')$$) \gx
SELECT q.ord, e.state, e.message
  FROM (VALUES (1, $$SELECT sog.begin_recovery(-1, 1, 'C8', NULL, '1', false)$$),
               (2, $$SELECT sog.begin_recovery(NULL, 1, 'C8', NULL, '1', false)$$),
               (3, $$SELECT sog.begin_recovery($1, NULL, 'C8', NULL, '1', false)$$),
               (4, $$SELECT sog.begin_recovery($1, 1, 'C8', 'topic=orders', '103', NULL)$$),
               (5, $$SELECT sog.recovery_event(NULL, '1', pg_temp.d('1'))$$),
               (6, $$SELECT sog.recovery_event($2, NULL, pg_temp.d('1'))$$),
               (7, $$SELECT sog.recovery_event($2, '1', NULL)$$),
               (8, $$SELECT sog.recovery_event($2, '1', '\x00')$$),
               (9, $$SELECT sog.promote(NULL, 'x', '1')$$))
       AS q(ord, sql),
       LATERAL pg_temp.err(q.sql, :rf, :rid) e
 ORDER BY q.ord;
-- None of these errors left an attempt or a gap behind.
SELECT * FROM pg_temp.cp_token(:rf);

--
-- 6. Stops of recovery_event: the attempt fails, a gap is recorded, the
-- checkpoint fails closed; the attempt takes no more events (55000) and
-- never promotes (unresolved).
--
SELECT pg_temp.prepare('recovery-stops', 'kafka', 'topic=orders') AS st \gset

-- 6.1 mismatch: 104 came back with other bytes than were applied.
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', true) \gset
SELECT pg_temp.ev(:rid, '103') AS e103, pg_temp.ev(:rid, '104', 'payload of 104, altered') AS e104;
SELECT * FROM pg_temp.attempt(:rid);
-- The gap covers (from_position, to_position]: from is applied (105); to,
-- the last position the gap may hold, cannot lie below it.
SELECT reason, verdict, same_generation, from_position,
       (to_position IS NULL OR to_position >= from_position) AS to_not_below_from, open
  FROM pg_temp.gap(:rid);
SELECT * FROM pg_temp.cp_token(:st);
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event($1, '105', pg_temp.d('105'))$$, :rid) \gx
SELECT * FROM sog.promote(:rid, 'N1', '104');
SELECT * FROM sog.promote(:rid, 'N1', '103');
SELECT pg_temp.resolve(:rid);
-- Once the gap is resolved the failed attempt still never promotes.
SELECT * FROM sog.promote(:rid, 'N1', '103');
SELECT * FROM pg_temp.cp_token(:st);

-- 6.2 unverifiable: 100 is at or below applied but has no receipt (the
-- checkpoint's first applied event was 101).
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '100', true) \gset
SELECT pg_temp.page(:rid, '{100,101,102}');
SELECT * FROM pg_temp.attempt(:rid);
SELECT reason, verdict, from_position,
       (to_position IS NULL OR to_position >= from_position) AS to_not_below_from, open
  FROM pg_temp.gap(:rid);
SELECT state FROM pg_temp.cp_token(:st);
SELECT * FROM sog.promote(:rid, 'N1', '100');
SELECT pg_temp.resolve(:rid);

-- 6.3 coverage_gap: an inclusive seek at 103 whose first event is 104 (103
-- was skipped).
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', true) \gset
SELECT pg_temp.page(:rid, '{104,105,106}');
SELECT * FROM pg_temp.attempt(:rid);
SELECT reason, verdict, from_position,
       (to_position IS NULL OR to_position >= from_position) AS to_not_below_from, open
  FROM pg_temp.gap(:rid);
SELECT state FROM pg_temp.cp_token(:st);
SELECT pg_temp.resolve(:rid);

-- 6.4 coverage_gap: a position not above the previous one (the same again,
-- then one below).
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', true) \gset
SELECT pg_temp.page(:rid, '{103,104,104,105}');
SELECT * FROM pg_temp.attempt(:rid);
SELECT reason, verdict, from_position,
       (to_position IS NULL OR to_position >= from_position) AS to_not_below_from, open
  FROM pg_temp.gap(:rid);
SELECT pg_temp.resolve(:rid);
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', true) \gset
SELECT pg_temp.page(:rid, '{103,105,104}');
SELECT failure FROM pg_temp.attempt(:rid);
SELECT reason FROM pg_temp.gap(:rid);
SELECT pg_temp.resolve(:rid);
-- Above applied too: 106 applied, then 106 again.  The effect of 106 was
-- written once; the attempt never promotes, so applied stays 105.
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '105', true) \gset
SELECT pg_temp.page(:rid, '{105,106,106}');
SELECT * FROM pg_temp.attempt(:rid);
SELECT reason, verdict, from_position, to_position, open FROM pg_temp.gap(:rid);
SELECT pg_temp.resolve(:rid);
SELECT * FROM sog.promote(:rid, 'N1', '106');

-- 6.5 coverage_gap: an exclusive seek after 103 returned 103 itself.
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', false) \gset
SELECT pg_temp.page(:rid, '{103,104,105}');
SELECT * FROM pg_temp.attempt(:rid);
SELECT reason, verdict, from_position,
       (to_position IS NULL OR to_position >= from_position) AS to_not_below_from, open
  FROM pg_temp.gap(:rid);
SELECT pg_temp.resolve(:rid);
-- ... or something below it.
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', false) \gset
SELECT pg_temp.page(:rid, '{102,103}');
SELECT failure FROM pg_temp.attempt(:rid);
SELECT pg_temp.resolve(:rid);
-- The exclusive seek done right: 104 first.
SELECT id AS rid FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '103', false) \gset
SELECT pg_temp.page(:rid, '{104,105}');

-- 6.6 mismatch above applied.  106 is a duplicate for this open attempt:
-- the failed attempt of 6.4 recorded its receipt (and wrote its effect in
-- the same transaction).  A concurrent attempt fetches 106 with other
-- bytes: mismatch.  Its stop leaves an open gap, so the first attempt
-- cannot promote (unresolved) until the gap is resolved.
SELECT pg_temp.page(:rid, '{106}');
SELECT id AS rid2 FROM sog.begin_recovery(:st, 1, 'C8', 'topic=orders', '105', true) \gset
SELECT pg_temp.ev(:rid2, '105') AS e105, pg_temp.ev(:rid2, '106', 'payload of 106, altered') AS e106;
SELECT reason, verdict, from_position, to_position, open FROM pg_temp.gap(:rid2);
SELECT * FROM pg_temp.cp_token(:st);
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT state FROM pg_temp.attempt(:rid);
SELECT pg_temp.resolve(:rid2);
SELECT * FROM sog.promote(:rid, 'N1', '106');
SELECT * FROM pg_temp.cp_token(:st);
SELECT pg_temp.receipts(:st) AS receipts, pg_temp.effects(:st) AS effects;
-- Every stop attempt is failed with its gap resolved; none of them moved
-- the checkpoint.
SELECT failure, count(*) AS attempts, count(*) FILTER (WHERE g.resolved_at IS NOT NULL) AS resolved
  FROM sog.recovery r JOIN sog.gap g ON g.id = r.gap_id
 WHERE r.checkpoint_id = :st
 GROUP BY failure ORDER BY failure;

--
-- 7. Empty pages and provider rows.
--
-- The seeded rows are builtin (not dumped); rows users add are not.
SELECT name, seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill, builtin
  FROM sog.provider
 WHERE builtin OR name = 'regress_unordered'
 ORDER BY builtin DESC, name;
SELECT u.cond AS dump_condition
  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS u(tab, cond)
 WHERE e.extname = 'stream_offset_guard' AND u.tab = 'sog.provider'::regclass;

-- Kafka: an empty poll proves nothing, so an empty page does not promote;
-- the attempt stays open.
SELECT pg_temp.prepare('recovery-empty', 'kafka', 'topic=orders') AS em \gset
SELECT id AS rid FROM sog.begin_recovery(:em, 1, 'C8', 'topic=orders', '105', false) \gset
SELECT * FROM sog.promote(:rid, 'E1', NULL);
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:em);

-- A user's provider whose documentation says an empty page is a barrier.
INSERT INTO sog.provider (name, seek_inclusive, no_late_arrivals, empty_page_is_barrier,
                          may_backfill)
VALUES ('regress_barrier', true, true, true, false);
SELECT name, seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill, builtin
  FROM sog.provider WHERE name = 'regress_barrier';
SELECT pg_temp.prepare('recovery-barrier', 'regress_barrier', 'feed=1') AS br \gset
SELECT id AS rid FROM sog.begin_recovery(:br, 1, 'C8', 'feed=1', '105', false) \gset
-- A page_last without any recorded event is incomplete.
SELECT * FROM sog.promote(:rid, 'B1', '106');
-- The empty page promotes: token replaced, generation + 1, applied unchanged.
SELECT * FROM sog.promote(:rid, 'B1', NULL);
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:br);
SELECT * FROM sog.promote(:rid, 'B1', NULL);
-- With an event recorded, a NULL page_last is incomplete, even for a
-- barrier provider.
SELECT id AS rid FROM sog.begin_recovery(:br, 2, 'B1', 'feed=1', '105', true) \gset
SELECT pg_temp.page(:rid, '{105}');
SELECT * FROM sog.promote(:rid, 'B2', NULL);
SELECT * FROM sog.promote(:rid, 'B2', '105');

--
-- 8. Overlap only, and the applied position never moves backward.
--
-- 8.1 Every fetched event was applied before: all verified, none new.  The
-- page promotes: applied unchanged, generation + 1, token replaced.
SELECT pg_temp.prepare('recovery-overlap', 'kafka', 'topic=orders') AS ov \gset
SELECT id AS rid FROM sog.begin_recovery(:ov, 1, 'C8', 'topic=orders', '102', true) \gset
SELECT pg_temp.page(:rid, '{102,103,104,105}');
SELECT * FROM sog.promote(:rid, 'O1', '105');
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:ov);

-- 8.2 The next token expires too, and the anchor moves back further, to
-- 101: again only verified events; applied stays 105.
SELECT id AS rid FROM sog.begin_recovery(:ov, 2, 'O1', 'topic=orders', '101', true) \gset
SELECT pg_temp.page(:rid, '{101,102,103}');
SELECT * FROM sog.promote(:rid, 'O2', '103');
SELECT * FROM pg_temp.cp_token(:ov);

-- 8.3 The attempt applied 106 and 107; meanwhile the normal path of the
-- same generation applied 106..109 (106 and 107 found the attempt's
-- receipts).  Promotion through 107 leaves applied at 109.
SELECT id AS rid FROM sog.begin_recovery(:ov, 3, 'O2', 'topic=orders', '105', true) \gset
SELECT pg_temp.page(:rid, '{105,106,107}');
SELECT pg_temp.apply_batch(:ov, 3, '{106,107,108,109}');
SELECT * FROM pg_temp.cp_token(:ov);
SELECT * FROM sog.promote(:rid, 'O3', '107');
SELECT * FROM pg_temp.attempt(:rid);
SELECT * FROM pg_temp.cp_token(:ov);
SELECT pg_temp.receipts(:ov) AS receipts, pg_temp.effects(:ov) AS effects;

--
-- 9. sog.status counts the open attempts of each checkpoint.
--
SELECT pg_temp.prepare('recovery-status', 'kafka', 'topic=orders') AS ss \gset
SELECT open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = :ss;
SELECT id AS r1 FROM sog.begin_recovery(:ss, 1, 'C8', 'topic=orders', '104', true) \gset
SELECT id AS r2 FROM sog.begin_recovery(:ss, 1, 'C8', 'topic=orders', '105', true) \gset
SELECT open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = :ss;
-- A refused attempt is failed, not open.
SELECT attempt FROM pg_temp.refusal(:ss, 1, 'C8', 'topic=orders', '200', true);
SELECT open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = :ss;
SELECT pg_temp.page(:r1, '{104,105,106}');
SELECT pg_temp.page(:r2, '{105}');
SELECT promoted, reason FROM sog.promote(:r1, 'S1', '106');
SELECT open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = :ss;
SELECT promoted, generation, applied_position, provider_token, reason
  FROM sog.promote(:r2, 'S2', '105');
SELECT open_gaps, open_recoveries FROM sog.status WHERE checkpoint_id = :ss;
-- All checkpoints of this file, and their open gaps.
SELECT s.consumer, s.state, s.generation, s.applied_position, s.open_gaps, s.open_recoveries
  FROM sog.status s
 WHERE s.consumer LIKE 'recovery-%'
 ORDER BY s.consumer;
SELECT count(*) AS unresolved_gaps
  FROM sog.unresolved_gaps WHERE consumer LIKE 'recovery-%';

-- A replay pending and an expired token: the gap is verified first, then
-- recovered.  Recovering first is refused (before issue 8 the promotion
-- ended the replay without any verification; skew.sql shows the loss that
-- allowed): an event above the applied position is SG004, and the
-- promotion of what was recorded is 'unresolved'.
SELECT id AS rp FROM sog.register('rec-replay', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS rpg FROM sog.claim(:rp, 'w1') \gset
SELECT sog.apply(:rp, :rpg, '101', pg_temp.d('101'));
SELECT sog.commit_page(:rp, :rpg, NULL, 'C8');
SELECT sog.note_read(:rp, :rpg, '102', sog.buffer_hash(ARRAY['102']::sog.position[], ARRAY[pg_temp.d('102')]), 1);
SELECT verdict, generation AS rpg FROM sog.claim(:rp, 'w2') \gset
\echo :verdict
SELECT id AS rpa FROM sog.begin_recovery(:rp, :rpg, 'C8', NULL, '101', true) \gset
SELECT sog.recovery_event(:rpa, '101', pg_temp.d('101'));
SELECT state, message FROM pg_temp.err($$SELECT sog.recovery_event($1, '102', pg_temp.d('102'))$$, :rpa);
SELECT promoted, generation, applied_position, provider_token, reason FROM sog.promote(:rpa, 'T1', '101');
-- Verified: the same attempt goes on, and its promotion ends the replay.
SELECT sog.verify_gap(:rp, :rpg, sog.buffer_hash(ARRAY['102']::sog.position[], ARRAY[pg_temp.d('102')]));
SELECT sog.recovery_event(:rpa, '102', pg_temp.d('102'));
SELECT promoted, generation, applied_position, provider_token, reason FROM sog.promote(:rpa, 'T1', '102');
SELECT state, applied_position, source_cursor, read_hash IS NULL AS boundary_cleared
  FROM sog.checkpoint WHERE id = :rp;
SELECT sog.apply(:rp, :rpg + 1, '103', pg_temp.d('103'));

-- While the checkpoint is failed closed, an attempt writes nothing above the
-- applied position (SG004), as sog.apply would not.
SELECT id AS fa FROM sog.begin_recovery(:rp, :rpg + 1, 'T1', NULL, '103', true) \gset
SELECT state, failure FROM sog.begin_recovery(:rp, :rpg + 1, 'T1', 'other-scope', '103', true);
SELECT sog.recovery_event(:fa, '103', pg_temp.d('103'));
SELECT * FROM pg_temp.err($$SELECT sog.recovery_event($1, '104', pg_temp.d('104'))$$, :fa) \gx

-- A worker that stops after its recovery page's sink transaction committed
-- and before promote (issue 20): the successor's claim concludes the
-- attempt as lost and says so in a NOTICE.  The applied position stays
-- where it was (the attempt did not promote); sog.status shows the
-- committed effects above it (recovered_through) and the attempt's row
-- shows them too (last_position above result_applied).  Re-delivered, the
-- page's events are answered false and write nothing, and the applied
-- position moves through them.
-- The claim below prints a NOTICE that names the attempt and the
-- checkpoint by id: ids of this section start at 10000, so that they do not
-- depend on how many the tests before it created.
SELECT setval(pg_get_serial_sequence('sog.checkpoint', 'id'), 10000) IS NOT NULL AS ids_set,
       setval(pg_get_serial_sequence('sog.recovery', 'id'), 10000) IS NOT NULL AS attempt_ids_set;
SELECT id AS dp FROM sog.register('recovery-died', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS dg FROM sog.claim(:dp, 'w1') \gset
SELECT pg_temp.apply_batch(:dp, :dg, ARRAY['101']);
SELECT sog.commit_page(:dp, :dg, NULL, 'D1');
SELECT id AS da FROM sog.begin_recovery(:dp, :dg, 'D1', NULL, '101', true) \gset
SELECT pg_temp.page(:da, ARRAY['101', '102', '103']);   -- committed; then the worker stops
SELECT verdict, resume_from, provider_token, generation AS dg FROM sog.claim(:dp, 'w2') \gset
\echo :verdict :resume_from :provider_token
SELECT state, result_applied, last_position FROM pg_temp.attempt(:da);
SELECT applied_position, recovered_through FROM sog.status WHERE checkpoint_id = :dp;
SELECT pg_temp.apply_batch(:dp, :dg, ARRAY['102', '103', '104']) AS redelivered;
SELECT pg_temp.effects(:dp) AS effects;
SELECT applied_position, recovered_through FROM sog.status WHERE checkpoint_id = :dp;
