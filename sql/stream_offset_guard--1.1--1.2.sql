/* stream_offset_guard--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION stream_offset_guard UPDATE TO '1.2'" to load this file. \quit

------------------------------------------------------------------------------
-- The read boundary is applied whole in the transaction that reaches it.
-- What an apply writes inside a boundary (read_base, source_cursor] is
-- checked against the boundary's hash (or count) only when the cursor is
-- reached, so a transaction that applied part of a boundary and stopped
-- short of its cursor cannot commit: a record noted and skipped there
-- would otherwise sit below the applied position, unchecked, where no
-- later call can apply it.  A deferred constraint trigger checks the row
-- as the transaction leaves it, at COMMIT or PREPARE TRANSACTION; it is
-- queued only by an update that moved the applied position into a
-- boundary (a correct page's apply reaches the cursor in the same call,
-- and queues nothing).
------------------------------------------------------------------------------

CREATE FUNCTION sog.checkpoint_boundary_applied() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c record;
BEGIN
	-- the row as this transaction leaves it (a later call may have closed
	-- the boundary since the update that queued this check)
	SELECT x.id, x.applied_position, x.read_base, x.source_cursor,
	       x.read_hash IS NOT NULL AS hashed, x.read_count
	  INTO c
	  FROM sog.checkpoint x
	 WHERE x.id OPERATOR(pg_catalog.=) NEW.id;
	IF NOT FOUND OR c.source_cursor IS NULL OR c.applied_position IS NULL
	   OR NOT sog.position_gt(c.source_cursor, c.applied_position)
	   OR (c.read_base IS NOT NULL AND sog.position_eq(c.read_base, c.applied_position)) THEN
		RETURN NULL;
	END IF;
	RAISE EXCEPTION 'read boundary (%, %] of checkpoint % is applied only through %',
			coalesce(c.read_base::text, 'start'), c.source_cursor, c.id, c.applied_position
		USING ERRCODE = 'SG004',
			  DETAIL = pg_catalog.format('The transaction applied records of the read boundary noted %s but did not reach its cursor %s; a noted record missing below %s would never be checked against the boundary.',
			                             CASE WHEN c.hashed THEN 'with a buffer hash'
			                                  WHEN c.read_count IS NOT NULL THEN pg_catalog.format('as %s records', c.read_count)
			                                  ELSE 'without a hash or a count' END,
			                             c.source_cursor, c.applied_position),
			  HINT = pg_catalog.format('Apply every record noted through %s in this transaction, or roll it back; a worker that no longer holds them rolls back and stops: its successor verifies (%s, %s] and replays it.',
			                           c.source_cursor, coalesce(c.read_base::text, 'start'), c.source_cursor);
END
$$;
COMMENT ON FUNCTION sog.checkpoint_boundary_applied() IS
	'refuses (SG004) to commit a transaction that leaves a checkpoint''s read boundary partly applied';
REVOKE ALL ON FUNCTION sog.checkpoint_boundary_applied() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER checkpoint_boundary_applied
	AFTER UPDATE ON sog.checkpoint
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW
	WHEN (OLD.applied_position IS DISTINCT FROM NEW.applied_position
	      AND NEW.read_base IS DISTINCT FROM NEW.applied_position
	      AND sog.position_gt(NEW.source_cursor, NEW.applied_position))
	EXECUTE FUNCTION sog.checkpoint_boundary_applied();

------------------------------------------------------------------------------
-- Comments that still cited a document users do not have, or said what
-- 1.2 no longer does.
------------------------------------------------------------------------------

COMMENT ON COLUMN sog.gap.from_position IS
	'the gap covers (from_position, to_position]: the applied position when it was recorded, or the read boundary''s base when an apply had entered the boundary, moved past gaps that already cover the loss (NULL: the start of the stream)';
COMMENT ON COLUMN sog.gap.reason IS
	'why the range cannot be proven (see sog.gap_reasons()); unverified: the rest of a read boundary beyond a reported loss, or a telemetry skip_gap of a range no other gap covered';
