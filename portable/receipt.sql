-- portable/receipt.sql: the storage format of sog.receipt in SQL and
-- PL/pgSQL, byte for byte the C edition's (src/receipt.c,
-- src/position_codec.h), so that a dump moves between the editions.
--
-- @before CREATE TABLE sog.receipt (

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
