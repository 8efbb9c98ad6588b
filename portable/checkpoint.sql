-- portable/checkpoint.sql: the checkpoint table's guard trigger in PL/pgSQL
-- (the C edition: src/checkpoint.c, sog_checkpoint_guard and
-- sog_check_monotonic).

-- Refuses (SG005) any update, by any role and any path, that moves
-- applied_position, generation or prune_horizon backward (NULL is below
-- every position; a NULL generation is a move backward).
CREATE FUNCTION sog.checkpoint_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_OP IS DISTINCT FROM 'UPDATE' OR TG_WHEN <> 'BEFORE' OR TG_LEVEL <> 'ROW' THEN
		RAISE EXCEPTION 'sog_checkpoint_guard must be a BEFORE UPDATE FOR EACH ROW trigger'
			USING ERRCODE = 'internal_error';
	END IF;
	IF NEW.generation IS NULL OR (OLD.generation IS NOT NULL AND NEW.generation < OLD.generation) THEN
		RAISE EXCEPTION 'generation of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = format('The update would change generation from %s to %s.',
								  coalesce(OLD.generation, 0), coalesce(NEW.generation::text, 'NULL')),
				  HINT = 'Generations only grow; use sog.claim() to take over a checkpoint.';
	END IF;
	IF OLD.applied_position IS NOT NULL
	   AND (NEW.applied_position IS NULL
			OR NEW.applied_position::text COLLATE sog.position_order < OLD.applied_position::text) THEN
		RAISE EXCEPTION 'applied_position of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = format('The update would change applied_position from %s to %s.',
								  OLD.applied_position, coalesce(NEW.applied_position::text, 'NULL')),
				  HINT = 'Positions only grow; the extension''s functions maintain this column.';
	END IF;
	IF OLD.prune_horizon IS NOT NULL
	   AND (NEW.prune_horizon IS NULL
			OR NEW.prune_horizon::text COLLATE sog.position_order < OLD.prune_horizon::text) THEN
		RAISE EXCEPTION 'prune_horizon of a checkpoint cannot move backward'
			USING ERRCODE = 'SG005',
				  DETAIL = format('The update would change prune_horizon from %s to %s.',
								  OLD.prune_horizon, coalesce(NEW.prune_horizon::text, 'NULL')),
				  HINT = 'Positions only grow; the extension''s functions maintain this column.';
	END IF;
	RETURN NEW;
END
$$;
