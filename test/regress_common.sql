-- regress_common.sql: the error helpers every regression test of the guard
-- and of recovery shares, included with \i (psql runs pg_regress's files
-- from the repository root).  Session-local pg_temp functions.
--
\set VERBOSITY default
\set SHOW_CONTEXT never
-- the position operators are in schema sog (1.2): a user's session puts it
-- on its search_path to write pos > '5' (README: types)
SET search_path = public, sog;

-- mask(t): checkpoint, gap and attempt ids, and the time in a fencing
-- detail, vary from run to run; the tests never depend on them.
CREATE FUNCTION pg_temp.mask(t text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT regexp_replace(
	         regexp_replace(t, '(checkpoint|[Gg]ap|recovery attempt|has id) [0-9]+', '\1 N', 'g'),
	         '(took the checkpoint over|claimed the checkpoint) at .*\.$', '\1 at T.')
$$;

-- err(q, a, b): run q with $1 = a and $2 = b; the SQLSTATE of its error
-- ('ok' if none) with the message, detail and hint in full (ids masked).
CREATE FUNCTION pg_temp.err(q text, a bigint DEFAULT NULL, b bigint DEFAULT NULL,
                            OUT state text, OUT message text,
                            OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q USING a, b;
	state := 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	message := pg_temp.mask(message);
	detail := pg_temp.mask(detail);
	hint := pg_temp.mask(hint);
END
$$;

-- d(p): the payload digest of the record at position p (its bytes are the
-- UTF-8 text 'payload of <p>').
CREATE FUNCTION pg_temp.d(p text) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT sog.payload_digest(convert_to('payload of ' || p, 'UTF8'))
$$;

