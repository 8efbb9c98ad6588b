--
-- access: consumer roles scoped to their consumers, operators, and who is
-- checked (README: roles and grants, backup and restore and the SQL reference)
--
-- grant_consumer(role, consumer) lets a role act only on that consumer's
-- checkpoints (several calls add names); without a name, on all of them.
-- Every stateful function checks the role that calls it (after SET ROLE;
-- inside a SECURITY DEFINER function, its owner) against the grants and
-- refuses other checkpoints with 42501, the checkpoint and the role in the
-- detail.  Consumers here are named
-- access-*; roles regress_access_*.
--
\i test/regress_common.sql

CREATE ROLE regress_access_a;          -- scoped to access-a
CREATE ROLE regress_access_ab;         -- scoped to access-a and access-b
CREATE ROLE regress_access_all;        -- every consumer
CREATE ROLE regress_access_op;         -- operator
CREATE ROLE regress_access_manual;     -- EXECUTE granted by hand, no grant row
CREATE ROLE regress_access_member IN ROLE regress_access_a;  -- inherits a's grant
SELECT sog.grant_consumer('regress_access_a', 'access-a');
SELECT sog.grant_consumer('regress_access_ab', 'access-a');
SELECT sog.grant_consumer('regress_access_ab', 'access-b');
SELECT sog.grant_consumer('regress_access_ab', 'access-b');   -- twice: one row
SELECT sog.grant_consumer('regress_access_all');
SELECT sog.grant_operator('regress_access_op');
GRANT EXECUTE ON FUNCTION sog.claim(bigint, text, text) TO regress_access_manual;
SELECT role, kind, consumer FROM sog.role_grant
 WHERE role::text LIKE 'regress_access_%' ORDER BY role::text, kind, consumer;

-- Two checkpoints, set up by the owner: access-a (with a gap, a token, a
-- recovery attempt) and access-c.
SELECT id AS a FROM sog.register('access-a', 'orders', '0', provider => 'kafka') \gset
SELECT id AS c FROM sog.register('access-c', 'orders', '0', provider => 'kafka') \gset
SELECT generation AS ga FROM sog.claim(:a, 'owner') \gset
SELECT generation AS gc FROM sog.claim(:c, 'owner') \gset
SELECT sog.apply(:a, :ga, '1', sog.payload_digest('1')), sog.apply(:c, :gc, '1', sog.payload_digest('1'));
SELECT sog.commit_page(:a, :ga, NULL, 'T1'), sog.commit_page(:c, :gc, NULL, 'T1');
SELECT id AS ra FROM sog.begin_recovery(:a, :ga, 'T1', NULL, '1', true) \gset
SELECT id AS rc FROM sog.begin_recovery(:c, :gc, 'T1', NULL, '1', true) \gset

-- every(cp, gen, rid, cname): each stateful function of a consumer, called
-- on checkpoint cp of consumer cname: the SQLSTATE each one ends with, and
-- its message, detail and hint (ids masked).
CREATE FUNCTION pg_temp.every(cp bigint, gen bigint, rid bigint, cname text,
                              OUT fn text, OUT state text, OUT message text,
                              OUT detail text, OUT hint text)
RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
	q record;
BEGIN
	FOR q IN SELECT * FROM (VALUES
		('register', format($q$SELECT sog.register(%L, 'orders', '0')$q$, cname)),
		('claim', format($q$SELECT sog.claim(%s, 'intruder')$q$, cp)),
		('note_read', format($q$SELECT sog.note_read(%s, %s, '1', NULL, NULL)$q$, cp, gen)),
		('apply', format($q$SELECT sog.apply(%s, %s, '1', sog.payload_digest('1'))$q$, cp, gen)),
		('apply_batch', format($q$SELECT sog.apply_batch(%s, %s, '{1}', ARRAY[sog.payload_digest('1')])$q$, cp, gen)),
		('apply_batch_int8', format($q$SELECT sog.apply_batch_int8(%s, %s, '{1}', ARRAY[sog.payload_digest('1')])$q$, cp, gen)),
		('apply_run', format($q$SELECT sog.apply_run(%s, %s, 1, sog.payload_digest('1'))$q$, cp, gen)),
		('halt', format($q$SELECT sog.halt(%s, %s, NULL, NULL, NULL)$q$, cp, gen + 1000)),
		('verify_gap', format($q$SELECT sog.verify_gap(%s, %s, repeat('0', 64))$q$, cp, gen + 1000)),
		('skip_gap', format($q$SELECT sog.skip_gap(%s, %s, 'x')$q$, cp, gen + 1000)),
		('commit_page', format($q$SELECT sog.commit_page(%s, %s, 'T1', 'T1')$q$, cp, gen)),
		('receipts', format($q$SELECT count(*) FROM sog.receipts(%s)$q$, cp)),
		('report_gap', format($q$SELECT sog.report_gap(%s, %s, '99', 'retention')$q$, cp, gen + 1000)),
		('gaps', format($q$SELECT count(*) FROM sog.gaps(%s)$q$, cp)),
		('owner_check', format($q$SELECT sog.owner_check(%s, %s)$q$, cp, gen)),
		('begin_recovery', format($q$SELECT sog.begin_recovery(%s, %s, 'T9', NULL, '1', true)$q$, cp, gen)),
		('recovery_event', format($q$SELECT sog.recovery_event(%s, '1', sog.payload_digest('1'))$q$, rid)),
		('promote', format($q$SELECT sog.promote(%s, 'T2', '1')$q$, rid)),
		('resolve_gap', $q$SELECT sog.resolve_gap(0, 'replayed', 'x')$q$),
		('prune_receipts', format($q$SELECT sog.prune_receipts(%s, '0')$q$, cp)),
		('reconfigure', format($q$SELECT sog.reconfigure(%s)$q$, cp))
	) AS v(fn, sql) LOOP
		fn := q.fn;
		SELECT e.state, e.message, e.detail, e.hint INTO state, message, detail, hint
		  FROM pg_temp.err(q.sql) e;
		RETURN NEXT;
	END LOOP;
END
$$;

-- A scoped role: its own consumer's checkpoint works (errors there are the
-- protocol's: a stale generation, a wrong token); the other's is 42501
-- everywhere; operator functions are not granted (42501 too).
SET ROLE regress_access_a;
SELECT a.fn, a.state AS "on access-a", c.state AS "on access-c"
  FROM pg_temp.every(:a, :ga, :ra, 'access-a') a JOIN pg_temp.every(:c, :gc, :rc, 'access-c') c USING (fn);
-- The detail names the role and its own consumers, never the checkpoint's.
SELECT * FROM pg_temp.err($$SELECT sog.apply($1, $2, '2', sog.payload_digest('2'))$$, :c, :gc) \gx
SELECT * FROM pg_temp.err($$SELECT sog.register('access-new', 'orders', '0')$$) \gx
-- A scoped role learns nothing of checkpoints it may not see (issue 20):
-- another consumer's checkpoint or attempt and an id that does not exist
-- get the same answer, word for word (1.0 named the other consumer in the
-- detail and hint, and answered 22023 "does not exist" for an unknown id).
-- register names only the consumer the caller itself passed.
SELECT c.fn, c.state,
       (c.state, c.message, c.detail, c.hint) IS NOT DISTINCT FROM
       (x.state, x.message, x.detail, x.hint) AS same_as_unknown_id,
       concat_ws(' ', c.message, c.detail, c.hint) LIKE '%access-c%' AS names_access_c
  FROM pg_temp.every(:c, :gc, :rc, 'access-c') WITH ORDINALITY c(fn, state, message, detail, hint, n)
  JOIN pg_temp.every(999999999, :gc, 999999999, 'access-c') x USING (fn)
 ORDER BY c.n;
SELECT * FROM pg_temp.err($$SELECT sog.promote(999999999, 'T2', '1')$$) \gx
RESET ROLE;
-- Roles whose grants cover every checkpoint are told an id is unknown.
SET ROLE regress_access_all;
SELECT state, message FROM pg_temp.err($$SELECT sog.owner_check(999999999, 0)$$);
SELECT state, message FROM pg_temp.err($$SELECT sog.promote(999999999, 'T2', '1')$$);
SET ROLE regress_access_op;
SELECT state, message FROM pg_temp.err($$SELECT count(*) FROM sog.gaps(999999999)$$);
SELECT state, message FROM pg_temp.err($$SELECT sog.resolve_gap(999999999, 'replayed', 'x')$$);
RESET ROLE;
-- Nothing changed on access-c.
SELECT generation = :gc AS same_generation, applied_position, state FROM sog.checkpoint WHERE id = :c;

-- Two names, a member that inherits a scoped grant, every consumer.
SET ROLE regress_access_ab;
SELECT state, detail FROM pg_temp.err($$SELECT sog.owner_check($1, 0)$$, :c);
SELECT id > 0 AS registered FROM sog.register('access-b', 'orders', '0');
SET ROLE regress_access_member;
SELECT sog.owner_check(:a, :ga) AS a_owned;
SELECT state FROM pg_temp.err($$SELECT sog.owner_check($1, 0)$$, :c);
SET ROLE regress_access_all;
SELECT sog.owner_check(:a, :ga) AS a_owned, sog.owner_check(:c, :gc) AS c_owned;
RESET ROLE;

-- sog.status shows each role the checkpoints it may see: a scoped role its
-- consumers' (a member what its role may), every consumer's for an
-- unscoped consumer grant, an operator and the owner (a role without a
-- grant may not read it at all).  A security barrier: a function in the
-- caller's WHERE never sees the rows filtered out.
CREATE FUNCTION pg_temp.leak(x text) RETURNS boolean
LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
	RAISE NOTICE 'leak sees %', x;
	RETURN true;
END
$$;
SET ROLE regress_access_a;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS a_sees FROM sog.status WHERE consumer LIKE 'access-%';
SELECT count(*) AS leaked FROM sog.status WHERE consumer LIKE 'access-%' AND pg_temp.leak(consumer);
SET ROLE regress_access_ab;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS ab_sees FROM sog.status WHERE consumer LIKE 'access-%';
SET ROLE regress_access_member;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS member_sees FROM sog.status WHERE consumer LIKE 'access-%';
SET ROLE regress_access_all;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS all_sees FROM sog.status WHERE consumer LIKE 'access-%';
SET ROLE regress_access_op;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS op_sees FROM sog.status WHERE consumer LIKE 'access-%';
RESET ROLE;
SELECT string_agg(consumer, ',' ORDER BY consumer) AS owner_sees FROM sog.status WHERE consumer LIKE 'access-%';
-- sog.may_see itself: PUBLIC may call it; it tells only the caller's own case.
SET ROLE regress_access_manual;
SELECT sog.may_see('access-a') AS manual_a, sog.may_see(NULL) AS manual_null;
SET ROLE regress_access_a;
SELECT sog.may_see('access-a') AS a_a, sog.may_see('access-c') AS a_c, sog.may_see(NULL) AS a_null;
RESET ROLE;
SET ROLE regress_access_all;
SELECT count(*) AS c_gaps FROM sog.gaps(:c);
RESET ROLE;

-- An operator watches and repairs every checkpoint, and cannot apply.
SET ROLE regress_access_op;
SELECT count(*) AS receipts FROM sog.receipts(:c);
SELECT count(*) AS gaps FROM sog.gaps(:c);
SELECT state, message FROM pg_temp.err($$SELECT sog.apply($1, $2, '2', sog.payload_digest('2'))$$, :c, :gc);
RESET ROLE;

-- EXECUTE granted by hand is not a grant: 42501, with the way to get one.
SET ROLE regress_access_manual;
SELECT * FROM pg_temp.err($$SELECT sog.claim($1, 'manual')$$, :c) \gx
RESET ROLE;

-- The operators' functions written in SQL check the grant too, before they
-- read or lock anything (review of issue 20: set_retention,
-- retention_horizon and prune_due ran for any role with EXECUTE - granted
-- by hand, or kept by an operator whose row was deleted or who was renamed
-- - and prune_due locked the checkpoint's row before sog.prune_receipts
-- refused; a retention policy was changed for every checkpoint).
GRANT EXECUTE ON FUNCTION sog.set_retention(text, bigint, numeric, interval),
	sog.retention_horizon(bigint), sog.prune_due(bigint, bigint) TO regress_access_manual;
SET ROLE regress_access_manual;
SELECT * FROM pg_temp.err($$SELECT sog.set_retention(keep_positions => 0)$$) \gx
SELECT state, message FROM pg_temp.err($$SELECT sog.retention_horizon($1)$$, :c);
SELECT state, message FROM pg_temp.err($$SELECT sog.retention_horizon(999999999)$$);
SELECT state, message FROM pg_temp.err($$SELECT sog.prune_due($1)$$, :c);
SELECT state, message FROM pg_temp.err($$SELECT sog.prune_due(999999999)$$);
RESET ROLE;
SELECT count(*) AS policies FROM sog.retention;
SET ROLE regress_access_op;
SELECT sog.retention_horizon(:c) AS op_horizon, sog.prune_due(:c) AS op_pruned;
RESET ROLE;

-- Role names in hints are written as the grant functions take them, a
-- quoted identifier in a literal (review of issue 20: the hint wrote the
-- bare name, so sog.revoke_consumer('Regress_Access_Mixed') as the hint
-- said took the grant of role regress_access_mixed, another role, and a
-- name with a quote made the hint's call a syntax error).
CREATE ROLE "Regress_Access_Mixed";
CREATE ROLE regress_access_mixed;
CREATE ROLE "regress_access_it's";
SELECT sog.grant_consumer('"Regress_Access_Mixed"');
SELECT sog.grant_consumer('"regress_access_it''s"', 'access-a');
SELECT * FROM pg_temp.err($$SELECT sog.revoke_consumer('"Regress_Access_Mixed"', 'access-a')$$) \gx
SET ROLE "regress_access_it's";
SELECT state, hint FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :c, :gc);
SELECT state, hint FROM pg_temp.err($$SELECT sog.register('access-q', 'orders', '0')$$);
RESET ROLE;
SELECT sog.revoke_consumer('"Regress_Access_Mixed"');
GRANT EXECUTE ON FUNCTION sog.claim(bigint, text, text) TO "Regress_Access_Mixed";
SET ROLE "Regress_Access_Mixed";
SELECT state, hint FROM pg_temp.err($$SELECT sog.claim($1, 'mixed')$$, :c);
RESET ROLE;
DROP OWNED BY "Regress_Access_Mixed", "regress_access_it's";
DELETE FROM sog.role_grant WHERE role IN ('Regress_Access_Mixed', 'regress_access_it''s');
DROP ROLE "Regress_Access_Mixed", regress_access_mixed, "regress_access_it's";

-- A SECURITY DEFINER wrapper lends its owner's grant to whoever may execute
-- it, as PostgreSQL's own privileges do (1.2; 1.1 checked the session's
-- role and refused the caller): the role checked is the one the wrapper
-- runs as (regression caller_role shows the other way round).
CREATE ROLE regress_access_app;
CREATE FUNCTION public.regress_wrapped_owner_check(cp bigint, gen bigint) RETURNS boolean
	LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT sog.owner_check(cp, gen) $$;
ALTER FUNCTION public.regress_wrapped_owner_check(bigint, bigint) OWNER TO regress_access_all;
SET ROLE regress_access_all;
SELECT public.regress_wrapped_owner_check(:c, :gc) AS as_owner;
SET ROLE regress_access_app;
SELECT state, detail FROM pg_temp.err($$SELECT public.regress_wrapped_owner_check($1, $2)$$, :c, :gc);
RESET ROLE;

-- Revoking one name leaves the others; revoking all takes EXECUTE back.
SELECT sog.revoke_consumer('regress_access_ab', 'access-a');
SET ROLE regress_access_ab;
SELECT state FROM pg_temp.err($$SELECT sog.owner_check($1, 0)$$, :a);
SELECT count(*) >= 0 AS b_ok FROM sog.status;
RESET ROLE;
SELECT sog.revoke_consumer('regress_access_ab');
SET ROLE regress_access_ab;
SELECT state, message FROM pg_temp.err($$SELECT sog.owner_check($1, 0)$$, :a);
RESET ROLE;
-- ... every consumer function's, apply_batch_int8's too
SELECT p.oid::regprocedure AS still_executable
  FROM pg_proc p
 WHERE p.pronamespace = 'sog'::regnamespace
   AND p.proname IN ('claim', 'apply', 'apply_batch', 'apply_batch_int8', 'note_read', 'halt')
   AND has_function_privilege('regress_access_ab', p.oid, 'EXECUTE');
-- sog.refresh_grants() gives each granted role what its grant function
-- gives now (after an update); the owner's only.  (Terse: the warnings
-- about the grants of roles that the tests before dropped name their OIDs.)
\set VERBOSITY terse
SELECT sog.refresh_grants() > 0 AS refreshed,
       has_function_privilege('regress_access_a', 'sog.apply_batch_int8(bigint,bigint,bigint[],bytea[])', 'EXECUTE') AS a_int8,
       has_function_privilege('regress_access_ab', 'sog.apply_batch_int8(bigint,bigint,bigint[],bytea[])', 'EXECUTE') AS ab_int8;
\set VERBOSITY default
SET ROLE regress_access_a;
SELECT state FROM pg_temp.err($$SELECT sog.refresh_grants()$$);
RESET ROLE;
-- An unscoped grant after scoped ones covers every consumer; a scoped one
-- after an unscoped one is a notice and changes nothing.
SELECT sog.grant_consumer('regress_access_a');
SELECT sog.grant_consumer('regress_access_a', 'access-z');
SELECT role, kind, consumer FROM sog.role_grant
 WHERE role = 'regress_access_a';

-- Revoking one grant never takes what another grant of the role gives
-- (issue 20; 1.0's revoke_consumer took owner_check, gaps, receipts and
-- sog.status from an operator that had also held a consumer grant).
CREATE ROLE regress_access_opc;
SELECT sog.grant_operator('regress_access_opc');
SELECT sog.grant_consumer('regress_access_opc', 'access-a');
SELECT sog.revoke_consumer('regress_access_opc');
SELECT sog.revoke_consumer('regress_access_op');   -- an operator only: nothing to take
SET ROLE regress_access_opc;
SELECT sog.owner_check(:c, :gc) AS c_owned, (SELECT count(*) FROM sog.gaps(:c)) AS c_gaps,
       (SELECT count(*) FROM sog.receipts(:c)) AS c_receipts,
       (SELECT count(*) FROM sog.status WHERE consumer LIKE 'access-%') AS status_rows;
SELECT state, message FROM pg_temp.err($$SELECT sog.claim($1, 'opc')$$, :a);
SET ROLE regress_access_op;
SELECT sog.owner_check(:c, :gc) AS c_owned;
RESET ROLE;

-- revoke_consumer(role, name) under an every-consumer grant refuses and
-- says why (issue 20; 1.0 did nothing and said nothing, and the role kept
-- acting on that consumer).  A name the role has no grant for is a notice.
SELECT * FROM pg_temp.err($$SELECT sog.revoke_consumer('regress_access_all', 'access-c')$$) \gx
SELECT role, kind, consumer FROM sog.role_grant WHERE role = 'regress_access_all';
SELECT sog.revoke_consumer('regress_access_ab', 'access-zz');

-- A grant belongs to the role it was given to (issue 20).  A role dropped
-- after its grant leaves its row, kept and never in force (missing until
-- the owner's sog.refresh_grants(), dropped after it); a role created later
-- with the same name does not inherit it: not with a grant of its own, and
-- not from sog.refresh_grants() (review of issue 20: refresh_grants bound
-- the dropped role's row to the new role of its name, which so gained
-- access-c although the owner had granted it access-a only).
CREATE ROLE regress_access_gone;
SELECT sog.grant_consumer('regress_access_gone', 'access-c');
DROP OWNED BY regress_access_gone;
DROP ROLE regress_access_gone;
SELECT role, kind, consumer, status FROM sog.grant_status WHERE role = 'regress_access_gone';
CREATE ROLE regress_access_gone;
SELECT sog.grant_consumer('regress_access_gone', 'access-a');   -- a grant of its own
SELECT role, consumer, status FROM sog.grant_status WHERE role = 'regress_access_gone' ORDER BY consumer;
SET ROLE regress_access_gone;
SELECT sog.owner_check(:a, :ga) AS a_owned;
SELECT state, detail FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :c, :gc);
RESET ROLE;
\set VERBOSITY terse
SELECT sog.refresh_grants() > 0 AS refreshed;
\set VERBOSITY default
SELECT role, consumer, status FROM sog.grant_status WHERE role = 'regress_access_gone' ORDER BY consumer;
SET ROLE regress_access_gone;
SELECT state, detail FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :c, :gc);
RESET ROLE;
-- Only a grant made for it gives the new role access-c.
SELECT sog.grant_consumer('regress_access_gone', 'access-c');
SELECT role, consumer, status FROM sog.grant_status WHERE role = 'regress_access_gone' ORDER BY consumer;
SET ROLE regress_access_gone;
SELECT sog.owner_check(:c, :gc) AS c_owned;
RESET ROLE;
-- The same for a dropped role's grant of every consumer: the new role of
-- its name, granted access-a, keeps access-a only (refresh_grants gave it
-- every consumer and deleted its access-a row).
CREATE ROLE regress_access_wide;
SELECT sog.grant_consumer('regress_access_wide');
DROP OWNED BY regress_access_wide;
DROP ROLE regress_access_wide;
CREATE ROLE regress_access_wide;
SELECT sog.grant_consumer('regress_access_wide', 'access-a');
\set VERBOSITY terse
SELECT sog.refresh_grants() > 0 AS refreshed;
\set VERBOSITY default
SELECT role, consumer, status FROM sog.grant_status WHERE role = 'regress_access_wide' ORDER BY consumer;
SET ROLE regress_access_wide;
SELECT sog.owner_check(:a, :ga) AS a_owned;
SELECT state, detail FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :c, :gc);
RESET ROLE;
-- A renamed role's grants are out of force (its row names the old name):
-- grant the new name.  A role created later with the old name gets
-- nothing of them either.
CREATE ROLE regress_access_old;
SELECT sog.grant_consumer('regress_access_old', 'access-c');
ALTER ROLE regress_access_old RENAME TO regress_access_new;
SELECT role, status FROM sog.grant_status WHERE role IN ('regress_access_old', 'regress_access_new');
SET ROLE regress_access_new;
SELECT state, detail FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :a, :ga);
RESET ROLE;
SELECT sog.grant_consumer('regress_access_new', 'access-a');
SET ROLE regress_access_new;
SELECT sog.owner_check(:a, :ga) AS a_owned;
RESET ROLE;
CREATE ROLE regress_access_old;
\set VERBOSITY terse
SELECT sog.refresh_grants() > 0 AS refreshed;
\set VERBOSITY default
SELECT role, consumer, status FROM sog.grant_status WHERE role IN ('regress_access_old', 'regress_access_new') ORDER BY role;
SET ROLE regress_access_old;
SELECT state, message FROM pg_temp.err($$SELECT sog.owner_check($1, $2)$$, :c, :gc);
RESET ROLE;
-- A row that arrives by INSERT (what a restore's COPY does) from another
-- cluster is bound to the role of its name in this one, whatever OID it
-- carries; a name no role has is kept unbound, with a warning, and nobody
-- gets it.  A row bound in this cluster (a dump of one of its databases)
-- keeps its OID: a role dropped since gives nothing to a role of its name.
INSERT INTO sog.role_grant (role, role_oid, kind, consumer)
VALUES ('regress_access_a', 1, 'consumer', 'access-restored'),
       ('regress_access_nobody', 'regress_access_op'::regrole, 'consumer', 'access-c');
INSERT INTO sog.role_grant (role, role_oid, bound_in, kind, consumer)
VALUES ('regress_access_a', 1, sog.this_cluster(), 'consumer', 'access-here');
SELECT role, consumer, status, role_oid = 'regress_access_a'::regrole AS bound_to_a
  FROM sog.grant_status WHERE consumer IN ('access-restored', 'access-here') OR role = 'regress_access_nobody'
 ORDER BY role, consumer;
-- A row of a 1.0 dump (no role_oid, no bound_in): its role is regrole's
-- text, a quoted identifier for a name that needs quotes (bound to that
-- role, review of issue 20: it was kept as "missing" under the quoted
-- spelling, out of force for good), or the OID of a role dropped before
-- the dump (kept as dropped, never in force).
CREATE ROLE "Regress Access ""Quoted""";
INSERT INTO sog.role_grant (role, kind, consumer)
VALUES ('"Regress Access ""Quoted"""', 'consumer', 'access-quoted'),
       ('4000000001', 'consumer', 'access-quoted');
SELECT role, consumer, status, role_oid = '"Regress Access ""Quoted"""'::regrole AS bound
  FROM sog.grant_status WHERE consumer = 'access-quoted' ORDER BY role;
DELETE FROM sog.role_grant WHERE role IN ('regress_access_nobody', 'regress_access_old')
   OR consumer IN ('access-restored', 'access-here', 'access-quoted');
DROP ROLE "Regress Access ""Quoted""";

-- The grants are kept with the extension's state (pg_dump).
SELECT pg_catalog.pg_get_userbyid(c.relowner) IS NOT NULL AS dumped
  FROM pg_catalog.pg_extension e, pg_catalog.pg_class c
 WHERE e.extname = 'stream_offset_guard' AND c.oid = 'sog.role_grant'::regclass
   AND c.oid = ANY (e.extconfig);

DROP FUNCTION public.regress_wrapped_owner_check(bigint, bigint);
DROP OWNED BY regress_access_a, regress_access_ab, regress_access_all, regress_access_op,
	regress_access_manual, regress_access_member, regress_access_app, regress_access_opc,
	regress_access_gone, regress_access_new, regress_access_wide, regress_access_old;
DELETE FROM sog.role_grant WHERE role::text LIKE 'regress_access_%' OR role IS NULL;
DROP ROLE regress_access_member, regress_access_a, regress_access_ab, regress_access_all,
	regress_access_op, regress_access_manual, regress_access_app, regress_access_opc,
	regress_access_gone, regress_access_old, regress_access_new, regress_access_wide;
