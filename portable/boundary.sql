-- portable/boundary.sql: the read boundary in PL/pgSQL (the C edition:
-- src/checkpoint/boundary.c): what a worker noted as read and not yet applied,
-- (read_base, source_cursor] with a buffer hash or a count of its records;
-- recording it (note_read, halt), refusing what would drop it, checking it
-- when an apply or a promotion closes it, and where a gap that may hold one
-- of its records starts.  The predicates (sog.boundary_open, _entered,
-- _base, _checkable, _str) and the commit check are in store.sql.
--
-- Every function here works on a checkpoint variable its caller locked
-- (sog.cp_lock); those that change it return the changed variable, and
-- the caller writes it (sog.cp_write), passing the boundary_recorded flag
-- that sog.boundary_note and sog.boundary_halt report.
--
-- What differs: sog.boundary_check_close names in its hint the applied
-- position of the variable it is given, where the C edition names the one
-- the checkpoint was locked with (cp->orig); its callers (the applies) hand
-- it the variable as locked, so the text is the same.
--
-- @after stream_offset_guard--1.0--1.1.sql

-- Nothing is buffered: the read cursor returns to the applied position.
CREATE FUNCTION sog.clear_read_boundary(cp sog.checkpoint) RETURNS sog.checkpoint
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	cp.source_cursor := cp.applied_position;
	cp.read_base := NULL;
	cp.read_hash := NULL;
	cp.read_count := NULL;
	RETURN cp;
END
$$;
REVOKE ALL ON FUNCTION sog.clear_read_boundary(sog.checkpoint) FROM PUBLIC;

-- Record (applied, cursor] as the boundary; a cursor at applied clears it
-- (record_boundary).  recorded: the boundary_recorded flag.
CREATE FUNCTION sog.boundary_record(cp sog.checkpoint, cursor sog.position, hash text, count bigint,
									OUT cp_out sog.checkpoint, OUT recorded boolean)
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF sog.pos_cmp(cursor, cp.applied_position) = 0 THEN
		cp_out := sog.clear_read_boundary(cp);
		recorded := false;
		RETURN;
	END IF;
	cp.source_cursor := cursor;
	cp.read_base := cp.applied_position;
	cp.read_hash := hash;
	cp.read_count := count;
	cp_out := cp;
	recorded := true;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_record(sog.checkpoint, sog.position, text, bigint) FROM PUBLIC;

-- What the open boundary holds and how much of it is applied, for details.
CREATE FUNCTION sog.boundary_state(cp sog.checkpoint) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	noted text;
BEGIN
	IF cp.read_hash IS NOT NULL AND cp.read_count IS NOT NULL THEN
		noted := format('with a buffer hash of %s records', cp.read_count);
	ELSIF cp.read_hash IS NOT NULL THEN
		noted := 'with a buffer hash';
	ELSIF cp.read_count IS NOT NULL THEN
		noted := format('as %s records, without a hash', cp.read_count);
	ELSE
		noted := 'without a hash or a count';
	END IF;
	IF sog.boundary_entered(cp) THEN
		RETURN format('The read boundary %s was noted %s; it is applied through %s, not to its cursor.',
					  sog.boundary_str(cp), noted, sog.pos_str(cp.applied_position));
	END IF;
	RETURN format('The read boundary %s was noted %s; none of it is applied.', sog.boundary_str(cp), noted);
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_state(sog.checkpoint) FROM PUBLIC;

-- SG005: a note_read or halt would move the open boundary's cursor back.
CREATE FUNCTION sog.boundary_report_cursor_back(cp sog.checkpoint, cursor sog.position, call text)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'read cursor of checkpoint % cannot move back from % to %',
		cp.id, sog.pos_str(cp.source_cursor), sog.pos_str(cursor)
		USING ERRCODE = 'SG005',
			  DETAIL = format('%s %s', sog.boundary_state(cp),
							  format('The %s would drop the records noted in (%s, %s].', call,
									 sog.pos_str(cursor), sog.pos_str(cp.source_cursor))),
			  HINT = CASE WHEN call = 'halt'
					 THEN format('Halt with source_cursor NULL to hand the noted boundary %s to the successor, or apply the records through %s first.',
								 sog.boundary_str(cp), sog.pos_str(cp.source_cursor))
					 ELSE format('A read cursor moves back only through sog.claim(). Apply the records noted through %s first, or stop this worker: its successor verifies %s and replays it.',
								 sog.pos_str(cp.source_cursor), sog.boundary_str(cp)) END;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_report_cursor_back(sog.checkpoint, sog.position, text) FROM PUBLIC;

-- note_read: record (applied, cursor] with hash and count unless a
-- boundary is open; then the same boundary again changes nothing (changed
-- false) and any other is refused (SG005 for a cursor that would move
-- back, SG004 otherwise) (sog_boundary_note).
CREATE FUNCTION sog.boundary_note(cp sog.checkpoint, cursor sog.position, hash text, count bigint,
								  OUT cp_out sog.checkpoint, OUT changed boolean, OUT recorded boolean)
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
	rec record;
BEGIN
	IF NOT sog.boundary_open(cp) THEN
		rec := sog.boundary_record(cp, cursor, hash, count);
			cp_out := rec.cp_out;
			recorded := rec.recorded;
		changed := true;
		RETURN;
	END IF;
	-- the same boundary noted again (a retried note): nothing changes
	IF cursor::text = cp.source_cursor::text AND lower(hash) IS NOT DISTINCT FROM lower(cp.read_hash)
	   AND count IS NOT DISTINCT FROM cp.read_count THEN
		cp_out := cp;
		changed := false;
		recorded := false;
		RETURN;
	END IF;
	IF cursor < cp.source_cursor THEN
		PERFORM sog.boundary_report_cursor_back(cp, cursor, 'note_read');
	END IF;
	RAISE EXCEPTION 'read boundary % of checkpoint % is not applied yet', sog.boundary_str(cp), cp.id
		USING ERRCODE = 'SG004',
			  DETAIL = format('%s A note_read through %s would replace it, and a record noted there and not applied would be skipped unchecked.',
							  sog.boundary_state(cp), sog.pos_str(cursor)),
			  HINT = format('Apply every record noted through %s before noting the next page (retry a rolled-back sink transaction whole, its note included). A worker that no longer holds them stops: its successor verifies %s and replays it.',
							sog.pos_str(cp.source_cursor), sog.boundary_str(cp));
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_note(sog.checkpoint, sog.position, text, bigint) FROM PUBLIC;

-- halt: the boundary the worker hands over, given what it says it holds
-- (cursor NULL: nothing new); see boundary.h.  cursor_out, hash_out and
-- count_out describe the boundary in force; kept says whether the halt's
-- own was set aside for it; recorded is the boundary_recorded flag
-- (sog_boundary_halt).
CREATE FUNCTION sog.boundary_halt(cp sog.checkpoint, cursor sog.position, hash text, count bigint,
								  OUT cp_out sog.checkpoint, OUT cursor_out sog.position, OUT hash_out text,
								  OUT count_out bigint, OUT kept boolean, OUT recorded boolean)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rec record;
BEGIN
	kept := false;
	recorded := false;
	cursor_out := cursor;
	hash_out := hash;
	count_out := count;
	IF cursor IS NOT NULL AND cp.state = 'running' AND sog.pos_cmp(cursor, cp.applied_position) >= 0 THEN
		IF NOT sog.boundary_open(cp) THEN
			rec := sog.boundary_record(cp, cursor, hash, count);
			cp_out := rec.cp_out;
			recorded := rec.recorded;
			RETURN;
		END IF;
		IF cursor < cp.source_cursor THEN
			PERFORM sog.boundary_report_cursor_back(cp, cursor, 'halt');
		END IF;
		-- the noted boundary is what the successor verifies; a halt may add
		-- a hash or a count it was noted without, for the same records
		-- (same cursor, none applied)
		IF cursor::text = cp.source_cursor::text AND NOT sog.boundary_entered(cp) THEN
			IF cp.read_hash IS NULL AND hash IS NOT NULL THEN
				cp.read_hash := hash;
			END IF;
			IF cp.read_count IS NULL AND count IS NOT NULL THEN
				cp.read_count := count;
			END IF;
		END IF;
		kept := cursor::text <> cp.source_cursor::text
				OR lower(hash) IS DISTINCT FROM lower(cp.read_hash)
				OR count IS DISTINCT FROM cp.read_count;
	ELSIF cursor IS NOT NULL AND cp.state = 'running' THEN
		cp_out := cp;			-- behind applied: the caller evaluates it
		RETURN;
	END IF;
	-- a gap is pending, nothing new was read, or the noted one is kept
	cp_out := cp;
	cursor_out := cp.source_cursor;
	hash_out := cp.read_hash;
	count_out := cp.read_count;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_halt(sog.checkpoint, sog.position, text, bigint) FROM PUBLIC;

-- Through where the records of an open boundary are already stored as
-- receipts: the applied position, or further where a recovery attempt
-- recorded receipts above it, never beyond the cursor.
CREATE FUNCTION sog.boundary_stored_through(cp sog.checkpoint) RETURNS sog.position
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
	IF sog.pos_cmp(cp.receipts_through, cp.applied_position) <= 0 THEN
		RETURN cp.applied_position;
	END IF;
	IF cp.receipts_through >= cp.source_cursor THEN
		RETURN cp.source_cursor;
	END IF;
	RETURN cp.receipts_through;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_stored_through(sog.checkpoint) FROM PUBLIC;

-- The buffer hash h of the receipts stored in (read_base, stored_through],
-- newest committed, then of the extra records above skip_through (NULL:
-- all), in order; n records (fold_boundary).
CREATE FUNCTION sog.boundary_fold(cp sog.checkpoint, stored_through sog.position, skip_through sog.position,
								  extra_pos sog.position[], extra_dig bytea[], OUT h bytea, OUT n bigint)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	r record;
	m bytea;
BEGIN
	h := sog.buffer_hash_seed();
	n := 0;
	IF stored_through IS NOT NULL AND sog.pos_cmp(stored_through, cp.read_base) > 0 THEN
		FOR r IN SELECT s."position" AS p, s.payload_digest AS d
				   FROM sog.receipt_scan(cp.id, cp.prune_horizon, cp.read_base, stored_through) s
		LOOP
			IF cp.read_base IS NULL OR r.p > cp.read_base THEN
				h := sog.buffer_hash_next(h, r.p, r.d);
				n := n + 1;
			END IF;
		END LOOP;
	END IF;
	-- the extra records: what each step appends to h built by one
	-- statement, then only sha256 in the loop (as sog.buffer_hash_next)
	FOREACH m IN ARRAY ARRAY(SELECT int2send(octet_length(u.p::text)::smallint)
									|| convert_to(u.p::text, 'UTF8') || u.d
							   FROM unnest(extra_pos, extra_dig) WITH ORDINALITY AS u(p, d, i)
							  WHERE skip_through IS NULL OR u.p > skip_through
							  ORDER BY u.i) LOOP
		h := sha256(h || m);
		n := n + 1;
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_fold(sog.checkpoint, sog.position, sog.position, sog.position[], bytea[]) FROM PUBLIC;

-- Are the records applied in (read_base, cursor] exactly those noted?
-- With the hash: the receipts stored through stored_through and the extra
-- records above it hash to it; or, where a recovery attempt stored
-- receipts above applied (the applied position when the call began), the
-- receipts through applied and every extra record (the worker did not
-- deliver the recovered ones again: the source had trimmed them).  Without
-- a hash, the first fold holds at least the noted count.  ok when nothing
-- can be checked (no hash and no count, or the boundary's receipts were
-- pruned); folded is how many records the first fold holds (-1: nothing
-- checked) (boundary_applied).
CREATE FUNCTION sog.boundary_applied(cp sog.checkpoint, stored_through sog.position, applied sog.position,
									 extra_pos sog.position[], extra_dig bytea[],
									 OUT ok boolean, OUT folded bigint)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	f record;
BEGIN
	folded := -1;
	IF cp.read_hash IS NULL AND cp.read_count IS NULL THEN
		ok := true;				-- nothing was said about the records
		RETURN;
	END IF;
	IF cp.prune_horizon IS NOT NULL AND sog.pos_cmp(cp.prune_horizon, cp.read_base) > 0 THEN
		ok := true;				-- receipts of the boundary were pruned
		RETURN;
	END IF;
	f := sog.boundary_fold(cp, stored_through, stored_through, extra_pos, extra_dig);
	folded := f.n;
	IF cp.read_hash IS NULL THEN
		ok := folded >= cp.read_count;
		RETURN;
	END IF;
	ok := encode(f.h, 'hex') = lower(cp.read_hash);
	IF NOT ok AND sog.pos_cmp(stored_through, applied) > 0 THEN
		f := sog.boundary_fold(cp, applied, NULL, extra_pos, extra_dig);
		ok := encode(f.h, 'hex') = lower(cp.read_hash);
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_applied(sog.checkpoint, sog.position, sog.position, sog.position[], bytea[]) FROM PUBLIC;

-- An apply reaches or passes the open boundary's cursor at at_pos: the
-- records applied in (read_base, cursor] must hash to the noted hash (or
-- make up the noted count), else SG004 naming the boundary; extra_pos are
-- the call's events in (applied, cursor], cp the checkpoint as the call
-- began (boundary_applied).
CREATE FUNCTION sog.boundary_check_close(cp sog.checkpoint, at_pos sog.position, stored sog.position,
										 extra_pos sog.position[], extra_dig bytea[])
	RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	a record;
BEGIN
	a := sog.boundary_applied(cp, stored, cp.applied_position, extra_pos, extra_dig);
	IF a.ok THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'position % would skip records read before it on checkpoint %', sog.pos_str(at_pos), cp.id
		USING ERRCODE = 'SG004',
			  DETAIL = CASE WHEN cp.read_hash IS NOT NULL
					   THEN format('The read boundary %s was noted with %s records and a buffer hash; the %s records applied in it do not hash to it.',
								   sog.boundary_str(cp), coalesce(cp.read_count::text, 'its'), a.folded)
					   ELSE format('The read boundary %s holds %s records, but only %s of them are applied.',
								   sog.boundary_str(cp), cp.read_count, a.folded) END,
			  HINT = format('Apply every record noted in %s from the applied position %s on, never from the read cursor; a worker that no longer holds them rolls back and stops: its successor verifies %s against the source and replays it.',
							sog.boundary_str(cp), sog.pos_str(cp.applied_position), sog.boundary_str(cp));
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_check_close(sog.checkpoint, sog.position, sog.position, sog.position[], bytea[]) FROM PUBLIC;

-- Would a promotion that takes the applied position to advance_through
-- leave every noted record applied? (sog_boundary_promotable)
CREATE FUNCTION sog.boundary_promotable(cp sog.checkpoint, advance_through sog.position) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT sog.boundary_open(cp) OR sog.pos_cmp(advance_through, cp.applied_position) <= 0 THEN
		RETURN true;
	END IF;
	IF sog.pos_cmp(advance_through, cp.source_cursor) < 0 THEN
		RETURN false;			-- it would end inside: never checked
	END IF;
	RETURN (sog.boundary_applied(cp, cp.source_cursor, cp.source_cursor, NULL, NULL)).ok;
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_promotable(sog.checkpoint, sog.position) FROM PUBLIC;

-- Once its last open gap is resolved, does the checkpoint still hold a
-- hashed or counted boundary that the gaps recorded since it was noted do
-- not cover, from its base through its cursor? (sog_boundary_unverified)
CREATE FUNCTION sog.boundary_unverified(cp sog.checkpoint) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT sog.boundary_checkable(cp) THEN
		RETURN false;
	END IF;
	RETURN NOT sog.gaps_cover(cp.id, sog.boundary_base(cp), cp.source_cursor, coalesce(cp.read_gap_floor, 0));
END
$$;
REVOKE ALL ON FUNCTION sog.boundary_unverified(sog.checkpoint) FROM PUBLIC;
