/*-------------------------------------------------------------------------
 *
 * checkpoint/checkpoint.c
 *	  The checkpoint row: locking it, reading it, writing it back, and the
 *	  checks every state change makes on it (generation, monotonicity, the
 *	  read boundary, a pending gap).
 *
 * Locking rules (the first thing to know about the store)
 * -------------------------------------------------------
 * Every state change of a checkpoint - claim, note_read, apply, apply_batch,
 * halt, verify_gap, report_gap, skip_gap, commit_page, resolve_gap,
 * prune_receipts, reconfigure, the recovery functions - starts with
 * sog_checkpoint_lock(), which takes a FOR NO KEY UPDATE row lock on the
 * NEWEST version of the checkpoint's row, waiting for whichever transaction
 * holds it, and reads that newest version.  The lock is held to the end of
 * the caller's transaction.  Consequences:
 *
 *	- all changes of one checkpoint serialize; different checkpoints never
 *	  wait for each other (no shared hot spot, no table-level lock beyond
 *	  RowExclusiveLock);
 *	- a claim waits for an in-flight sink transaction that has applied on
 *	  the checkpoint, and then sees its outcome (committed advance or not);
 *	  sog.claim_timeout bounds that wait, and a lock timeout becomes an
 *	  error that names the backend holding the row;
 *	- fencing reads the newest committed generation at every isolation
 *	  level.  The lock is taken with the table AM directly
 *	  (table_tuple_lock with TUPLE_LOCK_FLAG_FIND_LAST_VERSION), not with
 *	  SELECT ... FOR UPDATE, because at REPEATABLE READ and SERIALIZABLE the
 *	  executor turns "row changed since my snapshot" into a serialization
 *	  failure; here a stale worker gets the precise answer SG001 instead.
 *
 * Reads made after the lock (receipts, gaps) use the newest snapshot, for
 * the same reason: under the lock nothing of this checkpoint is in flight,
 * so the newest committed state is the state.  The row is found through
 * the table's primary key as the relcache knows it now (REINDEX
 * CONCURRENTLY replaces the index; nothing here remembers its OID), and is
 * written back through the executor (store/writer.c), only the columns that
 * changed, so that the monotonicity trigger, constraints and indexes act as
 * for any other writer and the update stays HOT.
 *
 * Relies on: store/access.c, checkpoint/boundary.c, store/holder.c,
 * store/citus.c, type/position.c, store/tables.c, type/util.c,
 * store/writer.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/subtrans.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "compat.h"
#include "store/access.h"
#include "store/citus.h"
#include "store/holder.h"
#include "store/writer.h"
#include "type/util.h"

static const char *const state_labels[] = {"running", "replaying", "failed_closed"};

/* sog.claim_timeout, in milliseconds; 0 waits without limit. */
int			sog_claim_timeout = 0;

/* Define sog.claim_timeout (at load: module.c's _PG_init). */
void
sog_checkpoint_init(void)
{
	DefineCustomIntVariable("sog.claim_timeout",
							"How long sog.claim waits for the previous owner's open sink transaction.",
							"0 waits without limit (lock_timeout still applies). When it expires, "
							"claim fails with SQLSTATE 55P03 naming the transaction that holds the checkpoint.",
							&sog_claim_timeout,
							0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
}

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

void
sog_report_unknown_checkpoint(int64 id, int kinds)
{
	sog_check_access_missing(psprintf("checkpoint " INT64_FORMAT, id), kinds);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("checkpoint " INT64_FORMAT " does not exist", id),
			 errdetail("No row of sog.checkpoint has id " INT64_FORMAT ".", id),
			 errhint("Create it with sog.register(consumer, stream, partition) and use the id it returns.")));
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
		 HeapTuple seen, const AttrNumber *att, bool claim)
{
	volatile int timeout = LockTimeout;
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
		sog_find_holder(seen, RelationGetDescr(rel), att, &holder);

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
		/* out of the error state only to rewrite it, then re-thrown */
		FlushErrorState();
		sog_lock_timeout_error(edata, id, &holder, claim && timeout == sog_claim_timeout, timeout);
		ReThrowError(edata);
	}
	PG_END_TRY();

	if (nest >= 0)
		AtEOXact_GUC(true, nest);
	return res;
}

/*
 * Find the newest committed version of checkpoint id's row with its
 * primary key (SnapshotSelf sees exactly one version of it: the newest
 * committed one, or our own, and takes no SSI predicate locks).  Returns
 * false if there is none; slot then holds it.
 */
static bool
find_row(Relation rel, int64 id, TupleTableSlot *slot)
{
	Oid			pkey = SOG_PRIMARY_KEY_INDEX(rel);
	Relation	idx;
	IndexScanDesc scan;
	ScanKeyData key;
	bool		found;

	if (!OidIsValid(pkey))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table sog.checkpoint has no primary key"),
				 errdetail("The extension finds checkpoints by their id through the primary key; the table's owner dropped it."),
				 errhint("Restore it: ALTER TABLE sog.checkpoint ADD PRIMARY KEY (id).")));
	idx = index_open(pkey, AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = SOG_INDEX_BEGINSCAN(rel, idx, SnapshotSelf, 1);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	index_close(idx, NoLock);	/* held to the end of the transaction */
	return found;
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

/* Fill *cp from the locked row version in slot. */
static void
read_row(TupleTableSlot *slot, const AttrNumber *att, int64 id, SogCheckpoint *cp)
{
	Datum	   *v;
	bool	   *n;
	char	   *crit;

	slot_getallattrs(slot);
	v = slot->tts_values;
	n = slot->tts_isnull;
#define COL(c) v[att[c] - 1], n[att[c] - 1]
	memset(cp, 0, sizeof(*cp));
	cp->tuple = ExecCopySlotHeapTuple(slot);
	cp->tuple->t_self = slot->tts_tid;
	cp->id = id;
	cp->consumer = text_or_null(COL(CP_CONSUMER));
	cp->stream = text_or_null(COL(CP_STREAM));
	cp->partition = text_or_null(COL(CP_PARTITION));
	crit = text_or_null(COL(CP_CRITICALITY));
	cp->telemetry = crit != NULL && strcmp(crit, "telemetry") == 0;
	cp->provider = text_or_null(COL(CP_PROVIDER));
	cp->query_scope = text_or_null(COL(CP_QUERY_SCOPE));
	cp->source_identity = text_or_null(COL(CP_SOURCE_IDENTITY));
	cp->generation = DatumGetInt64(v[att[CP_GENERATION] - 1]);
	cp->owner = text_or_null(COL(CP_OWNER));
	cp->source_cursor = position_or_null(COL(CP_SOURCE_CURSOR));
	cp->read_base = position_or_null(COL(CP_READ_BASE));
	cp->read_hash = text_or_null(COL(CP_READ_HASH));
	cp->read_count_isnull = n[att[CP_READ_COUNT] - 1];
	if (!cp->read_count_isnull)
		cp->read_count = DatumGetInt64(v[att[CP_READ_COUNT] - 1]);
	cp->applied_position = position_or_null(COL(CP_APPLIED_POSITION));
	cp->prune_horizon = position_or_null(COL(CP_PRUNE_HORIZON));
	cp->receipts_through = position_or_null(COL(CP_RECEIPTS_THROUGH));
	cp->state = state_from_label(text_or_null(COL(CP_STATE)));
	cp->updated_at = DatumGetTimestampTz(v[att[CP_UPDATED_AT] - 1]);
	cp->claimed_at_isnull = n[att[CP_CLAIMED_AT] - 1];
	if (!cp->claimed_at_isnull)
		cp->claimed_at = DatumGetTimestampTz(v[att[CP_CLAIMED_AT] - 1]);
	cp->read_gap_floor_isnull = att[CP_READ_GAP_FLOOR] == InvalidAttrNumber ||
		n[att[CP_READ_GAP_FLOOR] - 1];
	if (!cp->read_gap_floor_isnull)
		cp->read_gap_floor = DatumGetInt64(v[att[CP_READ_GAP_FLOOR] - 1]);
	cp->receipt_ring = att[CP_RECEIPT_RING] == InvalidAttrNumber ? SOG_RING_NO_COLUMN :
		DatumGetInt16(v[att[CP_RECEIPT_RING] - 1]);
#undef COL
}

/* Remember the mutable columns as they are now (read or just written). */
static void
remember(SogCheckpoint *cp)
{
	cp->token_changed = false;
	cp->claimed = false;
	cp->boundary_recorded = false;
	/* last: pgindent takes an X-macro's line for the start of a statement */
#define COPY(type, name)	cp->orig.name = cp->name;
	SOG_CP_MUTABLE_FIELDS(COPY)
#undef COPY
}

void
sog_checkpoint_lock(int64 id, SogCheckpoint *cp, int access, bool claim)
{
	Relation	rel;
	TupleTableSlot *slot;
	const AttrNumber *att;
	bool		found;
	bool		after_snapshot = false;

	sog_tables_refresh();
	sog_citus_use_2pc();

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

	rel = table_open(sog_checkpoint_relid(), RowExclusiveLock);
	sog_citus_recheck_placement();	/* a conversion we waited for */
	att = sog_checkpoint_attnums(rel);
	slot = table_slot_create(rel, NULL);
	found = find_row(rel, id, slot);
	if (found)
	{
		bool		shouldfree;
		HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &shouldfree);
		bool		isnull;
		Datum		consumer = heap_getattr(tup, att[CP_CONSUMER],
											RelationGetDescr(rel), &isnull);

		/* may the caller act on it at all?  (the consumer never changes) */
		sog_check_access(id, isnull ? NULL : TextDatumGetCString(consumer), access);

		/*
		 * A version our own transaction wrote (an earlier call's update) is
		 * ours alone already: every other writer waits on the version before
		 * it.  Otherwise lock the newest version, waiting for its holder and
		 * following updates.
		 */
		if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)))
		{
			HeapTuple	seen = heap_copytuple(tup);
			ItemPointerData tid = slot->tts_tid;
			TM_Result	res = lock_row(rel, &tid, slot, id, seen, att, claim);

			if (res == TM_Deleted)
				found = false;
			else if (res != TM_Ok)	/* LockWaitBlock, newest version: cannot
									 * be */
				elog(ERROR, "unexpected table_tuple_lock status %d for checkpoint " INT64_FORMAT,
					 (int) res, id);

			/*
			 * At REPEATABLE READ and SERIALIZABLE, a version committed after
			 * the transaction's snapshot may be read (the fence is checked on
			 * the newest generation, whatever the level) but not written:
			 * sog_checkpoint_write raises the serialization failure an UPDATE
			 * of the row would.
			 */
			after_snapshot = found && IsolationUsesXactSnapshot() &&
				!table_tuple_satisfies_snapshot(rel, slot, GetTransactionSnapshot());
		}
		if (shouldfree)
			heap_freetuple(tup);
	}
	if (!found)
		sog_report_unknown_checkpoint(id, access);

	read_row(slot, att, id, cp);
	cp->after_snapshot = after_snapshot;
	remember(cp);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);	/* keep RowExclusiveLock to end of xact */
}

bool
sog_checkpoint_read_own(int64 id, SogCheckpoint *cp)
{
	Oid			nsp = get_namespace_oid("sog", true);
	Relation	rel;
	const AttrNumber *att;
	TupleTableSlot *slot;
	bool		found;

	/* the extension dropped later in the same transaction: nothing to read */
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("checkpoint", nsp)))
		return false;
	sog_tables_refresh();
	rel = table_open(sog_checkpoint_relid(), AccessShareLock);
	att = sog_checkpoint_attnums(rel);
	slot = table_slot_create(rel, NULL);
	found = find_row(rel, id, slot);

	if (found)
		read_row(slot, att, id, cp);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return found;
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

char *
sog_checkpoint_token(SogCheckpoint *cp)
{
	if (!cp->token_loaded)
	{
		Relation	rel = table_open(sog_checkpoint_relid(), RowExclusiveLock);
		const AttrNumber *att = sog_checkpoint_attnums(rel);
		bool		isnull;
		Datum		d = heap_getattr(cp->tuple, att[CP_PROVIDER_TOKEN],
									 RelationGetDescr(rel), &isnull);

		cp->token = text_or_null(d, isnull);
		cp->token_loaded = true;
		table_close(rel, NoLock);
	}
	return cp->token;
}

void
sog_checkpoint_set_token(SogCheckpoint *cp, char *token)
{
	cp->token = token;
	cp->token_loaded = true;
	cp->token_changed = true;
}

/* Changed columns of a write, as the writer takes them. */
typedef struct Changes
{
	int			n;
	AttrNumber	att[CP_NATTS];
	Datum		values[CP_NATTS];
	bool		isnull[CP_NATTS];
} Changes;

static void
change(Changes *c, AttrNumber att, Datum value, bool isnull)
{
	c->att[c->n] = att;
	c->values[c->n] = value;
	c->isnull[c->n] = isnull;
	c->n++;
}

static void
change_pos(Changes *c, AttrNumber att, SogPosition *now, SogPosition *was)
{
	if (now != was && sog_position_cmp_nullable(now, was) != 0)
		change(c, att, PointerGetDatum(now), now == NULL);
	else if (now && was && VARSIZE_ANY(now) != VARSIZE_ANY(was))
		change(c, att, PointerGetDatum(now), false);
}

static void
change_text(Changes *c, AttrNumber att, const char *now, const char *was)
{
	if (now != was && !sog_text_eq(now, was))
		change(c, att, now ? CStringGetTextDatum(now) : (Datum) 0, now == NULL);
}

void
sog_checkpoint_check_snapshot(const SogCheckpoint *cp)
{
	if (cp->after_snapshot)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access to checkpoint " INT64_FORMAT " due to concurrent update",
						cp->id),
				 errdetail("This transaction runs at %s; checkpoint " INT64_FORMAT " (generation " INT64_FORMAT ", applied through %s) was changed by a transaction that committed after this one's snapshot.",
						   IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ",
						   cp->id, cp->generation, sog_position_label(cp->applied_position)),
				 errhint("Retry the whole sink transaction, as after any serialization failure.")));
}

/*
 * Write the changed columns of *cp.  always_check: apply the snapshot rule
 * (sog_checkpoint_check_snapshot) even when nothing changed, as every
 * caller but the apply's did before 1.2 (its call then changes nothing).
 */
static void
write_row(SogCheckpoint *cp, bool always_check)
{
	Relation	rel;
	const AttrNumber *att;
	const SogCpMutable *o = &cp->orig;
	Changes		c;
	int			before;
	SogWriter	w;

	if (always_check)
		sog_checkpoint_check_snapshot(cp);
	rel = table_open(sog_checkpoint_relid(), RowExclusiveLock);
	att = sog_checkpoint_attnums(rel);
	c.n = 0;
	if (cp->generation != o->generation)
		change(&c, att[CP_GENERATION], Int64GetDatum(cp->generation), false);
	change_text(&c, att[CP_OWNER], cp->owner, o->owner);
	change_text(&c, att[CP_SOURCE_IDENTITY], cp->source_identity, o->source_identity);
	change_pos(&c, att[CP_SOURCE_CURSOR], cp->source_cursor, o->source_cursor);
	change_pos(&c, att[CP_READ_BASE], cp->read_base, o->read_base);
	change_text(&c, att[CP_READ_HASH], cp->read_hash, o->read_hash);
	if (cp->read_count_isnull != o->read_count_isnull ||
		(!cp->read_count_isnull && cp->read_count != o->read_count))
		change(&c, att[CP_READ_COUNT], Int64GetDatum(cp->read_count), cp->read_count_isnull);
	before = c.n;
	change_pos(&c, att[CP_APPLIED_POSITION], cp->applied_position, o->applied_position);
	/* when the applied position last moved (1.1; what monitoring reads) */
	if (c.n > before && att[CP_APPLIED_AT] != InvalidAttrNumber)
		change(&c, att[CP_APPLIED_AT],
			   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);
	change_pos(&c, att[CP_PRUNE_HORIZON], cp->prune_horizon, o->prune_horizon);
	change_pos(&c, att[CP_RECEIPTS_THROUGH], cp->receipts_through, o->receipts_through);
	if (cp->state != o->state)
		change(&c, att[CP_STATE], CStringGetTextDatum(sog_state_label(cp->state)), false);
	if (cp->token_changed)
		change(&c, att[CP_PROVIDER_TOKEN],
			   cp->token ? CStringGetTextDatum(cp->token) : (Datum) 0, cp->token == NULL);
	if (cp->claimed)
		change(&c, att[CP_CLAIMED_AT],
			   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);
	if (cp->boundary_recorded && att[CP_READ_GAP_FLOOR] != InvalidAttrNumber)
	{
		cp->read_gap_floor = sog_boundary_gap_floor(cp);
		cp->read_gap_floor_isnull = false;
		change(&c, att[CP_READ_GAP_FLOOR], Int64GetDatum(cp->read_gap_floor), false);
	}
	if (c.n == 0)
	{
		table_close(rel, NoLock);
		return;
	}
	if (!always_check)
		sog_checkpoint_check_snapshot(cp);
	change(&c, att[CP_UPDATED_AT],
		   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);

	sog_writer_begin(&w, rel, true, c.att, c.n);
	cp->tuple = sog_writer_update(&w, cp->tuple, c.n, c.att, c.values, c.isnull);
	sog_writer_end(&w);
	remember(cp);
	sog_boundary_commit_check(cp);	/* left partly applied: checked at commit */
	table_close(rel, NoLock);
}

void
sog_checkpoint_write(SogCheckpoint *cp)
{
	write_row(cp, true);
}

void
sog_checkpoint_write_changes(SogCheckpoint *cp)
{
	write_row(cp, false);
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

/* ------------------------------------------------------ a pending gap */

void
sog_report_gap_pending(const SogCheckpoint *cp, const SogPosition *pos)
{
	if (cp->state == SOG_STATE_REPLAYING)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unverified gap of checkpoint " INT64_FORMAT,
						sog_position_label(pos), cp->id),
				 errdetail("The predecessor read through %s but applied only through %s; the records in (%s, %s] have not been verified.",
						   sog_position_label(cp->source_cursor), sog_position_label(cp->applied_position),
						   cp->read_base ? sog_position_label(cp->read_base) : "start",
						   sog_position_label(cp->source_cursor)),
				 errhint("Re-fetch (%s, %s], hash it and call sog.verify_gap() before applying or recovering newer events.",
						 cp->read_base ? sog_position_label(cp->read_base) : "start",
						 sog_position_label(cp->source_cursor))));
	else
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unresolved gap of checkpoint " INT64_FORMAT,
						sog_position_label(pos), cp->id),
				 errdetail("The checkpoint failed closed at applied position %s; records after it cannot be proven.",
						   sog_position_label(cp->applied_position)),
				 errhint("An operator must resolve the gap (see sog.unresolved_gaps and sog.resolve_gap()).")));
}

char *
sog_checkpoint_consumer(int64 id, int kinds)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};

	sog_exec_snapshot("SELECT consumer FROM sog.checkpoint WHERE id OPERATOR(pg_catalog.=) $1",
					  1, types, values);
	if (SPI_processed == 0)
		sog_report_unknown_checkpoint(id, kinds);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Trigger function: sog.checkpoint_guard(), BEFORE UPDATE FOR EACH ROW on
 * sog.checkpoint.  Refuses (SG005) any update, by any role and any path,
 * that moves applied_position, generation or prune_horizon backward.  The
 * extension's own writer performs the same check (sog_check_monotonic).
 */
PG_FUNCTION_INFO_V1(sog_checkpoint_guard);
Datum
sog_checkpoint_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	int			gen;
	int			applied;
	int			horizon;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_UPDATE(trig->tg_event) ||
		!TRIGGER_FIRED_BEFORE(trig->tg_event) || !TRIGGER_FIRED_FOR_ROW(trig->tg_event))
		elog(ERROR, "sog_checkpoint_guard must be a BEFORE UPDATE FOR EACH ROW trigger");
	desc = RelationGetDescr(trig->tg_relation);
	gen = SPI_fnumber(desc, "generation");
	applied = SPI_fnumber(desc, "applied_position");
	horizon = SPI_fnumber(desc, "prune_horizon");
	if (gen <= 0 || applied <= 0 || horizon <= 0)
		elog(ERROR, "sog_checkpoint_guard is attached to a table without the checkpoint columns");
	sog_check_monotonic(trig->tg_trigtuple, trig->tg_newtuple, desc,
						gen, applied, horizon);
	return PointerGetDatum(trig->tg_newtuple);
}
