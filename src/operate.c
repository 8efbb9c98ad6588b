/*-------------------------------------------------------------------------
 *
 * operate.c
 *	  What operators use (README: the operator guide): receipts,
 *	  prune_receipts, reconfigure, and the trigger that keeps
 *	  applied_position, prune_horizon and generation monotonic for every
 *	  writer.
 *
 * Locking: prune_receipts and reconfigure lock the checkpoint's row
 * (sog_checkpoint_lock, store.c) and so serialize with its workers; a
 * reconfigure that races a claim waits for it, or the claim waits for the
 * reconfigure, and each sees the other's committed result.  receipts()
 * reads on the transaction snapshot without locking.
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

#include "access.h"
#include "compat.h"
#include "position.h"
#include "recovery.h"
#include "store.h"

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
 * SQL function: sog.receipts(checkpoint_id bigint, from_position sog.position
 *	   DEFAULT NULL, to_position sog.position DEFAULT NULL)
 *	   -> TABLE(position sog.position, payload_digest bytea)
 *
 * Reads on the transaction snapshot; takes no lock.
 */
PG_FUNCTION_INFO_V1(sog_receipts);
Datum
sog_receipts(PG_FUNCTION_ARGS)
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
	sog_receipt_scan(id, from, to, emit_receipt, &sink);
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

	sog_exec("SELECT id, anchor::text FROM sog.recovery "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'open' "
			 "AND (anchor IS NULL OR anchor OPERATOR(pg_catalog.<=) $2) "
			 "ORDER BY anchor USING OPERATOR(pg_catalog.<) NULLS FIRST LIMIT 1",
			 2, types, values, NULL, true);
	if (SPI_processed == 0)
		return;
	attempt = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	anchor = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot prune receipts of checkpoint " INT64_FORMAT " through %s while recovery attempt " INT64_FORMAT " is open",
					cp->id, sog_pos_str(through), attempt),
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
PG_FUNCTION_INFO_V1(sog_prune_receipts);
Datum
sog_prune_receipts(PG_FUNCTION_ARGS)
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
						   sog_pos_str(through), sog_pos_str(cp.applied_position)) :
				 errdetail("Pruning through %s was requested, but the checkpoint has applied nothing yet.",
						   sog_pos_str(through)),
				 cp.applied_position ?
				 errhint("Prune through a position at or below %s.", sog_pos_str(cp.applied_position)) :
				 errhint("There is nothing to prune before the first event is applied.")));

	if ((cp.read_hash != NULL || !cp.read_count_isnull) &&
		sog_position_cmp_nullable(cp.source_cursor, cp.applied_position) > 0 &&
		sog_position_cmp_nullable(through, cp.read_base) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot prune receipts of checkpoint " INT64_FORMAT " through %s while its read boundary is open",
						cp.id, sog_pos_str(through)),
				 errdetail("Records noted as read in (%s, %s] are checked against their receipts when the boundary closes.",
						   cp.read_base ? sog_pos_str(cp.read_base) : "start", sog_pos_str(cp.source_cursor)),
				 cp.read_base ?
				 errhint("Prune through %s or below, or after the worker has applied what it noted.",
						 sog_pos_str(cp.read_base)) :
				 errhint("Prune after the worker has applied what it noted.")));

	sog_store_begin();
	refuse_under_open_attempt(&cp, through);
	dropped = sog_receipt_prune(cp.id, through);
	if (sog_position_cmp_nullable(through, cp.prune_horizon) > 0)
	{
		cp.prune_horizon = through;
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_INT64(dropped);
}

/* One setting reconfigure may change: its column, old and new value. */
typedef struct Setting
{
	const char *column;
	char	   *old_value;
	char	   *new_value;		/* NULL: not changed */
} Setting;

/* Raise 22023 for a criticality or provider the checkpoint cannot have. */
static void
check_settings(const char *criticality, const char *provider)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	if (criticality && strcmp(criticality, "critical") != 0 &&
		strcmp(criticality, "telemetry") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid criticality %s", sog_quoted(criticality, "NULL")),
				 errdetail("A checkpoint is critical (gaps are never skipped) or telemetry (gaps may be skipped, with audit)."),
				 errhint("Pass 'critical' or 'telemetry'.")));
	if (provider == NULL)
		return;
	values[0] = CStringGetTextDatum(provider);
	sog_exec("SELECT 1 FROM sog.provider WHERE name OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("provider %s is not described in sog.provider", sog_quoted(provider, "NULL")),
				 errdetail("A checkpoint's provider names a row of sog.provider: its seek, ordering, empty-page and backfill contract."),
				 errhint("INSERT a row for it into sog.provider first, or use one of the seeded providers (SELECT name FROM sog.provider).")));
}

/* Record one changed setting in sog.reconfiguration. */
static void
log_setting(int64 checkpoint_id, const Setting *s, const char *note)
{
	Oid			types[6] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = CStringGetTextDatum(s->column);
	values[5] = CStringGetTextDatum(sog_acting_role());
	values[2] = s->old_value ? CStringGetTextDatum(s->old_value) : (Datum) 0;
	nulls[2] = s->old_value ? ' ' : 'n';
	values[3] = CStringGetTextDatum(s->new_value);
	values[4] = note ? CStringGetTextDatum(note) : (Datum) 0;
	nulls[4] = note ? ' ' : 'n';
	sog_exec("INSERT INTO sog.reconfiguration (checkpoint_id, setting, old_value, "
			 "new_value, note, changed_by) VALUES ($1, $2, $3, $4, $5, $6)",
			 6, types, values, nulls, false);
}

/*
 * SQL function: sog.reconfigure(checkpoint_id bigint, criticality text
 *	   DEFAULT NULL, provider text DEFAULT NULL, query_scope text DEFAULT
 *	   NULL, source_identity text DEFAULT NULL, note text DEFAULT NULL)
 *	   -> sog.checkpoint
 *
 * For operators: change the given (non-NULL) settings, and record who,
 * when, the old and the new value of each in sog.reconfiguration.  A
 * setting given with its current value is not recorded.  Generation,
 * positions and gaps are untouched: an open identity_changed gap stays
 * open until it is resolved.
 */
PG_FUNCTION_INFO_V1(sog_reconfigure);
Datum
sog_reconfigure(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	char	   *arg[4];
	char	   *note = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	Setting		s[4];
	Oid			types[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	bool		changed = false;
	Datum		result;
	int			i;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	for (i = 0; i < 4; i++)
		arg[i] = PG_ARGISNULL(i + 1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(i + 1));

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_OPERATOR, false);
	sog_store_begin();
	check_settings(arg[0], arg[1]);
	s[0] = (Setting) {"criticality", pstrdup(cp.telemetry ? "telemetry" : "critical"), arg[0]};
	s[1] = (Setting) {"provider", cp.provider, arg[1]};
	s[2] = (Setting) {"query_scope", cp.query_scope, arg[2]};
	s[3] = (Setting) {"source_identity", cp.source_identity, arg[3]};

	values[0] = Int64GetDatum(cp.id);
	for (i = 0; i < 4; i++)
	{
		char	   *v = s[i].new_value ? s[i].new_value : s[i].old_value;

		if (s[i].new_value && !sog_text_eq(s[i].new_value, s[i].old_value))
		{
			log_setting(cp.id, &s[i], note);
			changed = true;
		}
		values[i + 1] = v ? CStringGetTextDatum(v) : (Datum) 0;
		nulls[i + 1] = v ? ' ' : 'n';
	}
	/* attempts begun under the old scope can no longer promote */
	if (s[2].new_value && !sog_text_eq(s[2].new_value, s[2].old_value))
		sog_recovery_fail_other_scope(&cp, s[2].new_value);
	if (changed)
		sog_exec("UPDATE sog.checkpoint SET criticality = $2, provider = $3, "
				 "query_scope = $4, source_identity = $5, updated_at = pg_catalog.now() "
				 "WHERE id OPERATOR(pg_catalog.=) $1",
				 5, types, values, nulls, false);

	sog_exec("SELECT c FROM sog.checkpoint c WHERE c.id OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = datumCopy(result, false, -1);
	sog_store_end();
	PG_RETURN_DATUM(result);
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
