/*-------------------------------------------------------------------------
 *
 * store/citus.c
 *	  The extension on a Citus cluster: its tables must stay in the
 *	  coordinator's heap, and a transaction that changes its state must
 *	  commit through Citus' two-phase commit (docs/scaling.md).
 *
 * What is cached across calls, and what invalidates it
 * ----------------------------------------------------
 *	- Whether the placement check passed (placement_checked): cleared by a
 *	  relcache invalidation of one of the extension's tables or of every
 *	  relation (Citus invalidates the table it converts;
 *	  sog_citus_invalidate, which store/tables.c's relcache callback
 *	  calls), and set only if no invalidation arrived while the check
 *	  ran; whether Citus is installed (present), as of that check; and, on
 *	  a Citus coordinator, the OIDs of the two-phase-commit table
 *	  sog.citus_2pc and of its shard on this node, or why it cannot serve
 *	  (why): computed by the same check, which a missing or unusable table
 *	  makes run again at the next call (its creation invalidates no table
 *	  of ours).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "sog.h"
#include "store/citus.h"
#include "store/tables.h"

#define SOG_NTABLES 15			/* the tables of own_rel_names */

/* The extension's tables (any of them Citus could distribute). */
static const char *const own_rel_names[SOG_NTABLES] = {
	"checkpoint", "receipt", "gap", "manifest_log", "recovery", "provider",
	"reconfiguration", "role_grant", "retention",
	/* 1.2: sog.receipt's partitions (a writer locks only its own) */
	"receipt_0", "receipt_1", "receipt_2", "receipt_3", "receipt_4", "receipt_ring"
};


static struct
{
	bool		placement_checked;	/* no table of ours is distributed */
	uint64		invalidations;	/* relcache invalidations seen */
	Oid			nsp;			/* the schema sog, as of the last check */
	bool		present;		/* Citus is installed, as of that check */
	Oid			table_rel;		/* sog.citus_2pc, a Citus local table */
	Oid			shard_rel;		/* its shard, on this node */
	const char *why;			/* why it cannot serve (static text), or NULL */
	Oid			own_rels[SOG_NTABLES];	/* own_rel_names' OIDs */
}			citus;

void
sog_citus_invalidate(Oid relid)
{
	if (relid == InvalidOid)
		citus.placement_checked = false;
	else
	{
		int			i;

		for (i = 0; i < SOG_NTABLES; i++)
			if (citus.own_rels[i] == relid)
				citus.placement_checked = false;
		if (relid == citus.table_rel || relid == citus.shard_rel)
			citus.placement_checked = false;
	}
	citus.invalidations++;
}

/* Look up the OIDs of the extension's tables in nsp (InvalidOid: absent). */
static void
find_own_rels(Oid nsp)
{
	int			i;

	for (i = 0; i < SOG_NTABLES; i++)
		citus.own_rels[i] = get_relname_relid(own_rel_names[i], nsp);
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
 * serve (citus.why).  It must be a Citus local table, or any
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
		citus.why = "there is no table sog.citus_2pc";
		return;
	}
	citus.table_rel = get_relname_relid("citus_2pc", nsp);
	if (strcmp(state, "local") == 0)
		citus.why = "table sog.citus_2pc is not managed by Citus";
	else if (strcmp(state, "placements") == 0)
		citus.why = "table sog.citus_2pc has more than one shard or placement";
	else if (strcmp(state, "remote") == 0)
		citus.why = "the shard of table sog.citus_2pc is on another node";
	else
	{
		/* Citus names a shard <table>_<shard id>, in the table's schema */
		citus.shard_rel = get_relname_relid(psprintf("citus_2pc_%s", shard), nsp);
		if (!OidIsValid(citus.shard_rel))
			citus.why = "the shard of table sog.citus_2pc is missing on this node";
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
 *     and the executor (store/writer.c) and the row lock (checkpoint/checkpoint.c) would
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
	uint64		seen = citus.invalidations; /* an invalidation during the
											 * check makes it run again */

	citus.placement_checked = false;	/* until it passes */
	citus.nsp = nsp;
	find_own_rels(nsp);			/* a table re-created since has a new OID */

	citus.present = OidIsValid(get_extension_oid("citus", true));
	citus.table_rel = InvalidOid;
	citus.shard_rel = InvalidOid;
	citus.why = NULL;
	if (!citus.present)
	{
		citus.placement_checked = (seen == citus.invalidations);
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
	citus.placement_checked = (seen == citus.invalidations) &&
		citus.why == NULL;
}

void
sog_citus_check_placement(Oid nsp, bool always)
{
	if (always || !citus.placement_checked || nsp != citus.nsp)
		check_placement(nsp);
}

void
sog_citus_recheck_placement(void)
{
	if (!citus.placement_checked && OidIsValid(citus.nsp))
		check_placement(citus.nsp);
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

	sog_citus_recheck_placement();
	if (!citus.present)
		return;
	if (citus.why)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot commit the sink transaction through Citus' two-phase commit"),
				 errdetail("On a Citus coordinator the extension makes Citus use two-phase commit by writing table sog.citus_2pc, a Citus local table, in every transaction that changes its state, and %s.",
						   citus.why),
				 errhint("Create it once, as the extension's owner, on the coordinator (docs/scaling.md, \"Two-phase commit\"): CREATE TABLE sog.citus_2pc (CHECK (false)); SELECT citus_add_local_table_to_metadata('sog.citus_2pc');")));
	if (sog_relation_lock_held(citus.shard_rel, RowExclusiveLock))
		return;					/* this transaction did it already */

	acl = pg_class_aclcheck(citus.table_rel, GetUserId(), ACL_DELETE);
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
	if (!sog_relation_lock_held(citus.shard_rel, RowExclusiveLock))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot commit the sink transaction through Citus' two-phase commit"),
				 errdetail("Citus did not write table sog.citus_2pc in this backend (local execution), which is what makes it use two-phase commit: citus.enable_local_execution is off, or this transaction already reached this node over a connection."),
				 errhint("Leave citus.enable_local_execution on, and call the extension's functions before statements that Citus runs over connections to the coordinator itself.")));
}
