-- portable/access.sql: who calls, and on which checkpoints the caller's
-- grants let it act (the C edition: src/store/access.c; docs/portable.md, "Who is
-- calling, without C").
--
-- The C edition's stateful functions are SECURITY INVOKER: they remember
-- the calling role (GetUserId()) and switch to the extension's owner
-- themselves.  PL/pgSQL cannot switch roles, and a SECURITY DEFINER
-- function cannot learn who called it; a role could pass any name to one.
-- So each role proves who it is with a key only it can read: a row of
-- sog.caller_key, which row security shows to that role alone (the table's
-- owner, the extension's owner, and superusers see every row, as they may
-- act for anyone anyway).  Each stateful function of the C edition becomes
-- a SECURITY INVOKER SQL function made from the C edition's own statement
-- (portable/build.pl, "@entry"), which reads the caller's key as the
-- caller and passes it to sog.<name>_entry, a SECURITY DEFINER function
-- that maps the key to its role, checks that role's EXECUTE privilege on
-- the function and its grants, and does the work as the owner.  A role can
-- hand over only its own key: it can do nothing through the portable
-- edition that it could not do through the C one.
--
-- The role proven is the one that called (current_user): the login role,
-- the one chosen with SET ROLE, the owner of a SECURITY DEFINER function
-- that calls, or the owner of a table whose index expression a maintenance
-- command runs, exactly as the C edition checks.  (The C edition refuses
-- every writing call inside such a security-restricted operation; PL/pgSQL
-- cannot see that state, so there the portable edition acts with the table
-- owner's own grants, never more.)
--
-- A role gets its key on its first call in a read-write transaction; the
-- role that installs the edition has one from the start.  A role without a
-- key calling in a read-only transaction (a standby, BEGIN READ ONLY) is
-- refused (25006) with the way out: one call on the primary, such as
-- SELECT sog.caller_key().

CREATE TABLE sog.caller_key (
	role name PRIMARY KEY DEFAULT CURRENT_USER,
	key uuid NOT NULL UNIQUE DEFAULT pg_catalog.gen_random_uuid()
);
COMMENT ON TABLE sog.caller_key IS
	'portable edition: one key per role, readable by that role alone, with which its calls prove who calls';
ALTER TABLE sog.caller_key ENABLE ROW LEVEL SECURITY;
CREATE POLICY caller_key_own ON sog.caller_key
	USING (role OPERATOR(pg_catalog.=) CURRENT_USER)
	WITH CHECK (role OPERATOR(pg_catalog.=) CURRENT_USER);
REVOKE ALL ON TABLE sog.caller_key FROM PUBLIC;
GRANT SELECT, INSERT (role) ON TABLE sog.caller_key TO PUBLIC;
INSERT INTO sog.caller_key (role) VALUES (CURRENT_USER);

-- The calling role's key (current_user's), made on its first call in a
-- read-write transaction; NULL in a read-only one that finds none.  Every
-- call of a stateful function runs it, so it carries no SET search_path
-- (switching the setting costs more than the look-up): every type,
-- operator and function in it is schema-qualified, and it runs with the
-- rights of its caller, whose key it reads.
CREATE FUNCTION sog.caller_key() RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	k pg_catalog.uuid;
BEGIN
	SELECT c.key INTO k FROM sog.caller_key c WHERE c.role OPERATOR(pg_catalog.=) CURRENT_USER;
	IF k IS NULL AND NOT pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		INSERT INTO sog.caller_key (role) VALUES (CURRENT_USER)
			ON CONFLICT (role) DO NOTHING
			RETURNING caller_key.key INTO k;
		IF k IS NULL THEN		-- another session made it first
			SELECT c.key INTO k FROM sog.caller_key c WHERE c.role OPERATOR(pg_catalog.=) CURRENT_USER;
		END IF;
	END IF;
	RETURN k;
END
$$;
COMMENT ON FUNCTION sog.caller_key() IS
	'portable edition: the calling role''s key, made on its first call (what every stateful function passes to its entry)';
GRANT EXECUTE ON FUNCTION sog.caller_key() TO PUBLIC;

-- A user-supplied value as a message shows it (the C edition's sog_cut):
-- NULL as NULL, at most 200 bytes whole, a longer one cut at a character
-- boundary and followed by its length.
CREATE FUNCTION sog.cut(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN value IS NULL THEN 'NULL'
		WHEN octet_length(value) <= 200 THEN value
		ELSE (SELECT left(value, max(n)) FROM generate_series(0, 200) n
			   WHERE octet_length(left(value, n)) <= 200)
			 || format('... (%s bytes)', octet_length(value))
	END
$$;

-- A user-supplied value in double quotes, cut as sog.cut cuts it, or
-- if_null for NULL (the C edition's sog_quoted).
CREATE FUNCTION sog.quoted(value text, if_null text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN value IS NULL THEN if_null ELSE '"' || sog.cut(value) || '"' END
$$;

-- The role whose key this is: 25006 for none at all (a read-only
-- transaction before the role's first call), 42501 for a key that is no
-- role's (fn names the function called).  Volatile: it sees a key made
-- earlier in the same query.
CREATE FUNCTION sog.key_role(caller_key uuid, fn regprocedure) RETURNS name
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	who name;
BEGIN
	IF caller_key IS NULL THEN
		RAISE EXCEPTION 'cannot tell which role calls %', fn
			USING ERRCODE = 'read_only_sql_transaction',
				  DETAIL = format('The portable edition proves who calls with a key it makes for each role on its first call in a read-write transaction; role "%s" has none yet.',
								  sog.cut(session_user)),
				  HINT = 'Run SELECT sog.caller_key(); once as that role in a read-write transaction on the primary.';
	END IF;
	SELECT c.role INTO who FROM sog.caller_key c WHERE c.key = caller_key;
	IF who IS NULL THEN
		RAISE EXCEPTION 'permission denied for function %', fn
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'The caller key given is no role''s.',
				  HINT = format('Call %s itself; it passes the calling role''s own key.', fn);
	END IF;
	RETURN who;
END
$$;
COMMENT ON FUNCTION sog.key_role(uuid, regprocedure) IS
	'portable edition: the role whose caller key this is';
REVOKE ALL ON FUNCTION sog.key_role(uuid, regprocedure) FROM PUBLIC;

-- Enter a stateful function for the role whose key this is (sog.key_role),
-- refusing a role without EXECUTE on the public function fn (42501, as
-- PostgreSQL refuses it); then make that role the caller
-- (sog.calling_role) until sog.leave.  A call that one of the extension's
-- bodies makes on its caller's behalf (it runs as the owner) keeps the
-- outer caller, as the C edition does.  Returns what sog.leave restores.
CREATE FUNCTION sog.enter(caller_key uuid, fn regprocedure) RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
	outer_caller text := coalesce(current_setting('sog.caller', true), '');
	who name;
BEGIN
	SELECT c.role INTO who FROM sog.caller_key c WHERE c.key = enter.caller_key;
	IF who IS NULL THEN
		who := sog.key_role(caller_key, fn);		-- raises: no key, or no role's
	END IF;
	IF outer_caller <> '' AND who = CURRENT_USER THEN
		RETURN outer_caller;
	END IF;
	IF NOT has_function_privilege(who, fn, 'EXECUTE') THEN
		RAISE EXCEPTION 'permission denied for function %', fn
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	PERFORM set_config('sog.caller', who, true);
	RETURN outer_caller;
END
$$;
COMMENT ON FUNCTION sog.enter(uuid, regprocedure) IS
	'portable edition: what every entry does first (the caller''s key checked, the caller remembered)';
REVOKE ALL ON FUNCTION sog.enter(uuid, regprocedure) FROM PUBLIC;

-- What every entry does last: the caller it replaced back.
CREATE FUNCTION sog.leave(outer_caller text) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$ BEGIN PERFORM set_config('sog.caller', outer_caller, true); END $$;
COMMENT ON FUNCTION sog.leave(text) IS
	'portable edition: what every entry does last (the outer caller back)';
REVOKE ALL ON FUNCTION sog.leave(text) FROM PUBLIC;

-- The role whose grants are checked: the caller of the entry now running,
-- or, outside any (a body called by the owner directly), the session's
-- role (the C edition's sog_caller).
CREATE FUNCTION sog.acting_role() RETURNS name
LANGUAGE sql STABLE
AS $$
	SELECT coalesce(nullif(current_setting('sog.caller', true), ''),
					nullif(current_setting('role'), 'none'), session_user)::name
$$;
COMMENT ON FUNCTION sog.acting_role() IS
	'portable edition: the role whose grants are checked (the caller of the entry now running)';
REVOKE ALL ON FUNCTION sog.acting_role() FROM PUBLIC;

-- What the grants of a role allow: any (some grant applies), every
-- consumer, operator, and the names of the scoped consumer grants, in the
-- table's order as the C edition scans it.  A grant counts while its OID
-- still has its name.
-- (PL/pgSQL: a SQL function that is not inlined is planned again in every
-- transaction; it runs under its caller's search_path.)
CREATE FUNCTION sog.grants_of(who name, OUT any_grant boolean, OUT all_consumers boolean,
							  OUT operator boolean, OUT consumers text[])
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	res record;
BEGIN
	SELECT count(*) > 0 AS a,
		   coalesce(bool_or(g.kind = 'consumer' AND g.consumer IS NULL), false) AS b,
		   coalesce(bool_or(g.kind = 'operator'), false) AS c,
		   array_agg(g.consumer ORDER BY g.ctid) FILTER (WHERE g.kind <> 'operator' AND g.consumer IS NOT NULL) AS d
	  INTO res
	  FROM sog.role_grant g
	  JOIN pg_catalog.pg_roles r ON r.oid = g.role_oid AND r.rolname = g.role
	 WHERE pg_catalog.pg_has_role(who, r.oid, 'USAGE');
	any_grant := res.a;
	all_consumers := res.b;
	"operator" := res.c;
	consumers := res.d;
END
$$;
COMMENT ON FUNCTION sog.grants_of(name) IS
	'portable edition: what the grants in force of a role (and of the roles whose privileges it has) allow';
REVOKE ALL ON FUNCTION sog.grants_of(name) FROM PUBLIC;

-- Superusers and roles with the privileges of the extension's owner (the
-- owner of these functions, current_user in an entry) pass without a grant.
CREATE FUNCTION sog.access_privileged(who name) RETURNS boolean
LANGUAGE sql STABLE
AS $$ SELECT pg_has_role(who, CURRENT_USER, 'USAGE') $$;
COMMENT ON FUNCTION sog.access_privileged(name) IS
	'portable edition: whether a role passes every access check (a superuser, or it has the privileges of the extension''s owner)';
REVOKE ALL ON FUNCTION sog.access_privileged(name) FROM PUBLIC;

-- Whether grants allow kinds (1 consumer, 2 operator, 3 either) of access
-- to checkpoints of consumer; to every checkpoint (cover_all).
CREATE FUNCTION sog.grants_allow(g record, consumer text, kinds integer) RETURNS boolean
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	RETURN ((kinds & 2) <> 0 AND g.operator)
		OR ((kinds & 1) <> 0 AND (g.all_consumers
								   OR coalesce(consumer = ANY (g.consumers), false)));
END
$$;
REVOKE ALL ON FUNCTION sog.grants_allow(record, text, integer) FROM PUBLIC;

-- "a", "b" and "c" for a message, as the C edition's name_list.
CREATE FUNCTION sog.name_list(names text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	buf text := '';
	n integer := coalesce(array_length(names, 1), 0);
BEGIN
	FOR i IN 1 .. n LOOP
		IF buf <> '' THEN
			buf := buf || CASE WHEN i = n THEN ' and ' ELSE ', ' END;
		END IF;
		buf := buf || '"' || sog.cut(names[i]) || '"';
		IF octet_length(buf) > 1000 THEN
			buf := buf || ', ...';
			EXIT;
		END IF;
	END LOOP;
	RETURN buf;
END
$$;
REVOKE ALL ON FUNCTION sog.name_list(text[]) FROM PUBLIC;

-- Refuse the acting role kinds of access to what ("checkpoint 42",
-- "recovery attempt 7", "gap 3", or for register 'consumer "x"' with
-- requested the name given): the C edition's refuse(), word for word.
CREATE FUNCTION sog.access_refuse(who name, g record, what text, requested text, kinds integer)
	RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rolename text := sog.cut(who);
	role text := quote_literal(quote_ident(who));
	consumer text := CASE WHEN requested IS NOT NULL THEN quote_literal(sog.cut(requested)) END;
	names text := CASE WHEN g.consumers IS NOT NULL THEN sog.name_list(g.consumers) END;
	plural text := CASE WHEN coalesce(array_length(g.consumers, 1), 0) > 1 THEN 's' ELSE '' END;
BEGIN
	IF NOT g.any_grant AND kinds = 2 THEN
		RAISE EXCEPTION 'permission denied for %', what
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('Role "%s" has no grant from sog.grant_operator(); this function is for operators.', rolename),
				  HINT = format('The extension''s owner grants it with sog.grant_operator(%s).', role);
	END IF;
	IF NOT g.any_grant THEN
		RAISE EXCEPTION 'permission denied for %', what
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('Role "%s" has no grant from sog.grant_consumer() or sog.grant_operator().', rolename),
				  HINT = CASE WHEN requested IS NOT NULL
						 THEN format('The extension''s owner grants access with sog.grant_consumer(%s, %s) or sog.grant_operator(%s).',
									 role, consumer, role)
						 ELSE format('The extension''s owner grants access with sog.grant_consumer(%s, consumer) or sog.grant_operator(%s).',
									 role, role) END;
	END IF;
	IF kinds = 2 THEN
		RAISE EXCEPTION 'permission denied for %', what
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('Role "%s" is not an operator; this function is for operators.', rolename),
				  HINT = format('The extension''s owner grants it with sog.grant_operator(%s).', role);
	END IF;
	IF names IS NULL THEN
		RAISE EXCEPTION 'permission denied for %', what
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('Role "%s" has no consumer grant.', rolename),
				  HINT = format('The extension''s owner grants one with sog.grant_consumer(%s, consumer).', role);
	END IF;
	RAISE EXCEPTION 'permission denied for %', what
		USING ERRCODE = 'insufficient_privilege',
			  DETAIL = format('Role "%s" may act only on checkpoints of consumer%s %s.', rolename, plural, names),
			  HINT = CASE WHEN requested IS NOT NULL
					 THEN format('Use a role granted for consumer "%s", or have the extension''s owner run sog.grant_consumer(%s, %s).',
								 sog.cut(requested), role, consumer)
					 ELSE format('Use the id of a checkpoint of consumer%s %s (sog.status lists them), or have the extension''s owner grant more with sog.grant_consumer(%s, consumer).',
								 plural, names, role) END;
END
$$;
REVOKE ALL ON FUNCTION sog.access_refuse(name, record, text, text, integer) FROM PUBLIC;

-- 42501 unless the acting role may act on what (a checkpoint, attempt or
-- gap of consumer) with a grant of one of kinds (sog_check_access_to);
-- requested, for register, is the consumer name the caller gave, which the
-- refusal's hint names.
CREATE FUNCTION sog.check_access_to(what text, consumer text, kinds integer, requested text DEFAULT NULL)
	RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	who name := sog.acting_role();
	g record;
BEGIN
	IF sog.access_privileged(who) THEN
		RETURN;
	END IF;
	g := sog.grants_of(who);
	IF sog.grants_allow(g, consumer, kinds) THEN
		RETURN;
	END IF;
	PERFORM sog.access_refuse(who, g, what, requested, kinds);
END
$$;
REVOKE ALL ON FUNCTION sog.check_access_to(text, text, integer, text) FROM PUBLIC;

-- The same for checkpoint checkpoint_id of consumer; 0 is a consumer that
-- has no checkpoint yet (register), named by what the caller gave
-- (sog_check_access).
CREATE FUNCTION sog.check_access(checkpoint_id bigint, consumer text, kinds integer) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
	IF checkpoint_id > 0 THEN
		PERFORM sog.check_access_to('checkpoint ' || checkpoint_id, consumer, kinds);
	ELSE
		PERFORM sog.check_access_to(format('consumer "%s"', sog.cut(consumer)), consumer, kinds, consumer);
	END IF;
END
$$;
REVOKE ALL ON FUNCTION sog.check_access(bigint, text, integer) FROM PUBLIC;

-- What (a checkpoint, attempt or gap) does not exist: the 42501 a role
-- whose grants do not cover every checkpoint gets for one it may not act
-- on; nothing for one whose do (sog_check_access_missing).
CREATE FUNCTION sog.check_access_missing(what text, kinds integer) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	who name := sog.acting_role();
	g record;
BEGIN
	IF sog.access_privileged(who) THEN
		RETURN;
	END IF;
	g := sog.grants_of(who);
	IF ((kinds & 2) <> 0 AND g.operator) OR ((kinds & 1) <> 0 AND g.all_consumers) THEN
		RETURN;
	END IF;
	PERFORM sog.access_refuse(who, g, what, NULL, kinds);
END
$$;
REVOKE ALL ON FUNCTION sog.check_access_missing(text, integer) FROM PUBLIC;

-- sog.check_consumer_access(consumer): what sog.register_body checks
-- before it writes (25006 on a standby, then the check for a consumer name
-- that has no checkpoint yet).
CREATE FUNCTION sog.check_consumer_access(consumer text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_is_in_recovery() THEN
		RAISE EXCEPTION 'cannot register a checkpoint during recovery'
			USING ERRCODE = 'read_only_sql_transaction',
				  DETAIL = 'This server is a standby: checkpoints, receipts and gaps change only on the primary.',
				  HINT = 'Connect the consumer to the primary.';
	END IF;
	PERFORM sog.check_access(0, consumer, 1);
END
$$;

-- sog.check_operator_access(what): 42501 naming what unless the acting
-- role has an operator grant in force (or passes every check).
CREATE FUNCTION sog.check_operator_access(what text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM sog.check_access_missing(coalesce(what, 'this function'), 2);
END
$$;

-- sog.calling_role(): who acted, for the audit columns the bodies write.
CREATE FUNCTION sog.calling_role() RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT sog.acting_role()::text $$;

-- sog.may_see(consumer): the row filter of sog.status, for the querying
-- role (the caller of the view: current_user), through its key.
CREATE FUNCTION sog.may_see(consumer text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL RESTRICTED
AS $$ SELECT sog.may_see_entry(sog.caller_key(), consumer) $$;

CREATE FUNCTION sog.may_see_entry(caller_key uuid, consumer text) RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	who name := sog.key_role(caller_key, 'sog.may_see(text)');
BEGIN
	RETURN sog.access_privileged(who) OR sog.grants_allow(sog.grants_of(who), consumer, 3);
END
$$;
COMMENT ON FUNCTION sog.may_see_entry(uuid, text) IS
	'portable edition: sog.may_see for the role whose key this is';
GRANT EXECUTE ON FUNCTION sog.may_see_entry(uuid, text) TO PUBLIC;
