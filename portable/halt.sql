-- portable/halt.sql: the reference-compatible halt evaluation in SQL and
-- PL/pgSQL (the C edition: src/type/halt.c).

-- Is a key NULL, empty or only ASCII white space?
CREATE FUNCTION sog.is_blank(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN value IS NULL OR pg_catalog.btrim(value, E' \t\n\x0B\f\r') = '';

-- b - a when both are one-component positions, else NULL.
CREATE FUNCTION sog.position_distance(a sog.position, b sog.position) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.strpos(a, '-') = 0 AND pg_catalog.strpos(b, '-') = 0
			THEN b::text::numeric - a::text::numeric END;

-- s as a JSON string the way Python's json.dumps (ensure_ascii) writes it.
CREATE FUNCTION sog.python_json_string(s text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT '"' || coalesce(string_agg(
		CASE
			WHEN ch = '"' THEN E'\\"'
			WHEN ch = E'\\' THEN E'\\\\'
			WHEN cp = 8 THEN E'\\b'
			WHEN cp = 12 THEN E'\\f'
			WHEN cp = 10 THEN E'\\n'
			WHEN cp = 13 THEN E'\\r'
			WHEN cp = 9 THEN E'\\t'
			WHEN cp >= 32 AND cp < 127 THEN ch
			WHEN cp <= 65535 THEN E'\\u' || lpad(to_hex(cp), 4, '0')
			ELSE E'\\u' || lpad(to_hex(55296 | ((cp - 65536) >> 10)), 4, '0')
				 || E'\\u' || lpad(to_hex(56320 | ((cp - 65536) & 1023)), 4, '0')
		END, '' ORDER BY i), '') || '"'
	  FROM regexp_split_to_table(s, '') WITH ORDINALITY AS c(ch, i),
		   LATERAL (SELECT convert_to(ch, 'UTF8') AS u) b,
		   -- the code point from the character's UTF-8 bytes (as the C
		   -- edition reads them), whatever the server encoding
		   LATERAL (SELECT CASE octet_length(u)
							   WHEN 1 THEN get_byte(u, 0)
							   WHEN 2 THEN ((get_byte(u, 0) & 31) << 6) | (get_byte(u, 1) & 63)
							   WHEN 3 THEN ((get_byte(u, 0) & 15) << 12) | ((get_byte(u, 1) & 63) << 6)
										   | (get_byte(u, 2) & 63)
							   ELSE ((get_byte(u, 0) & 7) << 18) | ((get_byte(u, 1) & 63) << 12)
									| ((get_byte(u, 2) & 63) << 6) | (get_byte(u, 3) & 63)
						   END AS cp) a
$$;

-- The manifest of a boundary (cursor, commit] with a buffer hash; a
-- fail_closed manifest when the cursor is beyond the commit without one.
CREATE FUNCTION sog.evaluate_boundary(cursor sog.position, commit sog.position, buffer_hash text)
	RETURNS sog.manifest
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF cursor IS NOT DISTINCT FROM commit THEN
		RETURN ROW('aligned', cursor, 0, encode(sha256('ALIGNED'::bytea), 'hex'))::sog.manifest;
	END IF;
	IF cursor IS NULL OR (commit IS NOT NULL AND cursor::text COLLATE sog.position_order < commit::text) THEN
		RETURN ROW('unrecoverable_divergence', commit, 0, encode(sha256('DIVERGED'::bytea), 'hex'))::sog.manifest;
	END IF;
	IF buffer_hash IS NULL OR buffer_hash = '' THEN
		RETURN ROW('fail_closed', commit, sog.position_distance(commit, cursor), NULL)::sog.manifest;
	END IF;
	RETURN ROW('gap_replay_required', commit, sog.position_distance(commit, cursor),
			   encode(sha256(convert_to(
				   '{"hash": ' || sog.python_json_string(buffer_hash)
				   || ', "sink": ' || coalesce('"' || commit || '"', 'null')
				   || ', "src": ' || '"' || cursor || '"}', 'UTF8')), 'hex'))::sog.manifest;
END
$$;

CREATE FUNCTION sog.evaluate_halt(source_cursor sog.position, sink_commit sog.position,
								  buffer_hash text, idempotency_key text)
	RETURNS sog.manifest
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m sog.manifest;
BEGIN
	IF sog.is_blank(idempotency_key) THEN
		RAISE EXCEPTION 'idempotency key must not be blank'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The key is %s.', CASE WHEN idempotency_key IS NULL THEN 'NULL'
														  WHEN idempotency_key = '' THEN 'empty'
														  ELSE 'only white space' END),
				  HINT = 'Pass the key that names this consumer and partition, for example "orders-0".';
	END IF;
	m := sog.evaluate_boundary(source_cursor, sink_commit, buffer_hash);
	IF m.verdict = 'fail_closed' THEN
		RAISE EXCEPTION 'uncommitted gap cannot be verified'
			USING ERRCODE = 'SG002',
				  DETAIL = format('Source cursor %s is beyond sink commit %s (gap of %s) and no buffer hash was recorded.',
								  source_cursor, coalesce(sink_commit::text, '(none)'),
								  coalesce(m.gap_size::text, 'unknown')),
				  HINT = 'Record the buffer hash of the uncommitted records at halt; without it an operator must resolve the gap.';
	END IF;
	RETURN m;
END
$$;

CREATE FUNCTION sog.verify_resume(manifest sog.manifest, requested_cursor sog.position)
	RETURNS TABLE(admissible boolean, message text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- num_nulls: an all-NULL row IS NULL in PL/pgSQL, but it is a manifest
	-- (without a verdict), as the C edition sees it
	IF num_nulls(manifest) = 1 THEN
		RAISE EXCEPTION 'manifest must not be NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A resume can only be judged against the manifest of a halt or a claim.',
				  HINT = 'Pass the result of sog.evaluate_halt(), sog.halt() or the fields of sog.claim().';
	END IF;
	IF manifest.verdict IS NULL THEN
		RAISE EXCEPTION 'manifest has no verdict'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'The verdict field of the manifest is NULL.',
				  HINT = 'Pass a manifest produced by sog.evaluate_halt() or sog.halt().';
	END IF;
	IF manifest.verdict = 'unrecoverable_divergence' THEN
		RETURN QUERY SELECT false, 'HALT: Sink is ahead of source. Manual audit required.';
	ELSIF manifest.verdict = 'fail_closed' THEN
		RETURN QUERY SELECT false, 'FAIL_CLOSED: Uncommitted gap cannot be verified. Operator resolution required.';
	ELSIF requested_cursor IS NOT NULL
		  AND (manifest.resume_from IS NULL
			   OR requested_cursor::text COLLATE sog.position_order > manifest.resume_from::text) THEN
		RETURN QUERY SELECT false, format('CURSOR_SKIP: Requested %s exceeds safe %s. Replay gap of %s.',
										  requested_cursor, coalesce(manifest.resume_from::text, 'start'),
										  coalesce(manifest.gap_size::text, 'unknown size'));
	ELSE
		RETURN QUERY SELECT true, 'RESUME_ADMISSIBLE';
	END IF;
END
$$;
