-- portable/reconfigure.sql: sog.reconfigure in PL/pgSQL (the C edition:
-- src/functions/reconfigure.c): an operator changes a checkpoint's settings, each
-- change recorded in sog.reconfiguration.
--
-- It locks the checkpoint's row (sog.cp_lock) and so serializes with its
-- workers: a reconfigure that races a claim waits for it, or the claim
-- waits for the reconfigure, and each sees the other's committed result.
-- A new query scope fails the recovery attempts begun under another
-- (sog.recovery_fail_other_scope, portable/recovery.sql).
--
-- What differs: the C edition refuses (40001) at REPEATABLE READ and
-- SERIALIZABLE before its first write when the row changed after the
-- snapshot (sog_checkpoint_check_snapshot); here sog.cp_lock already
-- refuses then, with PostgreSQL's own 40001.
--
-- @entry sog.reconfigure(bigint, text, text, text, text, text)

-- 22023 for a criticality or provider the checkpoint cannot have
-- (check_settings).
CREATE FUNCTION sog.reconfigure_check_settings(criticality text, provider text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF criticality IS NOT NULL AND criticality <> 'critical' AND criticality <> 'telemetry' THEN
		RAISE EXCEPTION 'invalid criticality "%"', sog.cut(criticality)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A checkpoint is critical (gaps are never skipped) or telemetry (gaps may be skipped, with audit).',
				  HINT = 'Pass ''critical'' or ''telemetry''.';
	END IF;
	IF provider IS NULL THEN
		RETURN;
	END IF;
	PERFORM FROM sog.provider p WHERE p.name = reconfigure_check_settings.provider;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'provider "%" is not described in sog.provider', sog.cut(provider)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A checkpoint''s provider names a row of sog.provider: its seek, ordering, empty-page and backfill contract.',
				  HINT = 'INSERT a row for it into sog.provider first, or use one of the seeded providers (SELECT name FROM sog.provider).';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.reconfigure_check_settings(text, text) FROM PUBLIC;

-- sog.reconfigure(checkpoint_id, criticality, provider, query_scope,
-- source_identity, note) -> sog.checkpoint
--
-- For operators: change the given (non-NULL) settings, and record who,
-- when, the old and the new value of each in sog.reconfiguration.  A
-- setting given with its current value is not recorded.  Generation,
-- positions and gaps are untouched.
CREATE FUNCTION sog.reconfigure_entry(caller_key uuid, checkpoint_id bigint, criticality text,
									  provider text, query_scope text, source_identity text, note text)
	RETURNS sog.checkpoint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.reconfigure(bigint, text, text, text, text, text)');
	cp sog.checkpoint;
	setting text[] := ARRAY['criticality', 'provider', 'query_scope', 'source_identity'];
	old_value text[];
	new_value text[] := ARRAY[criticality, provider, query_scope, source_identity];
	v text[];
	changed boolean := false;
	result sog.checkpoint;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	cp := sog.cp_lock(checkpoint_id, 2, false);
	PERFORM sog.reconfigure_check_settings(criticality, provider);
	old_value := ARRAY[CASE WHEN cp.criticality = 'telemetry' THEN 'telemetry' ELSE 'critical' END,
					   cp.provider, cp.query_scope, cp.source_identity];
	v := old_value;
	FOR i IN 1 .. 4 LOOP
		IF new_value[i] IS NOT NULL THEN
			v[i] := new_value[i];
			IF new_value[i] IS DISTINCT FROM old_value[i] THEN
				-- log_setting
				INSERT INTO sog.reconfiguration (checkpoint_id, setting, old_value, new_value, note, changed_by)
				VALUES (cp.id, setting[i], old_value[i], new_value[i], reconfigure_entry.note, sog.calling_role());
				changed := true;
			END IF;
		END IF;
	END LOOP;
	-- attempts begun under the old scope can no longer promote
	IF new_value[3] IS NOT NULL AND new_value[3] IS DISTINCT FROM old_value[3] THEN
		PERFORM sog.recovery_fail_other_scope(cp, new_value[3]);
	END IF;
	IF changed THEN
		UPDATE sog.checkpoint c
		   SET criticality = v[1], provider = v[2], query_scope = v[3], source_identity = v[4],
			   updated_at = now()
		 WHERE c.id = cp.id;
	END IF;
	SELECT * INTO result FROM sog.checkpoint c WHERE c.id = cp.id;
	PERFORM sog.leave(outer_caller);
	RETURN result;
END
$$;
GRANT EXECUTE ON FUNCTION sog.reconfigure_entry(uuid, bigint, text, text, text, text, text) TO PUBLIC;
