-- portable/hash.sql: payload digests and buffer hashes in SQL and PL/pgSQL
-- (the definition: docs/reference.md, "Hashes"; the C edition: src/type/hash.c).
--
-- @at CREATE AGGREGATE sog.buffer_hash("position" sog.position, payload_digest bytea) (

CREATE FUNCTION sog.payload_digest(payload bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.sha256(payload);

-- h(i) from h(i-1), a canonical position text and a payload digest.
CREATE FUNCTION sog.buffer_hash_next(h bytea, p text, d bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.sha256(h || pg_catalog.int2send(pg_catalog.octet_length(p)::smallint)
						 || pg_catalog.convert_to(p, 'UTF8') || d);
COMMENT ON FUNCTION sog.buffer_hash_next(bytea, text, bytea) IS
	'one step of the buffer hash: SHA-256(h || be16(len(P)) || P || D)';

-- h0 = SHA-256("sog:buffer:v1")
CREATE FUNCTION sog.buffer_hash_seed() RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.sha256(pg_catalog.convert_to('sog:buffer:v1', 'UTF8'));
COMMENT ON FUNCTION sog.buffer_hash_seed() IS 'h0 of the buffer hash: SHA-256 of "sog:buffer:v1"';

-- The aggregate's state: h (32 bytes), the record count (8 bytes, big
-- endian), then the last position's text.
CREATE FUNCTION sog.buffer_hash_step(state bytea, "position" sog.position, payload_digest bytea)
	RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	h bytea;
	n bigint;
	last text;
BEGIN
	IF "position" IS NULL OR payload_digest IS NULL THEN
		RAISE EXCEPTION 'buffer hash records need a position and a payload digest'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The %s of a record is NULL.',
								  CASE WHEN "position" IS NULL THEN 'position' ELSE 'payload digest' END),
				  HINT = 'Filter out incomplete records, or compute their digest with sog.payload_digest().';
	END IF;
	IF octet_length(payload_digest) <> 32 THEN
		PERFORM sog.check_digest('payload digest', payload_digest);	-- raises
	END IF;
	IF state IS NULL THEN
		h := sog.buffer_hash_seed();
		n := 0;
	ELSE
		h := substr(state, 1, 32);
		n := ('x' || encode(substr(state, 33, 8), 'hex'))::bit(64)::bigint;
		last := convert_from(substr(state, 41), 'UTF8');
		IF "position"::text COLLATE sog.position_order <= last THEN
			RAISE EXCEPTION 'buffer hash positions must be strictly increasing'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Position %s follows position %s (record %s).', "position", last, n + 1),
					  HINT = 'Hash the records in position order, each once: sog.buffer_hash(pos, digest ORDER BY pos).';
		END IF;
	END IF;
	RETURN sog.buffer_hash_next(h, "position", payload_digest) || int8send(n + 1) || convert_to("position", 'UTF8');
END
$$;
COMMENT ON FUNCTION sog.buffer_hash_step(bytea, sog.position, bytea) IS 'transition function of sog.buffer_hash';

CREATE FUNCTION sog.buffer_hash_done(state bytea) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.encode(coalesce(pg_catalog.substr(state, 1, 32), sog.buffer_hash_seed()), 'hex');
COMMENT ON FUNCTION sog.buffer_hash_done(bytea) IS 'final function of sog.buffer_hash';

-- 22023 unless d is a 32-byte digest.
CREATE FUNCTION sog.check_digest(what text, d bytea) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF octet_length(d) <> 32 THEN
		RAISE EXCEPTION '% must be a 32-byte SHA-256 digest', what
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The value has %s bytes.', octet_length(d)),
				  HINT = 'Pass sog.payload_digest(record_bytes).';
	END IF;
END
$$;
COMMENT ON FUNCTION sog.check_digest(text, bytea) IS '22023 unless the value is a 32-byte SHA-256 digest';

CREATE AGGREGATE sog.buffer_hash("position" sog.position, payload_digest bytea) (
	SFUNC = sog.buffer_hash_step,
	STYPE = bytea,
	FINALFUNC = sog.buffer_hash_done
);

-- The records of two parallel arrays, checked as the C edition checks them
-- (what names them in messages: 'buffer hash records', 'records', ...).
-- The shape of a batch's two parallel arrays (of positions of either
-- kind, and digests), as sog_records_from_arrays checks it first: one
-- dimension each, as many positions as digests.
CREATE FUNCTION sog.check_record_shape(positions anyarray, payload_digests bytea[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	np int := coalesce(cardinality(positions), 0);
	nd int := coalesce(cardinality(payload_digests), 0);
BEGIN
	IF array_ndims(positions) > 1 OR array_ndims(payload_digests) > 1 THEN
		RAISE EXCEPTION 'positions and payload digests must be one-dimensional arrays'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The arrays have %s and %s dimensions.',
								  coalesce(array_ndims(positions), 0), coalesce(array_ndims(payload_digests), 0)),
				  HINT = 'Pass one flat array of positions and one of digests.';
	END IF;
	IF np <> nd THEN
		RAISE EXCEPTION 'position and digest arrays differ in length'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('There are %s positions and %s digests.', np, nd),
				  HINT = 'Pass one payload digest per position, in the same order.';
	END IF;
END
$$;
-- (callable by every role: sog.buffer_hash, which any role may call, runs it)

CREATE FUNCTION sog.check_records(positions sog.position[], payload_digests bytea[], what text)
	RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	np int := coalesce(cardinality(positions), 0);
	nd int := coalesce(cardinality(payload_digests), 0);
	i int;
BEGIN
	PERFORM sog.check_record_shape(positions, payload_digests);
	FOR i IN 1 .. np LOOP
		IF positions[array_lower(positions, 1) + i - 1] IS NULL
		   OR payload_digests[array_lower(payload_digests, 1) + i - 1] IS NULL THEN
			RAISE EXCEPTION '% need a position and a payload digest', what
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The %s of element %s is NULL.',
									  CASE WHEN positions[array_lower(positions, 1) + i - 1] IS NULL
										   THEN 'position' ELSE 'payload digest' END, i),
					  HINT = 'Remove the incomplete element from the arrays.';
		END IF;
		IF octet_length(payload_digests[array_lower(payload_digests, 1) + i - 1]) <> 32 THEN
			PERFORM sog.check_digest('payload digest', payload_digests[array_lower(payload_digests, 1) + i - 1]);
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION sog.check_records(sog.position[], bytea[], text) IS
	'22023 unless the arrays are flat, of one length, without NULLs, with 32-byte digests';

CREATE FUNCTION sog.buffer_hash(positions sog.position[], payload_digests bytea[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	state bytea;
	i int;
BEGIN
	PERFORM sog.check_records(positions, payload_digests, 'buffer hash records');
	FOR i IN 1 .. coalesce(cardinality(positions), 0) LOOP
		state := sog.buffer_hash_step(state, positions[array_lower(positions, 1) + i - 1],
									  payload_digests[array_lower(payload_digests, 1) + i - 1]);
	END LOOP;
	RETURN sog.buffer_hash_done(state);
END
$$;
