/*-------------------------------------------------------------------------
 *
 * functions/reconfigure.c
 *	  sog.reconfigure(): an operator changes a checkpoint's settings, each
 *	  change recorded in sog.reconfiguration.
 *
 * Relies on checkpoint/checkpoint.c (the row lock), functions/recovery.c (a
 * new query scope fails the attempts begun under another), store/access.c and
 * store/tables.c.  It locks the checkpoint's row and so serializes with its
 * workers: a reconfigure that races a claim waits for it, or the claim waits
 * for the reconfigure, and each sees the other's committed result.
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
#include "type/position.h"
#include "type/util.h"

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
SOG_ENTRY(sog_reconfigure, true)
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
	s[0] = (Setting)
	{
		"criticality", pstrdup(cp.telemetry ? "telemetry" : "critical"), arg[0]
	};
	s[1] = (Setting)
	{
		"provider", cp.provider, arg[1]
	};
	s[2] = (Setting)
	{
		"query_scope", cp.query_scope, arg[2]
	};
	s[3] = (Setting)
	{
		"source_identity", cp.source_identity, arg[3]
	};

	values[0] = Int64GetDatum(cp.id);
	for (i = 0; i < 4; i++)
	{
		char	   *v = s[i].new_value ? s[i].new_value : s[i].old_value;

		if (s[i].new_value && !sog_text_eq(s[i].new_value, s[i].old_value))
		{
			if (!changed)
				sog_checkpoint_check_snapshot(&cp); /* before the first write */
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
