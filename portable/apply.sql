-- portable/apply.sql: applying events in the sink transaction in PL/pgSQL
-- (the C edition: src/functions/apply.c, and src/functions/receipt.c): note_read, apply,
-- apply_batch, apply_batch_int8, apply_run, commit_page, a whole page in
-- one call (apply_run_page, apply_batch_page), receipts and
-- prune_receipts.
--
-- Locking is the C edition's: each function first locks the checkpoint
-- (sog.cp_lock: the caller's grant checked, the newest row version locked
-- to the end of the transaction), then checks the caller's generation
-- (SG001) before anything else.  The temporal-skew rule: no position above
-- applied_position is accepted unless the checkpoint is running (SG004).
--
-- The hot path (sog.apply_events): a batch whose positions strictly
-- increase from above the applied position of a running checkpoint with
-- no receipt above it (the usual case; a read boundary it closes
-- included) is decided in a few set-based statements: every event is new,
-- the run is stored as the C edition stores it, the row written once.
-- Anything else (duplicates, conflicts, receipts a recovery attempt left
-- above the applied position, a pending gap) goes event by event as
-- apply_events goes in C, the stored digests it may need fetched in one
-- statement first.  Neither uses an EXCEPTION block.
--
-- The row is written once per call, at its end (sog.cp_write): the apply
-- changes the checkpoint variable only (sog.apply_events,
-- sog.advance_applied), and a page call (apply_run_page, apply_batch_page)
-- then notes the next page and swaps the token on the same variable
-- (sog.page_rest_write: note_read's and commit_page's own steps,
-- sog.note_boundary and sog.check_token) before the one UPDATE.
--
-- @entry sog.note_read(bigint, bigint, sog.position, text, bigint)
-- @entry sog.apply(bigint, bigint, sog.position, bytea)
-- @entry sog.apply_batch(bigint, bigint, sog.position[], bytea[])
-- @entry sog.apply_batch_int8(bigint, bigint, bigint[], bytea[])
-- @entry sog.apply_run(bigint, bigint, bigint, bytea)
-- @entry sog.commit_page(bigint, bigint, text, text)
-- @entry sog.apply_run_page(bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text)
-- @entry sog.apply_batch_page(bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text)
-- @entry sog.receipts(bigint, sog.position, sog.position)
-- @entry sog.prune_receipts(bigint, sog.position)

-- ---------------------------------------------------------------------------
-- Argument checks of src/type/util.c that these functions share (claim,
-- verify_gap and halt check the same way).  NOTE for the lead: part A may
-- define the same two helpers; keep one copy.

-- 22023 unless hash is a buffer hash: 64 hexadecimal characters, any case
-- (NULL passes: "no hash") (sog_check_buffer_hash).
CREATE FUNCTION sog.check_buffer_hash(what text, hash text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF hash IS NULL OR (octet_length(hash) = 64 AND ltrim(hash, '0123456789abcdefABCDEF') = '') THEN
		RETURN;
	END IF;
	RAISE EXCEPTION '% is not a buffer hash', what
		USING ERRCODE = 'invalid_parameter_value',
			  DETAIL = format('A buffer hash is 64 hexadecimal characters; the value is "%s".', sog.cut(hash)),
			  HINT = 'Pass the lowercase hex of the chained SHA-256 (sog.buffer_hash), or NULL when no hash was kept.';
END
$$;
REVOKE ALL ON FUNCTION sog.check_buffer_hash(text, text) FROM PUBLIC;

-- 22023 if count records cannot be what is held in (applied, cursor]: a
-- negative count, or, when both positions have one component, more
-- records than the range has positions (sog_check_buffered_count).
CREATE FUNCTION sog.check_buffered_count(count bigint, cursor sog.position, applied sog.position)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	room numeric;
BEGIN
	IF count < 0 THEN
		RAISE EXCEPTION 'buffered count must not be negative'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The count is %s.', count),
				  HINT = 'Pass the number of records held in the buffer.';
	END IF;
	IF cursor IS NULL THEN
		RETURN;
	END IF;
	IF applied IS NOT NULL THEN
		room := sog.position_distance(applied, cursor);
	ELSE
		room := sog.position_distance('0', cursor) + 1;
	END IF;
	IF room IS NULL THEN
		RETURN;					-- tuples: no arithmetic on positions
	END IF;
	IF count > room THEN
		RAISE EXCEPTION 'buffered count % exceeds the records in (%, %]', count, coalesce(applied::text, 'start'), cursor
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('That range holds at most %s positions.', room),
				  HINT = 'Count only the records read above the applied position and not yet applied.';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.check_buffered_count(bigint, sog.position, sog.position) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- apply.c

-- SG003: the stored receipt of pos has digest have, the event carries got.
CREATE FUNCTION sog.report_receipt_conflict(cp sog.checkpoint, pos sog.position, have bytea, got bytea)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'receipt conflict at position % of checkpoint %', sog.pos_str(pos), cp.id
		USING ERRCODE = 'SG003',
			  DETAIL = format('The receipt records payload digest %s; this event carries %s.',
							  encode(have, 'hex'), encode(got, 'hex')),
			  HINT = 'The source returned different bytes for an applied position: stop and audit the stream; do not write this event.';
END
$$;
REVOKE ALL ON FUNCTION sog.report_receipt_conflict(sog.checkpoint, sog.position, bytea, bytea) FROM PUBLIC;

-- The receipts through applied are stored: advance the locked checkpoint's
-- applied position (and receipts_through) to it and end a read boundary it
-- reached, in the variable (advance_applied): the caller writes the row,
-- once, after whatever else its call changes.
CREATE FUNCTION sog.advance_applied(cp sog.checkpoint, applied sog.position)
	RETURNS sog.checkpoint
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	cp.applied_position := applied;
	IF cp.receipts_through IS NULL OR applied > cp.receipts_through THEN
		cp.receipts_through := applied;
	END IF;
	IF cp.source_cursor IS NULL OR cp.source_cursor <= applied THEN
		cp.source_cursor := applied;	-- sog.clear_read_boundary
		cp.read_base := NULL;
		cp.read_hash := NULL;
		cp.read_count := NULL;
	END IF;
	RETURN cp;
END
$$;
REVOKE ALL ON FUNCTION sog.advance_applied(sog.checkpoint, sog.position) FROM PUBLIC;

-- Apply the events pos[i] (digest dig[i]; both 1-based, checked) to the
-- locked checkpoint cp: decide each one, store the new receipts as the C
-- edition stores them and advance applied_position in cp_out, the
-- checkpoint as the apply leaves it; the caller writes the row
-- (apply_events).  Element lb + i - 1 of res is true for a new event i.
CREATE FUNCTION sog.apply_events(cp sog.checkpoint, pos sog.position[], dig bytea[], lb integer,
								 OUT cp_out sog.checkpoint, OUT res boolean[])
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	n int := coalesce(cardinality(pos), 0);
	checkable boolean := (cp.read_hash IS NOT NULL OR cp.read_count IS NOT NULL)
						 AND cp.source_cursor IS NOT NULL
						 AND (cp.applied_position IS NULL OR cp.source_cursor > cp.applied_position);
	boundary boolean;
	stored sog.position;
	applied sog.position := cp.applied_position;
	top sog.position;
	pre bytea[];
	new_pos sog.position[] := '{}';
	new_dig bytea[] := '{}';
	nn int := 0;
	run_lo int := 1;
	fpos sog.position[] := '{}';
	fdig bytea[] := '{}';
	nf int := 0;
	p sog.position;
	d bytea;
	have bytea;
	k int;
BEGIN
	cp_out := cp;
	IF n = 0 THEN
		res := '{}';
		RETURN;
	END IF;

	-- The usual case: a running checkpoint with no receipt above its applied
	-- position, and positions strictly increasing from above it.  Every event
	-- is new; a read boundary that one of them reaches is checked there.
	IF cp.state = 'running'
	   AND (cp.receipts_through IS NULL OR cp.receipts_through <= cp.applied_position)
	   AND (cp.applied_position IS NULL OR pos[1] > cp.applied_position)
	   AND (n = 1 OR NOT EXISTS (SELECT FROM unnest(pos[1 : n - 1], pos[2 : n]) AS u(a, b) WHERE a >= b)) THEN
		IF checkable THEN
			-- receipts_through <= applied: stored through the applied position
			k := (SELECT min(u.i) FROM unnest(pos) WITH ORDINALITY AS u(q, i) WHERE u.q >= cp.source_cursor);
			IF k IS NOT NULL THEN
				-- the boundary closes at event k: exactly its records applied
				nf := CASE WHEN pos[k]::text = cp.source_cursor::text THEN k ELSE k - 1 END;
				PERFORM sog.boundary_check_close(cp, pos[k], cp.applied_position,
												 pos[1 : nf], dig[1 : nf]);
			END IF;
		END IF;
		PERFORM sog.receipt_store(cp.id, cp.receipt_ring, pos, dig);
		cp_out := sog.advance_applied(cp, pos[n]);
		res := array_fill(true, ARRAY[n], ARRAY[lb]);
		RETURN;
	END IF;

	-- Event by event.  The stored digests an event may need: of those at or
	-- below the applied position or a receipt a recovery attempt left above
	-- it, fetched at once (what this call stores is in new_pos).
	boundary := checkable;
	IF boundary THEN
		stored := sog.boundary_stored_through(cp);
	END IF;
	top := CASE WHEN cp.receipts_through IS NULL OR cp.receipts_through <= cp.applied_position
				THEN cp.applied_position ELSE cp.receipts_through END;
	IF top IS NOT NULL THEN
		pre := sog.receipt_lookup_many(cp.id, cp.prune_horizon, ARRAY(SELECT CASE WHEN u.q <= top THEN u.q END
													  FROM unnest(pos) WITH ORDINALITY AS u(q, i) ORDER BY u.i));
	ELSE
		pre := '{}';
	END IF;
	res := array_fill(NULL::boolean, ARRAY[n], ARRAY[lb]);
	FOR i IN 1 .. n LOOP
		p := pos[i];
		d := dig[i];
		IF applied IS NOT NULL AND p <= applied THEN
			-- at or below applied: a duplicate when a receipt with its digest
			-- exists or it is at or below the prune horizon; SG003 for another
			-- digest; SG005 otherwise (apply_at_or_below)
			k := array_position(new_pos, p);
			have := CASE WHEN k IS NOT NULL THEN new_dig[k] ELSE pre[i] END;
			IF have IS NOT NULL THEN
				IF have <> d THEN
					PERFORM sog.report_receipt_conflict(cp, p, have, d);
				END IF;
				res[lb + i - 1] := false;
				CONTINUE;
			END IF;
			IF cp.prune_horizon IS NOT NULL AND p <= cp.prune_horizon THEN
				res[lb + i - 1] := false;		-- pruned: known to be applied
				CONTINUE;
			END IF;
			RAISE EXCEPTION 'position % of checkpoint % is out of order', p, cp.id
				USING ERRCODE = 'SG005',
					  DETAIL = format('The checkpoint has applied through %s and holds no receipt for %s (prune horizon %s).',
									  sog.pos_str(applied), p, sog.pos_str(cp.prune_horizon)),
					  HINT = 'Apply events in increasing position order, resuming from the resume_from of sog.claim().';
		END IF;
		IF cp.state <> 'running' THEN
			PERFORM sog.report_gap_pending(cp, p);
		END IF;
		IF boundary THEN
			IF p <= cp.source_cursor THEN
				nf := nf + 1;
				fpos[nf] := p;
				fdig[nf] := d;
			END IF;
			IF p >= cp.source_cursor THEN
				-- the boundary closes here: exactly its records applied
				PERFORM sog.boundary_check_close(cp, p, stored, fpos, fdig);
				boundary := false;
			END IF;
		END IF;
		IF cp.receipts_through IS NOT NULL AND p <= cp.receipts_through THEN
			-- above applied, at or below receipts_through: a recovery attempt
			-- may have written it; every receipt here gets a row of its own
			-- (apply_above_recovered)
			IF nn >= run_lo THEN
				PERFORM sog.receipt_store(cp.id, cp.receipt_ring, new_pos[run_lo : nn], new_dig[run_lo : nn]);
				run_lo := nn + 1;
			END IF;
			have := pre[i];
			IF have IS NOT NULL THEN
				IF have <> d THEN
					PERFORM sog.report_receipt_conflict(cp, p, have, d);
				END IF;
				res[lb + i - 1] := false;
			ELSE
				nn := nn + 1;
				new_pos[nn] := p;
				new_dig[nn] := d;
				PERFORM sog.receipt_store(cp.id, cp.receipt_ring, ARRAY[p], ARRAY[d]);
				run_lo := nn + 1;
				res[lb + i - 1] := true;
			END IF;
		ELSE
			nn := nn + 1;
			new_pos[nn] := p;
			new_dig[nn] := d;
			res[lb + i - 1] := true;
		END IF;
		applied := p;
	END LOOP;

	IF applied IS NOT NULL AND (cp.applied_position IS NULL OR applied > cp.applied_position) THEN
		IF nn >= run_lo THEN
			PERFORM sog.receipt_store(cp.id, cp.receipt_ring, new_pos[run_lo : nn], new_dig[run_lo : nn]);
		END IF;
		cp_out := sog.advance_applied(cp, applied);
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.apply_events(sog.checkpoint, sog.position[], bytea[], integer) FROM PUBLIC;

-- sog.apply(checkpoint_id, generation, position, payload_digest) -> boolean
CREATE FUNCTION sog.apply_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
								"position" sog.position, payload_digest bytea)
	RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply(bigint, bigint, sog.position, bytea)');
	cp sog.checkpoint;
	a record;
BEGIN
	IF checkpoint_id IS NULL OR generation IS NULL OR "position" IS NULL OR payload_digest IS NULL THEN
		PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
		PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
		PERFORM sog.require_arg("position" IS NULL, 3, 'position');
		PERFORM sog.require_arg(payload_digest IS NULL, 4, 'payload_digest');
	END IF;
	IF octet_length(payload_digest) <> 32 THEN
		PERFORM sog.check_digest('payload digest', payload_digest);
	END IF;
	cp := sog.cp_lock(checkpoint_id, 1, false);
	IF generation <> cp.generation THEN
		PERFORM sog.check_generation(cp, generation, 'apply');
	END IF;
	a := sog.apply_events(cp, ARRAY["position"], ARRAY[payload_digest], 1);
	PERFORM sog.cp_write(a.cp_out, cp, false, false, false, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN a.res[1];
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_entry(uuid, bigint, bigint, sog.position, bytea) TO PUBLIC;

-- The records of two parallel arrays of a batch, checked as
-- sog_records_from_arrays checks them, for integer positions: element by
-- element a NULL, then a negative position, then a digest that is not 32
-- bytes (the error path of apply_batch_int8).
CREATE FUNCTION sog.check_records_int8(positions bigint[], payload_digests bytea[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	np int := coalesce(cardinality(positions), 0);
	nd int := coalesce(cardinality(payload_digests), 0);
	pl int := coalesce(array_lower(positions, 1), 1);
	dl int := coalesce(array_lower(payload_digests, 1), 1);
	p bigint;
	d bytea;
BEGIN
	PERFORM sog.check_record_shape(positions, payload_digests);
	FOR i IN 1 .. np LOOP
		p := positions[pl + i - 1];
		d := payload_digests[dl + i - 1];
		IF p IS NULL OR d IS NULL THEN
			RAISE EXCEPTION 'events need a position and a payload digest'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The %s of element %s is NULL.',
									  CASE WHEN p IS NULL THEN 'position' ELSE 'payload digest' END, i),
					  HINT = 'Remove the incomplete element from the arrays.';
		END IF;
		IF p < 0 THEN
			RAISE EXCEPTION 'cannot convert a negative number to a position'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Element %s of the array is %s.', i, p),
					  HINT = 'Positions are non-negative integers.';
		END IF;
		IF octet_length(d) <> 32 THEN
			PERFORM sog.check_digest('payload digest', d);
		END IF;
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sog.check_records_int8(bigint[], bytea[]) FROM PUBLIC;

-- The rest of a page, in apply_run_page's and apply_batch_page's
-- arguments from 5 on: the next page's read boundary (next_cursor,
-- next_buffer_hash, next_buffered_count: what note_read takes) and the
-- provider token's compare-and-swap (expected_token, successor_token: what
-- commit_page takes).  Checked before the checkpoint is locked: 22023 for
-- a hash or a count without the cursor they describe, or a hash that is
-- not one (page_rest_args).  The callers call it only when a hash or a
-- count is given (nothing else can be refused).
CREATE FUNCTION sog.page_rest_args(fname text, next_cursor sog.position, next_buffer_hash text,
								   next_buffered_count bigint)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF next_cursor IS NULL AND (next_buffer_hash IS NOT NULL OR next_buffered_count IS NOT NULL) THEN
		RAISE EXCEPTION '% was given the next page''s % without its cursor', fname,
			CASE WHEN next_buffer_hash IS NOT NULL THEN 'buffer hash' ELSE 'record count' END
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('next_cursor is NULL; next_buffer_hash is %s and next_buffered_count is %s.',
								  CASE WHEN next_buffer_hash IS NOT NULL THEN 'given' ELSE 'NULL' END,
								  coalesce(next_buffered_count::text, 'NULL')),
				  HINT = 'Pass next_cursor, the last position of the next page read, with its hash or count; or none of the three when no next page is held.';
	END IF;
	IF next_buffer_hash IS NOT NULL THEN
		PERFORM sog.check_buffer_hash('next_buffer_hash', next_buffer_hash);
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.page_rest_args(text, sog.position, text, bigint) FROM PUBLIC;

-- Record the read boundary (applied_position, cursor] on the locked
-- checkpoint cp, in the variable: note_read's checks (SG004 beyond a
-- pending gap, SG005 behind the applied position, 22023 for a count the
-- range cannot hold), then the boundary's rule (sog.boundary_note: changed
-- false for the same note again; recorded, the boundary_recorded flag of
-- the write) (note_boundary).
CREATE FUNCTION sog.note_boundary(cp sog.checkpoint, cursor sog.position, hash text, count bigint,
								  OUT cp_out sog.checkpoint, OUT changed boolean, OUT recorded boolean)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	b record;
BEGIN
	IF cp.state <> 'running' THEN
		PERFORM sog.report_gap_pending(cp, cursor);
	END IF;
	IF cp.applied_position IS NOT NULL AND cursor < cp.applied_position THEN
		RAISE EXCEPTION 'read cursor % of checkpoint % is behind its applied position', cursor, cp.id
			USING ERRCODE = 'SG005',
				  DETAIL = format('The checkpoint has applied through %s.', cp.applied_position),
				  HINT = 'Report the last position fetched from the source; it cannot be below what was applied.';
	END IF;
	IF count IS NOT NULL THEN
		PERFORM sog.check_buffered_count(count, cursor, cp.applied_position);
	END IF;
	b := sog.boundary_note(cp, cursor, hash, count);
	cp_out := b.cp_out;
	changed := b.changed;
	recorded := b.recorded;
END
$$;
REVOKE ALL ON FUNCTION sog.note_boundary(sog.checkpoint, sog.position, text, bigint) FROM PUBLIC;

-- The provider token's compare-and-swap on the locked checkpoint cp: SG006
-- unless it holds expected (NULL: no token yet).  The swap itself is the
-- write's (sog.cp_write with token_changed and the successor) (swap_token).
CREATE FUNCTION sog.check_token(cp sog.checkpoint, expected text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	token text := sog.cp_token(cp.id);
BEGIN
	IF expected IS DISTINCT FROM token THEN
		RAISE EXCEPTION 'provider token of checkpoint % is not the expected one', cp.id
			USING ERRCODE = 'SG006',
				  DETAIL = format('Expected %s, but the checkpoint holds %s.',
								  sog.quoted(expected, 'no token'),
								  sog.quoted(token, 'no token')),
				  HINT = 'Another transaction committed a page first: roll back and claim again (the claim returns the checkpoint''s token).';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.check_token(sog.checkpoint, text) FROM PUBLIC;

-- The end of every apply but sog.apply's: cp is the locked checkpoint as
-- the apply left it, orig as locked.  A page call's rest (all NULL for
-- apply_batch, apply_batch_int8 and apply_run): the next page's note
-- (next_cursor given), as note_read makes it, then (a token given) the
-- token's compare-and-swap, as commit_page makes it; then the one write of
-- the row, of whatever the call changed (page_rest_apply, then
-- sog_checkpoint_write).
CREATE FUNCTION sog.page_rest_write(cp sog.checkpoint, orig sog.checkpoint, next_cursor sog.position,
									next_buffer_hash text, next_buffered_count bigint,
									expected_token text, successor_token text)
	RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	b record;
	recorded boolean := false;
	swap boolean := expected_token IS NOT NULL OR successor_token IS NOT NULL;
BEGIN
	IF next_cursor IS NOT NULL THEN
		b := sog.note_boundary(cp, next_cursor, next_buffer_hash, next_buffered_count);
		cp := b.cp_out;
		recorded := b.recorded;
	END IF;
	IF swap THEN
		PERFORM sog.check_token(cp, expected_token);
	END IF;
	PERFORM sog.cp_write(cp, orig, false, recorded, swap, successor_token);
END
$$;
REVOKE ALL ON FUNCTION sog.page_rest_write(sog.checkpoint, sog.checkpoint, sog.position, text, bigint, text, text)
	FROM PUBLIC;

-- apply_batch, apply_batch_int8 and apply_batch_page (fname, for the
-- errors), and the page's rest (NULLs but for apply_batch_page): the
-- arguments checked (the positions and digests as sog_records_from_arrays
-- checks them; apply_batch_int8's entry checks its integer arrays itself,
-- before it casts them), then the page's rest, before the lock; the
-- result has the subscripts of the positions array.
CREATE FUNCTION sog.apply_batch_call(checkpoint_id bigint, generation bigint, positions sog.position[],
									 payload_digests bytea[], fname text, next_cursor sog.position,
									 next_buffer_hash text, next_buffered_count bigint,
									 expected_token text, successor_token text)
	RETURNS boolean[]
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	n int := coalesce(cardinality(positions), 0);
	lb int := CASE WHEN array_ndims(positions) = 1 THEN array_lower(positions, 1) ELSE 1 END;
	cp sog.checkpoint;
	a record;
BEGIN
	IF fname <> 'apply_batch_int8' THEN
		IF checkpoint_id IS NULL OR generation IS NULL OR positions IS NULL OR payload_digests IS NULL THEN
			PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
			PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
			PERFORM sog.require_arg(positions IS NULL, 3, 'positions');
			PERFORM sog.require_arg(payload_digests IS NULL, 4, 'payload_digests');
		END IF;
		IF NOT (coalesce(array_ndims(positions), 0) <= 1 AND coalesce(array_ndims(payload_digests), 0) <= 1
				AND n = coalesce(cardinality(payload_digests), 0)
				AND NOT EXISTS (SELECT FROM unnest(positions, payload_digests) AS u(p, d)
								 WHERE u.p IS NULL OR u.d IS NULL OR octet_length(u.d) <> 32)) THEN
			PERFORM sog.check_records(positions, payload_digests, 'events');
		END IF;
	END IF;
	IF next_buffer_hash IS NOT NULL OR next_buffered_count IS NOT NULL THEN
		PERFORM sog.page_rest_args(fname, next_cursor, next_buffer_hash, next_buffered_count);
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, false);
	IF generation <> cp.generation THEN
		PERFORM sog.check_generation(cp, generation, fname);
	END IF;
	IF n > 0 AND lb <> 1 THEN
		positions := positions[lb : lb + n - 1];
	END IF;
	IF n > 0 AND array_lower(payload_digests, 1) <> 1 THEN
		payload_digests := payload_digests[array_lower(payload_digests, 1) : array_upper(payload_digests, 1)];
	END IF;
	a := sog.apply_events(cp, positions, payload_digests, lb);
	PERFORM sog.page_rest_write(a.cp_out, cp, next_cursor, next_buffer_hash, next_buffered_count,
								expected_token, successor_token);
	RETURN a.res;
END
$$;
REVOKE ALL ON FUNCTION sog.apply_batch_call(bigint, bigint, sog.position[], bytea[], text, sog.position, text, bigint, text, text)
	FROM PUBLIC;

-- sog.apply_batch(checkpoint_id, generation, positions, payload_digests) -> boolean[]
CREATE FUNCTION sog.apply_batch_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									  positions sog.position[], payload_digests bytea[])
	RETURNS boolean[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply_batch(bigint, bigint, sog.position[], bytea[])');
	r boolean[];
BEGIN
	r := sog.apply_batch_call(checkpoint_id, generation, positions, payload_digests, 'apply_batch',
							  NULL, NULL, NULL, NULL, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_batch_entry(uuid, bigint, bigint, sog.position[], bytea[]) TO PUBLIC;

-- sog.apply_batch_page(checkpoint_id, generation, positions, payload_digests,
--   next_cursor, next_buffer_hash, next_buffered_count, expected_token,
--   successor_token) -> boolean[]
CREATE FUNCTION sog.apply_batch_page_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
										   positions sog.position[], payload_digests bytea[],
										   next_cursor sog.position, next_buffer_hash text,
										   next_buffered_count bigint, expected_token text,
										   successor_token text)
	RETURNS boolean[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply_batch_page(bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text)');
	r boolean[];
BEGIN
	r := sog.apply_batch_call(checkpoint_id, generation, positions, payload_digests, 'apply_batch_page',
							  next_cursor, next_buffer_hash, next_buffered_count, expected_token, successor_token);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_batch_page_entry(uuid, bigint, bigint, sog.position[], bytea[], sog.position, text, bigint, text, text)
	TO PUBLIC;

-- sog.apply_batch_int8(checkpoint_id, generation, positions bigint[], payload_digests) -> boolean[]
CREATE FUNCTION sog.apply_batch_int8_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
										   positions bigint[], payload_digests bytea[])
	RETURNS boolean[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply_batch_int8(bigint, bigint, bigint[], bytea[])');
	r boolean[];
	pos sog.position[];
BEGIN
	IF checkpoint_id IS NULL OR generation IS NULL OR positions IS NULL OR payload_digests IS NULL THEN
		PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
		PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
		PERFORM sog.require_arg(positions IS NULL, 3, 'positions');
		PERFORM sog.require_arg(payload_digests IS NULL, 4, 'payload_digests');
	END IF;
	IF NOT (coalesce(array_ndims(positions), 0) <= 1 AND coalesce(array_ndims(payload_digests), 0) <= 1
			AND coalesce(cardinality(positions), 0) = coalesce(cardinality(payload_digests), 0)
			AND NOT EXISTS (SELECT FROM unnest(positions, payload_digests) AS u(p, d)
							 WHERE u.p IS NULL OR u.d IS NULL OR u.p < 0 OR octet_length(u.d) <> 32)) THEN
		PERFORM sog.check_records_int8(positions, payload_digests);
	END IF;
	-- the positions the cast gives, with the array's subscripts
	pos := positions::text[];
	r := sog.apply_batch_call(checkpoint_id, generation, pos, payload_digests, 'apply_batch_int8',
							  NULL, NULL, NULL, NULL, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN r;
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_batch_int8_entry(uuid, bigint, bigint, bigint[], bytea[]) TO PUBLIC;

-- Does the dense run first .. first + n - 1 close the locked checkpoint's
-- read boundary (read_base, cursor] exactly as it was noted, with nothing
-- of the boundary stored yet? (dense_closes_boundary)
--
-- The chain is sog.buffer_hash_next step by step, with what each step
-- appends to h (be16(len(P)) || P || D) built for all records by one
-- statement first: a loop of only sha256(h || m) costs about a third of
-- one that builds each record's text and digest in PL/pgSQL.  The plan is
-- generic (the number of records would make each call plan again).
CREATE FUNCTION sog.dense_closes_boundary(cp sog.checkpoint, first bigint, n integer, d bytea)
	RETURNS boolean
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	cursor numeric;
	h bytea;
	m bytea;
	cnt bigint;
BEGIN
	IF cp.read_base::text IS DISTINCT FROM cp.applied_position::text
	   OR strpos(cp.source_cursor, '-') > 0 OR length(cp.source_cursor) > 20 THEN
		RETURN false;
	END IF;
	cursor := cp.source_cursor::text::numeric;
	IF cursor > 18446744073709551615 OR cursor < first OR cursor > first + (n - 1) THEN
		RETURN false;
	END IF;
	IF cp.read_hash IS NULL AND cp.read_count IS NULL THEN
		RETURN true;			-- nothing was said about the records
	END IF;
	cnt := (cursor - first)::bigint + 1;
	IF cp.read_hash IS NULL THEN
		RETURN cnt >= cp.read_count;
	END IF;
	h := sog.buffer_hash_seed();
	FOREACH m IN ARRAY ARRAY(SELECT int2send(octet_length((first + g)::text)::smallint)
									|| convert_to((first + g)::text, 'UTF8')
									|| substring(d FROM (g * 32 + 1)::integer FOR 32)
							   FROM generate_series(0::bigint, cnt - 1) g) LOOP
		h := sha256(h || m);
	END LOOP;
	RETURN encode(h, 'hex') = lower(cp.read_hash);
END
$$;
REVOKE ALL ON FUNCTION sog.dense_closes_boundary(sog.checkpoint, bigint, integer, bytea) FROM PUBLIC;

-- apply_run and apply_run_page (fname, for the errors), and the page's
-- rest (NULLs but for apply_run_page); see the C edition's apply_run.
CREATE FUNCTION sog.apply_run_call(checkpoint_id bigint, generation bigint, first_position bigint,
								   payload_digests bytea, fname text, next_cursor sog.position,
								   next_buffer_hash text, next_buffered_count bigint,
								   expected_token text, successor_token text)
	RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	cp sog.checkpoint;
	done sog.checkpoint;
	len int;
	n int;
	skipped int := 0;
	first_pos sog.position;
	a record;
	r boolean[];
BEGIN
	IF checkpoint_id IS NULL OR generation IS NULL OR first_position IS NULL OR payload_digests IS NULL THEN
		PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
		PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
		PERFORM sog.require_arg(first_position IS NULL, 3, 'first_position');
		PERFORM sog.require_arg(payload_digests IS NULL, 4, 'payload_digests');
	END IF;
	IF first_position < 0 THEN
		first_pos := sog.position(first_position);	-- 22023
	END IF;
	first_pos := first_position::text;
	len := octet_length(payload_digests);
	IF len = 0 OR len % 32 <> 0 THEN
		RAISE EXCEPTION 'payload digests must be whole 32-byte digests'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('payload_digests has %s bytes, not a positive multiple of 32.', len),
				  HINT = 'Pass the digests of the run''s events back to back, 32 bytes each, in position order.';
	END IF;
	n := len / 32;
	IF first_position > 9223372036854775807 - (n - 1) THEN
		RAISE EXCEPTION 'the run''s positions do not fit a bigint'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('A run of %s events from %s would end above 9223372036854775807.', n, first_position),
				  HINT = 'Apply the events from 9223372036854775807 on with sog.apply_batch.';
	END IF;
	IF next_buffer_hash IS NOT NULL OR next_buffered_count IS NOT NULL THEN
		PERFORM sog.page_rest_args(fname, next_cursor, next_buffer_hash, next_buffered_count);
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, false);
	IF generation <> cp.generation THEN
		PERFORM sog.check_generation(cp, generation, fname);
	END IF;
	IF cp.state = 'running'
	   AND (cp.applied_position IS NULL OR first_pos > cp.applied_position)
	   AND (cp.receipts_through IS NULL OR cp.receipts_through <= cp.applied_position)
	   AND (NOT ((cp.read_hash IS NOT NULL OR cp.read_count IS NOT NULL)
				 AND cp.source_cursor IS NOT NULL
				 AND (cp.applied_position IS NULL OR cp.source_cursor > cp.applied_position))
			OR sog.dense_closes_boundary(cp, first_position, n, payload_digests)) THEN
		PERFORM sog.receipt_store_dense(cp.id, cp.receipt_ring, first_position, n, payload_digests);
		done := sog.advance_applied(cp, (first_position + (n - 1))::text);
	ELSE
		a := sog.apply_events(cp,
							  ARRAY(SELECT (first_position + g)::text FROM generate_series(0, n - 1) g ORDER BY g),
							  ARRAY(SELECT substring(payload_digests FROM g * 32 + 1 FOR 32)
									  FROM generate_series(0, n - 1) g ORDER BY g),
							  1);
		done := a.cp_out;
		r := a.res;
		WHILE skipped < n AND NOT r[skipped + 1] LOOP
			skipped := skipped + 1;
		END LOOP;
		FOR i IN skipped + 1 .. n LOOP
			IF NOT r[i] THEN
				RAISE EXCEPTION 'a duplicate follows a new event in the run from % on checkpoint %', first_position, cp.id
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = format('Position %s is new, but position %s after it was applied before (a recovery attempt recorded it).',
										  first_position + skipped, first_position + (i - 1)),
						  HINT = 'Apply this batch with sog.apply_batch_int8, which answers for each event.';
			END IF;
		END LOOP;
	END IF;
	PERFORM sog.page_rest_write(done, cp, next_cursor, next_buffer_hash, next_buffered_count,
								expected_token, successor_token);
	RETURN skipped;
END
$$;
REVOKE ALL ON FUNCTION sog.apply_run_call(bigint, bigint, bigint, bytea, text, sog.position, text, bigint, text, text)
	FROM PUBLIC;

-- sog.apply_run(checkpoint_id, generation, first_position, payload_digests) -> integer
CREATE FUNCTION sog.apply_run_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									first_position bigint, payload_digests bytea)
	RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply_run(bigint, bigint, bigint, bytea)');
	skipped int;
BEGIN
	skipped := sog.apply_run_call(checkpoint_id, generation, first_position, payload_digests, 'apply_run',
								  NULL, NULL, NULL, NULL, NULL);
	PERFORM sog.leave(outer_caller);
	RETURN skipped;
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_run_entry(uuid, bigint, bigint, bigint, bytea) TO PUBLIC;

-- sog.apply_run_page(checkpoint_id, generation, first_position, payload_digests,
--   next_cursor, next_buffer_hash, next_buffered_count, expected_token,
--   successor_token) -> integer
CREATE FUNCTION sog.apply_run_page_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
										 first_position bigint, payload_digests bytea,
										 next_cursor sog.position, next_buffer_hash text,
										 next_buffered_count bigint, expected_token text,
										 successor_token text)
	RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.apply_run_page(bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text)');
	skipped int;
BEGIN
	skipped := sog.apply_run_call(checkpoint_id, generation, first_position, payload_digests, 'apply_run_page',
								  next_cursor, next_buffer_hash, next_buffered_count, expected_token, successor_token);
	PERFORM sog.leave(outer_caller);
	RETURN skipped;
END
$$;
GRANT EXECUTE ON FUNCTION sog.apply_run_page_entry(uuid, bigint, bigint, bigint, bytea, sog.position, text, bigint, text, text)
	TO PUBLIC;

-- sog.note_read(checkpoint_id, generation, source_cursor, buffer_hash, buffered_count) -> void
CREATE FUNCTION sog.note_read_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									source_cursor sog.position, buffer_hash text, buffered_count bigint)
	RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.note_read(bigint, bigint, sog.position, text, bigint)');
	cp sog.checkpoint;
	b record;
BEGIN
	IF checkpoint_id IS NULL OR generation IS NULL OR source_cursor IS NULL THEN
		PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
		PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
		PERFORM sog.require_arg(source_cursor IS NULL, 3, 'source_cursor');
	END IF;
	IF buffer_hash IS NOT NULL THEN
		PERFORM sog.check_buffer_hash('buffer_hash', buffer_hash);
	END IF;

	cp := sog.cp_lock(checkpoint_id, 1, false);
	IF generation <> cp.generation THEN
		PERFORM sog.check_generation(cp, generation, 'note_read');
	END IF;
	b := sog.note_boundary(cp, source_cursor, buffer_hash, buffered_count);
	IF b.changed THEN
		PERFORM sog.cp_write(b.cp_out, cp, false, b.recorded, false, NULL);
	END IF;
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.note_read_entry(uuid, bigint, bigint, sog.position, text, bigint) TO PUBLIC;

-- sog.commit_page(checkpoint_id, generation, expected_token, successor_token) -> void
CREATE FUNCTION sog.commit_page_entry(caller_key uuid, checkpoint_id bigint, generation bigint,
									  expected_token text, successor_token text)
	RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.commit_page(bigint, bigint, text, text)');
	cp sog.checkpoint;
BEGIN
	IF checkpoint_id IS NULL OR generation IS NULL THEN
		PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
		PERFORM sog.require_arg(generation IS NULL, 2, 'generation');
	END IF;
	cp := sog.cp_lock(checkpoint_id, 1, false);
	IF generation <> cp.generation THEN
		PERFORM sog.check_generation(cp, generation, 'commit_page');
	END IF;
	PERFORM sog.check_token(cp, expected_token);
	PERFORM sog.cp_write(cp, cp, false, false, true, successor_token);
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.commit_page_entry(uuid, bigint, bigint, text, text) TO PUBLIC;

-- ---------------------------------------------------------------------------
-- functions/receipt.c

-- sog.receipts(checkpoint_id, from_position, to_position) -> TABLE(position, payload_digest):
-- on the snapshot of the calling statement, without a lock, above the
-- checkpoint's prune horizon on that snapshot (ring partitions keep rows at
-- or below it until they are emptied).
CREATE FUNCTION sog.receipts_entry(caller_key uuid, checkpoint_id bigint, from_position sog.position,
								   to_position sog.position)
	RETURNS TABLE ("position" sog.position, payload_digest bytea)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.receipts(bigint, sog.position, sog.position)');
	consumer text;
	horizon sog.position;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	SELECT c.consumer, c.prune_horizon INTO consumer, horizon
	  FROM sog.checkpoint c WHERE c.id = receipts_entry.checkpoint_id;
	IF NOT FOUND THEN
		PERFORM sog.report_unknown_checkpoint(checkpoint_id, 3);
	END IF;
	PERFORM sog.check_access(checkpoint_id, consumer, 3);
	RETURN QUERY SELECT s."position", s.payload_digest
				   FROM sog.receipt_scan(checkpoint_id, horizon, from_position, to_position) s;
	PERFORM sog.leave(outer_caller);
END
$$;
GRANT EXECUTE ON FUNCTION sog.receipts_entry(uuid, bigint, sog.position, sog.position) TO PUBLIC;

-- sog.prune_receipts(checkpoint_id, through) -> bigint
CREATE FUNCTION sog.prune_receipts_entry(caller_key uuid, checkpoint_id bigint, through sog.position)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	outer_caller text := sog.enter(caller_key, 'sog.prune_receipts(bigint, sog.position)');
	cp sog.checkpoint;
	orig sog.checkpoint;
	dropped bigint;
	attempt bigint;
	anchor text;
BEGIN
	PERFORM sog.require_arg(checkpoint_id IS NULL, 1, 'checkpoint_id');
	PERFORM sog.require_arg(through IS NULL, 2, 'through');
	cp := sog.cp_lock(checkpoint_id, 2, false);
	IF sog.pos_cmp(through, cp.applied_position) > 0 THEN
		RAISE EXCEPTION 'cannot prune receipts above the applied position of checkpoint %', cp.id
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = CASE WHEN cp.applied_position IS NOT NULL
						   THEN format('Pruning through %s was requested, but the checkpoint has applied only through %s.',
									   through, cp.applied_position)
						   ELSE format('Pruning through %s was requested, but the checkpoint has applied nothing yet.', through) END,
				  HINT = CASE WHEN cp.applied_position IS NOT NULL
						 THEN format('Prune through a position at or below %s.', cp.applied_position)
						 ELSE 'There is nothing to prune before the first event is applied.' END;
	END IF;
	IF (cp.read_hash IS NOT NULL OR cp.read_count IS NOT NULL)
	   AND sog.pos_cmp(cp.source_cursor, cp.applied_position) > 0
	   AND sog.pos_cmp(through, cp.read_base) > 0 THEN
		RAISE EXCEPTION 'cannot prune receipts of checkpoint % through % while its read boundary is open', cp.id, through
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Records noted as read in (%s, %s] are checked against their receipts when the boundary closes.',
								  coalesce(cp.read_base::text, 'start'), sog.pos_str(cp.source_cursor)),
				  HINT = CASE WHEN cp.read_base IS NOT NULL
						 THEN format('Prune through %s or below, or after the worker has applied what it noted.', cp.read_base)
						 ELSE 'Prune after the worker has applied what it noted.' END;
	END IF;

	-- an open recovery attempt verifies the events it re-reads against the
	-- receipts from its anchor on (refuse_under_open_attempt)
	SELECT r.id, r.anchor::text INTO attempt, anchor
	  FROM sog.recovery r
	 WHERE r.checkpoint_id = cp.id AND r.state = 'open' AND (r.anchor IS NULL OR r.anchor <= through)
	 ORDER BY r.anchor NULLS FIRST, r.id LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'cannot prune receipts of checkpoint % through % while recovery attempt % is open',
			cp.id, through, attempt
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = CASE WHEN anchor IS NOT NULL
						   THEN format('The attempt verifies the events it re-reads against the receipts from its anchor %s on.', anchor)
						   ELSE 'The attempt reads from the start and verifies every event against its receipt.' END,
				  HINT = CASE WHEN anchor IS NOT NULL
						 THEN format('Prune through a position below %s, or after the attempt concludes (sog.promote).', anchor)
						 ELSE 'Prune after the attempt concludes (sog.promote).' END;
	END IF;

	dropped := sog.receipt_prune(cp.id, through, cp.prune_horizon);
	IF sog.pos_cmp(through, cp.prune_horizon) > 0 THEN
		orig := cp;
		cp.prune_horizon := through;
		PERFORM sog.cp_write(cp, orig, false, false, false, NULL);
	END IF;
	PERFORM sog.leave(outer_caller);
	RETURN dropped;
END
$$;
GRANT EXECUTE ON FUNCTION sog.prune_receipts_entry(uuid, bigint, sog.position) TO PUBLIC;
