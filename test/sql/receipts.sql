-- receipts.sql: the receipt store's invariants, beyond what apply.sql shows.
--
-- 1. Positions of any size round-trip through sparse receipt rows (an
--    encoding of up to 649 bytes needs a two-byte length prefix).
-- 2. Receipts a recovery attempt wrote above the applied position never end
--    up inside another stored row: a later batch that spans them keeps every
--    such receipt in a row of its own, so lookups and sog.receipts() stay
--    exact.
-- 3. begin_recovery returns a value of the row type sog.recovery.
-- 4. Direct writes follow the table: an expression index added by an
--    operator makes the extension write through the executor instead.
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;
\set VERBOSITY terse
SET client_min_messages = warning;

-- 1. Large positions.
SELECT id AS big FROM sog.register('receipts-big', 's', '0') \gset
SELECT generation AS bg FROM sog.claim(:big, 'w1') \gset
SELECT (repeat('9', 160) || '-' || repeat('9', 160) || '-' || repeat('9', 160)
		|| '-' || repeat('9', 160))::sog.position AS p4 \gset
SELECT (repeat('1', 160) || '-' || repeat('1', 160) || '-' || repeat('1', 160)
		|| '-' || repeat('1', 160) || '-' || repeat('1', 24))::sog.position AS p5 \gset
SELECT sog.apply_batch(:big, :bg, ARRAY[:'p5', :'p4']::sog.position[],
					   ARRAY[sog.payload_digest('five'), sog.payload_digest('four')]);
-- replays are verified duplicates, and nothing else is
SELECT sog.apply(:big, :bg, :'p4', sog.payload_digest('four')) AS replay4,
	   sog.apply(:big, :bg, :'p5', sog.payload_digest('five')) AS replay5;
-- a position never applied, below the applied one (p4): out of order, not
-- mistaken for p5's shorter prefix
\set VERBOSITY sqlstate
SELECT sog.apply(:big, :bg, repeat('1', 160)::sog.position, sog.payload_digest('five'));
\set VERBOSITY terse
SELECT sog.position_components("position") AS components,
	   octet_length("position"::text) AS text_length,
	   payload_digest = sog.payload_digest('four') OR payload_digest = sog.payload_digest('five') AS digest_ok
  FROM sog.receipts(:big) ORDER BY "position";
-- the largest possible position (8 x 160 digits), above p4 (its prefix)
SELECT array_to_string(array_fill(repeat('9', 160), ARRAY[8]), '-')::sog.position AS p8 \gset
SELECT sog.apply(:big, :bg, :'p8', sog.payload_digest('eight')) AS first,
	   sog.apply(:big, :bg, :'p8', sog.payload_digest('eight')) AS replay;
SELECT count(*) AS receipts FROM sog.receipts(:big);

-- 2. A recovery attempt writes 12 above the applied position 10, then is
-- abandoned; the worker's next batch spans it.
SELECT id AS ov FROM sog.register('receipts-overlap', 's', '0', provider => 'kafka') \gset
SELECT generation AS og FROM sog.claim(:ov, 'w1') \gset
SELECT sog.apply_batch(:ov, :og, ARRAY(SELECT g::sog.position FROM generate_series(1, 10) g),
					   ARRAY(SELECT sog.payload_digest(g::text::bytea) FROM generate_series(1, 10) g));
SELECT id AS rid FROM sog.begin_recovery(:ov, :og, NULL, NULL, '9', false) \gset
SELECT sog.recovery_event(:rid, '10', sog.payload_digest('10'::bytea)) AS e10,
	   sog.recovery_event(:rid, '12', sog.payload_digest('12'::bytea)) AS e12;
SELECT sog.apply_batch(:ov, :og, ARRAY['11', '12', '13', '14']::sog.position[],
					   ARRAY(SELECT sog.payload_digest(g::text::bytea) FROM generate_series(11, 14) g));
-- stored rows are disjoint and in order
SELECT first_position, last_position, n FROM sog.receipt WHERE checkpoint_id = :ov
 ORDER BY last_position;
SELECT string_agg("position"::text, ' ' ORDER BY "position") AS receipts FROM sog.receipts(:ov, '10');
SELECT array_agg("position"::text) = array_agg("position"::text ORDER BY "position") AS in_order
  FROM sog.receipts(:ov);
-- every one of them is a verified duplicate now
SELECT g, sog.apply(:ov, :og, g::sog.position, sog.payload_digest(g::text::bytea))
  FROM generate_series(9, 14) g;
SELECT applied_position, receipts_through FROM sog.checkpoint WHERE id = :ov;

-- 3. The attempt is a sog.recovery value.
SELECT pg_typeof(sog.begin_recovery(:ov, :og, NULL, NULL, '14', true)) AS type;

-- 4. An operator adds an expression index and an audit trigger: the
-- extension keeps working (through the executor), and the trigger sees it.
CREATE INDEX checkpoint_lower_consumer ON sog.checkpoint (lower(consumer));
CREATE TABLE receipt_audit (checkpoint_id bigint, n int);
CREATE FUNCTION receipt_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.receipt_audit VALUES (NEW.checkpoint_id, NEW.n);
	RETURN NEW;
END $$;
CREATE TRIGGER receipt_audit AFTER INSERT ON sog.receipt
	FOR EACH ROW EXECUTE FUNCTION receipt_audit();
SELECT id AS ex FROM sog.register('receipts-executor', 's', '0') \gset
SELECT generation AS eg FROM sog.claim(:ex, 'w1') \gset
SELECT sog.apply_batch(:ex, :eg, ARRAY['1', '2', '3']::sog.position[],
					   ARRAY[sog.payload_digest('1'), sog.payload_digest('2'), sog.payload_digest('3')]);
SELECT n FROM receipt_audit WHERE checkpoint_id = :ex;
SELECT applied_position FROM sog.checkpoint WHERE lower(consumer) = 'receipts-executor';
DROP TRIGGER receipt_audit ON sog.receipt;
DROP FUNCTION receipt_audit();
DROP TABLE receipt_audit;
DROP INDEX sog.checkpoint_lower_consumer;
-- and back to the direct path
SELECT sog.apply_batch(:ex, :eg, ARRAY['4']::sog.position[], ARRAY[sog.payload_digest('4')]);
SELECT applied_position FROM sog.checkpoint WHERE id = :ex;

-- The same for what else the executor enforces: a CHECK constraint an
-- operator adds holds for the extension's writes too, and a column added to
-- sog.receipt gets its default.
ALTER TABLE sog.checkpoint ADD CONSTRAINT regress_applied_below_10
	CHECK (consumer <> 'receipts-executor' OR applied_position IS NULL
		   OR applied_position < '10'::sog.position);
\set VERBOSITY sqlstate
SELECT sog.apply(:ex, :eg, '10', sog.payload_digest('10'));
\set VERBOSITY terse
SELECT sog.apply(:ex, :eg, '9', sog.payload_digest('9'));
ALTER TABLE sog.checkpoint DROP CONSTRAINT regress_applied_below_10;
ALTER TABLE sog.receipt ADD COLUMN regress_noted boolean NOT NULL DEFAULT false;
ALTER TABLE sog.receipt ALTER COLUMN regress_noted SET DEFAULT true;
SELECT sog.apply_batch(:ex, :eg, ARRAY['11', '12']::sog.position[],
					   ARRAY[sog.payload_digest('11'), sog.payload_digest('12')]);
SELECT first_position, n, regress_noted FROM sog.receipt
 WHERE checkpoint_id = :ex ORDER BY last_position;
ALTER TABLE sog.receipt DROP COLUMN regress_noted;
SELECT sog.apply(:ex, :eg, '13', sog.payload_digest('13'));

-- A checkpoint row written earlier in the same command (a data-modifying
-- CTE) is updated like any other.
WITH touched AS (
	UPDATE sog.checkpoint SET query_scope = query_scope WHERE id = :ex RETURNING id
)
SELECT sog.note_read(touched.id, :eg, '20', repeat('fe', 32), 7) FROM touched;
SELECT source_cursor, read_hash, read_count FROM sog.checkpoint WHERE id = :ex;

-- 5. In a read-only transaction nothing changes.
BEGIN TRANSACTION READ ONLY;
\set VERBOSITY sqlstate
SELECT sog.apply(:ex, :eg, '5', sog.payload_digest('5'));
\set VERBOSITY terse
ROLLBACK;
