-- portable/gaps.sql: the gap log and the gap functions in PL/pgSQL (the C
-- edition: src/store/gap.c, src/functions/gap.c).
--
-- The gap store (store/gap.c): gap and manifest rows and the queries on
-- gaps, each run under the checkpoint's row lock that its caller took
-- (sog.cp_lock).  The gap functions (functions/gap.c): verify_gap, report_gap,
-- skip_gap, resolve_gap and gaps, entered as the conventions say
-- (docs/portable.md).
--
-- NOTIFY sog_gap.  The C edition queues NOTIFY sog_gap, payload '{}', once,
-- in the PRE_COMMIT callback of a transaction that recorded a gap (and whose
-- subtransaction that recorded it did not roll back), never at PREPARE
-- TRANSACTION: PostgreSQL refuses to prepare a transaction that executed
-- NOTIFY, and a gap recorded in a sink transaction a two-phase coordinator
-- prepares must commit with it.  PL/pgSQL has no transaction callback, so
-- here sog.gap_record marks its row (a transaction-local setting read by
-- the WHEN clause of a deferred constraint trigger on sog.gap), and the
-- trigger, at COMMIT, sends pg_notify('sog_gap', '{}') (PostgreSQL folds
-- the notifications of one transaction with the same channel and payload
-- into one; a rolled-back subtransaction's rows queue no event).  What
-- differs:
--   - A deferred trigger fires at PREPARE TRANSACTION as at COMMIT, and
--     cannot tell them apart; it sends nothing when the statement being run
--     (current_query()) names PREPARE TRANSACTION, so that the PREPARE
--     succeeds and the gaps commit with COMMIT PREPARED without a
--     notification, as in C.  A PREPARE TRANSACTION sent in one query string
--     with a COMMIT of an earlier transaction, or a COMMIT whose query string
--     happens to contain those words, sends no notification either (the
--     gaps are in sog.unresolved_gaps; a watcher polls as docs/operations.md says
--     for prepared transactions).
--   - SET CONSTRAINTS ALL IMMEDIATE (or sog.gap_notify's by name) makes the
--     trigger fire at the end of the statement instead of at COMMIT: the
--     notification is then queued in the transaction, and a later PREPARE
--     TRANSACTION of it is refused (0A000, PostgreSQL's "cannot PREPARE a
--     transaction that has executed LISTEN, UNLISTEN, or NOTIFY").
--   - The notification is sent while the deferred triggers run, before the
--     commit check (store.sql) of a later constraint trigger may refuse the
--     COMMIT; a refused COMMIT rolls the notification back with everything
--     else, so none is ever sent for a transaction that did not commit.
--
-- Snapshots: the C edition runs the gap queries on the newest snapshot
-- (under the checkpoint's lock nothing of the checkpoint is in flight); a
-- PL/pgSQL statement reads its own snapshot, the newest at READ COMMITTED.
-- At REPEATABLE READ and SERIALIZABLE it reads the transaction's: a gap
-- resolved by a transaction that committed after the snapshot but wrote no
-- checkpoint row (a resolve_gap that left other gaps open) still shows
-- open (a claim reports it; a resolve_gap of it is 40001): stricter, never
-- laxer.
--
-- @entry sog.verify_gap(bigint, bigint, text)
-- @entry sog.skip_gap(bigint, bigint, text)
-- @entry sog.resolve_gap(bigint, text, text)
-- @entry sog.report_gap(bigint, bigint, sog.position, text, text)
-- @entry sog.gaps(bigint)

-- sog.gap_reasons(): every reason a gap row may have, in the C edition's
-- order (sog.gap's CHECK constraint takes them from here).
CREATE FUNCTION sog.gap_reasons() RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY['no_buffer_hash', 'hash_mismatch', 'divergence', 'identity_changed', 'retention',
			 'scope_changed', 'coverage_unproven', 'no_finality', 'receipts_pruned', 'mismatch',
			 'unverifiable', 'coverage_gap', 'unverified'];

-- ---------------------------------------------------------------------------
-- The gap store (store/gap.c)

-- At COMMIT of a transaction that recorded a gap: NOTIFY sog_gap, '{}'
-- (the header: once per transaction, never at PREPARE TRANSACTION).
CREATE FUNCTION sog.gap_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF coalesce(current_query(), '') !~* '\mprepare\s+transaction\M' THEN
		PERFORM pg_notify('sog_gap', '{}');
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION sog.gap_notify() IS
	'portable edition: NOTIFY sog_gap (payload {}) at the commit of a transaction that recorded a gap, never at PREPARE TRANSACTION';
REVOKE ALL ON FUNCTION sog.gap_notify() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER gap_notify AFTER INSERT ON sog.gap
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (pg_catalog.current_setting('sog.gap_notify', true) OPERATOR(pg_catalog.=) 'on')
	EXECUTE FUNCTION sog.gap_notify();
-- it fires with session_replication_role = replica too, as the C edition's
-- transaction callback does
ALTER TABLE sog.gap ENABLE ALWAYS TRIGGER gap_notify;

-- Record a gap (from_pos, to_pos] of checkpoint cp (its id and generation),
-- announced at commit; returns its id (sog_gap_record).
CREATE FUNCTION sog.gap_record(cp sog.checkpoint, reason text, verdict sog.verdict,
							   from_pos sog.position, to_pos sog.position, detail text)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	gap_id bigint;
BEGIN
	PERFORM set_config('sog.gap_notify', 'on', true);
	INSERT INTO sog.gap (checkpoint_id, generation, from_position, to_position, reason, verdict, detail)
		VALUES (cp.id, cp.generation, from_pos, to_pos, reason, verdict, detail)
		RETURNING id INTO gap_id;
	PERFORM set_config('sog.gap_notify', '', true);
	RETURN gap_id;
END
$$;
REVOKE ALL ON FUNCTION sog.gap_record(sog.checkpoint, text, sog.verdict, sog.position, sog.position, text) FROM PUBLIC;

-- Log the manifest m of a claim, halt or skip of checkpoint cp (its id,
-- generation, owner and applied position); gap_id 0 or NULL: none.
-- Returns the row's id (sog_manifest_record).
CREATE FUNCTION sog.manifest_record(cp sog.checkpoint, kind text, source_cursor sog.position,
									buffer_hash text, buffered_count bigint, m sog.manifest,
									gap_id bigint, note text)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	id bigint;
BEGIN
	INSERT INTO sog.manifest_log (checkpoint_id, generation, kind, owner, source_cursor,
								  applied_position, buffer_hash, buffered_count, verdict,
								  resume_from, gap_size, manifest_digest, gap_id, note)
		VALUES (cp.id, cp.generation, kind, cp.owner, source_cursor, cp.applied_position,
				buffer_hash, buffered_count, m.verdict, m.resume_from, m.gap_size,
				m.manifest_digest, CASE WHEN manifest_record.gap_id > 0 THEN manifest_record.gap_id END,
				note)
		RETURNING manifest_log.id INTO id;
	RETURN id;
END
$$;
REVOKE ALL ON FUNCTION sog.manifest_record(sog.checkpoint, text, sog.position, text, bigint, sog.manifest, bigint, text) FROM PUBLIC;

-- The newest open gap of a checkpoint: its id (0 if none) and verdict
-- (sog_gap_newest_open).
CREATE FUNCTION sog.gap_newest_open(checkpoint_id bigint, OUT gap_id bigint, OUT verdict sog.verdict)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	SELECT g.id, g.verdict INTO gap_id, verdict
	  FROM sog.gap g
	 WHERE g.checkpoint_id = gap_newest_open.checkpoint_id AND g.resolved_at IS NULL
	 ORDER BY g.id DESC LIMIT 1;
	IF NOT FOUND THEN
		gap_id := 0;
		verdict := NULL;
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.gap_newest_open(bigint) FROM PUBLIC;

-- The newest open gap of a checkpoint with this reason; 0 if none
-- (sog_gap_open_with_reason).
CREATE FUNCTION sog.gap_open_with_reason(checkpoint_id bigint, reason text) RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT g.id FROM sog.gap g
					  WHERE g.checkpoint_id = gap_open_with_reason.checkpoint_id
						AND g.resolved_at IS NULL AND g.reason = gap_open_with_reason.reason
					  ORDER BY g.id DESC LIMIT 1), 0)
$$;
REVOKE ALL ON FUNCTION sog.gap_open_with_reason(bigint, text) FROM PUBLIC;

-- The newest open gap of a checkpoint that covers (from_pos, to_pos]: its
-- from at or below from_pos (NULL: the start), its to at or above to_pos
-- (NULL: unbounded); 0 if none (sog_gap_open_covering).
CREATE FUNCTION sog.gap_covering(checkpoint_id bigint, from_pos sog.position, to_pos sog.position)
	RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT g.id FROM sog.gap g
					  WHERE g.checkpoint_id = gap_covering.checkpoint_id AND g.resolved_at IS NULL
						AND (g.from_position IS NULL
							 OR (from_pos IS NOT NULL AND g.from_position <= from_pos))
						AND (g.to_position IS NULL OR g.to_position >= to_pos)
					  ORDER BY g.id DESC LIMIT 1), 0)
$$;
REVOKE ALL ON FUNCTION sog.gap_covering(bigint, sog.position, sog.position) FROM PUBLIC;

-- Follow the gaps of a checkpoint that which selects, in the order of
-- their start, from from_pos while they join up: a gap (f, t] extends the
-- covered range when it starts within it.  gap_id is the one that reaches
-- to_pos (an unbounded one covers everything above), 0 if they do not;
-- reached is where they end (from_pos when none starts at or below it).
-- which is 'losses' (open gaps and bounded ones resolved as
-- accepted_loss), 'accepted' (resolved as accepted_loss: bounded, or
-- unbounded 'retention' ones; one that ends at from_pos only as the empty
-- loss (from_pos, from_pos]) or 'since' (every gap with an id above
-- after_id).  (gaps_reach and its three callers in store/gap.c)
CREATE FUNCTION sog.gaps_reach(checkpoint_id bigint, from_pos sog.position, to_pos sog.position,
							   which text, after_id bigint,
							   OUT gap_id bigint, OUT reached sog.position)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	start boolean := from_pos IS NULL;	-- reached is "the start"
	r record;
BEGIN
	reached := from_pos;
	gap_id := 0;
	FOR r IN SELECT g.id, g.from_position AS f, g.to_position AS t
			   FROM sog.gap g
			  WHERE g.checkpoint_id = gaps_reach.checkpoint_id
				AND CASE which
					WHEN 'losses' THEN
						(g.resolved_at IS NULL
						 OR (g.resolution = 'accepted_loss' AND g.to_position IS NOT NULL))
						AND (g.to_position IS NULL OR from_pos IS NULL OR g.to_position > from_pos)
					WHEN 'accepted' THEN
						g.resolution = 'accepted_loss'
						AND (g.to_position IS NOT NULL OR g.reason = 'retention')
						AND (g.to_position IS NULL OR from_pos IS NULL OR g.to_position > from_pos
							 OR g.from_position = from_pos)
					WHEN 'since' THEN g.id > after_id
				END
			  ORDER BY g.from_position NULLS FIRST, g.id
	LOOP
		-- rows are in the order of their start: one that starts above is the end
		IF r.f IS NOT NULL AND (start OR r.f > reached) THEN
			EXIT;
		END IF;
		IF r.t IS NULL THEN
			gap_id := r.id;		-- unbounded: covers everything above
			RETURN;
		END IF;
		IF start OR r.t > reached THEN
			reached := r.t;
			start := false;
		END IF;
		IF sog.pos_cmp(reached, to_pos) >= 0 THEN
			gap_id := r.id;
			RETURN;
		END IF;
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sog.gaps_reach(bigint, sog.position, sog.position, text, bigint) FROM PUBLIC;

-- The gaps of a checkpoint that already account for records above
-- from_pos (open ones, and bounded ones resolved as accepted_loss),
-- followed from from_pos while they join up: the id of the one that
-- reaches to_pos (0 if they do not), and where they end (from_pos when
-- none starts at or below it) (sog_gap_losses_through).
CREATE FUNCTION sog.gap_losses_through(checkpoint_id bigint, from_pos sog.position, to_pos sog.position,
									   OUT gap_id bigint, OUT reached sog.position)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT * FROM sog.gaps_reach(checkpoint_id, from_pos, to_pos, 'losses', 0)
$$;
REVOKE ALL ON FUNCTION sog.gap_losses_through(bigint, sog.position, sog.position) FROM PUBLIC;

-- Is the loss (from_pos, through] already on the record and accepted:
-- gaps resolved as accepted_loss that join up from from_pos through
-- through, whatever their reasons (a chain counts as one)?
-- (sog_gap_loss_accepted)
CREATE FUNCTION sog.gap_loss_accepted(checkpoint_id bigint, from_pos sog.position, through sog.position)
	RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT gap_id <> 0 FROM sog.gaps_reach(checkpoint_id, from_pos, through, 'accepted', 0)
$$;
REVOKE ALL ON FUNCTION sog.gap_loss_accepted(bigint, sog.position, sog.position) FROM PUBLIC;

-- Do the gaps of a checkpoint with an id above after_id (resolved or not)
-- together cover (from_pos, to_pos]?  An empty range above a position
-- needs no gap: it counts as covered.  (sog_gaps_since_cover)
CREATE FUNCTION sog.gaps_cover(checkpoint_id bigint, from_pos sog.position, to_pos sog.position,
							   after_id bigint)
	RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT gap_id <> 0 OR (from_pos IS NOT NULL AND sog.pos_cmp(from_pos, to_pos) >= 0)
	  FROM sog.gaps_reach(checkpoint_id, from_pos, to_pos, 'since', after_id)
$$;
REVOKE ALL ON FUNCTION sog.gaps_cover(bigint, sog.position, sog.position, bigint) FROM PUBLIC;

-- The id of the checkpoint's newest gap, 0 if none (sog_gap_newest_id).
CREATE FUNCTION sog.gap_newest_id(checkpoint_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(max(g.id), 0) FROM sog.gap g WHERE g.checkpoint_id = gap_newest_id.checkpoint_id
$$;
REVOKE ALL ON FUNCTION sog.gap_newest_id(bigint) FROM PUBLIC;

-- After a loss through lost_to inside an open read boundary with a hash or
-- a count: the rest (lost_to, cursor] as an unverified gap; nothing when
-- there is no such boundary (sog_boundary_record_rest).
CREATE FUNCTION sog.gap_record_boundary_rest(cp sog.checkpoint, lost_to sog.position) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF (cp.read_hash IS NULL AND cp.read_count IS NULL)
	   OR sog.pos_cmp(cp.source_cursor, cp.applied_position) <= 0
	   OR sog.pos_cmp(lost_to, cp.applied_position) <= 0
	   OR sog.pos_cmp(cp.source_cursor, lost_to) <= 0 THEN
		RETURN;
	END IF;
	PERFORM sog.gap_record(cp, 'unverified', 'fail_closed', lost_to, cp.source_cursor,
		format(CASE WHEN cp.read_hash IS NOT NULL
					THEN 'read through %s under a hash that also covers the lost records: re-read and replay them, or accept their loss'
					ELSE 'read through %s as a count that includes the lost records: re-read and replay them, or accept their loss' END,
			   sog.pos_str(cp.source_cursor)));
END
$$;
REVOKE ALL ON FUNCTION sog.gap_record_boundary_rest(sog.checkpoint, sog.position) FROM PUBLIC;

-- The number of open gaps of a checkpoint (sog_gap_count_open).
CREATE FUNCTION sog.gap_count_open(checkpoint_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT count(*) FROM sog.gap g
	 WHERE g.checkpoint_id = gap_count_open.checkpoint_id AND g.resolved_at IS NULL
$$;
REVOKE ALL ON FUNCTION sog.gap_count_open(bigint) FROM PUBLIC;

-- The checkpoint of a gap, -1 if there is no such gap (sog_gap_checkpoint).
CREATE FUNCTION sog.gap_checkpoint(gap_id bigint) RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT g.checkpoint_id FROM sog.gap g WHERE g.id = gap_checkpoint.gap_id), -1)
$$;
REVOKE ALL ON FUNCTION sog.gap_checkpoint(bigint) FROM PUBLIC;

-- Resolve one open gap as the acting role; false if it was already
-- resolved (sog_gap_resolve).
CREATE FUNCTION sog.gap_resolve(gap_id bigint, resolution text, note text) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n bigint;
BEGIN
	UPDATE sog.gap g SET resolved_at = now(), resolution = gap_resolve.resolution,
		   note = gap_resolve.note, resolved_by = sog.acting_role()
	 WHERE g.id = gap_resolve.gap_id AND g.resolved_at IS NULL;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n = 1;
END
$$;
REVOKE ALL ON FUNCTION sog.gap_resolve(bigint, text, text) FROM PUBLIC;

-- Resolve every open gap of a checkpoint as the acting role; returns how
-- many (sog_gap_resolve_open).
CREATE FUNCTION sog.gap_resolve_open(checkpoint_id bigint, resolution text, note text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n bigint;
BEGIN
	UPDATE sog.gap g SET resolved_at = now(), resolution = gap_resolve_open.resolution,
		   note = gap_resolve_open.note, resolved_by = sog.acting_role()
	 WHERE g.checkpoint_id = gap_resolve_open.checkpoint_id AND g.resolved_at IS NULL;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END
$$;
REVOKE ALL ON FUNCTION sog.gap_resolve_open(bigint, text, text) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- The gap functions (functions/gap.c)

-- sog.verify_gap(checkpoint_id, generation, replay_hash): the hash of the
-- re-fetched gap against the recorded one; a mismatch fails closed.
CREATE FUNCTION sog.verify_gap_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									 replay_hash text)
	RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.verify_gap(bigint, bigint, text)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	match boolean;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	PERFORM sog.require_arg(replay_hash IS NULL, 3, 'replay_hash');
	PERFORM sog.check_buffer_hash('replay_hash', replay_hash);

	cp := sog.cp_lock(checkpoint_id, 1, false);
	orig := cp;
	PERFORM sog.check_generation(cp, generation, 'verify_gap');
	IF cp.state <> 'replaying' OR cp.read_hash IS NULL THEN
		RAISE EXCEPTION 'checkpoint % has no gap awaiting verification', cp.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Its state is %s.', cp.state),
				  HINT = 'Call it after sog.claim() returned gap_replay_required.';
	END IF;

	-- pg_strcasecmp: ASCII letters only
	match := lower(replay_hash COLLATE "C") = lower(cp.read_hash COLLATE "C");
	IF match THEN
		cp.state := 'running';
	ELSE
		PERFORM sog.gap_record(cp, 'hash_mismatch', 'fail_closed', sog.boundary_base(cp),
							   cp.source_cursor, NULL);
		cp.state := 'failed_closed';
	END IF;
	PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN match;
END
$$;
GRANT EXECUTE ON FUNCTION sog.verify_gap_entry(uuid, bigint, bigint, text) TO PUBLIC;

-- 22023 unless reason is one a consumer may report (check_gap_reason).
CREATE FUNCTION sog.check_gap_reason(reason text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	reportable text[] := array_remove(sog.gap_reasons(), 'unverified');
BEGIN
	IF reason = ANY (reportable) THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'invalid gap reason %', sog.quoted(reason, 'NULL')
		USING ERRCODE = 'invalid_parameter_value',
			  DETAIL = format('A gap''s reason is one of %s.', array_to_string(reportable, ', ')),
			  HINT = 'Use "retention" for records the broker discarded before they were applied.';
END
$$;
REVOKE ALL ON FUNCTION sog.check_gap_reason(text) FROM PUBLIC;

-- sog.report_gap(checkpoint_id, generation, to_position, reason, detail):
-- records (from, to_position] as lost, from the applied position (the read
-- boundary's base if an apply entered it) past the gaps that already
-- account for what lies above it; idempotent (functions/gap.c).
CREATE FUNCTION sog.report_gap_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									 to_position sog.position, reason text, detail text)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.report_gap(bigint, bigint, sog.position, text, text)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	l record;
	gap_id bigint;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	PERFORM sog.require_arg(to_position IS NULL, 3, 'to_position');
	PERFORM sog.check_gap_reason(reason);

	cp := sog.cp_lock(checkpoint_id, 1, false);
	orig := cp;
	PERFORM sog.check_generation(cp, generation, 'report_gap');
	IF sog.pos_cmp(to_position, cp.applied_position) <= 0 THEN
		RAISE EXCEPTION 'cannot report a gap through % of checkpoint %', sog.pos_str(to_position), cp.id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The checkpoint has applied through %s: nothing at or below it can be lost.',
								  sog.pos_str(cp.applied_position)),
				  HINT = 'Report the last position that is gone, above the applied position.';
	END IF;

	SELECT * INTO l FROM sog.gap_losses_through(cp.id, sog.boundary_base(cp), to_position);
	gap_id := l.gap_id;
	IF gap_id = 0 THEN
		gap_id := sog.gap_record(cp, reason, 'fail_closed', l.reached, to_position, detail);
		-- what was read beyond the loss can no longer be verified
		PERFORM sog.gap_record_boundary_rest(cp, to_position);
		cp.state := 'failed_closed';
		PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	END IF;
	PERFORM sog.leave(outer_caller);
	RETURN gap_id;
END
$$;
GRANT EXECUTE ON FUNCTION sog.report_gap_entry(uuid, bigint, bigint, sog.position, text, text) TO PUBLIC;

-- sog.skip_gap(checkpoint_id, generation, reason): telemetry checkpoints
-- only; every open gap resolved as skipped_telemetry, applied_position to
-- the read cursor, what is skipped always on record (functions/gap.c).
CREATE FUNCTION sog.skip_gap_entry(caller_key uuid, checkpoint_id bigint, generation bigint, reason text)
	RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.skip_gap(bigint, bigint, text)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	from_pos sog.position;
	m sog.manifest;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	cp := sog.cp_lock(checkpoint_id, 1, false);
	orig := cp;
	PERFORM sog.check_generation(cp, generation, 'skip_gap');
	IF cp.criticality IS DISTINCT FROM 'telemetry' THEN
		RAISE EXCEPTION 'cannot skip a gap of critical checkpoint %', cp.id
			USING ERRCODE = 'SG007',
				  DETAIL = format('Checkpoint %s/%s/%s is critical; records in (%s, %s] would be lost.',
								  sog.cut(cp.consumer), sog.cut(cp.stream), sog.cut(cp."partition"),
								  sog.pos_str(cp.applied_position), sog.pos_str(cp.source_cursor)),
				  HINT = 'Replay the gap, or have an operator accept the loss with sog.resolve_gap().';
	END IF;
	IF sog.is_blank(reason) THEN
		RAISE EXCEPTION 'a skipped gap needs a reason'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The reason is recorded with the gap for audit.',
				  HINT = 'Say why losing these records is acceptable.';
	END IF;

	from_pos := sog.boundary_base(cp);
	IF sog.boundary_open(cp) AND sog.gap_covering(cp.id, from_pos, cp.source_cursor) = 0 THEN
		PERFORM sog.gap_record(cp, 'unverified', 'fail_closed', from_pos, cp.source_cursor,
							   CASE WHEN cp.state = 'replaying' THEN 'skipped before verify_gap'
									ELSE 'buffered records skipped' END);
	END IF;
	PERFORM sog.gap_resolve_open(cp.id, 'skipped_telemetry', reason);
	IF sog.pos_cmp(cp.source_cursor, cp.applied_position) > 0 THEN
		cp.applied_position := cp.source_cursor;
	END IF;
	cp := sog.clear_read_boundary(cp);
	cp.state := 'running';
	m := sog.evaluate_boundary(cp.applied_position, cp.applied_position, NULL);
	PERFORM sog.manifest_record(cp, 'skip', cp.applied_position, NULL, NULL, m, 0,
								format('skipped (%s, %s]: %s', sog.pos_str(from_pos),
									   sog.pos_str(cp.applied_position), reason));
	PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.skip_gap_entry(uuid, bigint, bigint, text) TO PUBLIC;

-- sog.resolve_gap(gap_id, resolution, note): operators close a gap as
-- replayed or accepted_loss; the last one closed puts the checkpoint back
-- to running (or replaying, for a boundary still to verify).
CREATE FUNCTION sog.resolve_gap_entry(caller_key uuid, gap_id bigint, resolution text, note text)
	RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.resolve_gap(bigint, text, text)');
	checkpoint_id bigint;
	consumer text;
	what text;
	cp sog.checkpoint;
	orig sog.checkpoint;
BEGIN
	PERFORM sog.require_arg(gap_id IS NULL, 1, 'gap_id');
	IF resolution IS NULL OR resolution NOT IN ('replayed', 'accepted_loss') THEN
		RAISE EXCEPTION 'invalid gap resolution %',
			sog.quoted(resolution, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A gap is resolved as "replayed" or "accepted_loss".',
				  HINT = 'Use "replayed" when the records were re-applied, "accepted_loss" with a note otherwise.';
	END IF;
	IF resolution = 'accepted_loss' AND sog.is_blank(note) THEN
		RAISE EXCEPTION 'accepting a loss needs a note'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Gap %s would be closed as accepted_loss without an explanation.', gap_id),
				  HINT = 'Say who accepted the loss and why.';
	END IF;

	checkpoint_id := sog.gap_checkpoint(gap_id);
	what := 'gap ' || gap_id;
	IF checkpoint_id < 0 THEN
		PERFORM sog.check_access_missing(what, 2);
	ELSE						-- refused as the gap, not its checkpoint
		SELECT c.consumer INTO consumer FROM sog.checkpoint c WHERE c.id = checkpoint_id;
		IF NOT FOUND THEN
			PERFORM sog.report_unknown_checkpoint(checkpoint_id, 2);
		END IF;
		PERFORM sog.check_access_to(what, consumer, 2);
	END IF;
	IF checkpoint_id < 0 THEN
		RAISE EXCEPTION 'gap % does not exist', gap_id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('No row of sog.gap has id %s.', gap_id),
				  HINT = 'Look up open gaps in sog.unresolved_gaps.';
	END IF;

	-- serialize with the checkpoint's workers, then resolve
	cp := sog.cp_lock(checkpoint_id, 2, false);
	orig := cp;
	IF NOT sog.gap_resolve(gap_id, resolution, note) THEN
		RAISE EXCEPTION 'gap % is already resolved', gap_id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Its resolution is recorded in sog.gap.',
				  HINT = 'Nothing to do; see sog.unresolved_gaps for open gaps.';
	END IF;
	IF sog.gap_count_open(cp.id) = 0 THEN
		IF sog.boundary_unverified(cp) THEN
			cp.state := 'replaying';
		ELSE
			cp := sog.clear_read_boundary(cp);
			cp.state := 'running';
		END IF;
		PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	END IF;
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.resolve_gap_entry(uuid, bigint, text, text) TO PUBLIC;

-- sog.gaps(checkpoint_id): every gap of the checkpoint, open and resolved,
-- in order of detection, on the transaction's snapshot; for its consumers
-- and operators.
CREATE FUNCTION sog.gaps_entry(caller_key uuid, checkpoint_id bigint)
	RETURNS TABLE (gap_id bigint, from_position sog.position, to_position sog.position,
				   reason text, detected_at timestamptz, resolution text,
				   resolved_at timestamptz, note text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.gaps(bigint)');
	consumer text;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	SELECT c.consumer INTO consumer FROM sog.checkpoint c WHERE c.id = gaps_entry.checkpoint_id;
	IF NOT FOUND THEN
		PERFORM sog.report_unknown_checkpoint(gaps_entry.checkpoint_id, 3);
	END IF;
	PERFORM sog.check_access(gaps_entry.checkpoint_id, consumer, 3);
	RETURN QUERY
		SELECT g.id, g.from_position, g.to_position, g.reason, g.detected_at, g.resolution,
			   g.resolved_at, g.note
		  FROM sog.gap g
		 WHERE g.checkpoint_id = gaps_entry.checkpoint_id
		 ORDER BY g.id;
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.gaps_entry(uuid, bigint) TO PUBLIC;
