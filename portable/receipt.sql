-- portable/receipt.sql: the storage format of sog.receipt in SQL and
-- PL/pgSQL, byte for byte the C edition's (src/store/receipt.c,
-- src/type/position_codec.h), so that a dump moves between the editions.
--
-- @before stream_offset_guard--1.0.sql: CREATE TABLE sog.receipt (

-- The C edition's encoding of a position: a version byte 1, then per
-- component its digit count (0 for the value 0) and its digits as packed
-- BCD, most significant first (an odd count leaves a low nibble 0).
CREATE FUNCTION sog.position_encoding(p sog.position) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN '\x01'::bytea || (
	SELECT string_agg(CASE WHEN c = '0' THEN '\x00'::bytea
						   ELSE pg_catalog.set_byte('\x00'::bytea, 0, pg_catalog.length(c))
								|| pg_catalog.decode(c || CASE WHEN pg_catalog.length(c) % 2 = 1 THEN '0' ELSE '' END, 'hex') END,
					  ''::bytea ORDER BY i)
	  FROM pg_catalog.unnest(pg_catalog.string_to_array(p, '-')) WITH ORDINALITY AS u(c, i));
COMMENT ON FUNCTION sog.position_encoding(sog.position) IS
	'the C edition''s order-preserving encoding of a position (version byte, then digit count and packed BCD per component)';

-- The position an encoding holds; XX001 (data_corrupted) for bytes that are
-- no encoding.
CREATE FUNCTION sog.position_from_encoding(e bytea) RETURNS sog.position
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	i int := 1;
	nd int;
	comps text[] := '{}';
BEGIN
	IF octet_length(e) < 2 OR get_byte(e, 0) <> 1 THEN
		RAISE EXCEPTION 'stored position is not in the format this edition reads'
			USING ERRCODE = 'data_corrupted', DETAIL = format('The bytes are %s.', left(encode(e, 'hex'), 64));
	END IF;
	WHILE i < octet_length(e) LOOP
		nd := get_byte(e, i);
		IF nd > 160 OR i + 1 + (nd + 1) / 2 > octet_length(e) THEN
			RAISE EXCEPTION 'stored position is not in the format this edition reads'
				USING ERRCODE = 'data_corrupted', DETAIL = format('The bytes are %s.', left(encode(e, 'hex'), 64));
		END IF;
		comps := comps || CASE WHEN nd = 0 THEN '0' ELSE left(encode(substr(e, i + 2, (nd + 1) / 2), 'hex'), nd) END;
		i := i + 1 + (nd + 1) / 2;
	END LOOP;
	RETURN array_to_string(comps, '-');
END
$$;
COMMENT ON FUNCTION sog.position_from_encoding(bytea) IS
	'the position the C edition''s encoding holds (XX001 for bytes that are none)';

-- The rows of sog.receipt a run of receipts is stored as (positions strictly
-- increasing): as the C edition stores them, a dense run (one-component
-- positions first, first+1, ..., each below 2^64) without its positions,
-- any other with each position as a length prefix (one byte below 128, else
-- two: 0x80 | high byte, low byte) and its encoding; rows of at most 3900
-- bytes of digests and positions (sog_receipt_run_store_at).
CREATE FUNCTION sog.receipt_rows(positions sog.position[])
	RETURNS TABLE(lo integer, hi integer, first_position sog.position, last_position sog.position,
				  n integer, packed bytea)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cnt int := coalesce(cardinality(positions), 0);
	base int := coalesce(array_lower(positions, 1), 1);
	dense boolean;
	enc bytea;
	add int;
	bytes int := 0;
	buf bytea := '';
	i int;
	k int := 1;
BEGIN
	IF cnt = 0 THEN
		RETURN;
	END IF;
	-- as run_is_dense: every position of one component, the first and the
	-- last below 2^64, and last - first = n - 1
	dense := NOT EXISTS (SELECT FROM unnest(positions) p WHERE strpos(p, '-') > 0);
	IF dense THEN
		dense := length(positions[base]) <= 20 AND length(positions[base + cnt - 1]) <= 20;
	END IF;
	IF dense THEN
		dense := positions[base]::text::numeric <= 18446744073709551615
				 AND positions[base + cnt - 1]::text::numeric <= 18446744073709551615;
	END IF;
	IF dense THEN
		dense := positions[base + cnt - 1]::text::numeric - positions[base]::text::numeric = cnt - 1;
	END IF;
	lo := 1;
	FOR i IN 1 .. cnt LOOP
		enc := CASE WHEN dense THEN NULL ELSE sog.position_encoding(positions[base + i - 1]) END;
		add := 32 + CASE WHEN dense THEN 0
						 ELSE (CASE WHEN octet_length(enc) < 128 THEN 1 ELSE 2 END) + octet_length(enc) END;
		IF i > lo AND bytes + add > 3900 THEN
			hi := i - 1;
			first_position := positions[base + lo - 1];
			last_position := positions[base + hi - 1];
			n := hi - lo + 1;
			packed := CASE WHEN dense THEN NULL ELSE buf END;
			RETURN NEXT;
			lo := i;
			bytes := 0;
			buf := '';
		END IF;
		bytes := bytes + add;
		IF NOT dense THEN
			buf := buf || CASE WHEN octet_length(enc) < 128 THEN set_byte('\x00'::bytea, 0, octet_length(enc))
							   ELSE set_byte(set_byte('\x0000'::bytea, 0, 128 | (octet_length(enc) >> 8)), 1, octet_length(enc) & 255) END
					   || enc;
		END IF;
	END LOOP;
	hi := cnt;
	first_position := positions[base + lo - 1];
	last_position := positions[base + hi - 1];
	n := hi - lo + 1;
	packed := CASE WHEN dense THEN NULL ELSE buf END;
	RETURN NEXT;
END
$$;
COMMENT ON FUNCTION sog.receipt_rows(sog.position[]) IS
	'how the C edition stores a run of receipts: per row its slice lo..hi of the run, first and last position, count and packed positions';

-- The positions of one row of sog.receipt.
CREATE FUNCTION sog.receipt_positions(first_position sog.position, n integer, packed bytea)
	RETURNS sog.position[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	out sog.position[] := '{}';
	i int := 0;
	len int;
BEGIN
	IF packed IS NULL THEN
		RETURN ARRAY(SELECT (first_position::numeric + g)::text FROM generate_series(0, n - 1) g ORDER BY g);
	END IF;
	WHILE i < octet_length(packed) LOOP
		len := get_byte(packed, i);
		IF len >= 128 THEN
			len := ((len & 127) << 8) | get_byte(packed, i + 1);
			i := i + 2;
		ELSE
			i := i + 1;
		END IF;
		out := out || sog.position_from_encoding(substr(packed, i + 1, len));
		i := i + len;
	END LOOP;
	IF cardinality(out) IS DISTINCT FROM n THEN
		RAISE EXCEPTION 'receipt row holds % positions, not %', coalesce(cardinality(out), 0), n
			USING ERRCODE = 'data_corrupted';
	END IF;
	RETURN out;
END
$$;
COMMENT ON FUNCTION sog.receipt_positions(sog.position, integer, bytea) IS
	'the positions of a row of sog.receipt (first_position, n and its packed positions)';

-- ---------------------------------------------------------------------------
-- The receipt store (src/store/receipt.c: storing a run, looking a receipt up,
-- pruning, scanning), on the encoding above.  Every function runs under the
-- checkpoint's row lock, taken by its caller, as the owner.  The stored
-- rows are the C edition's byte for byte (sog.receipt_rows for a sparse
-- run; a dense run in rows of 121 digests, as sog_receipt_store_dense and
-- sog_receipt_run_store_at both write it), in the same partition
-- (sog.receipt is partitioned by ring: a checkpoint's rows go where its
-- receipt_ring says).  A ring partition keeps its rows until
-- sog.rotate_receipts() empties it whole, so rows at or below a
-- checkpoint's prune horizon may still be stored: every lookup and scan
-- here answers at the horizon first, as if they were gone.

-- XX001: a stored receipt row does not decode (report_corrupt_run).
CREATE FUNCTION sog.receipt_corrupt(first_position sog.position, receipt integer, what text)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'receipt row starting at position % is corrupt', coalesce(first_position::text, '(unknown)')
		USING ERRCODE = 'data_corrupted',
			  DETAIL = format('At receipt %s: %s.', receipt + 1, what),
			  HINT = 'sog.receipt is written only by the extension; restore it from a backup or prune past this row.';
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_corrupt(sog.position, integer, text) FROM PUBLIC;

-- The positions of one stored row, checked as the C edition's decode_run
-- checks them (XX001 naming the row otherwise).
CREATE FUNCTION sog.receipt_row_positions(first_position sog.position, n integer, packed bytea,
										  digests bytea)
	RETURNS sog.position[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	out text[];
	len int;
	p int := 0;
	l int;
	b int;
	e int;			-- end of the current encoding
	j int;
	nd int;
	nb int;
	ncomp int;
	h text;
	comp text;
	txt text;
	ok boolean;
BEGIN
	IF n IS NULL OR n <= 0 OR octet_length(digests) IS DISTINCT FROM n * 32 THEN
		PERFORM sog.receipt_corrupt(first_position, 0,
			format('%s receipts but %s digest bytes', coalesce(n, 0), coalesce(octet_length(digests), 0)));
	END IF;
	IF packed IS NULL THEN
		IF strpos(first_position, '-') > 0 OR length(first_position) > 20
		   OR first_position::text::numeric > 18446744073709551615 THEN
			PERFORM sog.receipt_corrupt(first_position, 0, 'a dense row must start at an integer position');
		END IF;
		RETURN ARRAY(SELECT (first_position::text::numeric + g)::text
					   FROM generate_series(0, n - 1) g ORDER BY g);
	END IF;
	len := octet_length(packed);
	out := array_fill(NULL::text, ARRAY[n]);
	FOR i IN 0 .. n - 1 LOOP
		ok := p < len;
		IF ok THEN
			b := get_byte(packed, p);
			IF b < 128 THEN
				l := b;
				p := p + 1;
			ELSIF len - p < 2 THEN
				ok := false;
			ELSE
				l := ((b & 127) << 8) | get_byte(packed, p + 1);
				p := p + 2;
			END IF;
		END IF;
		-- the encoding packed[p, p + l): version 1, then per component its
		-- digit count and packed BCD (sog_pos_encoding_valid)
		ok := ok AND l <= len - p AND l >= 2 AND l <= 649 AND get_byte(packed, p) = 1;
		IF ok THEN
			e := p + l;
			j := p + 1;
			ncomp := 0;
			txt := NULL;
			WHILE ok AND j < e LOOP
				nd := get_byte(packed, j);
				nb := (nd + 1) / 2;
				j := j + 1;
				ncomp := ncomp + 1;
				ok := nd <= 160 AND ncomp <= 8 AND nb <= e - j;
				IF ok THEN
					IF nd = 0 THEN
						comp := '0';
					ELSE
						h := encode(substring(packed FROM j + 1 FOR nb), 'hex');
						comp := left(h, nd);
						ok := comp ~ '^[1-9][0-9]*$' AND (nd % 2 = 0 OR right(h, 1) = '0');
					END IF;
					txt := CASE WHEN txt IS NULL THEN comp ELSE txt || '-' || comp END;
					j := j + nb;
				END IF;
			END LOOP;
			ok := ok AND ncomp >= 1;
		END IF;
		IF NOT ok THEN
			PERFORM sog.receipt_corrupt(first_position, i, 'the position list is truncated or invalid');
		END IF;
		out[i + 1] := txt;
		p := e;
	END LOOP;
	IF p <> len THEN
		PERFORM sog.receipt_corrupt(first_position, n - 1, 'the position list is longer than its count');
	END IF;
	RETURN out;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_row_positions(sog.position, integer, bytea, bytea) FROM PUBLIC;

-- 23514: checkpoint_id's receipt_ring names no receipt partition
-- (open_target: the column has no CHECK constraint, which the executor
-- would evaluate on every write of the row; the store refuses instead).
CREATE FUNCTION sog.receipt_bad_ring(checkpoint_id bigint, ring smallint) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'checkpoint % has receipt_ring %, which is not a receipt partition', checkpoint_id, ring
		USING ERRCODE = 'check_violation',
			  DETAIL = 'Receipts go to sog.receipt_0 (outside the ring) or sog.receipt_1 to sog.receipt_4 (the ring).',
			  HINT = format('Set it to 0 (UPDATE sog.checkpoint SET receipt_ring = 0 WHERE id = %s); sog.rotate_receipts() puts it back in the ring.',
							checkpoint_id);
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_bad_ring(bigint, smallint) FROM PUBLIC;

-- Store the dense run first, first + 1, ..., first + n - 1 (one-component,
-- below 2^64) with its digests back to back: rows of 121 receipts
-- (sog_receipt_store_dense), in the partition ring names (the checkpoint's
-- receipt_ring: PostgreSQL routes the rows there; 23514 for a number that
-- is none, as the C edition's open_target).  The plan is generic: with n
-- known the planner's estimate differs from a generic plan's, and every
-- call would plan the INSERT again.
CREATE FUNCTION sog.receipt_store_dense(checkpoint_id bigint, ring smallint, first numeric, n integer,
										digests bytea)
	RETURNS void
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
	IF n <= 0 THEN
		RETURN;
	END IF;
	IF ring IS NULL OR ring < 0 OR ring > 4 THEN
		PERFORM sog.receipt_bad_ring(checkpoint_id, ring);
	END IF;
	INSERT INTO sog.receipt (checkpoint_id, first_position, last_position, n, positions, digests, ring)
	SELECT receipt_store_dense.checkpoint_id, (first + lo)::text, (first + least(n, lo + 121) - 1)::text,
		   least(n, lo + 121) - lo, NULL,
		   substring(digests FROM lo * 32 + 1 FOR (least(n, lo + 121) - lo) * 32),
		   receipt_store_dense.ring
	  FROM generate_series(0, n - 1, 121) lo;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_store_dense(bigint, smallint, numeric, integer, bytea) FROM PUBLIC;

-- Store a run of receipts (positions strictly increasing, one digest
-- each) as the C edition's sog_receipt_run_store stores it, in the
-- partition ring names (as sog.receipt_store_dense).
CREATE FUNCTION sog.receipt_store(checkpoint_id bigint, ring smallint, positions sog.position[],
								  digests bytea[])
	RETURNS void
LANGUAGE plpgsql VOLATILE
SET bytea_output = 'hex'
AS $$
DECLARE
	n int := coalesce(cardinality(positions), 0);
	alld bytea;
	f text;
	l text;
BEGIN
	IF n = 0 THEN
		RETURN;
	END IF;
	IF ring IS NULL OR ring < 0 OR ring > 4 THEN
		PERFORM sog.receipt_bad_ring(checkpoint_id, ring);
	END IF;
	IF array_lower(positions, 1) <> 1 THEN
		positions := positions[array_lower(positions, 1) : array_upper(positions, 1)];
	END IF;
	-- the digests back to back
	IF n = 1 THEN
		alld := digests[array_lower(digests, 1)];
	ELSE
		alld := decode(replace(array_to_string(digests::text[], ''), '\x', ''), 'hex');
	END IF;
	f := positions[1];
	l := positions[n];
	-- dense (run_is_dense): one component each, first and last below 2^64,
	-- last - first = n - 1
	IF length(f) <= 20 AND length(l) <= 20
	   AND strpos(CASE WHEN n = 1 THEN f ELSE array_to_string(positions::text[], ',') END, '-') = 0
	   AND f::numeric <= 18446744073709551615 AND l::numeric <= 18446744073709551615
	   AND l::numeric - f::numeric = n - 1 THEN
		IF n > 121 THEN
			PERFORM sog.receipt_store_dense(checkpoint_id, ring, f::numeric, n, alld);
		ELSE
			INSERT INTO sog.receipt (checkpoint_id, first_position, last_position, n, positions, digests, ring)
			VALUES (receipt_store.checkpoint_id, f, l, n, NULL, alld, receipt_store.ring);
		END IF;
		RETURN;
	END IF;
	INSERT INTO sog.receipt (checkpoint_id, first_position, last_position, n, positions, digests, ring)
	SELECT receipt_store.checkpoint_id, r.first_position, r.last_position, r.n, r.packed,
		   substring(alld FROM (r.lo - 1) * 32 + 1 FOR r.n * 32), receipt_store.ring
	  FROM sog.receipt_rows(positions) r;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_store(bigint, smallint, sog.position[], bytea[]) FROM PUBLIC;

-- The stored digests of positions (element i for positions[i], NULL where
-- none): each through the one row that can hold it (the first whose
-- last_position is at or above it), each row read and decoded once.
-- Nothing at or below horizon (the checkpoint's prune horizon, NULL: none):
-- a ring partition keeps such rows until it is emptied, and a receipt
-- there is gone all the same (sog_receipt_lookup).
CREATE FUNCTION sog.receipt_lookup_many(checkpoint_id bigint, horizon sog.position, positions sog.position[])
	RETURNS bytea[]
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	lb int := coalesce(array_lower(positions, 1), 1);
	out bytea[] := '{}';
	r record;
	dec sog.position[];
	k int;
	kn numeric;
	q text;
	qmin numeric;
	qmax numeric;
	nq bigint;
	upper sog.position;
	contiguous boolean;
	nrows int;
	alld bytea;
	gf numeric;
	gl numeric;
BEGIN
	IF coalesce(cardinality(positions), 0) = 0 THEN
		RETURN out;
	END IF;
	out := array_fill(NULL::bytea, ARRAY[cardinality(positions)], ARRAY[lb]);
	-- at or below the horizon: gone, whether or not a row still holds it
	-- (1-based from here; lb stays the caller's)
	IF horizon IS NOT NULL THEN
		positions := ARRAY(SELECT CASE WHEN u.q > horizon THEN u.q END
							 FROM unnest(positions) WITH ORDINALITY AS u(q, i) ORDER BY u.i);
	END IF;
	-- A replayed batch of one-component positions over dense runs (a Kafka
	-- consumer's restart): the rows that cover [min, max] read in one range
	-- scan; when they are dense and contiguous each digest is found by its
	-- offset.  Anything else is looked up position by position below.
	IF lb = 1 AND strpos(array_to_string(positions::text[], ','), '-') = 0 THEN
		SELECT min(u.p::numeric), max(u.p::numeric), count(u.p) INTO qmin, qmax, nq
		  FROM unnest(positions::text[]) AS u(p);
		IF nq = 0 THEN
			RETURN out;
		END IF;
		upper := (SELECT t.last_position FROM sog.receipt t
				   WHERE t.checkpoint_id = receipt_lookup_many.checkpoint_id AND t.last_position >= qmax::text::sog.position
				   ORDER BY t.last_position LIMIT 1);
		contiguous := true;
		nrows := 0;
		alld := ''::bytea;
		FOR r IN
			SELECT t.first_position, t.last_position, t.n, t.positions AS packed, t.digests
			  FROM sog.receipt t
			 WHERE t.checkpoint_id = receipt_lookup_many.checkpoint_id AND t.last_position >= qmin::text::sog.position
			   AND (upper IS NULL OR t.last_position <= upper)
			 ORDER BY t.last_position LIMIT 64
		LOOP
			nrows := nrows + 1;
			IF r.packed IS NOT NULL OR r.n <= 0 OR octet_length(r.digests) <> r.n * 32
			   OR strpos(r.first_position, '-') > 0 OR length(r.first_position) > 20
			   OR strpos(r.last_position, '-') > 0
			   OR r.last_position::text::numeric - r.first_position::text::numeric <> r.n - 1
			   OR (nrows > 1 AND r.first_position::text::numeric <> gl + 1) THEN
				contiguous := false;
				EXIT;
			END IF;
			IF nrows = 1 THEN
				gf := r.first_position::text::numeric;
			END IF;
			gl := r.last_position::text::numeric;
			alld := alld || r.digests;
		END LOOP;
		IF contiguous AND nrows < 64 THEN
			IF nrows = 0 THEN
				RETURN out;
			END IF;
			RETURN ARRAY(SELECT CASE WHEN u.v >= gf AND u.v <= gl
									 THEN substring(alld FROM ((u.v - gf) * 32)::int + 1 FOR 32) END
						   FROM unnest(positions::text[]) WITH ORDINALITY AS q(p, i),
								LATERAL (SELECT q.p::numeric AS v) u
						  ORDER BY q.i);
		END IF;
	END IF;
	FOR r IN
		SELECT s.first_position, s.n, s.positions AS packed, s.digests, g.ps, g.idx
		  FROM (SELECT x.lp, array_agg(q.p ORDER BY q.i) AS ps, array_agg(q.i ORDER BY q.i) AS idx
				  FROM unnest(positions) WITH ORDINALITY AS q(p, i)
				 CROSS JOIN LATERAL (SELECT t.last_position AS lp FROM sog.receipt t
									  WHERE t.checkpoint_id = receipt_lookup_many.checkpoint_id
										AND t.last_position >= q.p
									  ORDER BY t.last_position LIMIT 1) x
				 GROUP BY x.lp) g
		  JOIN sog.receipt s ON s.checkpoint_id = receipt_lookup_many.checkpoint_id AND s.last_position = g.lp
	LOOP
		IF r.packed IS NULL AND r.n > 0 AND octet_length(r.digests) = r.n * 32
		   AND strpos(r.first_position, '-') = 0 AND length(r.first_position) <= 20 THEN
			-- a dense row: position first + k is receipt k
			FOR j IN 1 .. cardinality(r.ps) LOOP
				q := r.ps[j];
				IF strpos(q, '-') = 0 THEN
					kn := q::numeric - r.first_position::text::numeric;
					IF kn >= 0 AND kn < r.n THEN
						out[lb + r.idx[j] - 1] := substring(r.digests FROM kn::int * 32 + 1 FOR 32);
					END IF;
				END IF;
			END LOOP;
		ELSE
			dec := sog.receipt_row_positions(r.first_position, r.n, r.packed, r.digests);
			FOR j IN 1 .. cardinality(r.ps) LOOP
				k := array_position(dec, r.ps[j]);
				IF k IS NOT NULL THEN
					out[lb + r.idx[j] - 1] := substring(r.digests FROM (k - 1) * 32 + 1 FOR 32);
				END IF;
			END LOOP;
		END IF;
	END LOOP;
	RETURN out;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_lookup_many(bigint, sog.position, sog.position[]) FROM PUBLIC;

-- The stored digest of pos, NULL if none or at or below horizon
-- (sog_receipt_lookup).
CREATE FUNCTION sog.receipt_lookup(checkpoint_id bigint, horizon sog.position, pos sog.position) RETURNS bytea
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF horizon IS NOT NULL AND pos <= horizon THEN
		RETURN NULL;
	END IF;
	RETURN (sog.receipt_lookup_many(checkpoint_id, NULL, ARRAY[pos]))[1];
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_lookup(bigint, sog.position, sog.position) FROM PUBLIC;

-- The receipts of a checkpoint in position order within [from_pos, to_pos]
-- (NULL: no bound) and above horizon (its prune horizon; rows at or below
-- it may still be stored), on the snapshot of the calling statement
-- (sog_receipt_scan).
CREATE FUNCTION sog.receipt_scan(checkpoint_id bigint, horizon sog.position, from_pos sog.position,
								 to_pos sog.position)
	RETURNS TABLE("position" sog.position, payload_digest bytea)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- nothing at or below the horizon
	IF horizon IS NOT NULL AND (from_pos IS NULL OR from_pos <= horizon) THEN
		from_pos := horizon;
	END IF;
	RETURN QUERY
	SELECT e.p, substring(r.digests FROM (e.k::int - 1) * 32 + 1 FOR 32)
	  FROM sog.receipt r
	 CROSS JOIN LATERAL unnest(sog.receipt_row_positions(r.first_position, r.n, r.positions, r.digests))
		   WITH ORDINALITY AS e(p, k)
	 WHERE r.checkpoint_id = receipt_scan.checkpoint_id
	   AND (from_pos IS NULL OR r.last_position >= from_pos)
	   AND (to_pos IS NULL OR r.first_position <= to_pos)
	   AND (from_pos IS NULL OR e.p >= from_pos)
	   AND (horizon IS NULL OR e.p > horizon)
	   AND (to_pos IS NULL OR e.p <= to_pos)
	 ORDER BY r.last_position, e.k;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_scan(bigint, sog.position, sog.position, sog.position) FROM PUBLIC;

-- The first row of the checkpoint whose last position is above pivot,
-- if it starts at or below pivot: the one row across pivot (rows of one
-- checkpoint never overlap), its last position, whether it is stored in a
-- ring partition and its positions (find_straddler); present false if
-- none.
CREATE FUNCTION sog.receipt_straddler(checkpoint_id bigint, pivot sog.position,
									  OUT present boolean, OUT last_pos sog.position, OUT in_ring boolean,
									  OUT positions sog.position[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	present := false;
	SELECT t.first_position, t.n, t.positions AS packed, t.digests, t.last_position, t.ring INTO r
	  FROM sog.receipt t
	 WHERE t.checkpoint_id = receipt_straddler.checkpoint_id AND t.last_position > pivot
	 ORDER BY t.last_position LIMIT 1;
	IF NOT FOUND OR r.first_position > pivot THEN
		RETURN;
	END IF;
	present := true;
	last_pos := r.last_position;
	in_ring := r.ring <> 0;
	positions := sog.receipt_row_positions(r.first_position, r.n, r.packed, r.digests);
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_straddler(bigint, sog.position) FROM PUBLIC;

-- Drop the receipts at or below through; returns how many (those above
-- horizon, the prune horizon before this prune, NULL: none)
-- (sog_receipt_prune, prune_partitioned): the rows of sog.receipt_0
-- (checkpoints outside the ring) whose last position is in (horizon,
-- through] are deleted, whole; the ring's receipts in that range are
-- counted and left to the partition's TRUNCATE (every read answers at the
-- new horizon).  The count is exact: rows strictly inside the range count
-- n, and the at most two rows across its ends are decoded.  A row across
-- the old horizon is possible (the ring's rows stay whole, and a
-- checkpoint moved out of the ring took its rows across the horizon to
-- sog.receipt_0): its receipts at or below the horizon went in an earlier
-- prune.  A row across through stays until a later prune.
CREATE FUNCTION sog.receipt_prune(checkpoint_id bigint, through sog.position, horizon sog.position)
	RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	dropped bigint;
	deleted bigint;
	low_found boolean := false;
	low_last sog.position;
	low_in_ring boolean;
	low_pos sog.position[];
	high_found boolean := false;
	high_pos sog.position[];
BEGIN
	-- nothing above the horizon up to through: nothing to count or delete
	IF horizon IS NOT NULL AND through <= horizon THEN
		RETURN 0;
	END IF;
	IF horizon IS NOT NULL THEN
		SELECT s.present, s.last_pos, s.in_ring, s.positions INTO low_found, low_last, low_in_ring, low_pos
		  FROM sog.receipt_straddler(checkpoint_id, horizon) s;
	END IF;
	IF NOT low_found OR low_last <= through THEN
		SELECT s.present, s.positions INTO high_found, high_pos
		  FROM sog.receipt_straddler(checkpoint_id, through) s;
	END IF;

	-- the ring's rows strictly inside (horizon, through], and sog.receipt_0's
	-- rows in it deleted (the one across the horizon too)
	IF horizon IS NULL THEN
		SELECT coalesce(sum(t.n), 0)::bigint INTO dropped
		  FROM sog.receipt t
		 WHERE t.ring <> 0 AND t.checkpoint_id = receipt_prune.checkpoint_id AND t.last_position <= through;
		WITH d AS (DELETE FROM sog.receipt_0 t
					WHERE t.checkpoint_id = receipt_prune.checkpoint_id AND t.last_position <= through
				   RETURNING t.n)
		SELECT coalesce(sum(d.n), 0)::bigint INTO deleted FROM d;
	ELSE
		SELECT coalesce(sum(t.n), 0)::bigint INTO dropped
		  FROM sog.receipt t
		 WHERE t.ring <> 0 AND t.checkpoint_id = receipt_prune.checkpoint_id AND t.last_position <= through
		   AND t.last_position > horizon AND t.first_position > horizon;
		WITH d AS (DELETE FROM sog.receipt_0 t
					WHERE t.checkpoint_id = receipt_prune.checkpoint_id AND t.last_position <= through
					  AND t.last_position > horizon
				   RETURNING t.n)
		SELECT coalesce(sum(d.n), 0)::bigint INTO deleted FROM d;
	END IF;
	dropped := dropped + deleted;

	-- the row across the old horizon: only its receipts in the range
	IF low_found THEN
		IF NOT low_in_ring AND low_last <= through THEN
			-- deleted whole
			dropped := dropped - (SELECT count(*) FROM unnest(low_pos) p WHERE p <= horizon);
		ELSE
			dropped := dropped + (SELECT count(*) FROM unnest(low_pos) p WHERE p > horizon AND p <= through);
		END IF;
	END IF;
	-- the row across through (not the one above): its part above the
	-- horizon and at or below through
	IF high_found THEN
		dropped := dropped + (SELECT count(*) FROM unnest(high_pos) p
							   WHERE (horizon IS NULL OR p > horizon) AND p <= through);
	END IF;
	RETURN dropped;
END
$$;
REVOKE ALL ON FUNCTION sog.receipt_prune(bigint, sog.position, sog.position) FROM PUBLIC;
