/*-------------------------------------------------------------------------
 *
 * store/holder.c
 *	  Who holds a checkpoint's row: what a lock wait that timed out (55P03)
 *	  says - the generation and owner, the backend whose open transaction
 *	  holds the row and since when, or the prepared transaction that holds
 *	  it - and the error itself.
 *
 * Relies on type/util.c (values in messages) and SPI.
 * checkpoint/checkpoint.c calls sog_find_holder before it waits (after a lock
 * timeout no query can run) and sog_lock_timeout_error after.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/subtrans.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"

#include "sog.h"
#include "store/holder.h"
#include "store/tables.h"
#include "type/util.h"


/*
 * The n text columns of the one row sql returns for $1 = value (of type
 * type), copied into caller's context; out stays NULL when there is none.
 * Runs inside an SPI connection.
 */
static void
holder_row(const char *sql, Oid type, Datum value, char **out, int n,
		   MemoryContext caller)
{
	int			i;

	if (SPI_execute_with_args(sql, 1, &type, &value, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		return;
	MemoryContextSwitchTo(caller);
	for (i = 0; i < n; i++)
		out[i] = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1);
}

/*
 * Who holds the row lock of tup, the checkpoint version a claim or lock
 * timed out on: the checkpoint's generation and owner, and the transaction
 * that locks it - its backend and since when, or the prepared transaction
 * no backend runs.  Connects to SPI for the look-ups.
 */
void
sog_find_holder(HeapTuple tup, TupleDesc desc, const AttrNumber *att, SogHolder *h)
{
	HeapTupleHeader t = tup->t_data;
	TransactionId xmax;
	MemoryContext caller = CurrentMemoryContext;
	bool		isnull;
	Datum		d;

	memset(h, 0, sizeof(*h));
	d = heap_getattr(tup, att[CP_GENERATION], desc, &isnull);
	h->generation = isnull ? 0 : DatumGetInt64(d);
	d = heap_getattr(tup, att[CP_OWNER], desc, &isnull);
	h->owner = isnull ? NULL : TextDatumGetCString(d);
	d = heap_getattr(tup, att[CP_CLAIMED_AT], desc, &isnull);
	if (isnull)
		d = heap_getattr(tup, att[CP_UPDATED_AT], desc, &isnull);
	h->claimed_at = isnull ? NULL : pstrdup(timestamptz_to_str(DatumGetTimestampTz(d)));

	if ((t->t_infomask & HEAP_XMAX_INVALID) ||
		((t->t_infomask & HEAP_XMAX_IS_MULTI) && HEAP_XMAX_IS_LOCKED_ONLY(t->t_infomask)))
		return;					/* not locked, or only by share lockers */
	/* a multixact's updater, the one a claim waits for */
	xmax = (t->t_infomask & HEAP_XMAX_IS_MULTI) ? HeapTupleGetUpdateXid(t) :
		HeapTupleHeaderGetRawXmax(t);
	if (!TransactionIdIsValid(xmax) || !TransactionIdIsInProgress(xmax))
		return;

	/*
	 * A lock taken in a savepoint (JDBC's autosave, nested transaction
	 * blocks) is a subtransaction's: its backend and pg_prepared_xacts know
	 * it by its top-level transaction.  In progress, so pg_subtrans has it.
	 */
	xmax = SubTransGetTopmostTransaction(xmax);
	h->known = true;
	h->pid = BackendXidGetPid(xmax);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(caller);
	if (h->pid != 0)
	{
		char	   *row[2] = {NULL, NULL};

		holder_row("SELECT xact_start::text, state FROM pg_catalog.pg_stat_activity "
				   "WHERE pid OPERATOR(pg_catalog.=) $1",
				   INT4OID, Int32GetDatum(h->pid), row, 2, caller);
		h->since = row[0];
		h->state = row[1];
	}
	else
	{
		/* no backend runs it: a prepared transaction (PREPARE TRANSACTION) */
		char	   *row[3] = {NULL, NULL, NULL};

		holder_row("SELECT gid, owner::text, prepared::text FROM pg_catalog.pg_prepared_xacts "
				   "WHERE transaction OPERATOR(pg_catalog.=) $1",
				   XIDOID, TransactionIdGetDatum(xmax), row, 3, caller);
		h->gid = row[0];
		h->gid_owner = row[1];
		h->prepared = row[2];
	}
	MemoryContextSwitchTo(caller);
	SPI_finish();
}

/*
 * The wait for checkpoint id's row lock ended with a lock timeout (55P03),
 * copied into e out of a PG_CATCH: rewrite it to say which checkpoint, who
 * holds it and since when, and what to do; the caller re-throws it
 * (ReThrowError).  No catalog or table access: what it says was looked up
 * before the wait (sog_find_holder).
 */
void
sog_lock_timeout_error(ErrorData *e, int64 id, const SogHolder *h, bool claim,
					   int timeout_ms)
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
	else if (h->known && h->gid)
		appendStringInfo(&detail, "; its row is locked by prepared transaction \"%s\" (owner %s, prepared at %s), which no backend runs.",
						 sog_cut(h->gid), sog_cut(h->gid_owner), h->prepared);
	else
		appendStringInfoString(&detail, "; its row is locked by an open transaction.");

	e->sqlerrcode = ERRCODE_LOCK_NOT_AVAILABLE;
	e->message = claim ?
		psprintf("could not claim checkpoint " INT64_FORMAT " within %d ms", id, timeout_ms) :
		psprintf("could not lock checkpoint " INT64_FORMAT " within lock_timeout (%d ms)", id, timeout_ms);
	e->detail = detail.data;
	e->detail_log = NULL;
	e->hint = h->known && h->pid != 0 ?
		psprintf("Retry later, or end that transaction with SELECT pg_terminate_backend(%d).", h->pid) :
		h->known && h->gid ?
		psprintf("Finish that prepared transaction: COMMIT PREPARED %s keeps its sink rows, ROLLBACK PREPARED %s discards them.",
				 quote_literal_cstr(sog_cut(h->gid)), quote_literal_cstr(sog_cut(h->gid))) :
		pstrdup("Retry later, or end the transaction that holds the checkpoint (see pg_locks and pg_stat_activity).");
}
