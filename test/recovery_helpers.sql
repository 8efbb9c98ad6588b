-- recovery_helpers.sql: what a recovering consumer does in the regression
-- tests that mix recovery with the normal sink path, on top of
-- regress_helpers.sql (its sink table and pg_temp.d()).  Included with \i.

-- ev(rid, p, payload): what a recovering consumer does per fetched event in
-- its sink transaction: ask sog.recovery_event, and write the effect only
-- when told 'apply'.  The payload defaults to 'payload of <p>'.
CREATE FUNCTION pg_temp.ev(rid bigint, p text, payload text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	body text := coalesce(payload, 'payload of ' || p);
	outcome text;
BEGIN
	outcome := sog.recovery_event(rid, p::sog.position,
	                              sog.payload_digest(convert_to(body, 'UTF8')));
	IF outcome = 'apply' THEN
		INSERT INTO sink
		SELECT r.checkpoint_id, p::sog.position, body
		  FROM sog.recovery r WHERE r.id = rid;
	END IF;
	RETURN outcome;
END
$$;

-- page(rid, positions): a fetched page, event by event with ev(); like a
-- real consumer it stops at the first outcome that stops the attempt.
-- Returns e.g. '103 verified, 104 apply'.
CREATE FUNCTION pg_temp.page(rid bigint, positions text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	p text;
	outcome text;
	seen text[] := '{}';
BEGIN
	FOREACH p IN ARRAY positions LOOP
		outcome := pg_temp.ev(rid, p);
		seen := seen || (p || ' ' || outcome);
		EXIT WHEN outcome NOT IN ('verified', 'apply', 'duplicate');
	END LOOP;
	RETURN array_to_string(seen, ', ');
END
$$;

-- effects(cp): the sink rows of a checkpoint, e.g. '101 102 103'.
CREATE FUNCTION pg_temp.effects(cp bigint) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(s.pos::text, ' ' ORDER BY s.pos), '(none)')
	  FROM sink s WHERE s.cp = $1
$$;

-- cp(id): the checkpoint's state, positions and counts.
CREATE FUNCTION pg_temp.cp(id bigint,
    OUT generation bigint, OUT applied_position sog.position,
    OUT source_cursor sog.position, OUT state text, OUT open_gaps bigint,
    OUT gaps bigint, OUT open_recoveries bigint)
LANGUAGE sql AS $$
	SELECT c.generation, c.applied_position, c.source_cursor, c.state,
	       s.open_gaps,
	       (SELECT count(*) FROM sog.gap g WHERE g.checkpoint_id = c.id),
	       s.open_recoveries
	  FROM sog.checkpoint c JOIN sog.status s ON s.checkpoint_id = c.id
	 WHERE c.id = $1
$$;

-- gaps(cp): every gap of a checkpoint, in order of detection.
CREATE FUNCTION pg_temp.gaps(cp bigint,
    OUT from_position sog.position, OUT to_position sog.position,
    OUT reason text, OUT resolution text, OUT note text)
RETURNS SETOF record
LANGUAGE sql AS $$
	SELECT g.from_position, g.to_position, g.reason, g.resolution, g.note
	  FROM sog.gap g WHERE g.checkpoint_id = $1 ORDER BY g.id
$$;
