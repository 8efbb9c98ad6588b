/*-------------------------------------------------------------------------
 *
 * functions/receipt.c
 *	  The SQL functions on receipts: sog.receipts() and sog.prune_receipts().
 *
 * Relies on store/receipt.c (the receipt store), checkpoint/checkpoint.c (the
 * row lock), store/access.c (who may call them) and store/tables.c (SPI).
 * prune_receipts locks the checkpoint's row (sog_checkpoint_lock) and so
 * serializes with its workers; receipts() reads on the transaction snapshot
 * without locking.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"

#include "checkpoint/checkpoint.h"
#include "compat.h"
#include "functions/recovery.h"
#include "store/access.h"
#include "store/receipt.h"
#include "type/position.h"
#include "type/util.h"

typedef struct ReceiptSink
{
	ReturnSetInfo *rsinfo;
} ReceiptSink;

static void
emit_receipt(void *arg, SogPosition *pos, const uint8 *digest)
{
	ReceiptSink *sink = (ReceiptSink *) arg;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	bytea	   *d = palloc(VARHDRSZ + SOG_DIGEST_LEN);

	SET_VARSIZE(d, VARHDRSZ + SOG_DIGEST_LEN);
	memcpy(VARDATA(d), digest, SOG_DIGEST_LEN);
	values[0] = PointerGetDatum(pos);
	values[1] = PointerGetDatum(d);
	tuplestore_putvalues(sink->rsinfo->setResult, sink->rsinfo->setDesc, values, nulls);
}

/*
 * The checkpoint's prune horizon on the transaction snapshot (NULL: none,
 * or no such checkpoint), in the caller's memory context.
 */
static SogPosition *
prune_horizon(int64 id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;
	Datum		d;

	sog_exec_snapshot("SELECT prune_horizon FROM sog.checkpoint "
					  "WHERE id OPERATOR(pg_catalog.=) $1", 1, types, values);
	if (SPI_processed == 0)
		return NULL;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : (SogPosition *) PG_DETOAST_DATUM_COPY(d);
}

/*
 * SQL function: sog.receipts(checkpoint_id bigint, from_position sog.position
 *	   DEFAULT NULL, to_position sog.position DEFAULT NULL)
 *	   -> TABLE(position sog.position, payload_digest bytea)
 *
 * Reads on the transaction snapshot; takes no lock.
 */
SOG_ENTRY(sog_receipts, false)
{
	int64		id;
	SogPosition *from = PG_ARGISNULL(1) ? NULL : PG_GETARG_SOG_POSITION_P(1);
	SogPosition *to = PG_ARGISNULL(2) ? NULL : PG_GETARG_SOG_POSITION_P(2);
	ReceiptSink sink;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	id = PG_GETARG_INT64(0);
	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	sink.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	sog_store_begin();
	sog_check_access(id, sog_checkpoint_consumer(id, SOG_ACCESS_ANY), SOG_ACCESS_ANY);
	sog_receipt_scan(id, prune_horizon(id), from, to, emit_receipt, &sink);
	sog_store_end();
	return (Datum) 0;
}

/*
 * An open recovery attempt verifies the events it re-reads against the
 * receipts from its anchor on (all of them when it reads from the start):
 * pruning them would make its next event unverifiable and fail it closed.
 * Refuse instead (55000), as begin_recovery refuses an anchor at or below
 * the prune horizon.  Runs inside SPI.
 */
static void
refuse_under_open_attempt(const SogCheckpoint *cp, SogPosition *through)
{
	Oid			types[2] = {INT8OID, sog_position_type()};
	Datum		values[2] = {Int64GetDatum(cp->id), PointerGetDatum(through)};
	bool		isnull;
	int64		attempt;
	char	   *anchor;

	sog_exec("SELECT id, anchor::text AS anchor_text FROM sog.recovery "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'open' "
			 "AND (anchor IS NULL OR anchor OPERATOR(sog.<=) $2) "
			 "ORDER BY anchor USING OPERATOR(sog.<) NULLS FIRST, id LIMIT 1",
			 2, types, values, NULL, true);
	if (SPI_processed == 0)
		return;
	attempt = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	anchor = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot prune receipts of checkpoint " INT64_FORMAT " through %s while recovery attempt " INT64_FORMAT " is open",
					cp->id, sog_position_label(through), attempt),
			 anchor ?
			 errdetail("The attempt verifies the events it re-reads against the receipts from its anchor %s on.", anchor) :
			 errdetail("The attempt reads from the start and verifies every event against its receipt."),
			 anchor ?
			 errhint("Prune through a position below %s, or after the attempt concludes (sog.promote).", anchor) :
			 errhint("Prune after the attempt concludes (sog.promote).")));
}

/*
 * SQL function: sog.prune_receipts(checkpoint_id bigint,
 *	   through sog.position) -> bigint
 */
SOG_ENTRY(sog_prune_receipts, true)
{
	SogCheckpoint cp;
	SogPosition *through;
	int64		dropped;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "through");
	through = PG_GETARG_SOG_POSITION_P(1);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_OPERATOR, false);
	if (sog_position_cmp_nullable(through, cp.applied_position) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot prune receipts above the applied position of checkpoint " INT64_FORMAT, cp.id),
				 cp.applied_position ?
				 errdetail("Pruning through %s was requested, but the checkpoint has applied only through %s.",
						   sog_position_label(through), sog_position_label(cp.applied_position)) :
				 errdetail("Pruning through %s was requested, but the checkpoint has applied nothing yet.",
						   sog_position_label(through)),
				 cp.applied_position ?
				 errhint("Prune through a position at or below %s.", sog_position_label(cp.applied_position)) :
				 errhint("There is nothing to prune before the first event is applied.")));

	if ((cp.read_hash != NULL || !cp.read_count_isnull) &&
		sog_position_cmp_nullable(cp.source_cursor, cp.applied_position) > 0 &&
		sog_position_cmp_nullable(through, cp.read_base) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot prune receipts of checkpoint " INT64_FORMAT " through %s while its read boundary is open",
						cp.id, sog_position_label(through)),
				 errdetail("Records noted as read in (%s, %s] are checked against their receipts when the boundary closes.",
						   cp.read_base ? sog_position_label(cp.read_base) : "start", sog_position_label(cp.source_cursor)),
				 cp.read_base ?
				 errhint("Prune through %s or below, or after the worker has applied what it noted.",
						 sog_position_label(cp.read_base)) :
				 errhint("Prune after the worker has applied what it noted.")));

	sog_store_begin();
	refuse_under_open_attempt(&cp, through);
	dropped = sog_receipt_prune(cp.id, through, cp.prune_horizon);
	if (sog_position_cmp_nullable(through, cp.prune_horizon) > 0)
	{
		cp.prune_horizon = through;
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_INT64(dropped);
}
