-- portable/promote.sql: sog.promote, the end of an expired-token recovery,
-- in PL/pgSQL (the C edition: src/functions/promote.c; sog_recovery_fence_open,
-- which the C edition keeps there, is sog.recovery_fence_open in
-- portable/recovery.sql with the rest of recovery's queries).
--
-- A promotion is a compare-and-swap on the attempt's base token and
-- generation, under the checkpoint's row lock (sog.recovery_lock, taken
-- first): the winner installs its successor token, advances the applied
-- position through what its page applied or found duplicate (never
-- backward) and bumps the generation, fencing every other open attempt; a
-- loser is concluded as lost.  A retry of a concluded attempt answers
-- again without changing anything.  Before the swap, the temporal-skew
-- rule: nothing promotes above an unverified or unresolved gap, nor past
-- or into a read boundary it cannot check (sog.boundary_promotable).
--
-- @entry sog.promote(bigint, text, sog.position)

-- sog.promote(recovery_id, successor_token, page_last) -> TABLE(promoted,
-- generation, applied_position, provider_token, reason)
CREATE FUNCTION sog.promote_entry(caller_key uuid, recovery_id bigint, successor_token text,
								  page_last sog.position)
	RETURNS TABLE (promoted boolean, generation bigint, applied_position sog.position,
				   provider_token text, reason text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
ROWS 1
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.promote(bigint, text, sog.position)');
	l record;
	r sog.recovery;
	cp sog.checkpoint;
	orig sog.checkpoint;
	token text;
BEGIN
	PERFORM sog.require_arg(recovery_id IS NULL, 1, 'recovery_id');
	l := sog.recovery_lock(recovery_id);
	r := l.r;
	cp := l.cp;
	promoted := false;
	generation := cp.generation;
	applied_position := cp.applied_position;
	provider_token := sog.cp_token(cp.id);

	IF r.state = 'promoted' THEN
		-- promote_concluded: answered again, a promoted attempt with the same
		-- successor token (a retry after an unknown commit outcome)
		IF successor_token IS DISTINCT FROM r.successor_token THEN
			RAISE EXCEPTION 'recovery attempt % was promoted with another token', r.id
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('It installed %s; this call names %s.',
									  sog.quoted(r.successor_token, 'no token'),
									  sog.quoted(successor_token, 'no token')),
					  HINT = 'Continue from the checkpoint''s current token.';
		END IF;
		promoted := true;
		reason := 'already_promoted';
		generation := r.result_generation;
		applied_position := r.result_applied_position;
		provider_token := r.result_provider_token;
	ELSIF r.state = 'lost' THEN
		reason := 'lost';
		generation := r.result_generation;
		applied_position := r.result_applied_position;
		provider_token := r.result_provider_token;
	ELSIF r.state = 'open' AND r.query_scope IS DISTINCT FROM cp.query_scope THEN
		-- the scope changed under the attempt: its page may lack records
		PERFORM sog.recovery_fail(cp, r.id, 'scope_changed', cp.source_cursor, false);
		reason := 'unresolved';
	ELSIF r.state = 'failed' OR cp.state <> 'running' THEN
		reason := 'unresolved';		-- an unverified or unresolved gap
	ELSIF sog.gap_count_open(cp.id) > 0 THEN
		reason := 'unresolved';
	ELSIF NOT sog.boundary_promotable(cp, r.advance_through) THEN
		reason := 'unresolved';
	ELSIF sog.pos_cmp(page_last, r.last_position) <> 0 THEN
		reason := 'page_incomplete';
	ELSIF page_last IS NULL AND NOT sog.recovery_empty_page_is_barrier(r.provider) THEN
		reason := 'empty_page_not_barrier';
	ELSE
		-- promote_cas: the compare-and-swap on the attempt's base token and
		-- generation.  Won: token := successor, applied_position through what
		-- the attempt applied or found duplicate (never backward), generation
		-- + 1, other open attempts lost.  The conclusion is recorded either way.
		token := provider_token;
		promoted := cp.generation = r.generation AND token IS NOT DISTINCT FROM r.expired_token;
		IF promoted THEN
			orig := cp;
			IF sog.pos_cmp(r.advance_through, cp.applied_position) > 0 THEN
				cp.applied_position := r.advance_through;
			END IF;
			IF sog.pos_cmp(cp.applied_position, cp.receipts_through) > 0 THEN
				cp.receipts_through := cp.applied_position;
			END IF;
			IF sog.pos_cmp(cp.source_cursor, cp.applied_position) <= 0 THEN
				cp := sog.clear_read_boundary(cp);	-- the page covers all that was read
			END IF;
			PERFORM sog.check_generation_room(cp);
			cp.generation := cp.generation + 1;
			cp := sog.cp_write(cp, orig, true, false, true, successor_token);
			PERFORM sog.recovery_fence_open(cp, r.id);
			token := successor_token;
		END IF;
		reason := CASE WHEN promoted THEN 'promoted' ELSE 'lost' END;
		generation := cp.generation;
		applied_position := cp.applied_position;
		provider_token := token;
		PERFORM sog.recovery_conclude(r.id, promoted, generation, successor_token, applied_position,
									  provider_token);
	END IF;
	PERFORM sog.leave(outer_caller);
	RETURN NEXT;
END
$$;
GRANT EXECUTE ON FUNCTION sog.promote_entry(uuid, bigint, text, sog.position) TO PUBLIC;
