--
-- caller_role: whose grants the guard checks (README: roles and grants).
-- The role that called the function, as PostgreSQL's own privileges see
-- it: the current role, the owner of a SECURITY DEFINER function that
-- calls it, the owner of a table whose index expression a maintenance
-- command runs.  A function that changes state is refused inside a
-- security-restricted operation (ANALYZE, VACUUM, CREATE INDEX, REINDEX,
-- REFRESH MATERIALIZED VIEW run an expression as the table's owner there).
-- 1.1 checked the session's role: a role scoped to one consumer took
-- another's checkpoint over through a superuser's ANALYZE, and through a
-- SECURITY DEFINER function of its own that a superuser called.
-- Consumers here are named caller-*; roles regress_caller_*.
--
\i test/regress_common.sql

CREATE ROLE regress_caller_mine;       -- scoped to caller-mine
CREATE ROLE regress_caller_op;         -- operator
CREATE ROLE regress_caller_app;        -- no grant
SELECT sog.grant_consumer('regress_caller_mine', 'caller-mine');
SELECT sog.grant_operator('regress_caller_op');
GRANT CREATE ON SCHEMA public TO regress_caller_mine, regress_caller_op;

SELECT id AS mine FROM sog.register('caller-mine', 'orders', '0') \gset
SELECT id AS theirs FROM sog.register('caller-theirs', 'orders', '0') \gset
SELECT generation AS gt FROM sog.claim(:theirs, 'w-theirs') \gset
SELECT sog.apply(:theirs, :gt, '1', pg_temp.d('1'));

-- theirs(): the other consumer's checkpoint as its worker sees it
CREATE FUNCTION pg_temp.theirs(cp bigint) RETURNS text
LANGUAGE sql AS $$
	SELECT format('generation %s, owner %s, applied %s', generation, owner, applied_position)
	  FROM sog.checkpoint WHERE id = cp
$$;
SELECT pg_temp.theirs(:theirs) AS before;

--
-- 1. An index expression.  The scoped role builds a table whose expression
-- index calls sog.claim on the other consumer's checkpoint when a setting
-- says so (in its own session the claim would be refused: it is not its
-- consumer), and waits for a superuser's ANALYZE.  1.1: the ANALYZE
-- claimed the checkpoint (generation 1 -> 2, owner "intruder"), fencing
-- its worker.  Now ANALYZE fails, and nothing changes.
--
SET ROLE regress_caller_mine;
CREATE FUNCTION public.regress_caller_trap(i int, cp bigint) RETURNS int
	LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN coalesce(current_setting('regress.trap', true), '') <> 'on' THEN i
	            ELSE (SELECT generation FROM sog.claim(cp, 'intruder'))::int END
$$;
CREATE TABLE public.regress_caller_trap (i int, cp bigint);
CREATE INDEX ON public.regress_caller_trap (public.regress_caller_trap(i, cp));
INSERT INTO public.regress_caller_trap SELECT g, :theirs FROM generate_series(1, 10) g;
-- called directly, the claim is refused: the role's own grants
SET regress.trap = on;
SELECT state, message FROM pg_temp.err($$SELECT sog.claim($1, 'intruder')$$, :theirs);
RESET regress.trap;
RESET ROLE;
SET regress.trap = on;
SELECT * FROM pg_temp.err('ANALYZE public.regress_caller_trap') \gx
SELECT state FROM pg_temp.err('REINDEX TABLE public.regress_caller_trap');
RESET regress.trap;
SELECT pg_temp.theirs(:theirs) AS after_maintenance;

--
-- 2. A SECURITY DEFINER function of the scoped role, called by a superuser
-- (directly, or from a trigger or a view the superuser's query runs): it
-- acts with its owner's grants, as PostgreSQL's own privileges do.  1.1
-- checked the superuser and claimed.
--
SET ROLE regress_caller_mine;
CREATE FUNCTION public.regress_caller_definer(cp bigint) RETURNS bigint
	LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT generation FROM sog.claim(cp, 'intruder') $$;
RESET ROLE;
SELECT * FROM pg_temp.err('SELECT public.regress_caller_definer($1)', :theirs) \gx
SELECT pg_temp.theirs(:theirs) AS after_definer;
-- ... and for its own consumer it acts
SELECT public.regress_caller_definer(:mine) AS mine_claimed;

--
-- 3. The other way: an operator's SECURITY DEFINER function lends the
-- operator's grant to roles it grants EXECUTE to (an application role
-- with no grant of its own), as a view or function of PostgreSQL does.
--
SET ROLE regress_caller_op;
CREATE FUNCTION public.regress_caller_gaps(cp bigint) RETURNS bigint
	LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT count(*) FROM sog.gaps(cp) $$;
REVOKE ALL ON FUNCTION public.regress_caller_gaps(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.regress_caller_gaps(bigint) TO regress_caller_app;
RESET ROLE;
SET ROLE regress_caller_app;
SELECT public.regress_caller_gaps(:theirs) AS gaps_through_operator;
SELECT state FROM pg_temp.err('SELECT count(*) FROM sog.gaps($1)', :theirs) AS direct;
RESET ROLE;

--
-- 4. A read inside a maintenance command reads with the table owner's
-- grants, not the superuser's: a materialized view of the scoped role over
-- sog.status, refreshed by a superuser, holds the scoped role's rows only.
-- 1.1 filled it with every consumer's.
--
GRANT SELECT ON sog.status TO regress_caller_mine;
SET ROLE regress_caller_mine;
CREATE MATERIALIZED VIEW public.regress_caller_seen AS
	SELECT consumer FROM sog.status WHERE consumer LIKE 'caller-%' WITH NO DATA;
RESET ROLE;
REFRESH MATERIALIZED VIEW public.regress_caller_seen;
SELECT consumer FROM public.regress_caller_seen ORDER BY 1;

--
-- 5. Audit columns name the calling role: a gap resolved through an
-- operator's SECURITY DEFINER function records the operator.
--
SELECT sog.report_gap(:theirs, :gt, '5', 'retention', 'caller_role test') AS gap \gset
SET ROLE regress_caller_op;
CREATE FUNCTION public.regress_caller_resolve(g bigint) RETURNS void
	LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT sog.resolve_gap(g, 'accepted_loss', 'through a wrapper') $$;
GRANT EXECUTE ON FUNCTION public.regress_caller_resolve(bigint) TO regress_caller_app;
RESET ROLE;
SET ROLE regress_caller_app;
SELECT public.regress_caller_resolve(:gap);
RESET ROLE;
SELECT resolution, resolved_by FROM sog.gap WHERE id = :gap;
-- set_retention (PL/pgSQL, entered the same way) records its caller too
SET ROLE regress_caller_op;
SELECT sog.set_retention(checkpoint_id => :theirs, keep_positions => 10);
RESET ROLE;
SELECT keep_positions, updated_by FROM sog.retention WHERE checkpoint_id = :theirs;
SELECT sog.set_retention(checkpoint_id => :theirs);

--
-- 6. The body functions behind the PL/pgSQL entries are granted to no one.
--
SELECT p.oid::regprocedure AS body, has_function_privilege('regress_caller_op', p.oid, 'EXECUTE') AS op_may
  FROM pg_proc p
 WHERE p.pronamespace = 'sog'::regnamespace AND p.proname LIKE '%\_body'
 ORDER BY 1;
-- every function of the extension that reads or writes its tables is
-- SECURITY INVOKER but verify_storage (amcheck; it decides nothing on the
-- caller's role)
SELECT p.oid::regprocedure AS still_definer
  FROM pg_proc p WHERE p.pronamespace = 'sog'::regnamespace AND p.prosecdef ORDER BY 1;

DROP MATERIALIZED VIEW public.regress_caller_seen;
DROP TABLE public.regress_caller_trap;
DROP FUNCTION public.regress_caller_trap(int, bigint), public.regress_caller_definer(bigint),
	public.regress_caller_gaps(bigint), public.regress_caller_resolve(bigint);
REVOKE SELECT ON sog.status FROM regress_caller_mine;
REVOKE CREATE ON SCHEMA public FROM regress_caller_mine, regress_caller_op;
SELECT sog.revoke_consumer('regress_caller_mine');
DROP OWNED BY regress_caller_mine, regress_caller_op, regress_caller_app;
DELETE FROM sog.role_grant WHERE role LIKE 'regress_caller_%';
DROP ROLE regress_caller_mine, regress_caller_op, regress_caller_app;
