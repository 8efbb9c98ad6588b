-- sink_setup.sql: what the crash tests (t/00[1-4]_*.pl) set up in their
-- cluster (SogTest::crash_node loads it).  The sink table has no unique key
-- on purpose: a double apply must show up as a duplicate row, not as an
-- error.
CREATE EXTENSION stream_offset_guard;
CREATE TABLE sink (pos sog.position NOT NULL, payload text NOT NULL);
-- The payload of position N is 'pN'; d(N) its digest.
CREATE FUNCTION d(p text) RETURNS bytea LANGUAGE sql IMMUTABLE
AS $$ SELECT sog.payload_digest(convert_to('p' || p, 'UTF8')) $$;
-- What a consumer does per batch inside its sink transaction: one
-- apply_batch, then the effect of every event that came back true.
CREATE FUNCTION sink_batch(cp bigint, gen bigint, positions text[])
RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
	fresh boolean[];
BEGIN
	fresh := sog.apply_batch(cp, gen, positions::sog.position[],
		ARRAY(SELECT d(p) FROM unnest(positions) WITH ORDINALITY AS u(p, o) ORDER BY o));
	INSERT INTO sink
		SELECT p::sog.position, 'p' || p
		  FROM unnest(positions, fresh) AS u(p, f) WHERE f;
	RETURN fresh;
END $$;
-- Positions a..b as text.
CREATE FUNCTION span(a int, b int) RETURNS text[] LANGUAGE sql IMMUTABLE
AS $$ SELECT array_agg(g::text ORDER BY g) FROM generate_series(a, b) g $$;
-- The buffer hash of positions a..b with their payloads.
CREATE FUNCTION span_hash(a int, b int) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT sog.buffer_hash(g::text::sog.position, d(g::text) ORDER BY g)
		FROM generate_series(a, b) g $$;
