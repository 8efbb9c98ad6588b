/*-------------------------------------------------------------------------
 *
 * store/tables.c
 *	  The extension's own tables as this backend knows them, and the SPI
 *	  helpers of the store.
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
 *	- Whether the placement check passed (placement_checked): cleared by any
 *	  relcache invalidation (Citus invalidates the table it converts), and
 *	  set only if no invalidation arrived while the check ran; whether Citus
 *	  is installed (citus_present), as of that check; and, on a Citus
 *	  coordinator, the OIDs of the two-phase-commit table sog.citus_2pc and
 *	  of its shard on this node, or why it cannot serve (citus_2pc_why):
 *	  computed by the same check, which a missing or unusable table makes
 *	  run again at the next call (its creation invalidates no table of ours).
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
#include "commands/extension.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
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

#define SOG_NTABLES 15			/* the tables of own_rel_names */

static struct
{
	bool		callback_registered;
	bool		placement_checked;	/* no table of ours is distributed (Citus) */
	uint64		invalidations;	/* relcache invalidations seen */
	bool		receipt_stale;	/* sog.receipt may have a new OID */
	bool		citus_present;	/* as of the last placement check */
	Oid			citus_2pc_rel;	/* sog.citus_2pc, a Citus local table */
	Oid			citus_2pc_shard;	/* its shard, on this node */
	const char *citus_2pc_why;	/* why it cannot serve (static text), or NULL */
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
	Oid			own_rels[SOG_NTABLES];	/* own_rel_names' OIDs, for the
										 * placement check's invalidation */
}			tables;

/* The extension's tables (any of them Citus could distribute). */
static const char *const own_rel_names[SOG_NTABLES] = {
	"checkpoint", "receipt", "gap", "manifest_log", "recovery", "provider",
	"reconfiguration", "role_grant", "retention",
	/* 1.2: sog.receipt's partitions (a writer locks only its own) */
	"receipt_0", "receipt_1", "receipt_2", "receipt_3", "receipt_4", "receipt_ring"
};

/*
 * Relcache invalidation callback: forget attribute numbers of a table that
 * changed (relid InvalidOid means "every relation").  Only flags are
 * cleared here: a callback may run at any point, even inside a store call.
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

	/*
	 * Citus invalidates the table it distributes: check the placement again
	 * after an invalidation of one of ours (or of every relation), not after
	 * the DDL of other tables.
	 */
	if (relid == InvalidOid)
		tables.placement_checked = false;
	else
	{
		int			i;

		for (i = 0; i < SOG_NTABLES; i++)
			if (tables.own_rels[i] == relid)
				tables.placement_checked = false;
		if (relid == tables.citus_2pc_rel || relid == tables.citus_2pc_shard)
			tables.placement_checked = false;
	}
	tables.invalidations++;
}

/* Look up the OIDs of the extension's tables in nsp (InvalidOid: absent). */
static void
find_own_rels(Oid nsp)
{
	int			i;

	for (i = 0; i < SOG_NTABLES; i++)
		tables.own_rels[i] = get_relname_relid(own_rel_names[i], nsp);
}

/* One row of a query on the newest committed catalog state, as text. */
static bool
latest_row(const char *sql, Oid nsp, char **a, char **b)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(nsp)};
	SPIPlanPtr	plan;
	bool		found = false;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(sql, 1, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		MemoryContextSwitchTo(caller);
		*a = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (b)
			*b = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		found = true;
	}
	MemoryContextSwitchTo(caller);
	SPI_finish();
	return found;
}

/*
 * On a Citus coordinator: find sog.citus_2pc, the table whose write makes
 * Citus commit the sink transaction with two-phase commit
 * (sog_citus_use_2pc), and its shard on this node; or say why it cannot
 * serve (tables.citus_2pc_why).  It must be a Citus local table, or any
 * Citus table of one shard with one placement, on this node: Citus then
 * runs a write of it in this backend (local execution), and that is what
 * turns two-phase commit on.  Read from pg_dist_partition, pg_dist_shard
 * and pg_dist_placement (documented in Citus' reference), on the newest
 * committed catalog state.
 */
static void
find_citus_2pc(Oid nsp)
{
	char	   *state = NULL;
	char	   *shard = NULL;

	if (!latest_row("SELECT CASE "
					"WHEN p.logicalrelid IS NULL THEN 'local' "
					"WHEN (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard s "
					"      JOIN pg_catalog.pg_dist_placement pl "
					"        ON pl.shardid OPERATOR(pg_catalog.=) s.shardid "
					"      WHERE s.logicalrelid OPERATOR(pg_catalog.=) c.oid) "
					"     OPERATOR(pg_catalog.<>) 1 THEN 'placements' "
					"WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_dist_shard s "
					"      JOIN pg_catalog.pg_dist_placement pl "
					"        ON pl.shardid OPERATOR(pg_catalog.=) s.shardid "
					"      JOIN pg_catalog.pg_dist_local_group g "
					"        ON g.groupid OPERATOR(pg_catalog.=) pl.groupid "
					"      WHERE s.logicalrelid OPERATOR(pg_catalog.=) c.oid) THEN 'remote' "
					"ELSE 'ok' END, "
					"(SELECT pg_catalog.min(s.shardid)::text FROM pg_catalog.pg_dist_shard s "
					"  WHERE s.logicalrelid OPERATOR(pg_catalog.=) c.oid) "
					"FROM pg_catalog.pg_class c "
					"LEFT JOIN pg_catalog.pg_dist_partition p "
					"  ON p.logicalrelid OPERATOR(pg_catalog.=) c.oid "
					"WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 "
					"AND c.relname OPERATOR(pg_catalog.=) 'citus_2pc' "
					"AND c.relkind OPERATOR(pg_catalog.=) 'r'",
					nsp, &state, &shard))
	{
		tables.citus_2pc_why = "there is no table sog.citus_2pc";
		return;
	}
	tables.citus_2pc_rel = get_relname_relid("citus_2pc", nsp);
	if (strcmp(state, "local") == 0)
		tables.citus_2pc_why = "table sog.citus_2pc is not managed by Citus";
	else if (strcmp(state, "placements") == 0)
		tables.citus_2pc_why = "table sog.citus_2pc has more than one shard or placement";
	else if (strcmp(state, "remote") == 0)
		tables.citus_2pc_why = "the shard of table sog.citus_2pc is on another node";
	else
	{
		/* Citus names a shard <table>_<shard id>, in the table's schema */
		tables.citus_2pc_shard = get_relname_relid(psprintf("citus_2pc_%s", shard), nsp);
		if (!OidIsValid(tables.citus_2pc_shard))
			tables.citus_2pc_why = "the shard of table sog.citus_2pc is missing on this node";
	}
}

/*
 * Refuse to work where the extension's rows are not in this node's heap
 * (Citus; docs/scaling.md):
 *   - on a Citus worker: Citus propagates CREATE EXTENSION to the workers,
 *     whose sog tables are empty copies, not the coordinator's state;
 *   - on tables Citus has distributed or made reference tables
 *     (create_distributed_table accepts sog.receipt, sog.provider,
 *     sog.role_grant): their local heap is no longer where the rows are,
 *     and the executor (store/writer.c) and the row lock (checkpoint.c) would
 *     read and write the wrong ones.
 * Read from Citus' metadata tables pg_dist_local_group and
 * pg_dist_partition (documented in Citus' reference; its citus_tables view
 * leaves out tables an extension owns and asks every worker for shard
 * sizes, and citus_is_coordinator() is false on a node with no worker
 * yet), on the newest committed catalog state, whatever the isolation
 * level, and checked again after a relcache invalidation of one of the
 * extension's tables or of every relation (Citus invalidates the table it
 * converts; a function that waited for the conversion's lock sees the
 * invalidation when it gets the lock, and writers check again after
 * opening their table), not after other tables' DDL.  Where Citus is not
 * installed the cost is one catalog lookup of pg_extension then.
 */
static void
check_placement(Oid nsp)
{
	char	   *group = NULL;
	char	   *table = NULL;
	char	   *method = NULL;
	uint64		seen = tables.invalidations;	/* an invalidation during the
												 * check makes it run again */

	find_own_rels(nsp);			/* a table re-created since has a new OID */

	tables.citus_present = OidIsValid(get_extension_oid("citus", true));
	tables.citus_2pc_rel = InvalidOid;
	tables.citus_2pc_shard = InvalidOid;
	tables.citus_2pc_why = NULL;
	if (!tables.citus_present)
	{
		tables.placement_checked = (seen == tables.invalidations);
		return;
	}
	if (latest_row("SELECT groupid::text FROM pg_catalog.pg_dist_local_group",
				   nsp, &group, NULL) &&
		group && strcmp(group, "0") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("stream_offset_guard runs on the Citus coordinator only"),
				 errdetail("This node is a Citus worker (group %s): its sog tables are an empty copy, not the coordinator's checkpoints and receipts.", group),
				 errhint("Connect the consumer to the coordinator; its sink transaction reaches the workers through Citus.")));
	if (latest_row("SELECT c.relname::text, p.partmethod::text "
				   "FROM pg_catalog.pg_dist_partition p "
				   "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.logicalrelid "
				   "WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 "
				   "AND c.relname OPERATOR(pg_catalog.<>) 'citus_2pc' "
				   "ORDER BY c.relname LIMIT 1",
				   nsp, &table, &method))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table sog.%s is managed by Citus", table),
				 errdetail("Its rows are on the worker nodes (%s), not in the coordinator's heap that the extension reads and writes under its row locks.",
						   method && strcmp(method, "n") == 0 ? "a reference table" :
						   "a distributed table"),
				 errhint("Make it a local table of the coordinator again (docs/scaling.md, \"The way back\"); distribute the sink tables instead.")));
	find_citus_2pc(nsp);
	/* a table still to be created or converted is looked for again */
	tables.placement_checked = (seen == tables.invalidations) &&
		tables.citus_2pc_why == NULL;
}

void
sog_tables_check_placement(void)
{
	if (!tables.placement_checked && OidIsValid(tables.nsp))
		check_placement(tables.nsp);
}

/*
 * In a transaction that writes the extension's tables on a Citus
 * coordinator, make Citus commit the sink rows it sends to workers by
 * two-phase commit.  Citus uses one-phase commit when a transaction
 * modified one worker only: it commits there before the coordinator's own
 * commit record, so a crash in between (or a serialization failure at
 * COMMIT) would keep the sink rows without the receipts that say they
 * were applied, and the replay would insert them again.  With 2PC the
 * workers prepare first and commit only after the coordinator committed.
 *
 * The way Citus supports: a write to a Citus table whose shard is on this
 * node, which Citus runs in this backend ("local execution"), turns on
 * two-phase commit for the transaction - Citus 13.2,
 * src/backend/distributed/executor/local_executor.c,
 * ExecuteLocalTaskListExtended: "Any modification on the local execution
 * should enable 2PC" (Use2PCForCoordinatedTransaction for every task that
 * is not read-only, whether or not it changes a row).  Citus clears that
 * at the end of the transaction only (transaction_management.c,
 * ResetGlobalVariables), not at a subtransaction's abort.
 *
 * The write is DELETE FROM sog.citus_2pc, a table that is always empty
 * (its CHECK (false) admits no row), so it takes no row lock and never
 * waits for another consumer.  That Citus ran it here is checked, not
 * assumed: local execution locks the shard in this backend with
 * RowExclusiveLock, a connection (citus.enable_local_execution off, or a
 * transaction that already reached this node over one) would lock it in
 * another backend.  The lock also says that a transaction already did it:
 * one DELETE per transaction, whatever the number of calls (a lock taken
 * in a subtransaction that aborted is released with it, and the DELETE
 * runs again).
 *
 * Refused (0A000) when sog.citus_2pc is missing or unusable, or when Citus
 * did not run the DELETE here.
 */
void
sog_citus_use_2pc(void)
{
	MemoryContext caller = CurrentMemoryContext;
	AclResult	acl;

	if (!tables.placement_checked && OidIsValid(tables.nsp))
		check_placement(tables.nsp);
	if (!tables.citus_present)
		return;
	if (tables.citus_2pc_why)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot commit the sink transaction through Citus' two-phase commit"),
				 errdetail("On a Citus coordinator the extension makes Citus use two-phase commit by writing table sog.citus_2pc, a Citus local table, in every transaction that changes its state, and %s.",
						   tables.citus_2pc_why),
				 errhint("Create it once, as the extension's owner, on the coordinator (docs/scaling.md, \"Two-phase commit\"): CREATE TABLE sog.citus_2pc (CHECK (false)); SELECT citus_add_local_table_to_metadata('sog.citus_2pc');")));
	if (sog_relation_lock_held(tables.citus_2pc_shard, RowExclusiveLock))
		return;					/* this transaction did it already */

	acl = pg_class_aclcheck(tables.citus_2pc_rel, GetUserId(), ACL_DELETE);
	if (acl != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot commit the sink transaction through Citus' two-phase commit"),
				 errdetail("Role %s, which runs the extension's functions, may not delete from table sog.citus_2pc.",
						   GetUserNameFromId(GetUserId(), false)),
				 errhint("Create sog.citus_2pc as the extension's owner, or grant DELETE on it to that role.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_plan(sog_keep_plan(PLAN_CITUS_2PC, "DELETE FROM sog.citus_2pc", 0, NULL),
						 NULL, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "DELETE FROM sog.citus_2pc failed");
	SPI_finish();
	MemoryContextSwitchTo(caller);
	if (!sog_relation_lock_held(tables.citus_2pc_shard, RowExclusiveLock))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot commit the sink transaction through Citus' two-phase commit"),
				 errdetail("Citus did not write table sog.citus_2pc in this backend (local execution), which is what makes it use two-phase commit: citus.enable_local_execution is off, or this transaction already reached this node over a connection."),
				 errhint("Leave citus.enable_local_execution on, and call the extension's functions before statements that Citus runs over connections to the coordinator itself.")));
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
		if (!tables.placement_checked)
			check_placement(nsp);
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
	check_placement(nsp);
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
