-- regress_helpers.sql: the helpers the guard's regression tests share,
-- included at the top of each with \i (psql runs pg_regress's files from
-- the repository root).  Session-local: pg_temp functions and a temp table.
--
\i test/regress_common.sql

-- range(lo, hi): the positions lo..hi as text.
CREATE FUNCTION pg_temp.range(lo bigint, hi bigint) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
	SELECT ARRAY(SELECT i::text AS p FROM generate_series(lo, hi) i ORDER BY i)
$$;

-- h(positions): the buffer hash of the records at positions, by the
-- aggregate form of sog.buffer_hash.
CREATE FUNCTION pg_temp.h(positions text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT sog.buffer_hash(p::sog.position, pg_temp.d(p) ORDER BY p::sog.position)
	  FROM unnest(positions) p
$$;

-- digests(lo, hi): the digests of lo..hi back to back, as a consumer sends them
-- to sog.apply_run
CREATE FUNCTION pg_temp.digests(lo bigint, hi bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(string_agg(pg_temp.d(i::text), ''::bytea ORDER BY i), ''::bytea)
	  FROM generate_series(lo, hi) i
$$;

-- rle(b): a boolean[] as runs, e.g. "false x50, true x50".
CREATE FUNCTION pg_temp.rle(b boolean[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(string_agg(format('%s x%s', v, n), ', ' ORDER BY first), '(empty)')
	  FROM (SELECT v, min(i) AS first, count(*) AS n
	          FROM (SELECT v, i, i - row_number() OVER (PARTITION BY v ORDER BY i) AS grp
	                  FROM unnest(b) WITH ORDINALITY u(v, i)) s
	         GROUP BY v, grp) r
$$;

-- The sink: the effect of each applied event is one row.
CREATE TEMP TABLE sink (cp bigint NOT NULL, pos sog.position NOT NULL,
                        payload text NOT NULL);

-- apply(cp, gen, p): the caller's sink transaction for one record: its
-- effect is written, in the same transaction, only when sog.apply says the
-- record is new.
CREATE FUNCTION pg_temp.apply(cp bigint, gen bigint, p text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
BEGIN
	ok := sog.apply(cp, gen, p::sog.position, pg_temp.d(p));
	IF ok THEN
		INSERT INTO sink VALUES (cp, p::sog.position, 'payload of ' || p);
	END IF;
	RETURN ok;
END
$$;

-- apply_batch(cp, gen, positions): the same for a batch, in one call of
-- sog.apply_batch; element i of the result answers for positions[i].
CREATE FUNCTION pg_temp.apply_batch(cp bigint, gen bigint, positions text[])
RETURNS boolean[]
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean[];
BEGIN
	ok := sog.apply_batch(cp, gen, positions::sog.position[],
	        ARRAY(SELECT pg_temp.d(p) FROM unnest(positions) WITH ORDINALITY u(p, i)
	               ORDER BY i));
	INSERT INTO sink
	SELECT cp, p::sog.position, 'payload of ' || p
	  FROM unnest(positions) WITH ORDINALITY u(p, i)
	 WHERE ok[i];
	RETURN ok;
END
$$;
