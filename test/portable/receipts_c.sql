-- test/portable/receipts_c.sql: the C edition stores each run of
-- receipt_runs.sql through sog.apply_batch (one checkpoint per run) and
-- prints its rows of sog.receipt and the positions sog.receipts reads back.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir receipt_runs.sql
CREATE TEMP TABLE cps AS
SELECT k, (SELECT id FROM sog.register('receipt-codec-' || k, 's', '0')) AS cp FROM runs;
SELECT count(*) FROM cps, LATERAL sog.claim(cps.cp, 'w') c \g /dev/null
SELECT count(*) FROM runs JOIN cps USING (k),
	   LATERAL sog.apply_batch(cps.cp, 1, positions::sog.position[],
							   ARRAY(SELECT sog.payload_digest(convert_to(p, 'UTF8')) FROM unnest(positions) WITH ORDINALITY u(p, i) ORDER BY i)) a
\g /dev/null
SELECT 'run ' || k || ' row ' || r.first_position || ' ' || r.last_position || ' ' || r.n || ' '
	   || coalesce(encode(r.positions, 'hex'), 'NULL') || ' ' || encode(sha256(r.digests), 'hex')
  FROM cps JOIN sog.receipt r ON r.checkpoint_id = cps.cp
 ORDER BY k, r.last_position;
SELECT 'run ' || k || ' reads ' || (SELECT string_agg("position"::text, ' ' ORDER BY "position") FROM sog.receipts(cps.cp))
  FROM cps ORDER BY k;
