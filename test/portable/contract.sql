-- test/portable/contract.sql: the contract's byte-exact vectors
-- (test/contract-v1.json, passed as :vectors) against an install of the
-- portable edition; one line per vector ("ok" or what differs), then
-- "vectors: N checked, M failed".  Text input is given through a text value
-- (sog.position(t::text)), which both editions read the same way; the C
-- edition's own regression tests (test/sql/position.sql, hash.sql, halt.sql)
-- check it with literals.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = public, sog;

CREATE TEMP TABLE v AS SELECT :'vectors'::jsonb AS j;
CREATE TEMP TABLE result (what text, ok boolean, got text);

-- pg_temp.try(query): its answer, or 'ERROR <sqlstate>'.
\ir ../type_helpers.sql

-- positions: canonical text or 22P02
INSERT INTO result
SELECT 'position ' || (e->>'input'),
	   got = CASE WHEN e ? 'error' THEN 'ERROR 22P02' ELSE e->>'canonical' END, got
  FROM v, jsonb_array_elements(j->'positions') e,
	   LATERAL (SELECT pg_temp.try(format('SELECT sog.position(%L::text)::text', e->>'input')) AS got) g;

-- order: sorting the reversed list gives the list
INSERT INTO result
SELECT 'order', got = want, got
  FROM (SELECT string_agg(x, ' ' ORDER BY x::sog.position) AS got,
			   (SELECT string_agg(x, ' ' ORDER BY i) FROM v, jsonb_array_elements_text(j->'order') WITH ORDINALITY a(x, i)) AS want
		  FROM v, jsonb_array_elements_text(j->'order') x) s;

-- buffer hashes, by the array form and by the aggregate
INSERT INTO result
SELECT 'buffer_hash ' || (e->>'name') || ' ' || form, got = e->>'buffer_hash', got
  FROM v, jsonb_array_elements(j->'buffer_hash') e,
	   LATERAL (SELECT 'array' AS form,
					   sog.buffer_hash(ARRAY(SELECT r->>'position' FROM jsonb_array_elements(e->'records') WITH ORDINALITY x(r, i) ORDER BY i)::sog.position[],
									   ARRAY(SELECT sog.payload_digest(decode(r->>'payload_hex', 'hex')) FROM jsonb_array_elements(e->'records') WITH ORDINALITY x(r, i) ORDER BY i)) AS got
				UNION ALL
				SELECT 'aggregate',
					   (SELECT sog.buffer_hash((r->>'position')::sog.position, sog.payload_digest(decode(r->>'payload_hex', 'hex')) ORDER BY i)
						  FROM jsonb_array_elements(e->'records') WITH ORDINALITY x(r, i))) g;

-- payload digests
INSERT INTO result
SELECT 'payload_digest ' || (r->>'position'), got = r->>'payload_digest_hex', got
  FROM v, jsonb_array_elements(j->'buffer_hash') e, jsonb_array_elements(e->'records') r,
	   LATERAL (SELECT encode(sog.payload_digest(decode(r->>'payload_hex', 'hex')), 'hex') AS got) g;

-- evaluate_halt: the manifest, or the error's SQLSTATE
INSERT INTO result
SELECT 'evaluate_halt ' || e::text,
	   got = CASE WHEN e->>'error' = 'fail_closed' THEN 'ERROR SG002'
				  WHEN e ? 'error' THEN 'ERROR 22023'
				  ELSE ROW((e->>'verdict')::sog.verdict, e->>'resume_from', (e->>'gap_size')::numeric, e->>'manifest_digest')::sog.manifest::text END,
	   got
  FROM v, jsonb_array_elements(j->'evaluate_halt') e,
	   LATERAL (SELECT pg_temp.try(format('SELECT sog.evaluate_halt(%L, %L, %L, %L)::text',
										   e->>'source_cursor', e->>'sink_commit', e->>'buffer_hash', e->>'idempotency_key')) AS got) g;

-- verify_resume
INSERT INTO result
SELECT 'verify_resume ' || e::text, got = (e->>'admissible') || ' ' || (e->>'message'), got
  FROM v, jsonb_array_elements(j->'verify_resume') e,
	   LATERAL (SELECT pg_temp.try(format('SELECT admissible || %L || message FROM sog.verify_resume(sog.evaluate_halt(%L, %L, %L, %L), %L)',
										   ' ', e->>'source_cursor', e->>'sink_commit', e->>'buffer_hash', e->>'idempotency_key',
										   e->>'requested')) AS got) g;

SELECT what || CASE WHEN ok THEN ' ok' ELSE ' FAILED: got ' || coalesce(got, 'NULL') END FROM result;
-- how many there should be, from the file itself
SELECT format('vectors: %s of %s checked, %s failed', count(*),
			  (SELECT jsonb_array_length(j->'positions') + 1 + 2 * jsonb_array_length(j->'buffer_hash')
					  + (SELECT count(*) FROM jsonb_array_elements(j->'buffer_hash') e, jsonb_array_elements(e->'records'))
					  + jsonb_array_length(j->'evaluate_halt') + jsonb_array_length(j->'verify_resume') FROM v),
			  count(*) FILTER (WHERE ok IS NOT TRUE)) FROM result;
