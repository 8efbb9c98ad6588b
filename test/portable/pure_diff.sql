-- test/portable/pure_diff.sql: the pure part of the surface (positions,
-- hashes, halt evaluation) asked the same questions in either edition; run
-- by test/portable/run.sh against the C edition and the portable one, whose
-- answers must be byte for byte the same.  Reads psql's standard input, one
-- text per line (test/portable/gen_inputs.pl), and prints one line per
-- answer: "<question> <input> => <answer, or ERROR sqlstate: message>".
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET search_path = public, sog;

CREATE TEMP TABLE input (id serial, t text);
\copy input (t) from pstdin

-- The answer of an expression, or the SQLSTATE it raises.
\ir ../type_helpers.sql
-- pg_temp.try_message(query), here: its answer ('NULL' for NULL), or the
-- error's SQLSTATE, message, detail and hint, which must be the same in
-- both editions too (type_helpers.sql's gives the message only).
DROP FUNCTION pg_temp.try_message(text);
CREATE FUNCTION pg_temp.try_message(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
	d text;
	h text;
BEGIN
	EXECUTE q INTO r;
	RETURN coalesce(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM || ' DETAIL: ' || coalesce(d, '') || ' HINT: ' || coalesce(h, '');
END
$$;
CREATE FUNCTION pg_temp.lit(t text) RETURNS text LANGUAGE sql AS $$ SELECT quote_nullable(t) $$;

-- Positions: text input through a text value (the portable edition reads
-- non-canonical text there, as the C edition does), components, numeric.
-- (position_predecessor is 1.1's, beyond the part: the regression suite
-- will check it against the whole portable edition.)
CREATE TEMP TABLE pos AS
SELECT id, t, pg_temp.try_message(format('SELECT sog.position(%s::text)::text', pg_temp.lit(t))) AS canon
  FROM input;
SELECT 'position ' || t || ' => ' || canon FROM pos ORDER BY id;
CREATE TEMP TABLE valid AS
SELECT id, canon AS p FROM pos WHERE canon NOT LIKE 'ERROR%';
SELECT 'components ' || p || ' => ' || pg_temp.try_message(format('SELECT sog.position_components(%s)', pg_temp.lit(p))),
	   'numeric ' || p || ' => ' || pg_temp.try_message(format('SELECT sog.position_to_numeric(%s)', pg_temp.lit(p)))
  FROM valid ORDER BY id;

-- Order: every valid position against its neighbours in input order, and
-- the whole set sorted.
SELECT 'cmp ' || a.p || ' ' || b.p || ' => '
	   || pg_temp.try_message(format('SELECT sog.position_cmp(%s, %s)', pg_temp.lit(a.p), pg_temp.lit(b.p))) || ' '
	   || pg_temp.try_message(format('SELECT (%s::sog.position < %s::sog.position)::text', pg_temp.lit(a.p), pg_temp.lit(b.p))) || ' '
	   || pg_temp.try_message(format('SELECT (%s::sog.position OPERATOR(sog.=) %s::sog.position)::text', pg_temp.lit(a.p), pg_temp.lit(b.p)))
  FROM valid a JOIN valid b ON b.id IN (a.id + 1, a.id + 7, a.id + 31)
 ORDER BY a.id, b.id;
SELECT 'sorted ' || string_agg(p, ' ' ORDER BY p::sog.position, id) FROM valid;
SELECT 'max ' || sog.max(p::sog.position) || ' min ' || sog.min(p::sog.position) FROM valid;

-- Conversions from numbers.
SELECT 'from numeric ' || t || ' => ' || pg_temp.try_message(format('SELECT sog.position(%s::numeric)', pg_temp.lit(t)))
  FROM input WHERE t ~ '^-?[0-9]{1,200}(\.[0-9]+)?$' ORDER BY id;
SELECT 'from bigint ' || t || ' => ' || pg_temp.try_message(format('SELECT sog.position(%s::bigint)', pg_temp.lit(t)))
  FROM input WHERE t ~ '^-?[0-9]{1,18}$' ORDER BY id;
SELECT 'from numeric ' || v || ' => ' || pg_temp.try_message(format('SELECT sog.position(%L::numeric)', v))
  FROM unnest(ARRAY['NaN', 'Infinity', '-Infinity', '-0', '0.000', '1e3', '12.5', '-1']) v;
SELECT 'from lsn ' || t || ' => ' || pg_temp.try_message(format('SELECT sog.position(%s::pg_lsn)', pg_temp.lit(t)))
  FROM input WHERE t ~ '^[0-9A-F]{1,8}/[0-9A-F]{1,8}$' ORDER BY id;

-- Hashes: payload digests of each input's bytes, buffer hashes over runs of
-- the sorted distinct valid positions (and the refusal of unsorted ones).
SELECT 'digest ' || t || ' => ' || encode(sog.payload_digest(convert_to(t, 'UTF8')), 'hex') FROM input ORDER BY id;
CREATE TEMP TABLE run AS
SELECT row_number() OVER (ORDER BY p::sog.position) AS k, p
  FROM (SELECT DISTINCT p FROM valid) s;
SELECT 'buffer_hash ' || lo || '..' || hi || ' => '
	   || pg_temp.try_message(format('SELECT sog.buffer_hash(ARRAY(SELECT p FROM run WHERE k BETWEEN %s AND %s ORDER BY k)::sog.position[],
									   ARRAY(SELECT sog.payload_digest(convert_to(p, %L)) FROM run WHERE k BETWEEN %s AND %s ORDER BY k))',
								 lo, hi, 'UTF8', lo, hi)) || ' '
	   || pg_temp.try_message(format('SELECT sog.buffer_hash(p::sog.position, sog.payload_digest(convert_to(p, %L)) ORDER BY k) FROM run WHERE k BETWEEN %s AND %s',
								 'UTF8', lo, hi))
  FROM (SELECT k AS lo, k + (k % 5) AS hi FROM run WHERE k % 3 = 0) r ORDER BY lo;
SELECT 'buffer_hash unsorted ' || a.p || ' ' || b.p || ' => '
	   || pg_temp.try_message(format('SELECT sog.buffer_hash(ARRAY[%s, %s]::sog.position[], ARRAY[sog.payload_digest(%L), sog.payload_digest(%L)])',
								 pg_temp.lit(b.p), pg_temp.lit(a.p), 'x', 'y'))
  FROM run a JOIN run b ON b.k = a.k + 1 WHERE a.k % 11 = 0 ORDER BY a.k;

-- Manifests that are not whole: NULL, all fields NULL, no verdict.
SELECT 'verify_resume ' || m || ' => ' || pg_temp.try_message(format('SELECT string_agg(admissible || %L || message, %L) FROM sog.verify_resume(%s, %L)', ':', ';', m, '5'))
  FROM unnest(ARRAY['NULL::sog.manifest', 'ROW(NULL, NULL, NULL, NULL)::sog.manifest',
					'ROW(NULL, ''5'', 0, ''x'')::sog.manifest', 'ROW(''fail_closed'', NULL, NULL, NULL)::sog.manifest',
					'ROW(''gap_replay_required'', NULL, NULL, ''x'')::sog.manifest']) m;
-- Idempotency keys: blank or not (ASCII white space only is blank).
SELECT 'key ' || quote_literal(k) || ' => ' || pg_temp.try_message(format('SELECT sog.evaluate_halt(%L, %L, NULL, %L)::text', '5', '5', k))
  FROM unnest(ARRAY['', ' ', E'\t', E'\x0B', 'v', E'\f\r\n', E'\u00a0', 'k']) k;

-- Halt evaluation over pairs of valid positions, with and without a hash.
SELECT 'evaluate_halt ' || coalesce(a.p, 'NULL') || ' ' || coalesce(b.p, 'NULL') || ' ' || h || ' => '
	   || pg_temp.try_message(format('SELECT sog.evaluate_halt(%s, %s, %s, %L)::text', pg_temp.lit(a.p), pg_temp.lit(b.p), pg_temp.lit(h), 'k-' || a.id))
	   || ' ' || pg_temp.try_message(format('SELECT string_agg(admissible || %L || message, %L) FROM sog.verify_resume(sog.evaluate_halt(%s, %s, %s, %L), %s)',
									':', ';', pg_temp.lit(a.p), pg_temp.lit(b.p), pg_temp.lit(h), 'k', pg_temp.lit(b.p)))
  FROM valid a JOIN valid b ON b.id IN (a.id + 1, a.id + 2)
	   CROSS JOIN (VALUES (NULL), (''), ('ab"c\d' || chr(233) || chr(10)), (E'\x0B\b' || chr(128512) || chr(65535) || chr(127))) AS hv(h)
 ORDER BY a.id, b.id, h NULLS FIRST;

-- The checkpoint table's guard trigger: every update that moves generation,
-- applied_position or prune_horizon backward is SG005, by any path (here a
-- superuser's own UPDATE); the others go through.
INSERT INTO sog.checkpoint (consumer, stream, "partition", generation, applied_position, prune_horizon)
VALUES ('diff', 'guard', '0', 5, '10', '3');
SELECT 'guard ' || u || ' => ' || pg_temp.try_message(format(
		   'UPDATE sog.checkpoint SET %s WHERE consumer = %L RETURNING generation || %L || coalesce(applied_position::text, %L) || %L || coalesce(prune_horizon::text, %L)',
		   u, 'diff', ' ', '-', ' ', '-'))
  FROM unnest(ARRAY['applied_position = ''9''', 'applied_position = NULL', 'applied_position = ''10-0''',
					'applied_position = ''10''', 'generation = 4', 'generation = NULL', 'generation = 6',
					'prune_horizon = ''2''', 'prune_horizon = NULL', 'prune_horizon = ''3-0''',
					'applied_position = ''11'', generation = 5', 'state = ''replaying''',
					'applied_position = ''100000000000000000000'', prune_horizon = ''99999999999999999999''']) WITH ORDINALITY AS x(u, i)
 ORDER BY i;
