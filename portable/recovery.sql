-- portable/recovery.sql: expired-token recovery in PL/pgSQL (the C
-- edition: src/functions/recovery.c): begin_recovery, recovery_event, and every query
-- of recovery that promote (portable/promote.sql), reconfigure
-- (portable/reconfigure.sql) and claim (portable/gaps.sql's part) share:
-- sog.recovery_fail, sog.recovery_fail_other_scope,
-- sog.recovery_empty_page_is_barrier, sog.recovery_conclude and
-- sog.recovery_fence_open (the C edition keeps that one in promote.c).
--
-- Locking is the C edition's: every function locks the attempt's
-- checkpoint row first (sog.cp_lock), then reads the attempt again; all
-- attempts of one checkpoint serialize with each other and with the sink
-- path.  A claim (new generation) fences every open attempt.
--
-- What differs: the C edition reads the attempt and the receipts on the
-- newest snapshot at every isolation level; PL/pgSQL reads them on the
-- statement's snapshot, which at READ COMMITTED (taken after the lock) is
-- the same; at REPEATABLE READ and SERIALIZABLE sog.cp_lock already
-- refuses (40001) a checkpoint changed since the snapshot, and an attempt
-- changes only under its checkpoint's lock.
--
-- A function here that writes the checkpoint (sog.recovery_fail) is given
-- a variable with no unwritten change (what sog.cp_lock or sog.cp_write
-- returned) and writes only its state; its caller sets cp.state to
-- 'failed_closed' if it goes on with the variable.
--
-- @entry sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position)
-- @entry sog.recovery_event(bigint, sog.position, bytea)

-- A provider's contract (read_provider): a checkpoint without a provider
-- gets the safe defaults; a name sog.provider does not describe is 22023.
CREATE FUNCTION sog.recovery_provider(name text, OUT seek_inclusive boolean, OUT no_late_arrivals boolean,
									  OUT empty_page_is_barrier boolean, OUT may_backfill boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	seek_inclusive := false;
	no_late_arrivals := false;
	empty_page_is_barrier := false;
	may_backfill := true;
	IF name IS NULL THEN
		RETURN;
	END IF;
	SELECT p.seek_inclusive, p.no_late_arrivals, p.empty_page_is_barrier, p.may_backfill
	  INTO seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill
	  FROM sog.provider p WHERE p.name = recovery_provider.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'provider "%" is not described in sog.provider', sog.cut(name)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Recovery needs the provider''s seek, ordering, empty-page and backfill contract.',
				  HINT = format('INSERT a row for "%s" into sog.provider.', sog.cut(name));
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_provider(text) FROM PUBLIC;

-- Does the provider document that an empty page proves "nothing more"?
-- (sog_recovery_empty_page_is_barrier)
CREATE FUNCTION sog.recovery_empty_page_is_barrier(provider text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sog.recovery_provider(provider)).empty_page_is_barrier $$;
REVOKE ALL ON FUNCTION sog.recovery_empty_page_is_barrier(text) FROM PUBLIC;

-- Find attempt id, lock its checkpoint, and read both on the newest state
-- (sog_recovery_lock).  22023 for an unknown attempt (42501, as for another
-- consumer's attempt, to a role whose grants do not cover every
-- checkpoint).
CREATE FUNCTION sog.recovery_lock(id bigint, OUT r sog.recovery, OUT cp sog.checkpoint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	what text := 'recovery attempt ' || id;
	consumer text;
BEGIN
	SELECT * INTO r FROM sog.recovery a WHERE a.id = recovery_lock.id;
	IF NOT FOUND THEN
		PERFORM sog.check_access_missing(what, 1);
		RAISE EXCEPTION 'recovery attempt % does not exist', id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('No row of sog.recovery has id %s.', id),
				  HINT = 'Use the id returned by sog.begin_recovery().';
	END IF;
	-- refused as the attempt, not as its checkpoint (sog_checkpoint_consumer)
	SELECT c.consumer INTO consumer FROM sog.checkpoint c WHERE c.id = r.checkpoint_id;
	IF NOT FOUND THEN
		PERFORM sog.report_unknown_checkpoint(r.checkpoint_id, 1);
	END IF;
	PERFORM sog.check_access_to(what, consumer, 1);
	cp := sog.cp_lock(r.checkpoint_id, 1, false);
	SELECT * INTO r FROM sog.recovery a WHERE a.id = recovery_lock.id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'recovery attempt % vanished', id USING ERRCODE = 'internal_error';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_lock(bigint) FROM PUBLIC;

-- Mark attempt recovery_id failed with reason, record the gap (applied,
-- to] (to_pos exactly, or the furthest known read) and fail the checkpoint
-- closed; returns the gap id (sog_recovery_fail).  cp: as locked or last
-- written (its state is written here).
--
-- The gap runs from the applied position (the read boundary's base, if an
-- apply entered it) to the last position it may hold.  With exact set,
-- that is to_pos (the retention refusal knows exactly what is gone);
-- otherwise it is the furthest known read, the cursor or the event that
-- stopped the attempt, when that is above the applied position, and else
-- unknown (NULL: every position above the applied one is suspect).
CREATE FUNCTION sog.recovery_fail(cp sog.checkpoint, recovery_id bigint, reason text,
								  to_pos sog.position, exact boolean) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	orig sog.checkpoint := cp;
	gap bigint;
	from_pos sog.position := sog.boundary_base(cp);
	l record;
BEGIN
	IF NOT exact AND sog.pos_cmp(cp.source_cursor, to_pos) > 0 THEN
		to_pos := cp.source_cursor;
	END IF;
	IF NOT exact AND sog.pos_cmp(to_pos, cp.applied_position) <= 0 THEN
		to_pos := NULL;
	END IF;
	-- an exact loss starts next to the losses on record, as report_gap's
	IF exact THEN
		l := sog.gap_losses_through(cp.id, from_pos, to_pos);
		IF l.gap_id = 0 THEN
			from_pos := l.reached;
		END IF;
	END IF;
	gap := sog.gap_record(cp, reason, 'fail_closed', from_pos, to_pos, NULL);
	IF exact THEN
		PERFORM sog.gap_record_boundary_rest(cp, to_pos);	-- noted records beyond a loss
	END IF;
	UPDATE sog.recovery a SET state = 'failed', failure = reason, gap_id = gap, concluded_at = now()
	 WHERE a.id = recovery_id;
	cp.state := 'failed_closed';
	PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	RETURN gap;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_fail(sog.checkpoint, bigint, text, sog.position, boolean) FROM PUBLIC;

-- The position just above p, for one component (NULL for a tuple, or for
-- 160 nines: sog_position_successor).
CREATE FUNCTION sog.recovery_successor(p sog.position) RETURNS sog.position
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN strpos(p::text, '-') = 0 AND length((p::text::numeric + 1)::text) <= 160
				THEN (p::text::numeric + 1)::text END::sog.position
$$;
REVOKE ALL ON FUNCTION sog.recovery_successor(sog.position) FROM PUBLIC;

-- What a retention refusal proves lost: (applied, the last position below
-- retained_from]; when that is at or below the applied position nothing
-- unapplied is gone (the anchor itself was discarded): the gap is then
-- empty, to = from = the applied position (retention_loss_end).
CREATE FUNCTION sog.recovery_retention_loss_end(cp sog.checkpoint, retained_from sog.position)
	RETURNS sog.position
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	last sog.position := sog.position_predecessor(retained_from);
BEGIN
	IF last IS NULL OR sog.pos_cmp(last, cp.applied_position) < 0 THEN
		RETURN cp.applied_position;
	END IF;
	RETURN last;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_retention_loss_end(sog.checkpoint, sog.position) FROM PUBLIC;

-- The first record an anchor's seek needs is above retained_from?  See the
-- contract, check 2 (retention_lost).
CREATE FUNCTION sog.recovery_retention_lost(cp sog.checkpoint, anchor sog.position, inclusive boolean,
											retained_from sog.position) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	first sog.position;
BEGIN
	IF retained_from IS NULL THEN
		RETURN false;
	END IF;
	IF cp.applied_position IS NULL OR anchor IS NULL THEN
		first := '0';
	ELSIF inclusive THEN
		first := anchor;
	ELSE
		first := coalesce(sog.recovery_successor(anchor), anchor);	-- tuples: above the anchor
	END IF;
	RETURN sog.pos_cmp(retained_from, first) > 0;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_retention_lost(sog.checkpoint, sog.position, boolean, sog.position) FROM PUBLIC;

-- The refusal of a new attempt, if any (in the order docs/consumer.md's recovery
-- section gives), or NULL when the attempt may open (refusal).
CREATE FUNCTION sog.recovery_refusal(cp sog.checkpoint, no_late_arrivals boolean, may_backfill boolean,
									 scope text, anchor sog.position, inclusive boolean,
									 retained sog.position, finalized sog.position) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF scope IS DISTINCT FROM cp.query_scope THEN
		RETURN 'scope_changed';
	END IF;
	IF sog.recovery_retention_lost(cp, anchor, inclusive, retained) THEN
		IF NOT sog.gap_loss_accepted(cp.id, cp.applied_position,
									 sog.recovery_retention_loss_end(cp, retained)) THEN
			RETURN 'retention';		-- unless an operator accepted that loss
		END IF;
	END IF;
	IF cp.prune_horizon IS NOT NULL AND sog.pos_cmp(anchor, cp.prune_horizon) <= 0 THEN
		RETURN 'receipts_pruned';
	END IF;
	IF sog.pos_cmp(anchor, cp.applied_position) > 0 OR
	   (sog.pos_cmp(anchor, cp.applied_position) = 0 AND NOT inclusive AND NOT no_late_arrivals) THEN
		RETURN 'coverage_unproven';
	END IF;
	IF may_backfill AND (finalized IS NULL OR sog.pos_cmp(finalized, cp.applied_position) < 0) THEN
		RETURN 'no_finality';
	END IF;
	RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_refusal(sog.checkpoint, boolean, boolean, text, sog.position, boolean, sog.position, sog.position) FROM PUBLIC;

-- sog.begin_recovery(checkpoint_id, generation, expired_token, query_scope,
-- anchor, anchor_inclusive, retained_from, finalized_through) -> sog.recovery
CREATE FUNCTION sog.begin_recovery_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
										 expired_token text, query_scope text,
										 anchor sog.position, anchor_inclusive boolean,
										 retained_from sog.position, finalized_through sog.position)
	RETURNS sog.recovery
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position)');
	cp sog.checkpoint;
	prov record;
	token text;
	failure text;
	attempt bigint;
	result sog.recovery;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	PERFORM sog.require_arg(anchor_inclusive IS NULL, 6, 'anchor_inclusive');
	IF anchor_inclusive AND anchor IS NULL THEN
		RAISE EXCEPTION 'an inclusive seek needs an anchor'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'anchor is NULL and anchor_inclusive is true: there is no position to start at.',
				  HINT = 'Pass the applied position as the anchor; with nothing applied yet there is nothing to verify, so read from the provider''s beginning without a recovery attempt.';
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, false);
	PERFORM sog.check_generation(cp, generation, 'begin_recovery');
	prov := sog.recovery_provider(cp.provider);

	-- check_begin: 22023 / SG006 / 22023 for what no attempt may begin with
	token := sog.cp_token(cp.id);
	IF expired_token IS DISTINCT FROM token THEN
		RAISE EXCEPTION 'provider token of checkpoint % is not the expired one', cp.id
			USING ERRCODE = 'SG006',
				  DETAIL = format('The attempt names %s, but the checkpoint holds %s.',
								  sog.quoted(expired_token, 'no token'),
								  sog.quoted(token, 'no token')),
				  HINT = 'Another transaction moved the token: re-read the checkpoint and retry with its token.';
	END IF;
	IF anchor_inclusive AND NOT prov.seek_inclusive THEN
		RAISE EXCEPTION '%', CASE WHEN cp.provider IS NOT NULL
								  THEN format('provider "%s" cannot seek inclusively', sog.cut(cp.provider))
								  ELSE 'a checkpoint without a provider cannot seek inclusively' END
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The attempt asks to start at anchor %s itself, but sog.provider says seek_inclusive is false.',
								  sog.pos_str(anchor)),
				  HINT = 'Seek after the anchor (anchor_inclusive false), or correct the provider''s row if its documentation allows an inclusive seek.';
	END IF;
	failure := sog.recovery_refusal(cp, prov.no_late_arrivals, prov.may_backfill, query_scope, anchor,
									anchor_inclusive, retained_from, finalized_through);

	INSERT INTO sog.recovery (checkpoint_id, generation, expired_token, query_scope, provider, anchor,
							  anchor_inclusive, retained_from, finalized_through, applied_at_start,
							  checkpoint_state_at_start)
	VALUES (cp.id, cp.generation, expired_token, query_scope, cp.provider, anchor, anchor_inclusive,
			retained_from, finalized_through, cp.applied_position, cp.state)
	RETURNING id INTO attempt;

	IF failure = 'retention' THEN
		PERFORM sog.recovery_fail(cp, attempt, failure, sog.recovery_retention_loss_end(cp, retained_from), true);
	ELSIF failure IS NOT NULL THEN
		PERFORM sog.recovery_fail(cp, attempt, failure, cp.source_cursor, false);
	END IF;

	SELECT * INTO result FROM sog.recovery a WHERE a.id = attempt;
	PERFORM sog.leave(outer_caller);
	RETURN result;
END
$$;
GRANT EXECUTE ON FUNCTION sog.begin_recovery_entry(uuid, bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position) TO PUBLIC;

-- 55000 unless the attempt is open (check_open).
CREATE FUNCTION sog.recovery_check_open(r sog.recovery) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF r.state = 'open' THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'recovery attempt % is %', r.id, r.state
		USING ERRCODE = 'object_not_in_prerequisite_state',
			  DETAIL = CASE WHEN r.state = 'lost' AND r.result_generation IS NOT NULL
					   THEN format('Only an open attempt records events; this one was concluded when the checkpoint moved on to generation %s.',
								   r.result_generation)
					   ELSE format('Only an open attempt records events%s%s.',
								   CASE WHEN r.failure IS NOT NULL THEN '; it failed with ' ELSE '' END,
								   coalesce(r.failure, '')) END,
			  HINT = 'Begin a new attempt with sog.begin_recovery() once the checkpoint allows it.';
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_check_open(sog.recovery) FROM PUBLIC;

-- Decide one fetched event of an open attempt: its outcome (verified,
-- apply, duplicate) or, in stop, what stops the attempt (coverage_gap,
-- unverifiable, mismatch).  An event to apply gets its receipt here (and
-- cp_out the receipts_through written).  SG004 above the applied position
-- unless running (decide_event).
CREATE FUNCTION sog.recovery_decide_event(r sog.recovery, cp sog.checkpoint, pos sog.position, dig bytea,
										  OUT outcome text, OUT stop text, OUT cp_out sog.checkpoint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	have bytea;
	orig sog.checkpoint := cp;
BEGIN
	cp_out := cp;
	IF (r.last_position IS NOT NULL AND sog.pos_cmp(pos, r.last_position) <= 0) OR
	   (r.last_position IS NULL AND NOT r.anchor_inclusive AND r.anchor IS NOT NULL AND
		sog.pos_cmp(pos, r.anchor) <= 0) OR
	   (r.last_position IS NULL AND r.anchor_inclusive AND
		sog.pos_cmp(r.anchor, cp.applied_position) <= 0 AND
		sog.pos_cmp(pos, r.anchor) <> 0 AND
		-- anchor_gone_accepted: the anchor is gone with an accepted loss
		NOT (r.retained_from IS NOT NULL AND r.anchor IS NOT NULL AND
			 sog.pos_cmp(r.retained_from, r.anchor) > 0 AND sog.pos_cmp(pos, r.retained_from) >= 0)) THEN
		-- Not above the previous event; an exclusive seek returned the anchor
		-- or less; an inclusive seek did not start at the anchor (nor, when
		-- the anchor is gone with an accepted loss, at or past retained_from).
		stop := 'coverage_gap';
		RETURN;
	END IF;
	IF sog.pos_cmp(pos, cp.applied_position) <= 0 THEN
		have := sog.receipt_lookup(cp.id, cp.prune_horizon, pos);
		IF have IS NULL THEN
			stop := 'unverifiable';
		ELSIF have <> dig THEN
			stop := 'mismatch';
		ELSE
			outcome := 'verified';
		END IF;
		RETURN;
	END IF;

	-- The temporal-skew rule, as for apply: nothing above the applied
	-- position is written or counted while a gap is unverified (replaying)
	-- or unresolved (failed_closed).  Verify the gap first.
	IF cp.state <> 'running' THEN
		PERFORM sog.report_gap_pending(cp, pos);
	END IF;
	IF cp.receipts_through IS NOT NULL AND sog.pos_cmp(pos, cp.receipts_through) <= 0 THEN
		have := sog.receipt_lookup(cp.id, cp.prune_horizon, pos);
		IF have IS NOT NULL THEN
			IF have <> dig THEN
				stop := 'mismatch';
			ELSE
				outcome := 'duplicate';
			END IF;
			RETURN;
		END IF;
	END IF;
	PERFORM sog.receipt_store(cp.id, cp.receipt_ring, ARRAY[pos], ARRAY[dig]);
	IF sog.pos_cmp(pos, cp.receipts_through) > 0 THEN
		cp.receipts_through := pos;
		cp_out := sog.cp_write(cp, orig, false, false, false, NULL);
	END IF;
	outcome := 'apply';
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_decide_event(sog.recovery, sog.checkpoint, sog.position, bytea) FROM PUBLIC;

-- sog.recovery_event(recovery_id, position, payload_digest) -> text
CREATE FUNCTION sog.recovery_event_entry(caller_key uuid, recovery_id bigint, "position" sog.position,
										 payload_digest bytea)
	RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.recovery_event(bigint, sog.position, bytea)');
	l record;
	d record;
BEGIN
	PERFORM sog.require_arg(recovery_id IS NULL, 1, 'recovery_id');
	PERFORM sog.require_arg("position" IS NULL, 2, 'position');
	PERFORM sog.require_arg(payload_digest IS NULL, 3, 'payload_digest');
	IF octet_length(payload_digest) <> 32 THEN
		PERFORM sog.check_digest('payload digest', payload_digest);
	END IF;

	l := sog.recovery_lock(recovery_id);
	PERFORM sog.recovery_check_open(l.r);
	PERFORM sog.check_generation(l.cp, (l.r).generation, 'recovery event');
	d := sog.recovery_decide_event(l.r, l.cp, "position", payload_digest);
	IF d.stop IS NOT NULL THEN
		PERFORM sog.recovery_fail(d.cp_out, recovery_id, d.stop, "position", false);
		PERFORM sog.leave(outer_caller);
		RETURN d.stop;
	END IF;
	UPDATE sog.recovery a SET last_position = recovery_event_entry."position",
		   events_verified = a.events_verified + (d.outcome = 'verified')::int,
		   events_applied = a.events_applied + (d.outcome = 'apply')::int,
		   events_duplicate = a.events_duplicate + (d.outcome = 'duplicate')::int,
		   advance_through = CASE WHEN d.outcome = 'verified' THEN a.advance_through
							  ELSE recovery_event_entry."position" END
	 WHERE a.id = recovery_id;
	PERFORM sog.leave(outer_caller);
	RETURN d.outcome;
END
$$;
GRANT EXECUTE ON FUNCTION sog.recovery_event_entry(uuid, bigint, sog.position, bytea) TO PUBLIC;

-- The checkpoint's query_scope is now scope (sog.reconfigure): every open
-- attempt begun under another scope fails with scope_changed, as
-- begin_recovery refuses one (a gap, failed_closed).  Its page was fetched
-- under the old scope, so it must not promote.  Runs under the
-- checkpoint's lock; returns how many failed
-- (sog_recovery_fail_other_scope).  cp: as locked or last written.
CREATE FUNCTION sog.recovery_fail_other_scope(cp sog.checkpoint, scope text) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ids bigint[];
	attempt bigint;
BEGIN
	ids := ARRAY(SELECT a.id FROM sog.recovery a
				  WHERE a.checkpoint_id = cp.id AND a.state = 'open' AND a.query_scope IS DISTINCT FROM scope
				  ORDER BY a.id);
	FOREACH attempt IN ARRAY ids LOOP
		PERFORM sog.recovery_fail(cp, attempt, 'scope_changed', cp.source_cursor, false);
		cp.state := 'failed_closed';	-- as written
	END LOOP;
	RETURN coalesce(array_length(ids, 1), 0);
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_fail_other_scope(sog.checkpoint, text) FROM PUBLIC;

-- Record an attempt's conclusion by promote: promoted (with its successor
-- token) or lost, and the checkpoint it left (sog_recovery_conclude).
CREATE FUNCTION sog.recovery_conclude(id bigint, promoted boolean, generation bigint, successor text,
									  applied sog.position, token text) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
	UPDATE sog.recovery a
	   SET state = CASE WHEN $2 THEN 'promoted' ELSE 'lost' END, result_generation = $3,
		   successor_token = CASE WHEN $2 THEN $4 END,
		   result_applied_position = $5, result_provider_token = $6,
		   concluded_at = now()
	 WHERE a.id = $1
$$;
REVOKE ALL ON FUNCTION sog.recovery_conclude(bigint, boolean, bigint, text, sog.position, text) FROM PUBLIC;

-- Conclude every other open recovery attempt of a checkpoint whose
-- generation just changed (a claim, or another attempt's promotion): they
-- can no longer win, so they are "lost" and show the checkpoint as it is
-- now.  A claim (except_id 0) tells, in a NOTICE, of an attempt whose page
-- committed events above the applied position.  Runs under the
-- checkpoint's lock, after the checkpoint was written (its token is read
-- from the row) (sog_recovery_fence_open, in the C edition's promote.c).
CREATE FUNCTION sog.recovery_fence_open(cp sog.checkpoint, except_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	token text := sog.cp_token(cp.id);
	l record;
BEGIN
	-- the attempts in id order: the notices do not follow the heap's
	FOR l IN
		WITH lost AS (
			UPDATE sog.recovery a SET state = 'lost', result_generation = cp.generation,
				   result_applied_position = cp.applied_position, result_provider_token = token,
				   concluded_at = now()
			 WHERE a.checkpoint_id = cp.id AND a.id <> except_id AND a.state = 'open'
			RETURNING a.id, a.advance_through::text AS through,
					  sog.pos_cmp(a.advance_through, cp.applied_position) > 0 AS above)
		SELECT lost.id, lost.through, lost.above FROM lost ORDER BY lost.id
	LOOP
		IF l.above IS NULL OR NOT l.above OR except_id <> 0 THEN
			CONTINUE;			-- told only to a claim (a promotion counts its own page)
		END IF;
		RAISE NOTICE 'recovery attempt % of checkpoint % was concluded as lost with committed events above the applied position',
			l.id, cp.id
			USING DETAIL = format('Its events through %s are in the sink and have receipts, but the applied position stays %s: the attempt did not promote.',
								  l.through, sog.pos_str(cp.applied_position)),
				  HINT = 'Resume from the applied position as usual: re-delivered, those events are answered false (or duplicate in a new recovery attempt) and the applied position moves through them.';
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sog.recovery_fence_open(sog.checkpoint, bigint) FROM PUBLIC;
