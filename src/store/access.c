/*-------------------------------------------------------------------------
 *
 * store/access.c
 *	  Who may act on which checkpoint: the grants of sog.grant_consumer and
 *	  sog.grant_operator, checked by every stateful function.
 *
 * PostgreSQL's EXECUTE privilege decides which functions a role may call;
 * this file decides on which checkpoints.  sog.grant_consumer and
 * sog.grant_operator record each grant in sog.role_grant (role, kind,
 * consumer): a consumer grant with a consumer name lets the role act only
 * on checkpoints of that consumer (several grants add names), one without a
 * name on every checkpoint; an operator grant covers every checkpoint.
 *
 * A grant belongs to the role it was given to: the row holds the role's
 * name and its OID (1.1), and counts only while that OID still has that
 * name.  A role dropped after its grant leaves its row, but no role created
 * later inherits it, whatever OID it gets: a different name never matches,
 * and the same name with another OID neither.  Only a row restored from
 * another cluster (its bound_in, the system identifier of the cluster whose
 * role its OID is, is not this one's) is bound by name, as PostgreSQL
 * restores privileges by name: by the restore itself (the role_grant_bind
 * trigger) or by sog.refresh_grants(), which keeps the rows of roles
 * dropped or renamed in this cluster as dropped (role NULL).  What is left:
 * a role of the same name that gets the very same OID (after the OID
 * counter wraps) before refresh_grants has run since the drop.  A database
 * still at 1.0 keys the row by OID alone (its role column is a regrole).
 *
 * What a refusal says: a role whose grants do not cover every checkpoint
 * (a scoped consumer, a role without a grant) gets the same 42501 for a
 * checkpoint, attempt or gap it may not act on and for one that does not
 * exist, naming only its own grants (sog_check_access_missing): it learns
 * nothing of other consumers' ids or names.  Roles whose grants cover every
 * checkpoint get 22023 for an unknown id, as docs/reference.md says.
 *
 * The role checked is the role that called the SQL function (GetUserId()
 * when sog_enter is entered): the login role, the one chosen with SET
 * ROLE, the owner of a SECURITY DEFINER function that calls it, or the
 * owner of the table whose index expression a maintenance command runs.
 * Every such function is SECURITY INVOKER (1.2) and enters through
 * sog_enter, which remembers that role, then runs the body as the
 * function's owner (the extension's owner) with SetUserIdAndSecContext, as
 * PostgreSQL's own SECURITY DEFINER calls and ri_triggers.c do; the
 * operators' functions written in SQL (sog.register, set_retention,
 * retention_horizon, prune_due) are entered the same way, through
 * sog_run_body, which then calls their body (sog.<name>_body, granted to
 * no one).  A function that writes is refused inside a security-restricted
 * operation (42501): an ANALYZE, VACUUM, CREATE INDEX, REINDEX or REFRESH
 * MATERIALIZED VIEW run by a superuser must never act for the table's
 * owner.  Superusers and roles with the privileges of the extension's
 * owner pass without a grant.  A role that has EXECUTE but no row in
 * sog.role_grant (granted by hand) is refused: grants go through the grant
 * functions.  (1.1 checked the session's role, GetOuterUserId(), from
 * SECURITY DEFINER functions: a scoped role's index expression acted with
 * the rights of the superuser whose ANALYZE ran it.  A function still
 * defined by 1.1's script, before ALTER EXTENSION UPDATE, is checked as
 * 1.1 did, never more loosely.)
 *
 * The grant table is read on every check, on the newest snapshot, with the
 * table access method (a sequential scan: it holds a few rows per role).
 * Nothing is cached across calls, so a grant or a revoke takes effect at the
 * next call after it commits.  sog.may_see (the row filter of sog.status)
 * reads it once per query.
 *
 * Relies on: store/tables.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "sog.h"
#include "store/access.h"
#include "store/tables.h"
#include "type/util.h"

/* Owner of the installed extension (InvalidOid if not installed). */
static Oid
extension_owner(void)
{
	Oid			ext = get_extension_oid("stream_offset_guard", true);
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	Oid			owner = InvalidOid;
	ScanKeyData key;

	if (!OidIsValid(ext))
		return InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = table_beginscan_catalog(rel, 1, &key);
	slot = table_slot_create(rel, NULL);
	if (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;

		owner = DatumGetObjectId(slot_getattr(slot, Anum_pg_extension_extowner, &isnull));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, NoLock);	/* held to the end of the transaction */
	return owner;
}

/*
 * What the grants of user allow: *all_consumers when some consumer grant
 * without a name applies, *operator when an operator grant applies, and the
 * names of the scoped consumer grants that apply, as a list of C strings.
 */
typedef struct SogGrants
{
	bool		any;			/* at least one grant applies */
	bool		all_consumers;
	bool		operator;
	List	   *consumers;
} SogGrants;

/*
 * The role a row of sog.role_grant grants to, or InvalidOid when the row is
 * not in force: in 1.1 its OID while that OID still has the row's name
 * (att_oid valid); in 1.0 the regrole column itself.
 */
static Oid
grant_role(TupleTableSlot *slot, AttrNumber att_role, AttrNumber att_oid)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, att_role, &isnull);
	Oid			role;
	Datum		o;
	char	   *now;

	if (isnull)
		return InvalidOid;		/* the role's name is unknown: never in force */
	if (att_oid == InvalidAttrNumber)
		return DatumGetObjectId(d);
	o = slot_getattr(slot, att_oid, &isnull);
	if (isnull)
		return InvalidOid;		/* not bound in this cluster */
	role = DatumGetObjectId(o);
	now = GetUserNameFromId(role, true);
	if (now == NULL || strcmp(now, NameStr(*DatumGetName(d))) != 0)
		return InvalidOid;		/* dropped, renamed, or another role's OID now */
	return role;
}

static void
read_grants(Oid user, SogGrants *g)
{
	Oid			nsp = get_namespace_oid("sog", false);
	Oid			relid = get_relname_relid("role_grant", nsp);
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	AttrNumber	att_role;
	AttrNumber	att_oid;
	AttrNumber	att_kind;
	AttrNumber	att_consumer;

	memset(g, 0, sizeof(*g));
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
				 errdetail("Table sog.role_grant does not exist."),
				 errhint("Run ALTER EXTENSION stream_offset_guard UPDATE, or re-create the extension.")));
	att_role = get_attnum(relid, "role");
	att_oid = get_attnum(relid, "role_oid");	/* 1.1 */
	att_kind = get_attnum(relid, "kind");
	att_consumer = get_attnum(relid, "consumer");
	if (att_role == InvalidAttrNumber || att_kind == InvalidAttrNumber ||
		att_consumer == InvalidAttrNumber)
		elog(ERROR, "table sog.role_grant lacks its columns");

	rel = table_open(relid, AccessShareLock);
	scan = SOG_TABLE_BEGINSCAN(rel, GetLatestSnapshot());
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Oid			role = grant_role(slot, att_role, att_oid);
		char	   *kind;
		Datum		consumer;
		bool		consumer_null;

		if (!OidIsValid(role) || !has_privs_of_role(user, role))
			continue;
		kind = TextDatumGetCString(slot_getattr(slot, att_kind, &isnull));
		consumer = slot_getattr(slot, att_consumer, &consumer_null);
		g->any = true;
		if (strcmp(kind, "operator") == 0)
			g->operator = true;
		else if (consumer_null)
			g->all_consumers = true;
		else
			g->consumers = lappend(g->consumers, TextDatumGetCString(consumer));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, NoLock);	/* held to the end of the transaction */
}

/* "a", "b" and "c" for a message. */
static char *
name_list(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, names)
	{
		if (buf.len > 0)
			appendStringInfoString(&buf, foreach_current_index(lc) == list_length(names) - 1 ?
								   " and " : ", ");
		appendStringInfo(&buf, "\"%s\"", sog_cut((char *) lfirst(lc)));
		if (buf.len > 1000)
		{
			appendStringInfoString(&buf, ", ...");
			break;
		}
	}
	return buf.data;
}

/* Superusers and roles with the privileges of the extension's owner pass without a grant. */
static bool
privileged(Oid user)
{
	Oid			owner;

	if (superuser_arg(user))
		return true;
	owner = extension_owner();
	return OidIsValid(owner) && has_privs_of_role(user, owner);
}

/* Whether grants g allow kinds of access to checkpoints of consumer. */
static bool
grants_allow(const SogGrants *g, const char *consumer, int kinds)
{
	ListCell   *lc;

	if ((kinds & SOG_ACCESS_OPERATOR) && g->operator)
		return true;
	if (kinds & SOG_ACCESS_CONSUMER)
	{
		if (g->all_consumers)
			return true;
		foreach(lc, g->consumers)
		{
			if (consumer && strcmp((char *) lfirst(lc), consumer) == 0)
				return true;
		}
	}
	return false;
}

/* Whether grants g allow kinds of access to every checkpoint there is. */
static bool
grants_cover_all(const SogGrants *g, int kinds)
{
	return ((kinds & SOG_ACCESS_OPERATOR) && g->operator) ||
		((kinds & SOG_ACCESS_CONSUMER) && g->all_consumers);
}

/*
 * Refuse the calling role kinds of access to what (\"checkpoint 42\",
 * \"recovery attempt 7\", \"gap 3\"; or, for register, \"consumer \\"x\\"\"
 * with requested the consumer name the caller gave).  The detail and hint
 * name the role and its own grants, never what it may not see: the same
 * words whether what exists or not.
 */
static void
refuse(Oid user, const SogGrants *g, const char *what, const char *requested, int kinds)
{
	const char *rolename = sog_cut(GetUserNameFromId(user, false));

	/* the role as the grant functions take it: a quoted identifier, a literal */
	const char *role = quote_literal_cstr(quote_identifier(GetUserNameFromId(user, false)));
	const char *consumer = requested ? quote_literal_cstr(sog_cut(requested)) : NULL;
	const char *names = g->consumers ? name_list(g->consumers) : NULL;
	const char *plural = list_length(g->consumers) > 1 ? "s" : "";

	if (!g->any && kinds == SOG_ACCESS_OPERATOR)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s", what),
				 errdetail("Role \"%s\" has no grant from sog.grant_operator(); this function is for operators.",
						   rolename),
				 errhint("The extension's owner grants it with sog.grant_operator(%s).",
						 role)));
	if (!g->any)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s", what),
				 errdetail("Role \"%s\" has no grant from sog.grant_consumer() or sog.grant_operator().",
						   rolename),
				 requested ?
				 errhint("The extension's owner grants access with sog.grant_consumer(%s, %s) or sog.grant_operator(%s).",
						 role, consumer, role) :
				 errhint("The extension's owner grants access with sog.grant_consumer(%s, consumer) or sog.grant_operator(%s).",
						 role, role)));
	if (kinds == SOG_ACCESS_OPERATOR)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s", what),
				 errdetail("Role \"%s\" is not an operator; this function is for operators.",
						   rolename),
				 errhint("The extension's owner grants it with sog.grant_operator(%s).",
						 role)));
	if (names == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s", what),
				 errdetail("Role \"%s\" has no consumer grant.", rolename),
				 errhint("The extension's owner grants one with sog.grant_consumer(%s, consumer).",
						 role)));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for %s", what),
			 errdetail("Role \"%s\" may act only on checkpoints of consumer%s %s.",
					   rolename, plural, names),
			 requested ?
			 errhint("Use a role granted for consumer \"%s\", or have the extension's owner run sog.grant_consumer(%s, %s).",
					 sog_cut(requested), role, consumer) :
			 errhint("Use the id of a checkpoint of consumer%s %s (sog.status lists them), or have the extension's owner grant more with sog.grant_consumer(%s, consumer).",
					 plural, names, role)));
}

void
sog_check_access_to(const char *what, const char *consumer, int kinds)
{
	Oid			user = sog_caller();
	SogGrants	g;

	if (privileged(user))
		return;
	read_grants(user, &g);
	if (grants_allow(&g, consumer, kinds))
		return;
	refuse(user, &g, what, NULL, kinds);
}

void
sog_check_access(int64 checkpoint_id, const char *consumer, int kinds)
{
	Oid			user = sog_caller();
	SogGrants	g;

	if (checkpoint_id > 0)
	{
		sog_check_access_to(psprintf("checkpoint " INT64_FORMAT, checkpoint_id),
							consumer, kinds);
		return;
	}
	/* register: a consumer name the caller gave, no checkpoint yet */
	if (privileged(user))
		return;
	read_grants(user, &g);
	if (grants_allow(&g, consumer, kinds))
		return;
	refuse(user, &g, psprintf("consumer \"%s\"", sog_cut(consumer)), consumer, kinds);
}

void
sog_check_access_missing(const char *what, int kinds)
{
	Oid			user = sog_caller();
	SogGrants	g;

	if (privileged(user))
		return;
	read_grants(user, &g);
	if (grants_cover_all(&g, kinds))
		return;
	refuse(user, &g, what, NULL, kinds);
}

/*
 * SQL function: sog.check_consumer_access(consumer text) -> void
 *
 * What sog.register checks before it writes (it runs as the extension's
 * owner and calls this; it is granted to no one else): that this is not a
 * standby (25006, as every stateful function), and the check of
 * sog_check_access for a consumer name that has no checkpoint yet.
 */
PG_FUNCTION_INFO_V1(sog_check_consumer_access);
Datum
sog_check_consumer_access(PG_FUNCTION_ARGS)
{
	char	   *consumer = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot register a checkpoint during recovery"),
				 errdetail("This server is a standby: checkpoints, receipts and gaps change only on the primary."),
				 errhint("Connect the consumer to the primary.")));
	sog_tables_refresh();		/* sog.role_grant must be this node's */
	sog_check_access(0, consumer, SOG_ACCESS_CONSUMER);
	PG_RETURN_VOID();
}

/*
 * SQL function: sog.may_see(consumer text) -> boolean
 *
 * Whether the current role (the querying role) may see the checkpoints of this
 * consumer: the rows sog.status shows it.  True for the roles that
 * sog_check_access lets act on them (superusers, the extension's owner, a
 * consumer grant for the name or for every consumer) and for operators.
 * The role's grants are read once per query (cached in fn_extra for the
 * current role: a SET ROLE in between reads them again).
 */
typedef struct SogSeeCache
{
	Oid			user;
	bool		privileged;
	SogGrants	g;
} SogSeeCache;

PG_FUNCTION_INFO_V1(sog_may_see);
Datum
sog_may_see(PG_FUNCTION_ARGS)
{
	SogSeeCache *c = fcinfo->flinfo->fn_extra;
	Oid			user = GetUserId(); /* the querying role, never a view's owner */

	if (c == NULL || c->user != user)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		c = palloc0(sizeof(SogSeeCache));
		c->user = user;
		c->privileged = privileged(user);
		if (!c->privileged)
			read_grants(user, &c->g);
		MemoryContextSwitchTo(old);
		fcinfo->flinfo->fn_extra = c;
	}
	PG_RETURN_BOOL(c->privileged ||
				   grants_allow(&c->g, PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0)),
								SOG_ACCESS_ANY));
}

/*
 * The role acting, for audit columns (resolved_by, changed_by, granted_by):
 * the calling role, as sog_check_access sees it, not the extension's owner
 * that the bodies run as.
 */
const char *
sog_acting_role(void)
{
	return GetUserNameFromId(sog_caller(), false);
}

/*
 * SQL function: sog.check_operator_access(what text) -> void
 *
 * What the operators' functions written in SQL (sog.set_retention,
 * sog.retention_horizon, sog.prune_due) call first, before they read or
 * lock anything: 42501 naming what unless the calling role (sog_caller) has
 * an operator grant in force (or is a superuser or has the privileges of
 * the extension's owner), as every stateful C function checks.  They run
 * as the extension's owner and call this; it is granted to no one else.
 */
PG_FUNCTION_INFO_V1(sog_check_operator_access);
Datum
sog_check_operator_access(PG_FUNCTION_ARGS)
{
	const char *what = PG_ARGISNULL(0) ? "this function" : text_to_cstring(PG_GETARG_TEXT_PP(0));

	sog_tables_refresh();		/* sog.role_grant must be this node's */
	/* an operator grant covers every checkpoint: the check of an unknown id */
	sog_check_access_missing(what, SOG_ACCESS_OPERATOR);
	PG_RETURN_VOID();
}

/*
 * The calling role of the outermost sog_enter now running (InvalidOid
 * outside any).  A call the body makes to another of the extension's
 * functions runs as the owner on the outer caller's behalf: it keeps the
 * outer caller, so audit columns and checks still name the role that
 * called.
 */
static Oid	entered_caller = InvalidOid;

Oid
sog_caller(void)
{
	/*
	 * Outside an entry only check_consumer_access and check_operator_access
	 * run, called by a body (entered: not here) or by a function still
	 * defined by 1.1's script as SECURITY DEFINER, which 1.1 checked by the
	 * session's role.
	 */
	return OidIsValid(entered_caller) ? entered_caller : GetOuterUserId();
}

/* Run body as owner, for the caller save_user; then restore both. */
static Datum
run_as_owner(FunctionCallInfo fcinfo, SogBody body, Oid owner,
			 Oid save_user, int save_ctx)
{
	Oid			save_caller = entered_caller;
	volatile Datum result = (Datum) 0;

	if (!OidIsValid(entered_caller))
		entered_caller = save_user;
	SetUserIdAndSecContext(owner, save_ctx | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		result = body(fcinfo);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_user, save_ctx);
		entered_caller = save_caller;
	}
	PG_END_TRY();
	return result;
}

Datum
sog_enter(FunctionCallInfo fcinfo, SogBody body, bool writes)
{
	Oid			save_user;
	int			save_ctx;
	HeapTuple	proc;
	Oid			owner;
	bool		definer;

	GetUserIdAndSecContext(&save_user, &save_ctx);
	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	owner = ((Form_pg_proc) GETSTRUCT(proc))->proowner;
	definer = ((Form_pg_proc) GETSTRUCT(proc))->prosecdef;
	ReleaseSysCache(proc);

	/*
	 * Inside a security-restricted operation: never a function that writes;
	 * nor, under 1.1's SECURITY DEFINER definitions, one that reads, since
	 * the role that called it cannot be known there.
	 */
	if ((writes || definer) && InSecurityRestrictedOperation())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot call %s within a security-restricted operation",
						format_procedure(fcinfo->flinfo->fn_oid)),
				 definer ?
				 errdetail("A maintenance command (ANALYZE, VACUUM, CREATE INDEX, REINDEX, REFRESH MATERIALIZED VIEW) is running an expression as the table's owner, and this database still has version 1.1's SECURITY DEFINER functions, under which the role that called cannot be known.") :
				 errdetail("A maintenance command (ANALYZE, VACUUM, CREATE INDEX, REINDEX, REFRESH MATERIALIZED VIEW) is running an expression as the table's owner, role \"%s\"; the guard's state changes only in a call a consumer or operator makes.",
						   sog_cut(GetUserNameFromId(save_user, false))),
				 definer ?
				 errhint("Run ALTER EXTENSION stream_offset_guard UPDATE; call the guard's functions from the worker's own transaction, never from an index expression or a materialized view.") :
				 errhint("Call the guard's functions from the worker's own transaction, never from an index expression, a materialized view or a function a maintenance command runs.")));

	/*
	 * Defined by 1.1's script (SECURITY DEFINER, not updated yet): fmgr has
	 * switched to the owner already, and the caller it hides is checked as
	 * 1.1 did (sog_caller outside an entry).
	 */
	if (definer)
		return body(fcinfo);

	return run_as_owner(fcinfo, body, owner, save_user, save_ctx);
}

/*
 * SQL functions sog.register, sog.set_retention, sog.prune_due (which
 * write) and sog.retention_horizon (which reads): written in PL/pgSQL as
 * sog.<name>_body, with the same arguments, which these enter as the
 * extension's owner after remembering the caller (sog_enter); the body
 * checks it with sog.check_consumer_access or sog.check_operator_access.
 * The body's FmgrInfo is kept in fn_extra for the query.
 */
static Datum
run_body(PG_FUNCTION_ARGS)
{
	FmgrInfo   *target = fcinfo->flinfo->fn_extra;

	LOCAL_FCINFO(inner, FUNC_MAX_ARGS);
	Datum		result;
	int			i;

	if (target == NULL)
	{
		Oid			fn = fcinfo->flinfo->fn_oid;
		Oid		   *argtypes;
		int			nargs;
		char	   *name = psprintf("%s_body", get_func_name(fn));
		Oid			body;

		(void) get_func_signature(fn, &argtypes, &nargs);
		body = LookupFuncName(list_make2(makeString("sog"), makeString(name)),
							  nargs, argtypes, true);
		if (!OidIsValid(body))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
					 errdetail("Function sog.%s, the body of %s, does not exist.",
							   name, format_procedure(fn)),
					 errhint("Run ALTER EXTENSION stream_offset_guard UPDATE, or re-create the extension.")));
		target = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_cxt(body, target, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = target;
	}
	InitFunctionCallInfoData(*inner, target, fcinfo->nargs, fcinfo->fncollation,
							 NULL, fcinfo->resultinfo);
	for (i = 0; i < fcinfo->nargs; i++)
		inner->args[i] = fcinfo->args[i];
	result = FunctionCallInvoke(inner);
	fcinfo->isnull = inner->isnull;
	return result;
}

PG_FUNCTION_INFO_V1(sog_run_body);
Datum
sog_run_body(PG_FUNCTION_ARGS)
{
	return sog_enter(fcinfo, run_body, true);
}

PG_FUNCTION_INFO_V1(sog_read_body);
Datum
sog_read_body(PG_FUNCTION_ARGS)
{
	return sog_enter(fcinfo, run_body, false);
}

/*
 * SQL function: sog.calling_role() -> text
 *
 * What the bodies written in PL/pgSQL record as who acted (updated_by):
 * sog_acting_role.  Granted to no one; the bodies run as its owner.
 */
PG_FUNCTION_INFO_V1(sog_calling_role);
Datum
sog_calling_role(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(sog_acting_role()));
}
