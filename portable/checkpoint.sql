-- portable/checkpoint.sql: the checkpoint table's guard trigger in PL/pgSQL
-- (the C edition: src/checkpoint/checkpoint.c, sog_checkpoint_guard and
-- sog_check_monotonic).

-- Refuses (SG005) any update, by any role and any path, that moves
-- applied_position, generation or prune_horizon backward (NULL is below
-- every position; a NULL generation is a move backward).
--
-- It runs on every write of a checkpoint (three times a page of the
-- pipelined protocol in three calls, once with apply_run_page or
-- apply_batch_page), so it carries no SET search_path (switching it and
-- back cost some 20 us an UPDATE on PG 15): every operator, function, type
-- and collation in it is schema-qualified, so that no search_path of any
-- writer can change what it runs.
CREATE FUNCTION sog.checkpoint_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
	IF TG_OP IS NULL OR TG_OP OPERATOR(pg_catalog.<>) 'UPDATE' OR TG_WHEN OPERATOR(pg_catalog.<>) 'BEFORE'
	   OR TG_LEVEL OPERATOR(pg_catalog.<>) 'ROW' THEN
		RAISE EXCEPTION 'sog_checkpoint_guard must be a BEFORE UPDATE FOR EACH ROW trigger'
			USING ERRCODE = 'internal_error';
	END IF;
	IF NEW.generation IS NULL
	   OR (OLD.generation IS NOT NULL AND NEW.generation OPERATOR(pg_catalog.<) OLD.generation) THEN
		RAISE EXCEPTION 'generation of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = pg_catalog.format('The update would change generation from %s to %s.',
											 coalesce(OLD.generation, 0),
											 coalesce(NEW.generation::pg_catalog.text, 'NULL')),
				  HINT = 'Generations only grow; use sog.claim() to take over a checkpoint.';
	END IF;
	IF OLD.applied_position IS NOT NULL
	   AND (NEW.applied_position IS NULL
			OR NEW.applied_position::pg_catalog.text COLLATE sog.position_order
			   OPERATOR(pg_catalog.<) OLD.applied_position::pg_catalog.text) THEN
		RAISE EXCEPTION 'applied_position of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = pg_catalog.format('The update would change applied_position from %s to %s.',
											 OLD.applied_position,
											 coalesce(NEW.applied_position::pg_catalog.text, 'NULL')),
				  HINT = 'Positions only grow; the extension''s functions maintain this column.';
	END IF;
	IF OLD.prune_horizon IS NOT NULL
	   AND (NEW.prune_horizon IS NULL
			OR NEW.prune_horizon::pg_catalog.text COLLATE sog.position_order
			   OPERATOR(pg_catalog.<) OLD.prune_horizon::pg_catalog.text) THEN
		RAISE EXCEPTION 'prune_horizon of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = pg_catalog.format('The update would change prune_horizon from %s to %s.',
											 OLD.prune_horizon,
											 coalesce(NEW.prune_horizon::pg_catalog.text, 'NULL')),
				  HINT = 'Positions only grow; the extension''s functions maintain this column.';
	END IF;
	RETURN NEW;
END
$$;
