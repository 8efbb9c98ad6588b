-- portable/operators.sql: the entries of the functions both editions
-- write in PL/pgSQL (sog.<name>_body, in sql/): register, set_retention,
-- retention_horizon, prune_due, rotate_receipts.  The C edition enters
-- them through sog_run_body / sog_read_body (src/store/access.c), which
-- remembers the caller and runs the body as the extension's owner; here
-- each is an @entry whose entry does the same with the caller's key
-- (portable/access.sql).

-- prune_due_body orders receipt rows USING OPERATOR(sog.<), which must be
-- an operator class's ordering operator; the portable edition's positions
-- order by their collation (the same order), so it orders plainly there.
-- @rewrite ^CREATE FUNCTION sog\.prune_due_body\( | USING OPERATOR(sog.<) |

-- @entry sog.register(text, text, text, text, text, text, text)
-- @entry sog.set_retention(text, bigint, numeric, interval)
-- @entry sog.retention_horizon(bigint)
-- @entry sog.prune_due(bigint, bigint)
-- @entry sog.rotate_receipts()

CREATE FUNCTION sog.register_entry(caller_key uuid, consumer text, stream text, "partition" text,
								   criticality text, provider text, query_scope text,
								   source_identity text)
	RETURNS sog.checkpoint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.register(text, text, text, text, text, text, text)');
	r sog.checkpoint;
BEGIN
	r := sog.register_body(consumer, stream, "partition", criticality, provider, query_scope,
						   source_identity);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.register_entry(uuid, text, text, text, text, text, text, text) TO PUBLIC;

CREATE FUNCTION sog.set_retention_entry(caller_key uuid, consumer text, checkpoint_id bigint,
										keep_positions numeric, keep_interval interval)
	RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.set_retention(text, bigint, numeric, interval)');
BEGIN
	PERFORM sog.set_retention_body(consumer, checkpoint_id, keep_positions, keep_interval);
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.set_retention_entry(uuid, text, bigint, numeric, interval) TO PUBLIC;

CREATE FUNCTION sog.retention_horizon_entry(caller_key uuid, checkpoint_id bigint)
	RETURNS sog.position
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.retention_horizon(bigint)');
	r sog.position;
BEGIN
	r := sog.retention_horizon_body(checkpoint_id);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.retention_horizon_entry(uuid, bigint) TO PUBLIC;

CREATE FUNCTION sog.prune_due_entry(caller_key uuid, checkpoint_id bigint, max_receipts bigint)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.prune_due(bigint, bigint)');
	r bigint;
BEGIN
	r := sog.prune_due_body(checkpoint_id, max_receipts);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.prune_due_entry(uuid, bigint, bigint) TO PUBLIC;

CREATE FUNCTION sog.rotate_receipts_entry(caller_key uuid)
	RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.rotate_receipts()');
	r text;
BEGIN
	r := sog.rotate_receipts_body();
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.rotate_receipts_entry(uuid) TO PUBLIC;
