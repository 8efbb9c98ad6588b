-- type_helpers.sql: what the tests of the position type and the hashes
-- share (casts, hash, halt, position), included with \i.  Session-local.
\set VERBOSITY default
\set SHOW_CONTEXT never

-- try(query): the query's single text result, or 'ERROR <sqlstate>'.
CREATE FUNCTION pg_temp.try(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE q INTO r;
	RETURN r;
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE;
END
$$;

-- try_message(query): the same, NULL as 'NULL', an error with its message.
CREATE FUNCTION pg_temp.try_message(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE q INTO r;
	RETURN coalesce(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
	RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END
$$;

-- short(text): long strings abbreviated, so the expected file stays readable.
CREATE FUNCTION pg_temp.short(t text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN length(t) > 24
		THEN left(t, 8) || '...' || right(t, 4) || ' (' || length(t) || ' chars)'
		ELSE t END
$$;
