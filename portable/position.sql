-- portable/position.sql: the position type of the portable edition, in SQL
-- and PL/pgSQL (docs/portable.md, "The position type without C").
--
-- portable/build.pl emits this file once, in place of the C edition's
-- statement named by the at-directive below, and drops the C edition's
-- statements the drop-directives match (each must match at least one
-- statement, or the build fails).
-- The functions below replace the C functions of the same signature; the
-- ones named by @omit have no portable counterpart, for the reason given.
--
-- @at CREATE TYPE sog.position;
-- @drop ^CREATE TYPE sog\.position \(
-- @rewrite ^CREATE OPERATOR pg_catalog\. | pg_catalog. | sog.
-- @rewrite ^CREATE OPERATOR pg_catalog\.= | , HASHES, MERGES |
-- a CASE over a domain is its base type: sog.status's column keeps the
-- type sog.position, as in the C edition, by a cast
-- @rewrite ^CREATE OR REPLACE VIEW sog\.status  | THEN c.receipts_through END AS recovered_through | THEN c.receipts_through END::sog.position AS recovered_through
-- @drop ^CREATE OPERATOR CLASS sog\.position_
-- @drop ^CREATE AGGREGATE sog\.(max|min)\(sog\.position\)
-- @drop ^CREATE CAST \(\S+ AS sog\.position(\[\])?\)
-- @drop ^CREATE CAST \(sog\.position AS numeric\)
-- @drop ^ALTER OPERATOR pg_catalog\.\S+ \(sog\.position, sog\.position\) SET SCHEMA sog;
-- @omit sog.position_in(cstring): a domain over text reads text with text's input function
-- @omit sog.position_out(sog.position): a domain over text writes the canonical text it holds
-- @omit sog.position_recv(internal): binary input is text's (no version byte)
-- @omit sog.position_send(sog.position): binary output is text's (no version byte)
-- @omit sog.position_sortsupport(internal): sorting is the collation's; SQL cannot take internal
-- @omit sog.buffer_hash_accum(internal, sog.position, bytea): the aggregate's state is a bytea (portable/hash.sql)
-- @omit sog.buffer_hash_final(internal): the aggregate's final function takes a bytea (portable/hash.sql)

-- Digit runs compare by numeric value (ICU's numeric ordering, "kn"); "-"
-- sorts below every digit and the end of the text below "-", so canonical
-- position texts sort component by component, a prefix first.
CREATE COLLATION sog.position_order (provider = icu, locale = 'und-u-kn-true');
COMMENT ON COLLATION sog.position_order IS
	'orders canonical position texts as the C edition orders positions: component by component, numerically';

-- Why a text is not a canonical position, in the C edition's words (NULL
-- when it is one).  Only called for a text the domain's pattern refused.
CREATE FUNCTION sog.position_parse_error(value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- ASCII white space around it is allowed (space, tab, LF, VT, FF, CR)
	t text := btrim(value, E' \t\n\x0B\f\r');
	n int := length(t);
	i int := 1;
	c0 int;
	ncomp int := 0;
BEGIN
	IF n = 0 THEN
		RETURN 'A position needs at least one component.';
	END IF;
	-- left to right, the first fault found is the one reported
	LOOP
		c0 := i;
		WHILE i <= n AND substr(t, i, 1) BETWEEN '0' AND '9' LOOP
			i := i + 1;
		END LOOP;
		IF i = c0 THEN
			IF i <= n AND substr(t, i, 1) <> '-' THEN
				RETURN 'Components are ASCII digits separated by "-"; signs, decimal points and other characters are not allowed.';
			END IF;
			IF i = 1 AND i + 1 <= n AND substr(t, i + 1, 1) BETWEEN '0' AND '9' THEN
				RETURN 'Positions are not negative: a leading "-" is not a sign.';
			END IF;
			RETURN 'A component is empty: "-" must stand between two components.';
		END IF;
		IF i <= n AND substr(t, i, 1) <> '-' THEN
			RETURN 'Components are ASCII digits separated by "-"; signs, decimal points and other characters are not allowed.';
		END IF;
		ncomp := ncomp + 1;
		IF ncomp > 8 THEN
			RETURN 'A position has at most 8 components.';
		END IF;
		IF length(ltrim(substr(t, c0, i - c0), '0')) > 160 THEN
			RETURN 'A component has at most 160 digits once leading zeros are dropped.';
		END IF;
		EXIT WHEN i > n;
		i := i + 1;				-- skip '-'
		IF i > n THEN
			RETURN 'A component is empty: "-" must stand between two components.';
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION sog.position_parse_error(text) IS
	'why a text is not a position (NULL when it is one, canonical or not)';

-- The canonical text of a position written any way the C edition reads
-- (white space around it, leading zeros); 22P02 when it is not a position.
CREATE FUNCTION sog.position_canonical(value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	why text := sog.position_parse_error(value);
BEGIN
	IF why IS NOT NULL THEN
		RAISE EXCEPTION 'invalid input syntax for type position: "%"', value
			USING ERRCODE = 'invalid_text_representation', DETAIL = why,
				  HINT = 'Write a position as 1 to 8 non-negative integers joined by "-", for example "42" or "1700000000000-3".';
	END IF;
	RETURN (SELECT string_agg(CASE WHEN ltrim(c, '0') = '' THEN '0' ELSE ltrim(c, '0') END, '-' ORDER BY i)
			  FROM unnest(string_to_array(btrim(value, E' \t\n\x0B\f\r'), '-')) WITH ORDINALITY AS u(c, i));
END
$$;
COMMENT ON FUNCTION sog.position_canonical(text) IS
	'the canonical text of a position (leading zeros and surrounding white space dropped); 22P02 if it is not one';

-- The domain's check, for a text its pattern refused: always raises 22P02,
-- with the C edition's message for a text that is no position and the
-- canonical text to write for one that is a position written otherwise.
CREATE FUNCTION sog.position_refuse(value text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	canonical text := sog.position_canonical(value);	-- raises for a non-position
BEGIN
	RAISE EXCEPTION 'invalid input syntax for type position: "%"', value
		USING ERRCODE = 'invalid_text_representation',
			  DETAIL = format('The portable edition stores positions in canonical form only; this one is written "%s".', canonical),
			  HINT = 'Write the canonical text, or convert a text value with sog.position(value::text).';
END
$$;
COMMENT ON FUNCTION sog.position_refuse(text) IS
	'check of the domain sog.position for a text that is not canonical: raises 22P02';

-- Does every component of a long canonical text fit in 160 digits?
CREATE FUNCTION sog.position_components_fit(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN NOT EXISTS (SELECT FROM unnest(string_to_array(value, '-')) AS c WHERE length(c) > 160);
COMMENT ON FUNCTION sog.position_components_fit(text) IS
	'check of the domain sog.position for a text over 160 characters: does every component have at most 160 digits';

-- A canonical text: the pattern (no bounded repeats: PostgreSQL's regular
-- expressions expand them, which costs tens of microseconds a value),
-- then at most 8 components, then the digits of long components.
CREATE DOMAIN sog.position AS text COLLATE sog.position_order
	CONSTRAINT position_canonical
	CHECK ((VALUE ~ '^(0|[1-9][0-9]*)(-(0|[1-9][0-9]*))*$'
			AND length(VALUE) - length(replace(VALUE, '-', '')) <= 7
			AND (length(VALUE) <= 160 OR sog.position_components_fit(VALUE)))
		   OR sog.position_refuse(VALUE));

CREATE FUNCTION sog.position(text) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN sog.position_canonical($1)::sog.position;
COMMENT ON FUNCTION sog.position(text) IS
	'a position from its text written any way (leading zeros and surrounding white space dropped); 22P02 if it is not one';

CREATE FUNCTION sog.position_cmp(sog.position, sog.position) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN $1::text COLLATE sog.position_order < $2::text THEN -1
			WHEN $1::text COLLATE sog.position_order > $2::text THEN 1 ELSE 0 END;
CREATE FUNCTION sog.position_lt(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text COLLATE sog.position_order < $2::text;
CREATE FUNCTION sog.position_le(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text COLLATE sog.position_order <= $2::text;
CREATE FUNCTION sog.position_eq(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text = $2::text;
CREATE FUNCTION sog.position_ne(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text <> $2::text;
CREATE FUNCTION sog.position_ge(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text COLLATE sog.position_order >= $2::text;
CREATE FUNCTION sog.position_gt(sog.position, sog.position) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1::text COLLATE sog.position_order > $2::text;
CREATE FUNCTION sog.position_larger(sog.position, sog.position) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN $1::text COLLATE sog.position_order >= $2::text THEN $1 ELSE $2 END;
CREATE FUNCTION sog.position_smaller(sog.position, sog.position) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN $1::text COLLATE sog.position_order <= $2::text THEN $1 ELSE $2 END;
CREATE FUNCTION sog.position_hash(sog.position) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN hashtext($1);
CREATE FUNCTION sog.position_hash_extended(sog.position, bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN hashtextextended($1, $2);
CREATE FUNCTION sog.position_components(sog.position) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN length($1) - length(replace($1, '-', '')) + 1;

-- The operators are the C edition's statements with their schema changed
-- from pg_catalog to sog (the rewrite-directives above), without HASHES and
-- MERGES: the operator classes they would need are text's.  Text's own
-- operators give the same answers on two positions (the domain's collation
-- orders them); these serve queries written OPERATOR(sog.>).

-- min and max without SORTOP: the planner's index optimisation of them
-- looks the operator up in a btree family, and sog.> is in none ("could not
-- find equality operator for ordering operator"); pg_catalog's min and max
-- of text give the same answers on positions, with that optimisation.
CREATE AGGREGATE sog.max(sog.position) (
	SFUNC = sog.position_larger, STYPE = sog.position, COMBINEFUNC = sog.position_larger,
	PARALLEL = SAFE
);
CREATE AGGREGATE sog.min(sog.position) (
	SFUNC = sog.position_smaller, STYPE = sog.position, COMBINEFUNC = sog.position_smaller,
	PARALLEL = SAFE
);

-- The conversions.  PostgreSQL ignores casts to a domain, so these are
-- called as functions (x::sog.position of a bigint, an integer or an
-- integral numeric goes through text and gives the same position).
CREATE FUNCTION sog.position(bigint) RETURNS sog.position
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF $1 < 0 THEN
		RAISE EXCEPTION 'cannot convert a negative number to a position'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The value is %s.', $1),
				  HINT = 'Positions are non-negative integers.';
	END IF;
	RETURN $1::text;
END
$$;
CREATE FUNCTION sog.position(integer) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN sog.position($1::bigint);
CREATE FUNCTION sog.position(numeric) RETURNS sog.position
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF $1 < 0 OR $1 = 'NaN'::numeric OR $1 = 'Infinity'::numeric OR $1 <> trunc($1) THEN
		RAISE EXCEPTION 'cannot convert numeric % to a position', $1
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'Only non-negative integers can be positions.',
				  HINT = 'Round the value, or use a multi-component position such as "5-1".';
	END IF;
	IF length(trunc($1)::text) > 160 THEN
		RAISE EXCEPTION 'numeric value out of range for a position component'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The value has %s digits; a component has at most 160.', length(trunc($1)::text)),
				  HINT = 'Split the value into several components.';
	END IF;
	RETURN trunc($1)::text;
END
$$;
CREATE FUNCTION sog.position(pg_lsn) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ($1 - '0/0'::pg_lsn)::text;
CREATE FUNCTION sog.position_to_numeric(sog.position) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF strpos($1, '-') > 0 THEN
		RAISE EXCEPTION 'cannot convert position "%" to numeric', $1
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The position has %s components; only a one-component position is a number.',
								  sog.position_components($1)),
				  HINT = 'Cast to text instead, or compare positions directly.';
	END IF;
	RETURN $1::numeric;
END
$$;
CREATE FUNCTION sog.position(bigint[]) RETURNS sog.position[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad record;
BEGIN
	SELECT i, v INTO bad FROM unnest($1) WITH ORDINALITY AS u(v, i) WHERE v < 0 ORDER BY i LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'cannot convert a negative number to a position'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Element %s of the array is %s.', bad.i, bad.v),
				  HINT = 'Positions are non-negative integers.';
	END IF;
	RETURN $1::text[];
END
$$;
