/*-------------------------------------------------------------------------
 *
 * store/tables.c
 *	  The extension's own tables as this backend knows them, and the SPI
 *	  helpers of the store.  Where they are placed on a Citus cluster, and
 *	  its two-phase commit, are store/citus.c's.
 *
 * What is cached across calls, and what invalidates it
 * ----------------------------------------------------
 *	- The OIDs of the schema sog, of sog.checkpoint and of the type
 *	  sog.position: looked up by name at every call (two syscache probes);
 *	  when the checkpoint table's OID changed, the extension was dropped and
 *	  created again, and everything below is dropped.
 *	- Attribute numbers of the columns the store reads and writes, per
 *	  table: taken from the relcache's tuple descriptor when first needed
 *	  and dropped by a relcache invalidation of that table (the callback
 *	  registered here), so an ALTER TABLE of the owner's - DROP and ADD of a
 *	  column included - is seen at the next call.  They are only ever used
 *	  with the table open and locked by the caller, after the lock has
 *	  processed pending invalidations.
 *	- The OIDs of sog.receipt and (1.2) of its partitions sog.receipt_0 ..
 *	  sog.receipt_4, and whether it is partitioned: looked up again after a
 *	  relcache invalidation of any of them (receipt_stale; a TRUNCATE of a
 *	  partition is one), so a table re-created alone (Citus'
 *	  undistribute_table does that) is found.
 *	- Plans kept with SPI_keepplan: PostgreSQL's plan cache revalidates them
 *	  itself after DDL; they are freed here when the extension was
 *	  re-created (their parameter types name the old sog.position).
 * Nothing else about a relation - its indexes, constraints, triggers - is
 * kept: writers open the relation each call and take all of it from the
 * relcache (store/writer.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "store/citus.h"
#include "store/tables.h"

static const char *const cp_names[CP_NATTS] = {
	"id", "consumer", "stream", "partition", "criticality", "provider",
	"query_scope", "source_identity", "generation", "owner",
	"provider_token", "source_cursor", "read_base", "read_hash",
	"read_count", "applied_position", "prune_horizon", "receipts_through",
	"state", "updated_at", "claimed_at",
	"applied_at", "read_gap_floor", "receipt_ring"
};

/* the types of the optional columns (a later version's), by position */
static const Oid cp_optional_types[CP_NATTS - CP_NCOLS] = {TIMESTAMPTZOID, INT8OID, INT2OID};
static const Oid rc_optional_types[RC_NATTS - RC_NCOLS] = {TIMESTAMPTZOID};

static const char *const rc_names[RC_NATTS] = {
	"checkpoint_id", "first_position", "last_position", "n", "positions", "digests",
	"created_at"
};


static struct
{
	bool		callback_registered;
	bool		receipt_stale;	/* sog.receipt may have a new OID */
	Oid			nsp;
	Oid			checkpoint_rel;
	Oid			receipt_rel;
	bool		receipt_partitioned;	/* 1.2: the ring's partitions */
	Oid			position_type;
	bool		ops_in_pg_catalog;	/* the position operators still are (1.1) */
	bool		cp_valid;		/* cp_att describes checkpoint_rel now */
	/* per slot: the partitions sog.receipt_<ring>, then sog.receipt */
	Oid			rc_rel[SOG_RC_SLOTS];
	bool		rc_valid[SOG_RC_SLOTS];
	AttrNumber	cp_att[CP_NATTS];
	AttrNumber	rc_att[SOG_RC_SLOTS][RC_NATTS];
	SPIPlanPtr	plans[SOG_NPLANS];
}			tables;

/*
 * Relcache invalidation callback: forget attribute numbers of a table that
 * changed (relid InvalidOid means "every relation"), and tell store/citus.c
 * (its placement check).  Only flags are cleared here: a callback may run
 * at any point, even inside a store call.
 */
static void
tables_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == tables.checkpoint_rel)
		tables.cp_valid = false;
	for (int slot = 0; slot < SOG_RC_SLOTS; slot++)
		if (relid == InvalidOid || relid == tables.rc_rel[slot])
		{
			tables.rc_valid[slot] = false;
			tables.receipt_stale = true;
		}
	sog_citus_invalidate(relid);
}

/*
 * Whether the comparison operators of sog.position are still in pg_catalog,
 * where 1.0 and 1.1 created them; 1.2 moves them into sog.  The store's
 * queries name them OPERATOR(sog.<) and friends; this module run on a
 * database not yet updated (ALTER EXTENSION UPDATE) rewrites those names
 * (sog_query).  A syscache lookup: the update, committed in any session,
 * is seen at the next call.
 */
static bool
position_ops_in_pg_catalog(void)
{
	return !OidIsValid(GetSysCacheOid4(OPERNAMENSP, Anum_pg_operator_oid,
									   CStringGetDatum("<"),
									   ObjectIdGetDatum(tables.position_type),
									   ObjectIdGetDatum(tables.position_type),
									   ObjectIdGetDatum(tables.nsp)));
}

/* Free the kept plans (prepared again at their next use). */
static void
free_plans(void)
{
	int			i;

	for (i = 0; i < SOG_NPLANS; i++)
	{
		if (tables.plans[i])
			SPI_freeplan(tables.plans[i]);
		tables.plans[i] = NULL;
	}
}

const char *
sog_query(const char *sql)
{
	StringInfoData buf;
	const char *p;
	const char *hit;

	if (!tables.ops_in_pg_catalog || strstr(sql, "OPERATOR(sog.") == NULL)
		return sql;
	initStringInfo(&buf);
	for (p = sql; (hit = strstr(p, "OPERATOR(sog.")) != NULL; p = hit + strlen("OPERATOR(sog."))
	{
		appendBinaryStringInfo(&buf, p, hit - p);
		appendStringInfoString(&buf, "OPERATOR(pg_catalog.");
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

/*
 * Look up sog.receipt and, where it is partitioned (1.2), its partitions
 * sog.receipt_0 .. sog.receipt_4 (InvalidOid for one that is missing: the
 * store raises 55000 when it needs it); the attribute numbers of every
 * slot are found again on first use.
 */
static void
find_receipt_rels(Oid nsp)
{
	int			ring;

	tables.receipt_rel = get_relname_relid("receipt", nsp);
	tables.receipt_partitioned = OidIsValid(tables.receipt_rel) &&
		get_rel_relkind(tables.receipt_rel) == RELKIND_PARTITIONED_TABLE;
	for (ring = 0; ring < SOG_RING_PARTS; ring++)
	{
		char		name[NAMEDATALEN];

		snprintf(name, sizeof(name), "receipt_%d", ring);
		tables.rc_rel[ring] = tables.receipt_partitioned ?
			get_relname_relid(name, nsp) : InvalidOid;
	}
	tables.rc_rel[SOG_RC_PARENT] = tables.receipt_rel;
	for (ring = 0; ring < SOG_RC_SLOTS; ring++)
		tables.rc_valid[ring] = false;
	tables.receipt_stale = false;
}

void
sog_tables_refresh(void)
{
	Oid			nsp = get_namespace_oid("sog", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("checkpoint", nsp) : InvalidOid;

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
				 errdetail("Table sog.checkpoint does not exist."),
				 errhint("Run CREATE EXTENSION stream_offset_guard.")));
	if (rel == tables.checkpoint_rel)
	{
		if (tables.receipt_stale)
		{
			/* a receipt table alone re-created (or any relcache reset) */
			find_receipt_rels(nsp);
			if (!OidIsValid(tables.receipt_rel))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
						 errdetail("Table sog.receipt does not exist."),
						 errhint("Re-create the extension from a dump of its tables.")));
		}
		sog_citus_check_placement(nsp, false);
		if (tables.ops_in_pg_catalog && !position_ops_in_pg_catalog())
		{
			/* updated to 1.2 since: the kept plans name the old schema */
			free_plans();
			tables.ops_in_pg_catalog = false;
		}
		return;
	}

	if (!tables.callback_registered)
	{
		CacheRegisterRelcacheCallback(tables_relcache_callback, (Datum) 0);
		tables.callback_registered = true;
	}
	free_plans();
	tables.checkpoint_rel = InvalidOid;
	tables.cp_valid = false;
	tables.nsp = nsp;
	find_receipt_rels(nsp);
	tables.position_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										   CStringGetDatum("position"),
										   ObjectIdGetDatum(nsp));
	if (!OidIsValid(tables.receipt_rel) || !OidIsValid(tables.position_type))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
				 errdetail("Table sog.receipt or type sog.position does not exist."),
				 errhint("Re-create the extension from a dump of its tables.")));
	tables.ops_in_pg_catalog = position_ops_in_pg_catalog();
	tables.checkpoint_rel = rel;
	sog_citus_check_placement(nsp, true);
}

Oid
sog_checkpoint_relid(void)
{
	return tables.checkpoint_rel;
}

Oid
sog_receipt_relid(void)
{
	return tables.receipt_rel;
}

bool
sog_receipt_partitioned(void)
{
	return tables.receipt_partitioned;
}

Oid
sog_receipt_partition_relid(int ring)
{
	Assert(ring >= 0 && ring < SOG_RING_PARTS);
	if (!OidIsValid(tables.rc_rel[ring]))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
				 errdetail("Table sog.receipt_%d, a partition of sog.receipt, does not exist.", ring),
				 errhint("Re-create the extension from a dump of its tables.")));
	return tables.rc_rel[ring];
}

Oid
sog_position_type(void)
{
	return tables.position_type;
}

/*
 * Find each of names in rel's current tuple descriptor: the first nrequired
 * must be there; the others (later versions' columns, of the types in
 * optional_types) are InvalidAttrNumber when missing or of another type.
 */
static void
find_attnums(Relation rel, const char *const *names, int nrequired, int n,
			 const Oid *optional_types, AttrNumber *att)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;
	int			a;

	for (i = 0; i < n; i++)
	{
		att[i] = InvalidAttrNumber;
		for (a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute attr = TupleDescAttr(desc, a);

			if (!attr->attisdropped && strcmp(NameStr(attr->attname), names[i]) == 0)
			{
				if (i < nrequired || attr->atttypid == optional_types[i - nrequired])
					att[i] = attr->attnum;
				break;
			}
		}
		if (att[i] == InvalidAttrNumber && i < nrequired)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("column %s.%s is missing", RelationGetRelationName(rel), names[i]),
					 errdetail("The extension reads and writes this column; the table's owner dropped or renamed it."),
					 errhint("Restore the column (see the install script of stream_offset_guard), or re-create the extension from a dump.")));
	}
}

const AttrNumber *
sog_checkpoint_attnums(Relation rel)
{
	Assert(RelationGetRelid(rel) == tables.checkpoint_rel);
	if (!tables.cp_valid)
	{
		find_attnums(rel, cp_names, CP_NCOLS, CP_NATTS, cp_optional_types, tables.cp_att);
		tables.cp_valid = true;
	}
	return tables.cp_att;
}

const AttrNumber *
sog_receipt_attnums(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	int			slot;

	for (slot = 0; slot < SOG_RC_SLOTS; slot++)
		if (tables.rc_rel[slot] == relid)
			break;
	if (slot == SOG_RC_SLOTS)
		elog(ERROR, "relation %u is not a receipt table", relid);
	if (!tables.rc_valid[slot])
	{
		find_attnums(rel, rc_names, RC_NCOLS, RC_NATTS, rc_optional_types, tables.rc_att[slot]);
		tables.rc_valid[slot] = true;
	}
	return tables.rc_att[slot];
}

/*
 * Open the SPI connection for the store's queries.  SPI_connect, and every
 * SPI call after it, leaves SPI's procedure context current, which
 * SPI_finish deletes; the helpers below switch back to the caller's context
 * after each call, so everything the store and its callers palloc (decoded
 * receipts, manifests, result values) survives sog_store_end().  Query
 * results stay in SPI's own contexts and are copied out before use.
 */
void
sog_store_begin(void)
{
	MemoryContext caller = CurrentMemoryContext;

	sog_tables_refresh();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(caller);
}

void
sog_store_end(void)
{
	SPI_finish();
}

SPIPlanPtr
sog_keep_plan(SogPlan which, const char *sql, int nargs, Oid *argtypes)
{
	if (tables.plans[which] == NULL)
	{
		MemoryContext caller = CurrentMemoryContext;
		SPIPlanPtr	plan = SPI_prepare_cursor(sog_query(sql), nargs, argtypes,
											  CURSOR_OPT_GENERIC_PLAN);

		MemoryContextSwitchTo(caller);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		tables.plans[which] = plan;
	}
	return tables.plans[which];
}

int
sog_exec_latest(SPIPlanPtr plan, Datum *values, const char *nulls, bool read_only,
				long count)
{
	MemoryContext caller = CurrentMemoryContext;
	int			rc;

	rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, read_only, true, count);
	MemoryContextSwitchTo(caller);	/* SPI leaves its procedure context
									 * current */
	if (rc < 0)
		elog(ERROR, "SPI_execute_snapshot failed: %s", SPI_result_code_string(rc));
	return rc;
}

/*
 * Prepare, run on the newest snapshot (or the transaction's, if
 * use_latest is false) and free a one-off plan.
 */
static int
exec_once(const char *sql, int nargs, Oid *types, Datum *values,
		  const char *nulls, bool read_only, bool use_latest)
{
	MemoryContext caller = CurrentMemoryContext;
	SPIPlanPtr	plan = SPI_prepare(sog_query(sql), nargs, types);
	int			rc;

	MemoryContextSwitchTo(caller);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	if (use_latest)
		rc = sog_exec_latest(plan, values, nulls, read_only, 0);
	else
	{
		rc = SPI_execute_plan(plan, values, nulls, read_only, 0);
		MemoryContextSwitchTo(caller);
	}
	if (rc < 0)
		elog(ERROR, "SPI failed for \"%s\": %s", sql, SPI_result_code_string(rc));
	SPI_freeplan(plan);
	return rc;
}

int
sog_exec(const char *sql, int nargs, Oid *types, Datum *values,
		 const char *nulls, bool read_only)
{
	return exec_once(sql, nargs, types, values, nulls, read_only, true);
}

int
sog_exec_snapshot(const char *sql, int nargs, Oid *types, Datum *values)
{
	return exec_once(sql, nargs, types, values, NULL, true, false);
}
