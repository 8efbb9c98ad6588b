/* stream_offset_guard--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION stream_offset_guard UPDATE TO '1.2'" to load this file. \quit

------------------------------------------------------------------------------
-- Comments that still cited a document users do not have, or said what
-- 1.2 no longer does.
------------------------------------------------------------------------------

COMMENT ON COLUMN sog.gap.from_position IS
	'the gap covers (from_position, to_position]: the applied position when it was recorded, or the read boundary''s base when an apply had entered the boundary, moved past gaps that already cover the loss (NULL: the start of the stream)';
COMMENT ON COLUMN sog.gap.reason IS
	'why the range cannot be proven (see sog.gap_reasons()); unverified: the rest of a read boundary beyond a reported loss, or a telemetry skip_gap of a range no other gap covered';

------------------------------------------------------------------------------
-- The extension's triggers fire whatever session_replication_role says: a
-- sink loaded with session_replication_role = replica (to skip its own
-- foreign keys and triggers, as bulk loads and replication tools do) keeps
-- the guard's refusals.  (1.1 and before: origin only.)
------------------------------------------------------------------------------

ALTER TABLE sog.checkpoint ENABLE ALWAYS TRIGGER checkpoint_monotonic;
ALTER TABLE sog.role_grant ENABLE ALWAYS TRIGGER role_grant_bind;

------------------------------------------------------------------------------
-- The position type's comparison operators move from pg_catalog into sog
-- (nothing of an extension belongs in the system schema).  ALTER OPERATOR
-- ... SET SCHEMA keeps each operator's OID, so the operator classes, the
-- indexes, constraints and views built on them keep working; a query names
-- them bare with sog on its search_path, or as OPERATOR(sog.<).  The
-- extension's own queries name them so (the C module rewrites its queries
-- for a database not yet updated).
------------------------------------------------------------------------------

ALTER OPERATOR pg_catalog.< (sog.position, sog.position) SET SCHEMA sog;
ALTER OPERATOR pg_catalog.<= (sog.position, sog.position) SET SCHEMA sog;
ALTER OPERATOR pg_catalog.= (sog.position, sog.position) SET SCHEMA sog;
ALTER OPERATOR pg_catalog.<> (sog.position, sog.position) SET SCHEMA sog;
ALTER OPERATOR pg_catalog.>= (sog.position, sog.position) SET SCHEMA sog;
ALTER OPERATOR pg_catalog.> (sog.position, sog.position) SET SCHEMA sog;

------------------------------------------------------------------------------
-- Whose grants are checked.  1.1's stateful functions were SECURITY
-- DEFINER and checked the session's role, so a scoped role's index
-- expression, run as that role inside a superuser's ANALYZE, acted with
-- the superuser's rights.  Now every one of them is SECURITY INVOKER: the
-- module checks the role that called (current_user at the call: the owner
-- of a SECURITY DEFINER function of the user's that calls it, the table's
-- owner inside a maintenance command), refuses a function that writes
-- inside a security-restricted operation, and runs the body as the
-- function's owner, the extension's owner (src/store/access.c, sog_enter).
------------------------------------------------------------------------------

ALTER FUNCTION sog.apply(bigint, bigint, sog.position, bytea) SECURITY INVOKER;
ALTER FUNCTION sog.apply_batch(bigint, bigint, sog.position[], bytea[]) SECURITY INVOKER;
ALTER FUNCTION sog.apply_batch_int8(bigint, bigint, bigint[], bytea[]) SECURITY INVOKER;
ALTER FUNCTION sog.apply_run(bigint, bigint, bigint, bytea) SECURITY INVOKER;
ALTER FUNCTION sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position) SECURITY INVOKER;
ALTER FUNCTION sog.claim(bigint, text, text) SECURITY INVOKER;
ALTER FUNCTION sog.commit_page(bigint, bigint, text, text) SECURITY INVOKER;
ALTER FUNCTION sog.gaps(bigint) SECURITY INVOKER;
ALTER FUNCTION sog.halt(bigint, bigint, sog.position, text, bigint) SECURITY INVOKER;
ALTER FUNCTION sog.note_read(bigint, bigint, sog.position, text, bigint) SECURITY INVOKER;
ALTER FUNCTION sog.owner_check(bigint, bigint) SECURITY INVOKER;
ALTER FUNCTION sog.promote(bigint, text, sog.position) SECURITY INVOKER;
ALTER FUNCTION sog.prune_receipts(bigint, sog.position) SECURITY INVOKER;
ALTER FUNCTION sog.receipts(bigint, sog.position, sog.position) SECURITY INVOKER;
ALTER FUNCTION sog.reconfigure(bigint, text, text, text, text, text) SECURITY INVOKER;
ALTER FUNCTION sog.recovery_event(bigint, sog.position, bytea) SECURITY INVOKER;
ALTER FUNCTION sog.report_gap(bigint, bigint, sog.position, text, text) SECURITY INVOKER;
ALTER FUNCTION sog.resolve_gap(bigint, text, text) SECURITY INVOKER;
ALTER FUNCTION sog.skip_gap(bigint, bigint, text) SECURITY INVOKER;
ALTER FUNCTION sog.verify_gap(bigint, bigint, text) SECURITY INVOKER;

-- The role an audit column records (the calling role, as the checks see it).
CREATE FUNCTION sog.calling_role() RETURNS text
	AS 'MODULE_PATHNAME', 'sog_calling_role'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION sog.calling_role() IS
	'the role that called the extension function now running (inside its body), else the session''s role: what audit columns record';
REVOKE ALL ON FUNCTION sog.calling_role() FROM PUBLIC;

-- The functions written in PL/pgSQL keep their bodies as sog.<name>_body
-- (SECURITY INVOKER, granted to no one; the position operators named
-- OPERATOR(sog.<)); the public names become the module's entry
-- (sog_run_body, sog_read_body), which checks and switches as above and
-- calls the body.  CREATE OR REPLACE keeps each public function's OID, its
-- comment and the EXECUTE privileges the grant functions gave.

CREATE FUNCTION sog.set_retention_body(consumer text DEFAULT NULL, checkpoint_id bigint DEFAULT NULL,
								  keep_positions numeric DEFAULT NULL,
								  keep_interval interval DEFAULT NULL)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM sog.refuse_during_recovery('set a retention policy');
	PERFORM sog.check_operator_access('retention policies');
	IF set_retention_body.consumer IS NOT NULL AND set_retention_body.checkpoint_id IS NOT NULL THEN
		RAISE EXCEPTION 'a retention policy is for a consumer or for a checkpoint, not both'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('Both consumer %L and checkpoint %s were given.',
											 pg_catalog.left(set_retention_body.consumer, 200), set_retention_body.checkpoint_id),
				  HINT = 'Pass one of them, or neither for the default policy.';
	END IF;
	IF set_retention_body.checkpoint_id IS NOT NULL AND NOT EXISTS (
		SELECT FROM sog.checkpoint c WHERE c.id OPERATOR(pg_catalog.=) set_retention_body.checkpoint_id) THEN
		RAISE EXCEPTION 'checkpoint % does not exist', set_retention_body.checkpoint_id
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('No row of sog.checkpoint has id %s.', set_retention_body.checkpoint_id),
				  HINT = 'Look up checkpoint ids in sog.status.';
	END IF;
	IF set_retention_body.keep_positions IS NOT NULL
	   AND (set_retention_body.keep_positions < 0
			OR set_retention_body.keep_positions OPERATOR(pg_catalog.<>) pg_catalog.trunc(set_retention_body.keep_positions)) THEN
		RAISE EXCEPTION 'keep_positions must be a whole number of positions, at least 0'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('keep_positions is %s.', set_retention_body.keep_positions),
				  HINT = 'Pass how many positions below the applied one keep their receipts, e.g. 1000000.';
	END IF;
	IF set_retention_body.keep_interval < '0'::interval THEN
		RAISE EXCEPTION 'keep_interval must not be negative'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('keep_interval is %s.', set_retention_body.keep_interval),
				  HINT = 'Pass how long receipts are kept, e.g. interval ''7 days''.';
	END IF;

	DELETE FROM sog.retention r
	 WHERE r.consumer IS NOT DISTINCT FROM set_retention_body.consumer
	   AND r.checkpoint_id IS NOT DISTINCT FROM set_retention_body.checkpoint_id;
	IF set_retention_body.keep_positions IS NOT NULL OR set_retention_body.keep_interval IS NOT NULL THEN
		INSERT INTO sog.retention (consumer, checkpoint_id, keep_positions, keep_interval, updated_by)
		VALUES (set_retention_body.consumer, set_retention_body.checkpoint_id, set_retention_body.keep_positions,
				set_retention_body.keep_interval,
				sog.calling_role());
	END IF;
END
$$;

CREATE FUNCTION sog.retention_horizon_body(checkpoint_id bigint)
	RETURNS sog.position
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c sog.checkpoint;
	keep_positions numeric;
	keep_interval interval;
	through sog.position;
	older sog.position;
	anchor sog.position;
BEGIN
	PERFORM sog.check_operator_access('checkpoint ' || coalesce(retention_horizon_body.checkpoint_id::text, 'NULL'));
	SELECT * INTO c FROM sog.checkpoint x WHERE x.id OPERATOR(pg_catalog.=) retention_horizon_body.checkpoint_id;
	IF NOT FOUND OR c.applied_position IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT r.keep_positions, r.keep_interval INTO keep_positions, keep_interval
	  FROM sog.retention r
	 WHERE r.checkpoint_id OPERATOR(pg_catalog.=) c.id
		OR (r.checkpoint_id IS NULL AND r.consumer OPERATOR(pg_catalog.=) c.consumer)
		OR (r.checkpoint_id IS NULL AND r.consumer IS NULL)
	 ORDER BY r.checkpoint_id IS NULL, r.consumer IS NULL
	 LIMIT 1;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;

	through := c.applied_position;
	IF keep_positions IS NOT NULL THEN
		IF sog.position_components(c.applied_position) OPERATOR(pg_catalog.<>) 1
		   OR sog.position_to_numeric(c.applied_position) OPERATOR(pg_catalog.<) keep_positions THEN
			RETURN NULL;
		END IF;
		through := sog.position(sog.position_to_numeric(c.applied_position) OPERATOR(pg_catalog.-) keep_positions);
	END IF;
	IF keep_interval IS NOT NULL THEN
		SELECT sog.max(r.last_position) INTO older
		  FROM sog.receipt r
		 WHERE r.checkpoint_id OPERATOR(pg_catalog.=) c.id
		   AND (c.prune_horizon IS NULL OR r.last_position OPERATOR(sog.>) c.prune_horizon)
		   AND r.created_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) keep_interval);
		IF older IS NULL THEN
			RETURN NULL;
		ELSIF older OPERATOR(sog.<) through THEN
			through := older;
		END IF;
	END IF;

	IF EXISTS (SELECT FROM sog.recovery a
				WHERE a.checkpoint_id OPERATOR(pg_catalog.=) c.id
				  AND a.state OPERATOR(pg_catalog.=) 'open' AND a.anchor IS NULL) THEN
		RETURN NULL;
	END IF;
	SELECT sog.min(a.anchor) INTO anchor
	  FROM sog.recovery a
	 WHERE a.checkpoint_id OPERATOR(pg_catalog.=) c.id AND a.state OPERATOR(pg_catalog.=) 'open';
	IF anchor IS NOT NULL AND through OPERATOR(sog.>=) anchor THEN
		through := sog.position_predecessor(anchor);
	END IF;
	-- an open read boundary is checked against its receipts when it closes
	IF (c.read_hash IS NOT NULL OR c.read_count IS NOT NULL)
	   AND c.source_cursor OPERATOR(sog.>) c.applied_position THEN
		IF c.read_base IS NULL THEN
			RETURN NULL;
		ELSIF through OPERATOR(sog.>) c.read_base THEN
			through := c.read_base;
		END IF;
	END IF;
	IF through IS NULL
	   OR (c.prune_horizon IS NOT NULL AND through OPERATOR(sog.<=) c.prune_horizon) THEN
		RETURN NULL;
	END IF;
	RETURN through;
END
$$;

CREATE FUNCTION sog.prune_due_body(checkpoint_id bigint, max_receipts bigint DEFAULT NULL)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c sog.checkpoint;
	through sog.position;
	chunk_end sog.position;
	after sog.position;
	lasts sog.position[];
	counts integer[];
	total bigint := 0;
	batch CONSTANT integer := 64;
BEGIN
	PERFORM sog.refuse_during_recovery('prune receipts');
	IF prune_due_body.checkpoint_id IS NULL THEN
		RAISE EXCEPTION 'checkpoint_id must not be NULL'
			USING ERRCODE = '22023',
				  DETAIL = 'sog.prune_due(checkpoint_id, max_receipts) prunes one checkpoint.',
				  HINT = 'Pass a checkpoint id (sog.status lists them), or CALL sog.prune_due() for every checkpoint that is due.';
	END IF;
	IF prune_due_body.max_receipts < 1 THEN
		RAISE EXCEPTION 'max_receipts must be at least 1'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('max_receipts is %s.', prune_due_body.max_receipts),
				  HINT = 'Pass how many receipts one call may drop, or NULL for all that are due.';
	END IF;
	-- refused before the row is locked: a role without an operator grant
	-- must not hold a checkpoint's workers up
	PERFORM sog.check_operator_access('checkpoint ' || coalesce(prune_due_body.checkpoint_id::text, 'NULL'));
	SELECT * INTO c FROM sog.checkpoint x WHERE x.id OPERATOR(pg_catalog.=) prune_due_body.checkpoint_id
	   FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'checkpoint % does not exist', prune_due_body.checkpoint_id
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('No row of sog.checkpoint has id %s.', prune_due_body.checkpoint_id),
				  HINT = 'Look up checkpoint ids in sog.status.';
	END IF;
	through := sog.retention_horizon(prune_due_body.checkpoint_id);
	IF through IS NULL THEN
		RETURN 0;
	END IF;
	-- 1.2: a checkpoint in the receipt ring whose receipts up to through
	-- are all in the ring is pruned whole: nothing is deleted, the count
	-- comes from the key, and the row lock is held as briefly either way
	IF prune_due_body.max_receipts IS NOT NULL AND c.receipt_ring OPERATOR(pg_catalog.<>) 0
	   AND NOT EXISTS (SELECT FROM sog.receipt_0 r
					WHERE r.checkpoint_id OPERATOR(pg_catalog.=) c.id
					  AND r.last_position OPERATOR(sog.<=) through) THEN
		RETURN sog.prune_receipts(prune_due_body.checkpoint_id, through);
	END IF;
	IF prune_due_body.max_receipts IS NOT NULL THEN
		-- Where the chunk ends: the receipt rows above the horizon, read
		-- in key order a few at a time, until they hold max_receipts
		-- receipts.  Small ordered batches keep the primary key's range
		-- scan (a larger read would be sorted from a bitmap scan of the
		-- whole backlog), so a chunk costs what it drops, whatever the
		-- backlog; EXECUTE plans each batch for its values, so that a NULL
		-- horizon folds away.
		after := c.prune_horizon;
		<<batches>>
		LOOP
			EXECUTE 'SELECT pg_catalog.array_agg(y.last_position ORDER BY y.last_position USING OPERATOR(sog.<)),
							pg_catalog.array_agg(y.n ORDER BY y.last_position USING OPERATOR(sog.<))
					   FROM (SELECT r.last_position, r.n
							   FROM sog.receipt r
							  WHERE r.checkpoint_id OPERATOR(pg_catalog.=) $1
								AND r.last_position OPERATOR(sog.<=) $2
								AND ($3 IS NULL OR r.last_position OPERATOR(sog.>) $3)
							  ORDER BY r.last_position USING OPERATOR(sog.<)
							  LIMIT $4) y'
			   INTO lasts, counts
			  USING c.id, through, after, batch;
			EXIT WHEN lasts IS NULL;
			FOR i IN 1 .. pg_catalog.array_length(lasts, 1) LOOP
				total := total OPERATOR(pg_catalog.+) counts[i];
				IF total OPERATOR(pg_catalog.>=) prune_due_body.max_receipts THEN
					chunk_end := lasts[i];
					EXIT batches;
				END IF;
			END LOOP;
			EXIT WHEN pg_catalog.array_length(lasts, 1) OPERATOR(pg_catalog.<) batch;
			after := lasts[batch];
		END LOOP;
		IF chunk_end IS NOT NULL AND chunk_end OPERATOR(sog.<) through THEN
			through := chunk_end;
		END IF;
	END IF;
	RETURN sog.prune_receipts(prune_due_body.checkpoint_id, through);
END
$$;

CREATE FUNCTION sog.register_body(consumer text, stream text, "partition" text,
							 criticality text DEFAULT 'critical',
							 provider text DEFAULT NULL,
							 query_scope text DEFAULT NULL,
							 source_identity text DEFAULT NULL)
	RETURNS sog.checkpoint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r sog.checkpoint;
	conflict text;
BEGIN
	IF register_body.consumer IS NULL OR btrim(register_body.consumer, E' \t\n\r\f\x0B') = ''
	   OR register_body.stream IS NULL OR btrim(register_body.stream, E' \t\n\r\f\x0B') = ''
	   OR register_body."partition" IS NULL OR btrim(register_body."partition", E' \t\n\r\f\x0B') = '' THEN
		RAISE EXCEPTION 'consumer, stream and partition must not be blank'
			USING ERRCODE = '22023',
				  DETAIL = format('The consumer is %L, the stream %L and the partition %L.',
								  left(register_body.consumer, 200), left(register_body.stream, 200),
								  left(register_body."partition", 200)),
				  HINT = 'Name the consumer, the stream and the partition, for example (''orders-sink'', ''orders'', ''0'').';
	END IF;
	IF octet_length(register_body.consumer) > 800 OR octet_length(register_body.stream) > 800
	   OR octet_length(register_body."partition") > 800 THEN
		RAISE EXCEPTION 'consumer, stream and partition names are limited to 800 bytes each'
			USING ERRCODE = '22023',
				  DETAIL = format('The consumer has %s bytes, the stream %s and the partition %s.',
								  octet_length(register_body.consumer), octet_length(register_body.stream),
								  octet_length(register_body."partition")),
				  HINT = 'Use shorter names (at most 800 bytes each, so that the three fit one index entry); keep long descriptions elsewhere, e.g. in query_scope.';
	END IF;
	IF register_body.criticality IS NULL OR register_body.criticality NOT IN ('critical', 'telemetry') THEN
		RAISE EXCEPTION 'invalid criticality %', coalesce('"' || left(register_body.criticality, 200) || '"', 'NULL')
			USING ERRCODE = '22023',
				  DETAIL = 'A checkpoint is critical (gaps are never skipped) or telemetry (gaps may be skipped, with audit).',
				  HINT = 'Pass ''critical'' or ''telemetry''.';
	END IF;
	IF register_body.provider IS NOT NULL AND NOT EXISTS (
		SELECT FROM sog.provider p WHERE p.name OPERATOR(pg_catalog.=) register_body.provider) THEN
		RAISE EXCEPTION 'provider "%" is not described in sog.provider', left(register_body.provider, 200)
			USING ERRCODE = '22023',
				  DETAIL = 'A checkpoint''s provider names a row of sog.provider: its seek, ordering, empty-page and backfill contract, which recovery relies on.',
				  HINT = 'INSERT a row for it into sog.provider first, or use one of the seeded providers (SELECT name FROM sog.provider).';
	END IF;
	PERFORM sog.check_consumer_access(register_body.consumer);

	-- An existing checkpoint is read without a lock: an INSERT ... ON
	-- CONFLICT would wait for any open sink transaction that updated its row.
	SELECT * INTO r FROM sog.checkpoint c
	 WHERE c.consumer OPERATOR(pg_catalog.=) register_body.consumer
	   AND c.stream OPERATOR(pg_catalog.=) register_body.stream
	   AND c."partition" OPERATOR(pg_catalog.=) register_body."partition";
	IF NOT FOUND THEN
		INSERT INTO sog.checkpoint AS c (consumer, stream, "partition", criticality,
										 provider, query_scope, source_identity)
		VALUES (register_body.consumer, register_body.stream, register_body."partition", register_body.criticality,
				register_body.provider, register_body.query_scope, register_body.source_identity)
		ON CONFLICT ON CONSTRAINT checkpoint_key DO NOTHING
		RETURNING * INTO r;
		IF FOUND THEN
			RETURN r;
		END IF;
		-- registered concurrently
		SELECT * INTO STRICT r FROM sog.checkpoint c
		 WHERE c.consumer OPERATOR(pg_catalog.=) register_body.consumer
		   AND c.stream OPERATOR(pg_catalog.=) register_body.stream
		   AND c."partition" OPERATOR(pg_catalog.=) register_body."partition";
	END IF;
	IF r.criticality IS DISTINCT FROM register_body.criticality THEN
		conflict := format('criticality is %L, not %L', r.criticality, register_body.criticality);
	ELSIF register_body.provider IS NOT NULL AND r.provider IS DISTINCT FROM register_body.provider THEN
		conflict := format('provider is %L, not %L', left(r.provider, 200), left(register_body.provider, 200));
	ELSIF register_body.query_scope IS NOT NULL AND r.query_scope IS DISTINCT FROM register_body.query_scope THEN
		conflict := format('query_scope is %L, not %L', left(r.query_scope, 200), left(register_body.query_scope, 200));
	ELSIF register_body.source_identity IS NOT NULL AND r.source_identity IS DISTINCT FROM register_body.source_identity THEN
		conflict := format('source_identity is %L, not %L', left(r.source_identity, 200),
						   left(register_body.source_identity, 200));
	END IF;
	IF conflict IS NOT NULL THEN
		RAISE EXCEPTION 'checkpoint % is registered with other settings', r.id
			USING ERRCODE = '22023',
				  DETAIL = format('Checkpoint %s/%s/%s: its %s.', left(r.consumer, 200),
								  left(r.stream, 200), left(r."partition", 200), conflict),
				  HINT = 'Register with the same settings, or have an operator change them with sog.reconfigure().';
	END IF;
	RETURN r;
END
$$;
COMMENT ON FUNCTION sog.set_retention_body(text, bigint, numeric, interval) IS
	'the body of sog.set_retention, run by it as the extension''s owner';
COMMENT ON FUNCTION sog.retention_horizon_body(bigint) IS
	'the body of sog.retention_horizon, run by it as the extension''s owner';
COMMENT ON FUNCTION sog.prune_due_body(bigint, bigint) IS
	'the body of sog.prune_due, run by it as the extension''s owner';
COMMENT ON FUNCTION sog.register_body(text, text, text, text, text, text, text) IS
	'the body of sog.register, run by it as the extension''s owner';
REVOKE ALL ON FUNCTION sog.set_retention_body(text, bigint, numeric, interval),
	sog.retention_horizon_body(bigint), sog.prune_due_body(bigint, bigint),
	sog.register_body(text, text, text, text, text, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sog.set_retention(consumer text DEFAULT NULL, checkpoint_id bigint DEFAULT NULL,
											 keep_positions numeric DEFAULT NULL,
											 keep_interval interval DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'sog_run_body'
	LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION sog.retention_horizon(checkpoint_id bigint)
	RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_read_body'
	LANGUAGE C STABLE;
CREATE OR REPLACE FUNCTION sog.prune_due(checkpoint_id bigint, max_receipts bigint DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'sog_run_body'
	LANGUAGE C VOLATILE;
CREATE OR REPLACE FUNCTION sog.register(consumer text, stream text, "partition" text,
										criticality text DEFAULT 'critical',
										provider text DEFAULT NULL,
										query_scope text DEFAULT NULL,
										source_identity text DEFAULT NULL)
	RETURNS sog.checkpoint
	AS 'MODULE_PATHNAME', 'sog_run_body'
	LANGUAGE C VOLATILE;

------------------------------------------------------------------------------
-- A whole page in one call.  The pipelined protocol's sink transaction ran
-- three calls on the checkpoint (apply_run or apply_batch for page k,
-- note_read for page k + 1, commit_page), each locking, reading and
-- writing its row; apply_run_page and apply_batch_page do the three in
-- one, with one write: the same checks, in the same order, the same
-- errors, the same row at the end (src/functions/apply.c).
------------------------------------------------------------------------------

CREATE FUNCTION sog.apply_run_page(checkpoint_id bigint, generation bigint,
								   first_position bigint, payload_digests bytea,
								   next_cursor sog.position DEFAULT NULL,
								   next_buffer_hash text DEFAULT NULL,
								   next_buffered_count bigint DEFAULT NULL,
								   expected_token text DEFAULT NULL,
								   successor_token text DEFAULT NULL)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'sog_apply_run_page'
	LANGUAGE C VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.apply_run_page(bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text) IS
	'a whole page in one call: sog.apply_run, then (next_cursor given) sog.note_read of the next page, then (either token given; both NULL: no compare-and-swap) sog.commit_page, with one write of the checkpoint';
CREATE FUNCTION sog.apply_batch_page(checkpoint_id bigint, generation bigint,
									 positions sog.position[], payload_digests bytea[],
									 next_cursor sog.position DEFAULT NULL,
									 next_buffer_hash text DEFAULT NULL,
									 next_buffered_count bigint DEFAULT NULL,
									 expected_token text DEFAULT NULL,
									 successor_token text DEFAULT NULL)
	RETURNS boolean[]
	AS 'MODULE_PATHNAME', 'sog_apply_batch_page'
	LANGUAGE C VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.apply_batch_page(bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text) IS
	'a whole page in one call: sog.apply_batch, then (next_cursor given) sog.note_read of the next page, then (either token given; both NULL: no compare-and-swap) sog.commit_page, with one write of the checkpoint';
REVOKE ALL ON FUNCTION sog.apply_run_page(bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text),
	sog.apply_batch_page(bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text)
	FROM PUBLIC;

-- What a consumer grant gives now includes them.  The update grants nothing
-- itself (a GRANT run by an extension script is an initial privilege, which
-- pg_dump leaves out): the owner runs sog.refresh_grants() after it, as
-- after the update to 1.1.
CREATE OR REPLACE FUNCTION sog.role_privileges(role regrole, kind text, give boolean) RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	consumer boolean := role_privileges.kind OPERATOR(pg_catalog.=) 'consumer';
	verb text := CASE WHEN role_privileges.give THEN 'GRANT' ELSE 'REVOKE' END;
	dir text := CASE WHEN role_privileges.give THEN 'TO' ELSE 'FROM' END;
	functions text := CASE WHEN consumer THEN
		'sog.register(text, text, text, text, text, text, text), '
		'sog.claim(bigint, text, text), '
		'sog.note_read(bigint, bigint, sog.position, text, bigint), '
		'sog.apply(bigint, bigint, sog.position, bytea), '
		'sog.apply_batch(bigint, bigint, sog.position[], bytea[]), '
		'sog.apply_batch_int8(bigint, bigint, bigint[], bytea[]), '
		'sog.apply_run(bigint, bigint, bigint, bytea), '
		'sog.apply_run_page(bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text), '
		'sog.apply_batch_page(bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text), '
		'sog.halt(bigint, bigint, sog.position, text, bigint), '
		'sog.verify_gap(bigint, bigint, text), '
		'sog.skip_gap(bigint, bigint, text), '
		'sog.commit_page(bigint, bigint, text, text), '
		'sog.receipts(bigint, sog.position, sog.position), '
		'sog.report_gap(bigint, bigint, sog.position, text, text), '
		'sog.gaps(bigint), '
		'sog.owner_check(bigint, bigint), '
		'sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position), '
		'sog.recovery_event(bigint, sog.position, bytea), '
		'sog.promote(bigint, text, sog.position)'
	ELSE
		'sog.receipts(bigint, sog.position, sog.position), '
		'sog.resolve_gap(bigint, text, text), '
		'sog.prune_receipts(bigint, sog.position), '
		'sog.gaps(bigint), '
		'sog.owner_check(bigint, bigint), '
		'sog.reconfigure(bigint, text, text, text, text, text), '
		'sog.verify_storage(), '
		'sog.set_retention(text, bigint, numeric, interval), '
		'sog.retention_horizon(bigint), '
		'sog.prune_due(bigint, bigint), '
		'sog.rotate_receipts()'
	END;
	views text := CASE WHEN consumer THEN 'sog.status' ELSE
		'sog.status, sog.unresolved_gaps, sog.reconfiguration, sog.retention_due, '
		'sog.checkpoint_metrics, sog.grant_status, sog.receipt_storage' END;
BEGIN
	EXECUTE pg_catalog.format('%s EXECUTE ON FUNCTION %s %s %s', verb, functions, dir, role_privileges.role);
	EXECUTE pg_catalog.format('%s SELECT ON %s %s %s', verb, views, dir, role_privileges.role);
	IF NOT consumer THEN
		EXECUTE pg_catalog.format('%s EXECUTE ON PROCEDURE sog.prune_due() %s %s', verb, dir, role_privileges.role);
	END IF;
END
$$;

DO $$
BEGIN
	IF EXISTS (SELECT FROM sog.grant_status g
				WHERE g.kind OPERATOR(pg_catalog.=) 'consumer' AND g.status OPERATOR(pg_catalog.=) 'in_force') THEN
		RAISE WARNING 'consumer roles granted before the update do not have the functions 1.2 adds yet'
			USING DETAIL = 'sog.apply_run_page and sog.apply_batch_page (a whole page in one call).',
				  HINT = 'Run SELECT sog.refresh_grants(); as the extension''s owner.';
	END IF;
	IF EXISTS (SELECT FROM sog.grant_status g
				WHERE g.kind OPERATOR(pg_catalog.=) 'operator' AND g.status OPERATOR(pg_catalog.=) 'in_force') THEN
		RAISE WARNING 'operator roles granted before the update do not have what 1.2 adds yet'
			USING DETAIL = 'sog.rotate_receipts(), which CALL sog.prune_due() runs, and the view sog.receipt_storage.',
				  HINT = 'Run SELECT sog.refresh_grants(); as the extension''s owner.';
	END IF;
END
$$;

------------------------------------------------------------------------------
-- Receipts in a ring of partitions (docs/receipt-rotation.md).  Retention
-- used to DELETE receipt rows: their space came back only after a vacuum,
-- so the table grew between autovacuums, and the DELETE logged whole pages
-- written long before (a tenth more WAL).  sog.receipt becomes a table
-- partitioned by a ring number: sog.receipt_0 (the table as it was, with
-- its rows) holds the receipts of checkpoints without a retention policy,
-- and is pruned by DELETE as before; a checkpoint with a policy writes to
-- the ring's current partition (sog.receipt_1 .. sog.receipt_4), whose
-- rows stay until the whole partition is at or below every checkpoint's
-- prune horizon, and is then TRUNCATEd (no dead row, no vacuum, no old
-- page logged again).  Every read answers at the prune horizon as before
-- (a receipt at or below it is gone, whichever partition still holds it).
-- sog.checkpoint.receipt_ring says where each checkpoint's receipts go;
-- sog.rotate_receipts() (run by CALL sog.prune_due()) moves it.
------------------------------------------------------------------------------

ALTER TABLE sog.receipt RENAME CONSTRAINT receipt_pkey TO receipt_0_pkey;
ALTER TABLE sog.receipt RENAME TO receipt_0;
-- the ring number as a column of its own: the partitions' key; the CHECK
-- lets ATTACH PARTITION skip its scan of the rows (this ALTER scans once)
ALTER TABLE sog.receipt_0 ADD COLUMN ring smallint NOT NULL DEFAULT 0
	CONSTRAINT receipt_0_ring CHECK (ring OPERATOR(pg_catalog.=) 0);

CREATE TABLE sog.receipt (
	checkpoint_id bigint NOT NULL,
	first_position sog.position NOT NULL,
	last_position sog.position NOT NULL,
	n integer NOT NULL CONSTRAINT receipt_n_check CHECK (n > 0),
	positions bytea,
	digests bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	ring smallint NOT NULL
) PARTITION BY LIST (ring);
ALTER TABLE sog.receipt ALTER COLUMN positions SET STORAGE PLAIN,
	ALTER COLUMN digests SET STORAGE PLAIN;
ALTER TABLE sog.receipt ATTACH PARTITION sog.receipt_0 FOR VALUES IN (0);
ALTER TABLE sog.receipt_0 DROP CONSTRAINT receipt_0_ring;
-- The ring's keys carry first_position, n and ring: a prune counts the
-- receipts it lets go from the key alone (an index-only scan, once
-- autovacuum has marked the pages all-visible, as it does for tables that
-- are only inserted into), not from the 4 kB rows.
CREATE TABLE sog.receipt_1 PARTITION OF sog.receipt (
	CONSTRAINT receipt_1_pkey PRIMARY KEY (checkpoint_id, last_position) INCLUDE (first_position, n, ring))
	FOR VALUES IN (1);
CREATE TABLE sog.receipt_2 PARTITION OF sog.receipt (
	CONSTRAINT receipt_2_pkey PRIMARY KEY (checkpoint_id, last_position) INCLUDE (first_position, n, ring))
	FOR VALUES IN (2);
CREATE TABLE sog.receipt_3 PARTITION OF sog.receipt (
	CONSTRAINT receipt_3_pkey PRIMARY KEY (checkpoint_id, last_position) INCLUDE (first_position, n, ring))
	FOR VALUES IN (3);
CREATE TABLE sog.receipt_4 PARTITION OF sog.receipt (
	CONSTRAINT receipt_4_pkey PRIMARY KEY (checkpoint_id, last_position) INCLUDE (first_position, n, ring))
	FOR VALUES IN (4);
-- the extension inserts into a partition directly (src/store/receipt.c); each
-- fills in its own number
ALTER TABLE sog.receipt_1 ALTER COLUMN ring SET DEFAULT 1;
ALTER TABLE sog.receipt_2 ALTER COLUMN ring SET DEFAULT 2;
ALTER TABLE sog.receipt_3 ALTER COLUMN ring SET DEFAULT 3;
ALTER TABLE sog.receipt_4 ALTER COLUMN ring SET DEFAULT 4;
SELECT pg_catalog.pg_extension_config_dump('sog.receipt_1', '');
SELECT pg_catalog.pg_extension_config_dump('sog.receipt_2', '');
SELECT pg_catalog.pg_extension_config_dump('sog.receipt_3', '');
SELECT pg_catalog.pg_extension_config_dump('sog.receipt_4', '');
REVOKE ALL ON TABLE sog.receipt, sog.receipt_1, sog.receipt_2, sog.receipt_3, sog.receipt_4 FROM PUBLIC;

COMMENT ON TABLE sog.receipt IS
	'receipts packed in runs: n payload digests for first_position..last_position, partitioned by ring (sog.receipt_storage); read them with sog.receipts()';
COMMENT ON COLUMN sog.receipt.positions IS
	'NULL for a dense run (consecutive one-component positions), else each position as a length byte and its encoding';
COMMENT ON COLUMN sog.receipt.digests IS 'n 32-byte SHA-256 payload digests, in position order';
COMMENT ON COLUMN sog.receipt.created_at IS 'when the row was written (rows from before 1.1: when the extension was updated to 1.1)';
COMMENT ON COLUMN sog.receipt.ring IS
	'the partition: 0 (sog.receipt_0) for checkpoints outside the ring, pruned by DELETE; 1-4 the ring, emptied by TRUNCATE';
COMMENT ON TABLE sog.receipt_0 IS 'receipts of checkpoints outside the ring (no retention policy, or moved out): pruned by DELETE';
COMMENT ON TABLE sog.receipt_1 IS 'a partition of the receipt ring: emptied by TRUNCATE once every receipt in it is at or below its checkpoint''s prune horizon';
COMMENT ON TABLE sog.receipt_2 IS 'a partition of the receipt ring: emptied by TRUNCATE once every receipt in it is at or below its checkpoint''s prune horizon';
COMMENT ON TABLE sog.receipt_3 IS 'a partition of the receipt ring: emptied by TRUNCATE once every receipt in it is at or below its checkpoint''s prune horizon';
COMMENT ON TABLE sog.receipt_4 IS 'a partition of the receipt ring: emptied by TRUNCATE once every receipt in it is at or below its checkpoint''s prune horizon';

-- Which ring partition is current.  No row until the first rotation (then
-- sog.receipt_1): a restore's COPY brings the dumped row back.
CREATE TABLE sog.receipt_ring (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	current smallint NOT NULL CHECK (current BETWEEN 1 AND 4),
	rotated_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE sog.receipt_ring IS
	'the receipt ring''s current partition (sog.receipt_<current>) and when it became current; no row: sog.receipt_1';
SELECT pg_catalog.pg_extension_config_dump('sog.receipt_ring', '');
REVOKE ALL ON TABLE sog.receipt_ring FROM PUBLIC;

-- Where the checkpoint's receipts go.  No CHECK constraint: the executor
-- would build it on every write of the row; the module refuses a value
-- outside 0-4 itself.
ALTER TABLE sog.checkpoint ADD COLUMN receipt_ring smallint NOT NULL DEFAULT 0;
COMMENT ON COLUMN sog.checkpoint.receipt_ring IS
	'the partition its receipts go to: 0 outside the ring (no retention policy, or moved out for holding a partition), 1-4 the ring''s current one; set by sog.rotate_receipts()';

-- The view read sog.receipt, which is sog.receipt_0 now: the same
-- definition, on the partitioned table.
CREATE OR REPLACE VIEW sog.checkpoint_metrics AS
SELECT c.id AS checkpoint_id, c.consumer, c.stream, c."partition", c.criticality, c.state,
	   c.generation,
	   CASE WHEN sog.position_components(c.applied_position) OPERATOR(pg_catalog.=) 1
			THEN sog.position_to_numeric(c.applied_position) END AS applied_position,
	   CASE WHEN sog.position_components(c.source_cursor) OPERATOR(pg_catalog.=) 1
			 AND sog.position_components(c.applied_position) OPERATOR(pg_catalog.=) 1
			THEN sog.position_to_numeric(c.source_cursor)
				 OPERATOR(pg_catalog.-) sog.position_to_numeric(c.applied_position)
			END AS lag,
	   g.open_gaps,
	   coalesce(pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) g.oldest), 0)
		   AS oldest_open_gap_seconds,
	   pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-)
			coalesce(c.applied_at, c.claimed_at, c.created_at)) AS seconds_since_apply,
	   coalesce(r.receipts, 0) AS receipts,
	   (SELECT pg_catalog.count(*) FROM sog.recovery a
		 WHERE a.checkpoint_id OPERATOR(pg_catalog.=) c.id AND a.state OPERATOR(pg_catalog.=) 'open') AS open_recoveries
  FROM sog.checkpoint c
  LEFT JOIN LATERAL (
		SELECT pg_catalog.count(*) AS open_gaps, pg_catalog.min(x.detected_at) AS oldest
		  FROM sog.gap x
		 WHERE x.checkpoint_id OPERATOR(pg_catalog.=) c.id AND x.resolved_at IS NULL) g ON true
  LEFT JOIN LATERAL (
		-- the receipts kept: above the prune horizon (a ring partition
		-- still stores those below it until it is emptied); of a dense row
		-- across the horizon (one-component positions, as many as its
		-- range) only its part above it, of a sparse one all
		SELECT pg_catalog.sum(
				CASE WHEN x.first_position OPERATOR(sog.<=) c.prune_horizon
						  AND sog.position_components(x.first_position) OPERATOR(pg_catalog.=) 1
						  AND sog.position_components(x.last_position) OPERATOR(pg_catalog.=) 1
						  AND sog.position_components(c.prune_horizon) OPERATOR(pg_catalog.=) 1
					 THEN CASE WHEN sog.position_to_numeric(x.last_position)
									OPERATOR(pg_catalog.-) sog.position_to_numeric(x.first_position)
									OPERATOR(pg_catalog.+) 1 OPERATOR(pg_catalog.=) x.n
							   THEN (sog.position_to_numeric(x.last_position)
									 OPERATOR(pg_catalog.-) sog.position_to_numeric(c.prune_horizon))::pg_catalog.int4
							   ELSE x.n END
					 ELSE x.n END) AS receipts
		  FROM sog.receipt x
		 WHERE x.checkpoint_id OPERATOR(pg_catalog.=) c.id
		   AND (c.prune_horizon IS NULL OR x.last_position OPERATOR(sog.>) c.prune_horizon)) r ON true;
COMMENT ON VIEW sog.checkpoint_metrics IS
	'one row per checkpoint for monitoring: lag (read cursor minus applied position, when both are one component), applied position (one component), state, open gaps, age of the oldest, seconds since the applied position last moved, receipts kept (above the prune horizon)';

-- sog.status shows the page token: a worker that reconnects, or a consumer
-- role that may not read sog.checkpoint, finds the token in force there
-- (1.1 showed it only in sog.checkpoint).  The same columns, one more at
-- the end.
CREATE OR REPLACE VIEW sog.status WITH (security_barrier = true) AS
SELECT c.id AS checkpoint_id, c.consumer, c.stream, c."partition", c.state,
	   c.owner, c.generation, c.applied_position, c.source_cursor,
	   CASE WHEN sog.position_components(c.source_cursor) OPERATOR(pg_catalog.=) 1
			 AND sog.position_components(c.applied_position) OPERATOR(pg_catalog.=) 1
			THEN sog.position_to_numeric(c.source_cursor)
				 OPERATOR(pg_catalog.-) sog.position_to_numeric(c.applied_position)
	   END AS lag,
	   c.read_count AS buffered_count,
	   (SELECT pg_catalog.count(*) FROM sog.gap g
		 WHERE g.checkpoint_id OPERATOR(pg_catalog.=) c.id AND g.resolved_at IS NULL) AS open_gaps,
	   (SELECT pg_catalog.count(*) FROM sog.recovery r
		 WHERE r.checkpoint_id OPERATOR(pg_catalog.=) c.id AND r.state OPERATOR(pg_catalog.=) 'open') AS open_recoveries,
	   c.updated_at,
	   CASE WHEN c.receipts_through OPERATOR(sog.>) c.applied_position
			 OR (c.applied_position IS NULL AND c.receipts_through IS NOT NULL)
			THEN c.receipts_through END AS recovered_through,
	   c.provider_token
  FROM sog.checkpoint c
 WHERE sog.may_see(c.consumer);
COMMENT ON VIEW sog.status IS 'one row per checkpoint the role may see: state, owner, positions, lag, open gaps, effects a recovery committed above the applied position, the page token in force';

-- The checkpoints whose receipts in ring partition ring (1-4) are not all
-- at or below their prune horizon: what keeps the partition from being
-- emptied.  One probe of the partition's key per checkpoint.
CREATE FUNCTION sog.receipt_holders(ring integer) RETURNS bigint[]
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pg_catalog.array_agg(c.id ORDER BY c.id)
	  FROM sog.checkpoint c
	 WHERE EXISTS (SELECT FROM sog.receipt r
					WHERE r.ring OPERATOR(pg_catalog.=) receipt_holders.ring
					  AND r.checkpoint_id OPERATOR(pg_catalog.=) c.id
					  AND (c.prune_horizon IS NULL
						   OR r.last_position OPERATOR(sog.>) c.prune_horizon))
$$;
COMMENT ON FUNCTION sog.receipt_holders(integer) IS
	'checkpoints holding ring partition sog.receipt_<ring>: receipts in it above their prune horizon';
REVOKE ALL ON FUNCTION sog.receipt_holders(integer) FROM PUBLIC;

CREATE VIEW sog.receipt_storage AS
SELECT p.ring,
	   pg_catalog.format('sog.receipt_%s', p.ring)::pg_catalog.regclass AS "partition",
	   CASE WHEN p.ring OPERATOR(pg_catalog.=) 0 THEN 'outside the ring'
			WHEN p.ring OPERATOR(pg_catalog.=) coalesce(g.current, 1) THEN 'current'
			ELSE 'ring' END AS role,
	   pg_catalog.pg_total_relation_size(pg_catalog.format('sog.receipt_%s', p.ring)::pg_catalog.regclass) AS bytes,
	   (SELECT pg_catalog.array_agg(c.id ORDER BY c.id) FROM sog.checkpoint c
		 WHERE c.receipt_ring OPERATOR(pg_catalog.=) p.ring) AS writers,
	   CASE WHEN p.ring OPERATOR(pg_catalog.<>) 0 THEN sog.receipt_holders(p.ring) END AS holders,
	   CASE WHEN p.ring OPERATOR(pg_catalog.=) coalesce(g.current, 1) THEN g.rotated_at END AS current_since
  FROM pg_catalog.generate_series(0, 4) AS p(ring)
  LEFT JOIN sog.receipt_ring g ON true;
COMMENT ON VIEW sog.receipt_storage IS
	'one row per receipt partition: its role, size, the checkpoints writing to it and (in the ring) the checkpoints whose receipts keep it from being emptied';
REVOKE ALL ON sog.receipt_storage FROM PUBLIC;

-- Empty ring partition ring if no checkpoint writes to it or holds it.
-- TRUNCATE is not MVCC safe: a snapshot taken before it sees the partition
-- empty, and one taken before the prune that raised the horizon past the
-- partition's receipts still has the old horizon, below which it expects
-- the receipts sog.receipts() showed it.  So it waits (at most
-- snapshot_wait, polling) until no client or background session whose
-- transaction began before this one still has a snapshot; the prunes
-- committed before this transaction began.  Then it takes the partition's
-- ACCESS EXCLUSIVE lock, waited for at most lock_wait (NULL: not at all;
-- a sink transaction that read receipts holds a lock on every partition
-- until it ends, and a longer wait would hold up the sinks queued behind
-- this one), checks the condition again (the lock waited for every
-- writer) and truncates.  Run it in a transaction that holds no
-- checkpoint's row lock: a sink transaction waiting for that lock while
-- holding a snapshot would make it wait in vain.  Returns 'emptied', or
-- why not: 'empty', 'held', 'blind' (the role it runs as, the extension's
-- owner, cannot see other roles' snapshots: neither a superuser nor a
-- member of pg_read_all_stats), 'older snapshot: pid N' (the oldest such
-- session), 'busy'.
CREATE FUNCTION sog.receipt_ring_empty(ring integer, lock_wait text DEFAULT '100ms',
									   snapshot_wait interval DEFAULT '1s') RETURNS text
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	part text := pg_catalog.format('sog.receipt_%s', receipt_ring_empty.ring);
	wait_was text := pg_catalog.current_setting('lock_timeout');
	deadline timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) receipt_ring_empty.snapshot_wait;
	older integer;
BEGIN
	IF NOT EXISTS (SELECT FROM sog.receipt r WHERE r.ring OPERATOR(pg_catalog.=) receipt_ring_empty.ring) THEN
		RETURN 'empty';
	END IF;
	IF EXISTS (SELECT FROM sog.checkpoint c WHERE c.receipt_ring OPERATOR(pg_catalog.=) receipt_ring_empty.ring)
	   OR sog.receipt_holders(receipt_ring_empty.ring) IS NOT NULL THEN
		RETURN 'held';
	END IF;
	-- other roles' sessions show their snapshots only to a superuser or a
	-- member of pg_read_all_stats: an owner that is neither (the portable
	-- edition's may be) cannot prove that none is older, and empties nothing
	IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
	   AND NOT pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE') THEN
		RETURN 'blind';
	END IF;
	LOOP
		PERFORM pg_catalog.pg_stat_clear_snapshot();
		SELECT a.pid INTO older
		  FROM pg_catalog.pg_stat_activity a
		 WHERE a.backend_xmin IS NOT NULL
		   AND a.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
		   AND a.backend_type OPERATOR(pg_catalog.=) ANY (ARRAY['client backend', 'background worker'])
		   AND a.xact_start OPERATOR(pg_catalog.<) pg_catalog.now()
		 ORDER BY a.xact_start LIMIT 1;
		EXIT WHEN NOT FOUND;
		IF pg_catalog.clock_timestamp() OPERATOR(pg_catalog.>=) deadline THEN
			RETURN pg_catalog.format('older snapshot: pid %s', older);
		END IF;
		PERFORM pg_catalog.pg_sleep(0.01);
	END LOOP;
	BEGIN
		IF receipt_ring_empty.lock_wait IS NULL THEN
			EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', part);
		ELSE
			PERFORM pg_catalog.set_config('lock_timeout', receipt_ring_empty.lock_wait, true);
			EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', part);
			PERFORM pg_catalog.set_config('lock_timeout', wait_was, true);
		END IF;
	EXCEPTION WHEN lock_not_available THEN
		RETURN 'busy';
	END;
	IF EXISTS (SELECT FROM sog.checkpoint c WHERE c.receipt_ring OPERATOR(pg_catalog.=) receipt_ring_empty.ring)
	   OR sog.receipt_holders(receipt_ring_empty.ring) IS NOT NULL THEN
		RETURN 'held';
	END IF;
	EXECUTE pg_catalog.format('TRUNCATE %s', part);
	RETURN 'emptied';
END
$$;
COMMENT ON FUNCTION sog.receipt_ring_empty(integer, text, interval) IS
	'TRUNCATE ring partition sog.receipt_<ring> if no checkpoint writes to it or holds it, once no older snapshot is in use (waited for at most snapshot_wait) and its lock is had (waited for at most lock_wait, NULL: not at all); returns emptied, empty, held, blind, older snapshot: pid N, or busy';
REVOKE ALL ON FUNCTION sog.receipt_ring_empty(integer, text, interval) FROM PUBLIC;

-- Whether the checkpoint has a retention policy (its own, its consumer's
-- or the default): what puts its receipts in the ring.
CREATE FUNCTION sog.has_retention(c sog.checkpoint) RETURNS boolean
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
	SELECT EXISTS (SELECT FROM sog.retention r
					WHERE r.checkpoint_id OPERATOR(pg_catalog.=) (has_retention.c).id
					   OR (r.checkpoint_id IS NULL AND r.consumer OPERATOR(pg_catalog.=) (has_retention.c).consumer)
					   OR (r.checkpoint_id IS NULL AND r.consumer IS NULL))
$$;
REVOKE ALL ON FUNCTION sog.has_retention(sog.checkpoint) FROM PUBLIC;

-- Turn the ring (what CALL sog.prune_due() runs after pruning; one run at
-- a time, on the ring's row lock):
--   1. if the next partition is held by checkpoints that have applied
--      nothing since the ring last turned, and the current one has grown
--      to twice its size, they are not advancing: their receipts above
--      the horizon move to sog.receipt_0 (each receipt moves once: nothing
--      moves back) and they leave the ring, so that no checkpoint holds
--      the ring's space;
--   2. if the next partition is empty and the current one is not, the next
--      one becomes current;
--   3. every checkpoint with a retention policy writes to the current
--      partition, every other one (and one moved out in this run) to
--      sog.receipt_0 (its row is locked: an open sink transaction of the
--      checkpoint is waited for, and has written where it read);
--   4. only if no checkpoint row changed in this transaction (it holds
--      none of their locks, for which a sink transaction with a snapshot
--      may be waiting, and raised no horizon that a snapshot taken before
--      it commits would not see): every ring partition but the current one
--      that nobody holds is emptied (sog.receipt_ring_empty).
-- Returns one line per thing done, NULL when nothing was: CALL
-- sog.prune_due() calls it again, in a new transaction, until it does
-- nothing (the second call empties what the first left, the third may
-- turn the ring into a partition the second emptied).
CREATE FUNCTION sog.rotate_receipts_body()
	RETURNS text
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cur smallint;
	nxt smallint;
	p smallint;
	did text[] := '{}';
	what text;
	held bigint[];
	moved bigint[] := '{}';
	h bigint;
	n bigint;
	changed bigint := 0;
BEGIN
	PERFORM sog.refuse_during_recovery('rotate the receipt ring');
	PERFORM sog.check_operator_access('the receipt ring');
	INSERT INTO sog.receipt_ring (current) VALUES (1) ON CONFLICT DO NOTHING;
	SELECT g.current INTO cur FROM sog.receipt_ring g FOR UPDATE;
	nxt := cur OPERATOR(pg_catalog.%) 4 OPERATOR(pg_catalog.+) 1;

	-- the holders of the next partition that have applied nothing since
	-- the ring last turned: not advancing.  One that keeps its receipts
	-- longer than the ring spans but advances is waited for: the current
	-- partition grows, and the ring's partitions come to span a third of
	-- the longest policy each.
	SELECT pg_catalog.array_agg(c.id ORDER BY c.id) INTO held
	  FROM sog.checkpoint c
	 WHERE c.id OPERATOR(pg_catalog.=) ANY (sog.receipt_holders(nxt))
	   AND (c.applied_at IS NULL
			OR c.applied_at OPERATOR(pg_catalog.<) (SELECT g.rotated_at FROM sog.receipt_ring g));
	IF held IS NOT NULL
	   AND pg_catalog.pg_relation_size(pg_catalog.format('sog.receipt_%s', cur)::pg_catalog.regclass)
		   OPERATOR(pg_catalog.>=) (2 OPERATOR(pg_catalog.*)
		   pg_catalog.pg_relation_size(pg_catalog.format('sog.receipt_%s', nxt)::pg_catalog.regclass)) THEN
		FOREACH h IN ARRAY held LOOP
			UPDATE sog.checkpoint c SET receipt_ring = 0 WHERE c.id OPERATOR(pg_catalog.=) h;
			WITH m AS (
				UPDATE sog.receipt r SET ring = 0
				  FROM sog.checkpoint c
				 WHERE c.id OPERATOR(pg_catalog.=) h
				   AND r.checkpoint_id OPERATOR(pg_catalog.=) h
				   AND r.ring OPERATOR(pg_catalog.<>) 0
				   AND (c.prune_horizon IS NULL OR r.last_position OPERATOR(sog.>) c.prune_horizon)
				RETURNING r.n)
			SELECT coalesce(pg_catalog.sum(m.n), 0) INTO n FROM m;
			moved := moved OPERATOR(pg_catalog.||) h;
			changed := changed OPERATOR(pg_catalog.+) 1;
			did := did OPERATOR(pg_catalog.||) pg_catalog.format(
				'checkpoint %s held sog.receipt_%s: its %s receipts above its prune horizon moved to sog.receipt_0', h, nxt, n);
			RAISE WARNING 'checkpoint % held receipt partition sog.receipt_%', h, nxt
				USING DETAIL = pg_catalog.format('The ring needs sog.receipt_%s next, the checkpoint''s prune horizon is still below receipts it wrote there, and it has applied nothing since the ring last turned, while sog.receipt_%s grew to twice its size; its %s receipts above the horizon moved to sog.receipt_0, which retention prunes by DELETE.', nxt, cur, n),
					  HINT = 'See why the checkpoint does not advance (sog.checkpoint_metrics); it rejoins the ring at the next run.';
		END LOOP;
	END IF;

	IF NOT EXISTS (SELECT FROM sog.receipt r WHERE r.ring OPERATOR(pg_catalog.=) nxt)
	   AND EXISTS (SELECT FROM sog.receipt r WHERE r.ring OPERATOR(pg_catalog.=) cur) THEN
		UPDATE sog.receipt_ring SET current = nxt, rotated_at = pg_catalog.now();
		cur := nxt;
		did := did OPERATOR(pg_catalog.||) pg_catalog.format('receipts now go to sog.receipt_%s', cur);
	END IF;

	WITH w AS (
		UPDATE sog.checkpoint c
		   SET receipt_ring = x.want
		  FROM (SELECT y.id, CASE WHEN sog.has_retention(y) AND NOT y.id OPERATOR(pg_catalog.=) ANY (moved)
								  THEN cur ELSE 0 END AS want
				  FROM sog.checkpoint y) x
		 WHERE c.id OPERATOR(pg_catalog.=) x.id AND c.receipt_ring OPERATOR(pg_catalog.<>) x.want
		RETURNING c.receipt_ring)
	SELECT pg_catalog.count(*) INTO n FROM w;
	IF n OPERATOR(pg_catalog.>) 0 THEN
		changed := changed OPERATOR(pg_catalog.+) n;
		did := did OPERATOR(pg_catalog.||) pg_catalog.format('checkpoints moved to their partition: %s', n);
	END IF;

	-- nor if this transaction raised a horizon itself (a prune in the same
	-- transaction): a snapshot taken before it commits would still have
	-- the old horizon, and not be older than this transaction
	IF changed OPERATOR(pg_catalog.=) 0
	   AND NOT EXISTS (SELECT FROM sog.checkpoint c
					WHERE c.xmin OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id_if_assigned()::xid) THEN
		FOR p IN 1 .. 4 LOOP
			CONTINUE WHEN p OPERATOR(pg_catalog.=) cur;
			what := sog.receipt_ring_empty(p);
			IF what OPERATOR(pg_catalog.=) 'emptied' THEN
				did := did OPERATOR(pg_catalog.||) pg_catalog.format('emptied sog.receipt_%s', p);
			ELSIF what OPERATOR(pg_catalog.=) 'blind' THEN
				did := did OPERATOR(pg_catalog.||) pg_catalog.format('sog.receipt_%s is not emptied: the extension''s owner cannot see other sessions'' snapshots', p);
				RAISE WARNING 'receipt partition sog.receipt_% is not emptied', p
					USING DETAIL = pg_catalog.format('Role %s, the extension''s owner, is neither a superuser nor a member of pg_read_all_stats: it cannot see whether another session still has a snapshot from before the prune, which TRUNCATE would change under it.', CURRENT_USER),
						  HINT = pg_catalog.format('GRANT pg_read_all_stats TO %I;', CURRENT_USER);
			ELSIF what OPERATOR(pg_catalog.=) 'busy' THEN
				did := did OPERATOR(pg_catalog.||) pg_catalog.format('sog.receipt_%s is in use: emptied at a later run', p);
			ELSIF what OPERATOR(pg_catalog.~) '^older snapshot' THEN
				did := did OPERATOR(pg_catalog.||) pg_catalog.format(
					'sog.receipt_%s waits for a transaction older than the prune (%s)', p,
					pg_catalog.substr(what, pg_catalog.length('older snapshot: ') OPERATOR(pg_catalog.+) 1));
			END IF;
		END LOOP;
	END IF;
	IF pg_catalog.cardinality(did) OPERATOR(pg_catalog.=) 0 THEN
		RETURN NULL;
	END IF;
	RETURN pg_catalog.array_to_string(did, '; ');
END
$$;
REVOKE ALL ON FUNCTION sog.rotate_receipts_body() FROM PUBLIC;
CREATE FUNCTION sog.rotate_receipts()
	RETURNS text
	AS 'MODULE_PATHNAME', 'sog_run_body'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION sog.rotate_receipts() IS
	'operators: turn the receipt ring (empty the partitions nobody holds, move a checkpoint that holds the next one out of the ring, make the next one current, put each checkpoint where its policy says); run by CALL sog.prune_due(); returns what it did';
REVOKE ALL ON FUNCTION sog.rotate_receipts() FROM PUBLIC;

-- Prune everything due, then turn the ring.
CREATE OR REPLACE PROCEDURE sog.prune_due()
	LANGUAGE plpgsql
AS $$
DECLARE
	id bigint;
	n bigint;
	chunk CONSTANT bigint := 10000;
	total bigint := 0;
	checkpoints int := 0;
	ring text;
	i int;
BEGIN
	PERFORM sog.refuse_during_recovery('prune receipts');
	FOR id IN SELECT d.checkpoint_id FROM sog.retention_due d
			   ORDER BY d.checkpoint_id USING OPERATOR(pg_catalog.<) LOOP
		LOOP
			n := sog.prune_due(id, chunk);
			total := total OPERATOR(pg_catalog.+) n;
			COMMIT;
			-- nothing more is due (1.1 stopped at fewer than a chunk; a
			-- chunk ends at a whole row, and a row across the old horizon,
			-- which 1.2 no longer splits, counts only its part above it)
			EXIT WHEN n OPERATOR(pg_catalog.=) 0;
		END LOOP;
		checkpoints := checkpoints OPERATOR(pg_catalog.+) 1;
	END LOOP;
	RAISE NOTICE '% receipts pruned from % checkpoints', total, checkpoints;
	-- each call in a transaction of its own (see sog.rotate_receipts_body):
	-- the ring turns, what it left behind is emptied, the ring turns into
	-- what was emptied
	FOR i IN 1 .. 3 LOOP
		ring := sog.rotate_receipts();
		COMMIT;
		EXIT WHEN ring IS NULL;
		RAISE NOTICE 'receipt ring: %', ring;
	END LOOP;
END
$$;
COMMENT ON PROCEDURE sog.prune_due() IS
	'prune every checkpoint''s receipts as its retention policy allows, committing after each checkpoint and each 10000 receipts, then turn the receipt ring (run it with CALL, e.g. from pg_cron)';
