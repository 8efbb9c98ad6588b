-- portable/predecessor.sql: sog.position_predecessor (1.1) in SQL; emitted
-- where the C edition's update script defines it.

CREATE FUNCTION sog.position_predecessor(sog.position) RETURNS sog.position
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN last = '0' AND head IS NULL THEN NULL
		WHEN last = '0' THEN head
		ELSE concat_ws('-', head, (last::numeric - 1)::text)
	END::sog.position
	  FROM (SELECT substring($1 from '([^-]+)$') AS last,
				   substring($1 from '^(.*)-[^-]+$') AS head) s
$$;
