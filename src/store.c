/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The checkpoint/receipt store.
 *
 * Locking rules (the first thing to know about this file)
 * -------------------------------------------------------
 * Every state change of a checkpoint - claim, note_read, apply, apply_batch,
 * halt, verify_gap, skip_gap, commit_page, resolve_gap, prune_receipts -
 * starts with sog_checkpoint_lock(), which takes a FOR NO KEY UPDATE row
 * lock on the NEWEST version of the checkpoint's row, waiting for whichever
 * transaction holds it, and reads that newest version.  The lock is held to
 * the end of the caller's transaction.  Consequences:
 *
 *	- all changes of one checkpoint serialize; different checkpoints never
 *	  wait for each other (no shared hot spot, no table-level lock beyond
 *	  RowExclusiveLock);
 *	- a claim waits for an in-flight sink transaction that has applied on
 *	  the checkpoint, and then sees its outcome (committed advance or not);
 *	- fencing reads the newest committed generation at every isolation
 *	  level.  The lock is taken with the table AM directly
 *	  (table_tuple_lock with TUPLE_LOCK_FLAG_FIND_LAST_VERSION), not with
 *	  SELECT ... FOR UPDATE, because at REPEATABLE READ and SERIALIZABLE the
 *	  executor turns "row changed since my snapshot" into a serialization
 *	  failure; here a stale worker gets the precise answer SG001 instead.
 *
 * Reads made after the lock (receipts) and the write of the row use the
 * newest snapshot (SPI_execute_snapshot with GetLatestSnapshot()), for the
 * same reason: under the lock nothing of this checkpoint is in flight, so
 * the newest committed state is the state.  The write goes through SPI
 * (UPDATE) so that index maintenance and the monotonicity trigger run as for
 * any other writer.
 *
 * Receipts
 * --------
 * Normally every receipt lies at or below applied_position; the one
 * exception is a recovery attempt (recovery.c), which records receipts of
 * the events it writes above applied_position and advances it only when it
 * wins promotion.  sog.checkpoint.receipts_through (the greatest position
 * with a receipt) tells the hot path whether a position above
 * applied_position can have a receipt at all, so it probes only then.
 *
 * Receipts are packed: one row of sog.receipt per apply call (a "run"):
 * (checkpoint_id, first_position, last_position, n, positions, digests).
 * digests holds the n 32-byte payload digests back to back.  positions is
 * NULL for a dense run - one-component positions first, first+1, ...,
 * first+n-1 (a Kafka or NATS batch) - and otherwise holds each position as
 * a length byte followed by its encoding.  Runs of one checkpoint never
 * overlap (receipts are only written above applied_position, which only
 * grows), so the run holding a position is the first run whose
 * last_position is at or above it: one probe of the primary key
 * (checkpoint_id, last_position).  A run is split into rows of at most
 * 3900 bytes of digests and positions (121 receipts of a dense run), kept
 * inline (STORAGE PLAIN: no TOAST, no compression attempt on digests that do
 * not compress).  Two such rows fill an 8 kB page, so a receipt takes about
 * 34 bytes on disk, and a batch of 1000 events costs 9 heap rows and 9 index
 * entries instead of 1000 of each.  A replayed batch decodes a fetched row
 * once and answers the following duplicates from it.
 *
 * SPI plans are prepared once per backend and kept; they are re-prepared if
 * the extension was dropped and created again (the OID of sog.checkpoint
 * changed).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "executor/executor.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "access.h"
#include "compat.h"
#include "store.h"

/* Columns of sog.checkpoint read by sog_checkpoint_lock, in this order. */
enum
{
	COL_ID,
	COL_CONSUMER,
	COL_STREAM,
	COL_PARTITION,
	COL_CRITICALITY,
	COL_PROVIDER,
	COL_QUERY_SCOPE,
	COL_SOURCE_IDENTITY,
	COL_GENERATION,
	COL_OWNER,
	COL_PROVIDER_TOKEN,
	COL_SOURCE_CURSOR,
	COL_READ_BASE,
	COL_READ_HASH,
	COL_READ_COUNT,
	COL_APPLIED_POSITION,
	COL_PRUNE_HORIZON,
	COL_RECEIPTS_THROUGH,
	COL_STATE,
	COL_UPDATED_AT,
	COL_CLAIMED_AT,
	NUM_COLS
};

static const char *const col_names[NUM_COLS] = {
	"id", "consumer", "stream", "partition", "criticality", "provider",
	"query_scope", "source_identity", "generation", "owner",
	"provider_token", "source_cursor", "read_base", "read_hash",
	"read_count", "applied_position", "prune_horizon", "receipts_through",
	"state", "updated_at", "claimed_at"
};

static const char *const state_labels[] = {"running", "replaying", "failed_closed"};

/* Backend-local cache of catalog OIDs and kept plans. */
static struct
{
	Oid			checkpoint_rel;
	Oid			checkpoint_pkey;
	Oid			position_type;
	AttrNumber	attnum[NUM_COLS];
	SPIPlanPtr	plan_update;
	SPIPlanPtr	plan_receipt_insert;
	SPIPlanPtr	plan_receipt_lookup;
	SPIPlanPtr	plan_gap_insert;
	SPIPlanPtr	plan_manifest_insert;
	Oid			receipt_rel;
	AttrNumber	receipt_attnum[6];
} cache;

static const char *const receipt_cols[6] = {
	"checkpoint_id", "first_position", "last_position", "n", "positions", "digests"
};

static void decode_run(int row, SogReceiptRun *run);

const char *
sog_state_label(SogState s)
{
	return state_labels[s];
}

static SogState
state_from_label(const char *s)
{
	int			i;

	for (i = 0; i < (int) lengthof(state_labels); i++)
		if (strcmp(s, state_labels[i]) == 0)
			return (SogState) i;
	elog(ERROR, "unknown checkpoint state \"%s\"", s);
	return SOG_STATE_FAILED_CLOSED;
}

static void
free_plan(SPIPlanPtr *plan)
{
	if (*plan)
		SPI_freeplan(*plan);
	*plan = NULL;
}

/*
 * Make sure the cache describes the installed extension.  Two syscache
 * probes per call; everything else only when the extension was re-created.
 */
static void
store_refresh_cache(void)
{
	Oid			nsp = get_namespace_oid("sog", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("checkpoint", nsp) : InvalidOid;
	int			i;

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"stream_offset_guard\" is not installed correctly"),
				 errdetail("Table sog.checkpoint does not exist."),
				 errhint("Run CREATE EXTENSION stream_offset_guard.")));
	if (rel == cache.checkpoint_rel)
		return;

	free_plan(&cache.plan_update);
	free_plan(&cache.plan_receipt_insert);
	free_plan(&cache.plan_receipt_lookup);
	free_plan(&cache.plan_gap_insert);
	free_plan(&cache.plan_manifest_insert);
	cache.checkpoint_rel = InvalidOid;

	cache.checkpoint_pkey = get_relname_relid("checkpoint_pkey", nsp);
	cache.position_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										  CStringGetDatum("position"),
										  ObjectIdGetDatum(nsp));
	if (!OidIsValid(cache.checkpoint_pkey) || !OidIsValid(cache.position_type))
		elog(ERROR, "stream_offset_guard objects are missing");
	for (i = 0; i < NUM_COLS; i++)
	{
		cache.attnum[i] = get_attnum(rel, col_names[i]);
		if (cache.attnum[i] == InvalidAttrNumber)
			elog(ERROR, "column sog.checkpoint.%s is missing", col_names[i]);
	}
	cache.receipt_rel = get_relname_relid("receipt", nsp);
	if (!OidIsValid(cache.receipt_rel))
		elog(ERROR, "table sog.receipt is missing");
	for (i = 0; i < 6; i++)
	{
		cache.receipt_attnum[i] = get_attnum(cache.receipt_rel, receipt_cols[i]);
		if (cache.receipt_attnum[i] == InvalidAttrNumber)
			elog(ERROR, "column sog.receipt.%s is missing", receipt_cols[i]);
	}
	cache.checkpoint_rel = rel;
}

/*
 * May this write to rel go through the heap AM directly (simple_heap_* and
 * CatalogIndexInsert), bypassing the executor?  Only when that is exactly
 * what the executor would do.  Decided at every write, with rel open and
 * locked (RowExclusiveLock conflicts with CREATE INDEX, CREATE TRIGGER,
 * CREATE RULE and ALTER TABLE, so nothing can change until we commit) and
 * with the very index state the write will use:
 *	- a heap table, not a partition, no rules;
 *	- every index plain and immediate (no expressions, no predicate, no
 *	  exclusion constraint);
 *	- exactly the extension's CHECK constraints (expected_checks), which its
 *	  C code never violates, no stored generated column, and for an insert
 *	  exactly the extension's columns (expected_natts, or -1 for any: an
 *	  update keeps the values of columns it does not know);
 *	- no trigger but the extension's own (own_trigger, whose check the
 *	  writer makes itself) and the referenced side's foreign-key triggers
 *	  (they act only when the key changes; the writer never changes it).
 * Otherwise - an operator added an expression index, an audit trigger, a
 * constraint or a column - the store writes through SPI.
 */
static bool
direct_write_ok(Relation rel, CatalogIndexState indstate, int expected_checks,
				int expected_natts, const char *own_trigger)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID || rel->rd_rel->relispartition ||
		rel->rd_rules != NULL)
		return false;
	if ((desc->constr ? desc->constr->num_check : 0) != expected_checks ||
		(desc->constr && desc->constr->has_generated_stored))
		return false;
	if (expected_natts >= 0)
	{
		int			live = 0;

		for (i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				live++;
		if (live != expected_natts)
			return false;
	}
	for (i = 0; i < indstate->ri_NumIndices; i++)
	{
		IndexInfo  *ii = indstate->ri_IndexRelationInfo[i];

		if (ii->ii_Expressions != NIL || ii->ii_Predicate != NIL ||
			ii->ii_ExclusionOps != NULL ||
			!indstate->ri_IndexRelationDescs[i]->rd_index->indimmediate)
			return false;
	}
	if (rel->trigdesc)
		for (i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			Trigger    *t = &rel->trigdesc->triggers[i];
			char	   *fname;

			if (own_trigger && strcmp(t->tgname, own_trigger) == 0 &&
				TRIGGER_FOR_ROW(t->tgtype) && TRIGGER_FOR_BEFORE(t->tgtype) &&
				TRIGGER_FOR_UPDATE(t->tgtype) &&
				!TRIGGER_FOR_INSERT(t->tgtype) && !TRIGGER_FOR_DELETE(t->tgtype) &&
				(fname = get_func_name(t->tgfoid)) != NULL &&
				strcmp(fname, "checkpoint_guard") == 0 &&
				get_func_namespace(t->tgfoid) == get_rel_namespace(RelationGetRelid(rel)))
				continue;
			if (t->tgisinternal && RI_FKey_trigger_type(t->tgfoid) == RI_TRIGGER_PK)
				continue;
			return false;
		}
	return true;
}

/* CHECK constraints the extension's script puts on its tables. */
#define CHECKPOINT_CHECKS	3
#define RECEIPT_CHECKS		1

/*
 * Open the SPI connection for the store's queries.  SPI_connect, and every
 * SPI call after it, leaves SPI's procedure context current, which
 * SPI_finish deletes; the store switches back to the caller's context after
 * each (exec_latest, exec_once, keep_plan), so everything the store and its
 * callers palloc (decoded receipts, manifests, result values) survives
 * sog_store_end().  Query results stay in SPI's own contexts and are copied
 * out before use.
 */
void
sog_store_begin(void)
{
	MemoryContext caller = CurrentMemoryContext;

	store_refresh_cache();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(caller);
}

void
sog_store_end(void)
{
	SPI_finish();
}

/* Prepare and keep a plan once. */
static SPIPlanPtr
keep_plan(SPIPlanPtr *slot, const char *sql, int nargs, Oid *argtypes)
{
	if (*slot == NULL)
	{
		MemoryContext caller = CurrentMemoryContext;
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, argtypes,
												CURSOR_OPT_GENERIC_PLAN);

		MemoryContextSwitchTo(caller);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		SPI_keepplan(plan);
		*slot = plan;
	}
	return *slot;
}

/* Run a kept plan on the newest snapshot; returns SPI's result code. */
static int
exec_latest(SPIPlanPtr plan, Datum *values, const char *nulls, bool read_only,
			long count)
{
	MemoryContext caller = CurrentMemoryContext;
	int			rc;

	rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, read_only, true, count);
	MemoryContextSwitchTo(caller);	/* SPI leaves its procedure context current */
	if (rc < 0)
		elog(ERROR, "SPI_execute_snapshot failed: %s", SPI_result_code_string(rc));
	return rc;
}

static char *
text_or_null(Datum d, bool isnull)
{
	return isnull ? NULL : TextDatumGetCString(d);
}

static SogPosition *
position_or_null(Datum d, bool isnull)
{
	return isnull ? NULL : (SogPosition *) PG_DETOAST_DATUM_COPY(d);
}

void
sog_report_unknown_checkpoint(int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("checkpoint " INT64_FORMAT " does not exist", id),
			 errdetail("No row of sog.checkpoint has id " INT64_FORMAT ".", id),
			 errhint("Create it with sog.register(consumer, stream, partition) and use the id it returns.")));
}

/* sog.claim_timeout, in milliseconds; 0 waits without limit. */
int			sog_claim_timeout = 0;

/*
 * Who holds a checkpoint's row, for the message of a lock wait that timed
 * out: filled in before waiting (after the error, no query can run).
 */
typedef struct SogHolder
{
	bool		known;			/* a single transaction holds it */
	int			pid;			/* its backend, 0 if not found */
	char	   *since;			/* its transaction's start, or NULL */
	char	   *state;			/* its backend's state, or NULL */
	int64		generation;		/* the newest committed generation */
	char	   *owner;
	char	   *claimed_at;
} SogHolder;

static void
find_holder(HeapTuple tup, TupleDesc desc, SogHolder *h)
{
	HeapTupleHeader t = tup->t_data;
	TransactionId xmax = HeapTupleHeaderGetRawXmax(t);
	bool		isnull;
	Datum		d;

	memset(h, 0, sizeof(*h));
	d = heap_getattr(tup, cache.attnum[COL_GENERATION], desc, &isnull);
	h->generation = isnull ? 0 : DatumGetInt64(d);
	d = heap_getattr(tup, cache.attnum[COL_OWNER], desc, &isnull);
	h->owner = isnull ? NULL : TextDatumGetCString(d);
	d = heap_getattr(tup, cache.attnum[COL_CLAIMED_AT], desc, &isnull);
	if (isnull)
		d = heap_getattr(tup, cache.attnum[COL_UPDATED_AT], desc, &isnull);
	h->claimed_at = isnull ? NULL : pstrdup(timestamptz_to_str(DatumGetTimestampTz(d)));

	if ((t->t_infomask & HEAP_XMAX_INVALID) || (t->t_infomask & HEAP_XMAX_IS_MULTI) ||
		!TransactionIdIsValid(xmax) || !TransactionIdIsInProgress(xmax))
		return;
	h->known = true;
	h->pid = BackendXidGetPid(xmax);
	if (h->pid != 0)
	{
		Oid			types[1] = {INT4OID};
		Datum		values[1] = {Int32GetDatum(h->pid)};
		MemoryContext caller = CurrentMemoryContext;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		MemoryContextSwitchTo(caller);
		if (SPI_execute_with_args("SELECT xact_start::text, state FROM pg_catalog.pg_stat_activity "
								  "WHERE pid OPERATOR(pg_catalog.=) $1",
								  1, types, values, NULL, true, 1) == SPI_OK_SELECT &&
			SPI_processed == 1)
		{
			MemoryContextSwitchTo(caller);
			h->since = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
			h->state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		}
		MemoryContextSwitchTo(caller);
		SPI_finish();
	}
}

/*
 * The wait for checkpoint id's row lock ended with a lock timeout (55P03):
 * say which checkpoint, who holds it and since when, and what to do.
 */
static void
report_lock_timeout(int64 id, const SogHolder *h, bool claim, int timeout_ms)
{
	StringInfoData detail;

	initStringInfo(&detail);
	appendStringInfo(&detail, "Generation " INT64_FORMAT " (%s%s%s, since %s) holds the checkpoint",
					 h->generation, h->owner ? "owner " : "released by its owner",
					 h->owner ? sog_cut(h->owner) : "", "",
					 h->claimed_at ? h->claimed_at : "its registration");
	if (h->known && h->pid != 0)
		appendStringInfo(&detail, "; its row is locked by the open transaction of backend %d, in progress since %s (%s).",
						 h->pid, h->since ? h->since : "an unknown time",
						 h->state ? h->state : "state unknown");
	else
		appendStringInfoString(&detail, "; its row is locked by an open transaction.");
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 claim ?
			 errmsg("could not claim checkpoint " INT64_FORMAT " within %d ms", id, timeout_ms) :
			 errmsg("could not lock checkpoint " INT64_FORMAT " within lock_timeout (%d ms)", id, timeout_ms),
			 errdetail_internal("%s", detail.data),
			 h->known && h->pid != 0 ?
			 errhint("Retry later, or end that transaction (SELECT pg_terminate_backend(%d)): its uncommitted sink rows roll back, and a claim then resumes from what it had committed. Set idle_in_transaction_session_timeout for consumers so a stopped one cannot hold a checkpoint for long.", h->pid) :
			 errhint("Retry later, or end the transaction that holds the checkpoint (see pg_locks and pg_stat_activity).")));
}

/*
 * Lock the row version at *tid (found with SnapshotSelf) and its newest
 * successor, waiting for whichever transaction holds it; for a claim at
 * most sog.claim_timeout milliseconds (when smaller than lock_timeout).  A
 * lock timeout becomes report_lock_timeout's error.  Returns the outcome of
 * table_tuple_lock; slot then holds the locked version.
 */
static TM_Result
lock_row(Relation rel, ItemPointer tid, TupleTableSlot *slot, int64 id,
		 HeapTuple seen, bool claim)
{
	int			timeout = LockTimeout;
	volatile int nest = -1;
	SogHolder	holder;
	TM_FailureData tmfd;
	volatile TM_Result res = TM_Ok;
	MemoryContext ccxt = CurrentMemoryContext;

	if (claim && sog_claim_timeout > 0 && (timeout == 0 || sog_claim_timeout < timeout))
	{
		char		buf[32];

		timeout = sog_claim_timeout;
		snprintf(buf, sizeof(buf), "%d", timeout);
		nest = NewGUCNestLevel();
		(void) set_config_option("lock_timeout", buf, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	if (timeout > 0)
		find_holder(seen, RelationGetDescr(rel), &holder);

	PG_TRY();
	{
		res = table_tuple_lock(rel, tid, SnapshotSelf, slot,
							   GetCurrentCommandId(true),
							   LockTupleNoKeyExclusive, LockWaitBlock,
							   TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(ccxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE || timeout == 0)
			PG_RE_THROW();
		FlushErrorState();
		report_lock_timeout(id, &holder, claim && timeout == sog_claim_timeout, timeout);
	}
	PG_END_TRY();

	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return res;
}

void
sog_checkpoint_lock(int64 id, SogCheckpoint *cp, int access, bool claim)
{
	Relation	rel;
	Relation	idx;
	TupleTableSlot *slot;
	IndexScanDesc scan;
	ScanKeyData key;
	ItemPointerData tid;
	TM_Result	res;
	bool		found;
	Datum	   *v;
	bool	   *n;

	store_refresh_cache();

	/* every caller changes state: refuse where the executor would */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change checkpoint " INT64_FORMAT " during recovery", id),
				 errdetail("This server is a standby: checkpoints, receipts and gaps change only on the primary."),
				 errhint("Connect the consumer to the primary.")));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change checkpoint " INT64_FORMAT " in a read-only transaction", id),
				 errdetail("Claims, applies, halts and gap changes write the checkpoint's row."),
				 errhint("Run the sink transaction as READ WRITE.")));

	rel = table_open(cache.checkpoint_rel, RowExclusiveLock);
	idx = index_open(cache.checkpoint_pkey, AccessShareLock);
	slot = table_slot_create(rel, NULL);

	/*
	 * Find the row.  SnapshotSelf sees exactly one version of it: the newest
	 * committed one (or our own), and takes no SSI predicate locks.
	 */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = index_beginscan(rel, idx, SnapshotSelf, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (found)
		tid = slot->tts_tid;
	index_endscan(scan);
	index_close(idx, AccessShareLock);

	if (found)
	{
		bool		shouldfree;
		HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &shouldfree);
		bool		isnull;
		Datum		consumer = heap_getattr(tup, cache.attnum[COL_CONSUMER],
											RelationGetDescr(rel), &isnull);

		/* may the caller act on it at all?  (the consumer never changes) */
		sog_check_access(id, isnull ? NULL : TextDatumGetCString(consumer), access);

		/*
		 * A version our own transaction wrote (an earlier call's update) is
		 * ours alone already: every other writer waits on the version
		 * before it.  Otherwise lock the newest version, waiting for its
		 * holder and following updates.
		 */
		if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
		{
			HeapTuple	seen = heap_copytuple(tup);

			res = lock_row(rel, &tid, slot, id, seen, claim);
			switch (res)
			{
				case TM_Ok:
					break;
				case TM_Deleted:
					found = false;
					break;
				default:
					ereport(ERROR,
							(errcode(ERRCODE_INTERNAL_ERROR),
							 errmsg("could not lock checkpoint " INT64_FORMAT, id),
							 errdetail("The row lock returned status %d.", (int) res),
							 errhint("Retry the transaction; report this if it persists.")));
			}
		}
		if (shouldfree)
			heap_freetuple(tup);
	}
	if (!found)
		sog_report_unknown_checkpoint(id);

	slot_getallattrs(slot);
	v = slot->tts_values;
	n = slot->tts_isnull;
#define COL(c) v[cache.attnum[c] - 1], n[cache.attnum[c] - 1]
	memset(cp, 0, sizeof(*cp));
	cp->tuple = ExecCopySlotHeapTuple(slot);
	cp->tid = slot->tts_tid;
	cp->id = id;
	cp->consumer = text_or_null(COL(COL_CONSUMER));
	cp->stream = text_or_null(COL(COL_STREAM));
	cp->partition = text_or_null(COL(COL_PARTITION));
	{
		char	   *crit = text_or_null(COL(COL_CRITICALITY));

		cp->telemetry = crit != NULL && strcmp(crit, "telemetry") == 0;
	}
	cp->provider = text_or_null(COL(COL_PROVIDER));
	cp->query_scope = text_or_null(COL(COL_QUERY_SCOPE));
	cp->source_identity = text_or_null(COL(COL_SOURCE_IDENTITY));
	cp->generation = DatumGetInt64(v[cache.attnum[COL_GENERATION] - 1]);
	cp->owner = text_or_null(COL(COL_OWNER));
	cp->provider_token = text_or_null(COL(COL_PROVIDER_TOKEN));
	cp->source_cursor = position_or_null(COL(COL_SOURCE_CURSOR));
	cp->read_base = position_or_null(COL(COL_READ_BASE));
	cp->read_hash = text_or_null(COL(COL_READ_HASH));
	cp->read_count_isnull = n[cache.attnum[COL_READ_COUNT] - 1];
	if (!cp->read_count_isnull)
		cp->read_count = DatumGetInt64(v[cache.attnum[COL_READ_COUNT] - 1]);
	cp->applied_position = position_or_null(COL(COL_APPLIED_POSITION));
	cp->prune_horizon = position_or_null(COL(COL_PRUNE_HORIZON));
	cp->receipts_through = position_or_null(COL(COL_RECEIPTS_THROUGH));
	cp->state = state_from_label(text_or_null(COL(COL_STATE)));
	cp->updated_at = DatumGetTimestampTz(v[cache.attnum[COL_UPDATED_AT] - 1]);
	cp->claimed_at_isnull = n[cache.attnum[COL_CLAIMED_AT] - 1];
	if (!cp->claimed_at_isnull)
		cp->claimed_at = DatumGetTimestampTz(v[cache.attnum[COL_CLAIMED_AT] - 1]);
#undef COL

	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);	/* keep RowExclusiveLock to end of xact */
}

void
sog_check_generation(const SogCheckpoint *cp, int64 generation,
					 const char *action)
{
	if (generation != cp->generation)
	{
		const char *applied = cp->applied_position ?
		sog_position_to_cstring(cp->applied_position) : "the start of the stream";

		if (generation < cp->generation)
			ereport(ERROR,
					(errcode(ERRCODE_SOG_FENCED),
					 errmsg("checkpoint " INT64_FORMAT " is fenced", cp->id),
					 errdetail("The %s carries generation " INT64_FORMAT ", but generation " INT64_FORMAT " %s%s%s took the checkpoint over at %s.",
							   action, generation, cp->generation,
							   cp->owner ? "(owner " : "(since released by its owner",
							   cp->owner ? sog_cut(cp->owner) : "", ")",
							   timestamptz_to_str(cp->claimed_at_isnull ?
												  cp->updated_at : cp->claimed_at)),
					 errhint("Stop this worker; the new owner resumes from %s.", applied)));
		else
			ereport(ERROR,
					(errcode(ERRCODE_SOG_FENCED),
					 errmsg("checkpoint " INT64_FORMAT " is fenced", cp->id),
					 errdetail("The %s carries generation " INT64_FORMAT ", which was never claimed; the current generation is " INT64_FORMAT ".",
							   action, generation, cp->generation),
					 errhint("Use the generation returned by sog.claim().")));
	}
}

/* Raise 22003 rather than let a generation wrap around. */
void
sog_check_generation_room(const SogCheckpoint *cp)
{
	if (cp->generation == PG_INT64_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("generation of checkpoint " INT64_FORMAT " cannot grow further", cp->id),
				 errdetail("The generation is " INT64_FORMAT ", the largest bigint.", cp->generation),
				 errhint("Register the stream under a new consumer name; an UPDATE must have set this generation.")));
}

/* Datum for a nullable position / text parameter. */
#define POS_ARG(p, i) \
	do { values[i] = (p) ? PointerGetDatum(p) : (Datum) 0; nulls[i] = (p) ? ' ' : 'n'; } while (0)
#define TEXT_ARG(s, i) \
	do { values[i] = (s) ? CStringGetTextDatum(s) : (Datum) 0; nulls[i] = (s) ? ' ' : 'n'; } while (0)

static void
checkpoint_write_spi(const SogCheckpoint *cp)
{
	Oid			types[14];
	Datum		values[14];
	char		nulls[14];
	SPIPlanPtr	plan;
	int			rc;

	types[0] = INT8OID;
	types[1] = INT8OID;
	types[2] = TEXTOID;
	types[3] = TEXTOID;
	types[4] = cache.position_type;
	types[5] = cache.position_type;
	types[6] = TEXTOID;
	types[7] = INT8OID;
	types[8] = cache.position_type;
	types[9] = cache.position_type;
	types[10] = TEXTOID;
	types[11] = TEXTOID;
	types[12] = cache.position_type;
	types[13] = BOOLOID;
	plan = keep_plan(&cache.plan_update,
					 "UPDATE sog.checkpoint SET generation = $2, owner = $3, "
					 "provider_token = $4, source_cursor = $5, read_base = $6, "
					 "read_hash = $7, read_count = $8, applied_position = $9, "
					 "prune_horizon = $10, state = $11, source_identity = $12, "
					 "receipts_through = $13, updated_at = pg_catalog.now(), "
					 "claimed_at = CASE WHEN $14 THEN pg_catalog.now() ELSE claimed_at END "
					 "WHERE id OPERATOR(pg_catalog.=) $1",
					 14, types);

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(cp->id);
	values[1] = Int64GetDatum(cp->generation);
	TEXT_ARG(cp->owner, 2);
	TEXT_ARG(cp->provider_token, 3);
	POS_ARG(cp->source_cursor, 4);
	POS_ARG(cp->read_base, 5);
	TEXT_ARG(cp->read_hash, 6);
	values[7] = Int64GetDatum(cp->read_count);
	nulls[7] = cp->read_count_isnull ? 'n' : ' ';
	POS_ARG(cp->applied_position, 8);
	POS_ARG(cp->prune_horizon, 9);
	TEXT_ARG(sog_state_label(cp->state), 10);
	TEXT_ARG(cp->source_identity, 11);
	POS_ARG(cp->receipts_through, 12);
	values[13] = BoolGetDatum(cp->claimed);

	rc = exec_latest(plan, values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not update checkpoint " INT64_FORMAT, cp->id);
}

/* Set column c of a tuple being built to a position, text or NULL. */
#define SET_POS(c, p) \
	do { int a_ = cache.attnum[c] - 1; repl[a_] = true; nulls[a_] = (p) == NULL; \
		 values[a_] = PointerGetDatum(p); } while (0)
#define SET_TEXT(c, s) \
	do { int a_ = cache.attnum[c] - 1; repl[a_] = true; nulls[a_] = (s) == NULL; \
		 values[a_] = (s) ? CStringGetTextDatum(s) : (Datum) 0; } while (0)

/*
 * Write back every mutable column of *cp with the heap AM, replacing the
 * version sog_checkpoint_lock() read (which the caller holds locked):
 * simple_heap_update plus index entries when the update is not HOT
 * (CatalogTupleUpdate), exactly what the executor would do for this table
 * (direct_write_ok), without its per-statement costs: no plan, no
 * executor start, no re-parsing of the CHECK constraints.  The C code only
 * writes values those constraints allow; the monotonicity the trigger
 * enforces for other writers is checked here the same way.  cp->tuple and
 * cp->tid follow the new version, and the command counter is advanced so
 * the next call of this transaction sees it.
 */
void
sog_checkpoint_write(SogCheckpoint *cp)
{
	Relation	rel;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	bool	   *repl;
	HeapTuple	newtup;
	CatalogIndexState indstate;
	int			a;

	rel = table_open(cache.checkpoint_rel, RowExclusiveLock);
	indstate = CatalogOpenIndexes(rel);
	if (cp->tuple == NULL ||
		!direct_write_ok(rel, indstate, CHECKPOINT_CHECKS, -1, "checkpoint_monotonic"))
	{
		CatalogCloseIndexes(indstate);
		table_close(rel, NoLock);
		checkpoint_write_spi(cp);
		cp->tuple = NULL;		/* the new version is SPI's: use SPI again */
		return;
	}
	/* as the executor would: refuse if a publication cannot take updates */
	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	/* a version written earlier in this same command must be visible */
	CommandCounterIncrement();
	desc = RelationGetDescr(rel);
	values = palloc0(sizeof(Datum) * desc->natts);
	nulls = palloc0(sizeof(bool) * desc->natts);
	repl = palloc0(sizeof(bool) * desc->natts);

	a = cache.attnum[COL_GENERATION] - 1;
	repl[a] = true;
	values[a] = Int64GetDatum(cp->generation);
	SET_TEXT(COL_OWNER, cp->owner);
	SET_TEXT(COL_PROVIDER_TOKEN, cp->provider_token);
	SET_POS(COL_SOURCE_CURSOR, cp->source_cursor);
	SET_POS(COL_READ_BASE, cp->read_base);
	SET_TEXT(COL_READ_HASH, cp->read_hash);
	a = cache.attnum[COL_READ_COUNT] - 1;
	repl[a] = true;
	nulls[a] = cp->read_count_isnull;
	values[a] = Int64GetDatum(cp->read_count);
	SET_POS(COL_APPLIED_POSITION, cp->applied_position);
	SET_POS(COL_PRUNE_HORIZON, cp->prune_horizon);
	SET_TEXT(COL_STATE, sog_state_label(cp->state));
	SET_TEXT(COL_SOURCE_IDENTITY, cp->source_identity);
	SET_POS(COL_RECEIPTS_THROUGH, cp->receipts_through);
	a = cache.attnum[COL_UPDATED_AT] - 1;
	repl[a] = true;
	values[a] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	if (cp->claimed)
	{
		a = cache.attnum[COL_CLAIMED_AT] - 1;
		repl[a] = true;
		values[a] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	}

	newtup = heap_modify_tuple(cp->tuple, desc, values, nulls, repl);
	sog_check_monotonic(cp->tuple, newtup, desc, cache.attnum[COL_GENERATION],
						cache.attnum[COL_APPLIED_POSITION],
						cache.attnum[COL_PRUNE_HORIZON]);
	CatalogTupleUpdateWithInfo(rel, &cp->tid, newtup, indstate);
	CatalogCloseIndexes(indstate);
	cp->tid = newtup->t_self;
	cp->tuple = newtup;
	CommandCounterIncrement();
	table_close(rel, NoLock);
}

static SogPosition *
tuple_position(HeapTuple tup, TupleDesc desc, AttrNumber att)
{
	bool		isnull;
	Datum		d = heap_getattr(tup, att, desc, &isnull);

	return isnull ? NULL : DatumGetSogPositionP(d);
}

void
sog_check_monotonic(HeapTuple oldt, HeapTuple newt, TupleDesc desc,
					AttrNumber generation_att, AttrNumber applied_att,
					AttrNumber horizon_att)
{
	const char *const cols[] = {"applied_position", "prune_horizon"};
	AttrNumber	atts[] = {applied_att, horizon_att};
	bool		on;
	bool		nn;
	int64		og;
	int64		ng;
	int			i;

	og = DatumGetInt64(heap_getattr(oldt, generation_att, desc, &on));
	ng = DatumGetInt64(heap_getattr(newt, generation_att, desc, &nn));
	if (nn || (!on && ng < og))
		ereport(ERROR,
				(errcode(ERRCODE_SOG_REGRESSION),
				 errmsg("generation of a checkpoint cannot move backward"),
				 errdetail("The update would change generation from " INT64_FORMAT " to %s.",
						   og, nn ? "NULL" : psprintf(INT64_FORMAT, ng)),
				 errhint("Generations only grow; use sog.claim() to take over a checkpoint.")));

	for (i = 0; i < (int) lengthof(cols); i++)
	{
		SogPosition *o = tuple_position(oldt, desc, atts[i]);
		SogPosition *n = tuple_position(newt, desc, atts[i]);

		if (sog_position_cmp_nullable(n, o) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_SOG_REGRESSION),
					 errmsg("%s of a checkpoint cannot move backward", cols[i]),
					 errdetail("The update would change %s from %s to %s.",
							   cols[i], o ? sog_position_to_cstring(o) : "NULL",
							   n ? sog_position_to_cstring(n) : "NULL"),
					 errhint("Positions only grow; the extension's functions maintain this column.")));
	}
}

/* --------------------------------------------------- the read boundary */

void
sog_clear_read_boundary(SogCheckpoint *cp)
{
	cp->source_cursor = cp->applied_position;
	cp->read_base = NULL;
	cp->read_hash = NULL;
	cp->read_count_isnull = true;
	cp->read_count = 0;
}

void
sog_record_read_boundary(SogCheckpoint *cp, SogPosition *cursor, char *hash,
						 bool count_isnull, int64 count)
{
	if (sog_position_cmp_nullable(cursor, cp->applied_position) == 0)
	{
		sog_clear_read_boundary(cp);
		return;
	}
	cp->source_cursor = cursor;
	cp->read_base = cp->applied_position;
	cp->read_hash = hash;
	cp->read_count_isnull = count_isnull;
	cp->read_count = count;
}

void
sog_report_gap_pending(const SogCheckpoint *cp, const SogPosition *pos)
{
	if (cp->state == SOG_STATE_REPLAYING)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unverified gap of checkpoint " INT64_FORMAT,
						sog_pos_str(pos), cp->id),
				 errdetail("The predecessor read through %s but applied only through %s; the records in (%s, %s] have not been verified.",
						   sog_pos_str(cp->source_cursor), sog_pos_str(cp->applied_position),
						   cp->read_base ? sog_pos_str(cp->read_base) : "start",
						   sog_pos_str(cp->source_cursor)),
				 errhint("Re-fetch (%s, %s], hash it and call sog.verify_gap() before applying or recovering newer events.",
						 cp->read_base ? sog_pos_str(cp->read_base) : "start",
						 sog_pos_str(cp->source_cursor))));
	else
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unresolved gap of checkpoint " INT64_FORMAT,
						sog_pos_str(pos), cp->id),
				 errdetail("The checkpoint failed closed at applied position %s; records after it cannot be proven.",
						   sog_pos_str(cp->applied_position)),
				 errhint("An operator must resolve the gap (see sog.unresolved_gaps and sog.resolve_gap()).")));
}

/* ---------------------------------------------------------------- receipts */

void
sog_receipt_run_init(SogReceiptRun *run, int expected)
{
	run->n = 0;
	run->cap = Max(expected, 1);
	run->digests = palloc(run->cap * SOG_DIGEST_LEN);
	run->positions = palloc(run->cap * sizeof(SogPosition *));
	run->single = true;
}

void
sog_receipt_run_add(SogReceiptRun *run, SogPosition *pos, const uint8 *digest)
{
	if (run->n == run->cap)
	{
		run->cap *= 2;
		run->digests = repalloc(run->digests, run->cap * SOG_DIGEST_LEN);
		run->positions = repalloc(run->positions, run->cap * sizeof(SogPosition *));
	}
	/* one component: a digit count, then exactly its BCD bytes */
	if (run->single &&
		SOG_POS_NBYTES(pos) != 2 + (size_t) (SOG_POS_BYTES(pos)[1] + 1) / 2)
		run->single = false;
	memcpy(run->digests + (size_t) run->n * SOG_DIGEST_LEN, digest, SOG_DIGEST_LEN);
	run->positions[run->n++] = pos;
}

bool
sog_receipt_run_find(const SogReceiptRun *run, const SogPosition *pos,
					 uint8 *digest)
{
	int			lo = 0;
	int			hi = run->n - 1;

	/* positions in a run are strictly increasing: binary search */
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = sog_position_cmp(run->positions[mid], pos);

		if (c == 0)
		{
			memcpy(digest, run->digests + (size_t) mid * SOG_DIGEST_LEN, SOG_DIGEST_LEN);
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/*
 * Length prefix of a position in a sparse receipt row: one byte for an
 * encoding shorter than 128 bytes (every practical position), else two
 * bytes, big-endian, with the high bit of the first set (encodings are at
 * most SOG_POS_MAX_ENCODED = 649 bytes).
 */
static void
put_length(StringInfo buf, size_t len)
{
	if (len < 0x80)
		appendStringInfoChar(buf, (char) len);
	else
	{
		appendStringInfoChar(buf, (char) (0x80 | (len >> 8)));
		appendStringInfoChar(buf, (char) (len & 0xFF));
	}
}

/* Read a length prefix at *p (before end); false if it is truncated. */
static bool
get_length(const uint8 **p, const uint8 *end, size_t *len)
{
	if (*p >= end)
		return false;
	if ((**p & 0x80) == 0)
	{
		*len = *(*p)++;
		return true;
	}
	if (end - *p < 2)
		return false;
	*len = ((size_t) ((*p)[0] & 0x7F) << 8) | (*p)[1];
	*p += 2;
	return true;
}

static size_t
length_bytes(size_t len)
{
	return len < 0x80 ? 1 : 2;
}

static bytea *
make_bytea(const void *data, size_t len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return b;
}

/*
 * Store one chunk run->positions[lo..hi) as a row of sog.receipt.
 */
static void
store_chunk(int64 checkpoint_id, const SogReceiptRun *run, int lo, int hi,
			bool dense)
{
	Oid			types[6] = {INT8OID, cache.position_type, cache.position_type,
	INT4OID, BYTEAOID, BYTEAOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	SPIPlanPtr	plan;

	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(run->positions[lo]);
	values[2] = PointerGetDatum(run->positions[hi - 1]);
	values[3] = Int32GetDatum(hi - lo);
	if (dense)
		nulls[4] = 'n';
	else
	{
		StringInfoData buf;
		int			i;

		initStringInfo(&buf);
		for (i = lo; i < hi; i++)
		{
			size_t		len = SOG_POS_NBYTES(run->positions[i]);

			put_length(&buf, len);
			appendBinaryStringInfo(&buf, (const char *) SOG_POS_BYTES(run->positions[i]), len);
		}
		values[4] = PointerGetDatum(make_bytea(buf.data, buf.len));
	}
	values[5] = PointerGetDatum(make_bytea(run->digests + (size_t) lo * SOG_DIGEST_LEN,
										   (size_t) (hi - lo) * SOG_DIGEST_LEN));

	{
		Relation	rel = table_open(cache.receipt_rel, RowExclusiveLock);
		CatalogIndexState indstate = CatalogOpenIndexes(rel);

		if (direct_write_ok(rel, indstate, RECEIPT_CHECKS, 6, NULL))
		{
			/* heap_insert plus the primary key entry, as the executor would */
			TupleDesc	desc = RelationGetDescr(rel);
			Datum	   *rv = palloc0(sizeof(Datum) * desc->natts);
			bool	   *rn = palloc(sizeof(bool) * desc->natts);
			int			i;

			memset(rn, true, sizeof(bool) * desc->natts);
			for (i = 0; i < 6; i++)
			{
				rv[cache.receipt_attnum[i] - 1] = values[i];
				rn[cache.receipt_attnum[i] - 1] = nulls[i] == 'n';
			}
			CatalogTupleInsertWithInfo(rel, heap_form_tuple(desc, rv, rn), indstate);
			CatalogCloseIndexes(indstate);
			CommandCounterIncrement();
			table_close(rel, NoLock);
			return;
		}
		CatalogCloseIndexes(indstate);
		table_close(rel, NoLock);
	}
	plan = keep_plan(&cache.plan_receipt_insert,
					 "INSERT INTO sog.receipt (checkpoint_id, first_position, "
					 "last_position, n, positions, digests) "
					 "VALUES ($1, $2, $3, $4, $5, $6)",
					 6, types);
	if (exec_latest(plan, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store receipts of checkpoint " INT64_FORMAT, checkpoint_id);
}

/*
 * Store a run as rows of at most SOG_RECEIPT_ROW_BYTES of digests and
 * positions each.  The limit keeps two full rows (with their tuple headers,
 * first/last positions and line pointers) within one 8 kB heap page; the
 * byte columns have STORAGE PLAIN, so rows stay inline and uncompressed.
 * A row holding the largest possible first and last positions (649 bytes
 * each) still fits a page on its own.
 */
#define SOG_RECEIPT_ROW_BYTES	3900

/*
 * Is the run dense: one-component positions first, first+1, ..., first+n-1?
 * Positions in a run strictly increase, so n one-component positions whose
 * last is first + n - 1 are exactly that sequence.
 */
static bool
run_is_dense(const SogReceiptRun *run)
{
	uint64		first;
	uint64		last;

	return run->n > 0 && run->single &&
		sog_pos_to_uint64(SOG_POS_BYTES(run->positions[0]),
						  SOG_POS_NBYTES(run->positions[0]), &first) &&
		sog_pos_to_uint64(SOG_POS_BYTES(run->positions[run->n - 1]),
						  SOG_POS_NBYTES(run->positions[run->n - 1]), &last) &&
		last - first == (uint64) (run->n - 1);
}

void
sog_receipt_run_store(int64 checkpoint_id, const SogReceiptRun *run)
{
	int			lo = 0;
	bool		dense = run_is_dense(run);

	while (lo < run->n)
	{
		int			hi = lo;
		size_t		bytes = 0;

		while (hi < run->n)
		{
			size_t		add = SOG_DIGEST_LEN +
				(dense ? 0 : length_bytes(SOG_POS_NBYTES(run->positions[hi])) +
				 SOG_POS_NBYTES(run->positions[hi]));

			if (hi > lo && bytes + add > SOG_RECEIPT_ROW_BYTES)
				break;
			bytes += add;
			hi++;
		}
		store_chunk(checkpoint_id, run, lo, hi, dense);
		lo = hi;
	}
}

bool
sog_receipt_lookup(int64 checkpoint_id, const SogPosition *pos, uint8 *digest,
				   SogReceiptRun *probe)
{
	Oid			types[2] = {INT8OID, cache.position_type};
	Datum		values[2];
	SPIPlanPtr	plan;

	/* the row fetched last time often holds the next duplicate too */
	if (probe->n > 0 &&
		sog_position_cmp(pos, probe->positions[probe->n - 1]) <= 0 &&
		sog_position_cmp(pos, probe->positions[0]) >= 0)
		return sog_receipt_run_find(probe, pos, digest);

	plan = keep_plan(&cache.plan_receipt_lookup,
					 "SELECT first_position, n, positions, digests FROM sog.receipt "
					 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
					 "AND last_position OPERATOR(pg_catalog.>=) $2 "
					 "ORDER BY last_position USING OPERATOR(pg_catalog.<) LIMIT 1",
					 2, types);
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(pos);
	exec_latest(plan, values, NULL, true, 1);
	if (SPI_processed == 0)
		return false;
	decode_run(0, probe);
	return sog_receipt_run_find(probe, pos, digest);
}

/* ------------------------------------------------------- gaps and manifests */

int64
sog_gap_record(const SogCheckpoint *cp, const char *reason, SogVerdict verdict,
			   const SogPosition *from, const SogPosition *to,
			   const char *detail)
{
	Oid			types[7] = {INT8OID, INT8OID, cache.position_type,
	cache.position_type, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	SPIPlanPtr	plan;
	int64		gap_id;
	bool		isnull;
	StringInfoData payload;

	plan = keep_plan(&cache.plan_gap_insert,
					 "INSERT INTO sog.gap (checkpoint_id, generation, from_position, "
					 "to_position, reason, verdict, detail) "
					 "VALUES ($1, $2, $3, $4, $5, $6::sog.verdict, $7) RETURNING id",
					 7, types);
	values[0] = Int64GetDatum(cp->id);
	values[1] = Int64GetDatum(cp->generation);
	POS_ARG(from, 2);
	POS_ARG(to, 3);
	TEXT_ARG(reason, 4);
	TEXT_ARG(sog_verdict_label(verdict), 5);
	TEXT_ARG(detail, 6);
	if (exec_latest(plan, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record gap of checkpoint " INT64_FORMAT, cp->id);
	gap_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));

	/*
	 * Tell operators; delivered only if the transaction commits.  The
	 * payload carries ids and the reason only (contract section 10): any
	 * role may LISTEN, so no names, tokens or positions, and its size is
	 * bounded whatever the names are.
	 */
	initStringInfo(&payload);
	appendStringInfo(&payload, "{\"gap_id\": " INT64_FORMAT ", \"checkpoint_id\": " INT64_FORMAT ", \"reason\": ",
					 gap_id, cp->id);
	escape_json(&payload, reason);
	appendStringInfoChar(&payload, '}');
	Async_Notify("sog_gap", payload.data);
	return gap_id;
}

int64
sog_manifest_record(const SogCheckpoint *cp, const char *kind,
					const SogPosition *source_cursor, const char *buffer_hash,
					bool count_isnull, int64 count, const SogManifest *m,
					int64 gap_id, const char *note)
{
	Oid			types[14] = {INT8OID, INT8OID, TEXTOID, TEXTOID,
		cache.position_type, cache.position_type, TEXTOID, INT8OID,
		TEXTOID, cache.position_type, NUMERICOID, TEXTOID, INT8OID, TEXTOID};
	Datum		values[14];
	char		nulls[14];
	SPIPlanPtr	plan;
	bool		isnull;

	memset(nulls, ' ', sizeof(nulls));
	plan = keep_plan(&cache.plan_manifest_insert,
					 "INSERT INTO sog.manifest_log (checkpoint_id, generation, kind, owner, "
					 "source_cursor, applied_position, buffer_hash, buffered_count, "
					 "verdict, resume_from, gap_size, manifest_digest, gap_id, note) "
					 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::sog.verdict, $10, $11, "
					 "$12, $13, $14) RETURNING id",
					 14, types);
	values[0] = Int64GetDatum(cp->id);
	values[1] = Int64GetDatum(cp->generation);
	TEXT_ARG(kind, 2);
	TEXT_ARG(cp->owner, 3);
	POS_ARG(source_cursor, 4);
	POS_ARG(cp->applied_position, 5);
	TEXT_ARG(buffer_hash, 6);
	values[7] = Int64GetDatum(count);
	nulls[7] = count_isnull ? 'n' : ' ';
	TEXT_ARG(sog_verdict_label(m->verdict), 8);
	POS_ARG(m->resume_from, 9);
	values[10] = m->gap_size;
	nulls[10] = m->gap_isnull ? 'n' : ' ';
	TEXT_ARG(m->digest_isnull ? NULL : m->digest, 11);
	values[12] = Int64GetDatum(gap_id);
	nulls[12] = gap_id > 0 ? ' ' : 'n';
	TEXT_ARG(note, 13);
	if (exec_latest(plan, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not log manifest of checkpoint " INT64_FORMAT, cp->id);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/* --------------------------------------------------------- rarely used paths */

/*
 * Prepare, run on the newest snapshot (or the transaction's, if
 * use_latest is false) and free a one-off plan.
 */
static int
exec_once(const char *sql, int nargs, Oid *types, Datum *values,
		  const char *nulls, bool read_only, bool use_latest)
{
	MemoryContext caller = CurrentMemoryContext;
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);
	int			rc;

	MemoryContextSwitchTo(caller);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	if (use_latest)
		rc = exec_latest(plan, values, nulls, read_only, 0);
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

Oid
sog_position_type(void)
{
	return cache.position_type;
}

int64
sog_gap_newest_open(int64 checkpoint_id, SogVerdict *verdict)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(checkpoint_id)};
	bool		isnull;
	char	   *label;
	int			i;

	exec_once("SELECT id, verdict::text FROM sog.gap "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			  "ORDER BY id DESC LIMIT 1",
			  1, types, values, NULL, true, true);
	if (SPI_processed == 0)
		return 0;
	label = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	*verdict = SOG_VERDICT_FAIL_CLOSED;
	for (i = SOG_VERDICT_ALIGNED; i <= SOG_VERDICT_FAIL_CLOSED; i++)
		if (strcmp(label, sog_verdict_label((SogVerdict) i)) == 0)
			*verdict = (SogVerdict) i;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_open_with_reason(int64 checkpoint_id, const char *reason)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(checkpoint_id), CStringGetTextDatum(reason)};
	bool		isnull;

	exec_once("SELECT id FROM sog.gap "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			  "AND reason OPERATOR(pg_catalog.=) $2 ORDER BY id DESC LIMIT 1",
			  2, types, values, NULL, true, true);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_covering(int64 checkpoint_id, const SogPosition *from, const SogPosition *to)
{
	Oid			types[3] = {INT8OID, cache.position_type, cache.position_type};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	bool		isnull;

	values[0] = Int64GetDatum(checkpoint_id);
	POS_ARG(from, 1);
	POS_ARG(to, 2);
	exec_once("SELECT id FROM sog.gap "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			  "AND (from_position IS NULL OR "
			  "     ($2 IS NOT NULL AND from_position OPERATOR(pg_catalog.<=) $2)) "
			  "AND (to_position IS NULL OR to_position OPERATOR(pg_catalog.>=) $3) "
			  "ORDER BY id DESC LIMIT 1",
			  3, types, values, nulls, true, true);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

char *
sog_checkpoint_consumer(int64 id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};

	exec_once("SELECT consumer FROM sog.checkpoint WHERE id OPERATOR(pg_catalog.=) $1",
			  1, types, values, NULL, true, false);
	if (SPI_processed == 0)
		sog_report_unknown_checkpoint(id);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

int
sog_exec_snapshot(const char *sql, int nargs, Oid *types, Datum *values)
{
	return exec_once(sql, nargs, types, values, NULL, true, false);
}

int64
sog_gap_count_open(int64 checkpoint_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(checkpoint_id)};
	bool		isnull;

	exec_once("SELECT pg_catalog.count(*) FROM sog.gap "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL",
			  1, types, values, NULL, true, true);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_checkpoint(int64 gap_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(gap_id)};
	bool		isnull;

	exec_once("SELECT checkpoint_id FROM sog.gap WHERE id OPERATOR(pg_catalog.=) $1",
			  1, types, values, NULL, true, true);
	if (SPI_processed == 0)
		return -1;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

bool
sog_gap_resolve(int64 gap_id, const char *resolution, const char *note)
{
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(gap_id);
	TEXT_ARG(resolution, 1);
	TEXT_ARG(note, 2);
	TEXT_ARG(sog_acting_role(), 3);
	exec_once("UPDATE sog.gap SET resolved_at = pg_catalog.now(), resolution = $2, "
			  "note = $3, resolved_by = $4 "
			  "WHERE id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL",
			  4, types, values, nulls, false, true);
	return SPI_processed == 1;
}

int64
sog_gap_resolve_open(int64 checkpoint_id, const char *resolution, const char *note)
{
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(checkpoint_id);
	TEXT_ARG(resolution, 1);
	TEXT_ARG(note, 2);
	TEXT_ARG(sog_acting_role(), 3);
	exec_once("UPDATE sog.gap SET resolved_at = pg_catalog.now(), resolution = $2, "
			  "note = $3, resolved_by = $4 "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL",
			  4, types, values, nulls, false, true);
	return (int64) SPI_processed;
}

/* A stored receipt row does not decode: the table was changed by hand. */
static void
report_corrupt_run(const SogPosition *first, int receipt, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("receipt row starting at position %s is corrupt",
					first ? sog_position_to_cstring(first) : "(unknown)"),
			 errdetail("At receipt %d: %s.", receipt + 1, what),
			 errhint("sog.receipt is written only by the extension; restore it from a backup or prune past this row.")));
}

/*
 * Decode run tuple (first_position, n, positions, digests) of the current
 * SPI result row i into a SogReceiptRun in the current memory context.
 */
static void
decode_run(int row, SogReceiptRun *run)
{
	HeapTuple	tup = SPI_tuptable->vals[row];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	bool		posnull;
	SogPosition *first = DatumGetSogPositionP(SPI_getbinval(tup, desc, 1, &isnull));
	int			n = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	Datum		posd = SPI_getbinval(tup, desc, 3, &posnull);
	bytea	   *dig = DatumGetByteaPP(SPI_getbinval(tup, desc, 4, &isnull));
	const uint8 *d = (const uint8 *) VARDATA_ANY(dig);
	int			i;

	if (n <= 0 || VARSIZE_ANY_EXHDR(dig) != (Size) n * SOG_DIGEST_LEN)
		report_corrupt_run(first, 0,
						   psprintf("%d receipts but %zu digest bytes",
									n, (size_t) VARSIZE_ANY_EXHDR(dig)));
	sog_receipt_run_init(run, n);
	if (posnull)
	{
		uint64		fu;

		if (!sog_pos_to_uint64(SOG_POS_BYTES(first), SOG_POS_NBYTES(first), &fu))
			report_corrupt_run(first, 0, "a dense row must start at an integer position");
		for (i = 0; i < n; i++)
		{
			uint8_t		enc[SOG_POS_MAX_ENCODED];
			size_t		len = sog_pos_from_uint64(fu + (uint64) i, enc);

			sog_receipt_run_add(run, sog_position_from_encoding(enc, len),
								d + (size_t) i * SOG_DIGEST_LEN);
		}
	}
	else
	{
		bytea	   *pb = DatumGetByteaPP(posd);
		const uint8 *p = (const uint8 *) VARDATA_ANY(pb);
		const uint8 *end = p + VARSIZE_ANY_EXHDR(pb);

		for (i = 0; i < n; i++)
		{
			size_t		len;

			if (!get_length(&p, end, &len) || len > (size_t) (end - p) ||
				!sog_pos_encoding_valid(p, len))
				report_corrupt_run(first, i, "the position list is truncated or invalid");
			sog_receipt_run_add(run, sog_position_from_encoding(p, len),
								d + (size_t) i * SOG_DIGEST_LEN);
			p += len;
		}
		if (p != end)
			report_corrupt_run(first, n - 1, "the position list is longer than its count");
	}
}

int64
sog_receipt_prune(int64 checkpoint_id, const SogPosition *through)
{
	Oid			types[2] = {INT8OID, cache.position_type};
	Datum		values[2];
	bool		isnull;
	int64		dropped;
	SogReceiptRun run;
	SogReceiptRun kept;
	int			i;

	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(through);

	/* whole runs at or below the horizon */
	exec_once("WITH d AS (DELETE FROM sog.receipt "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			  "AND last_position OPERATOR(pg_catalog.<=) $2 RETURNING n) "
			  "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM d",
			  2, types, values, NULL, false, true);
	dropped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));

	/* the one run that straddles it, if any: keep its upper part */
	exec_once("DELETE FROM sog.receipt "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			  "AND first_position OPERATOR(pg_catalog.<=) $2 "
			  "AND last_position OPERATOR(pg_catalog.>) $2 "
			  "RETURNING first_position, n, positions, digests",
			  2, types, values, NULL, false, true);
	if (SPI_processed > 1)
		report_corrupt_run(NULL, 0, "receipt rows of one checkpoint overlap");
	if (SPI_processed == 1)
	{
		decode_run(0, &run);
		sog_receipt_run_init(&kept, run.n);
		for (i = 0; i < run.n; i++)
		{
			if (sog_position_cmp(run.positions[i], through) <= 0)
				dropped++;
			else
				sog_receipt_run_add(&kept, run.positions[i],
									run.digests + (size_t) i * SOG_DIGEST_LEN);
		}
		sog_receipt_run_store(checkpoint_id, &kept);
	}
	return dropped;
}

void
sog_receipt_scan(int64 checkpoint_id, const SogPosition *from,
				 const SogPosition *to, SogReceiptEmit emit, void *arg)
{
	Oid			types[3] = {INT8OID, cache.position_type, cache.position_type};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext batchcxt;
	SPIPlanPtr	plan;
	Portal		portal;
	bool		done = false;

	values[0] = Int64GetDatum(checkpoint_id);
	POS_ARG(from, 1);
	POS_ARG(to, 2);
	plan = SPI_prepare("SELECT first_position, n, positions, digests FROM sog.receipt "
					   "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
					   "AND ($2 IS NULL OR last_position OPERATOR(pg_catalog.>=) $2) "
					   "AND ($3 IS NULL OR first_position OPERATOR(pg_catalog.<=) $3) "
					   "ORDER BY last_position USING OPERATOR(pg_catalog.<)",
					   3, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, values, nulls, true);

	/* a batch of rows at a time, so memory stays bounded however many */
	batchcxt = AllocSetContextCreate(caller, "sog receipts scan",
									 ALLOCSET_DEFAULT_SIZES);
	while (!done)
	{
		uint64		r;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 64);
		MemoryContextSwitchTo(batchcxt);
		if (SPI_processed == 0)
			break;
		for (r = 0; r < SPI_processed && !done; r++)
		{
			SogReceiptRun run;
			int			i;

			decode_run((int) r, &run);
			for (i = 0; i < run.n; i++)
			{
				if (from && sog_position_cmp(run.positions[i], from) < 0)
					continue;
				if (to && sog_position_cmp(run.positions[i], to) > 0)
				{
					done = true;	/* rows are in position order */
					break;
				}
				emit(arg, run.positions[i], run.digests + (size_t) i * SOG_DIGEST_LEN);
			}
		}
		SPI_freetuptable(SPI_tuptable);
		MemoryContextSwitchTo(caller);
		MemoryContextReset(batchcxt);
	}
	MemoryContextSwitchTo(caller);
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	MemoryContextDelete(batchcxt);
}

/*
 * Conclude every other open recovery attempt of a checkpoint whose
 * generation just changed (a claim, or another attempt's promotion): they
 * can no longer win, so they are "lost" and show the checkpoint as it is
 * now.  Runs inside SPI, under the checkpoint's lock.
 */
void
sog_recovery_fence_open(const SogCheckpoint *cp, int64 except_id)
{
	Oid			types[5] = {INT8OID, INT8OID, INT8OID, cache.position_type, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(cp->id);
	values[1] = Int64GetDatum(except_id);
	values[2] = Int64GetDatum(cp->generation);
	POS_ARG(cp->applied_position, 3);
	TEXT_ARG(cp->provider_token, 4);
	exec_once("UPDATE sog.recovery SET state = 'lost', result_generation = $3, "
			  "result_applied_position = $4, result_provider_token = $5, "
			  "concluded_at = pg_catalog.now() "
			  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			  "AND id OPERATOR(pg_catalog.<>) $2 AND state OPERATOR(pg_catalog.=) 'open'",
			  5, types, values, nulls, false, true);
}
