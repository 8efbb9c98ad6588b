/*-------------------------------------------------------------------------
 *
 * functions/gap.c
 *	  Gaps: verifying a replayed one, reporting a loss, skipping (telemetry
 *	  only), resolving, and listing them (docs/operations.md: gap reasons):
 *	  verify_gap, report_gap, skip_gap, resolve_gap, gaps.
 *
 * A gap row covers (from_position, to_position] of a checkpoint: from is
 * the applied position when it was recorded (NULL: nothing was applied),
 * to the last position it may hold; a NULL to means the end is unknown and
 * every position above from is suspect (a divergence, or a recovery refusal
 * before anything above the applied position was read).  While a gap is
 * open the checkpoint is failed_closed: nothing above its applied position
 * is applied (SG004).  Every gap is announced with NOTIFY sog_gap.
 *
 * Locking: every function that changes a checkpoint locks its row first
 * (sog_checkpoint_lock, checkpoint/checkpoint.c); gaps() reads on the
 * transaction snapshot without locking.
 *
 * Relies on: store/access.c, checkpoint/checkpoint.c, store/gap.c,
 * type/halt.c, type/position.c, store/tables.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "compat.h"
#include "store/access.h"
#include "store/gap.h"
#include "type/halt.h"
#include "type/position.h"
#include "type/util.h"

/*
 * The gap reasons (docs/operations.md: gap reasons), listed once: sog.gap's CHECK
 * constraint takes them from sog.gap_reasons(), report_gap accepts the
 * ones a consumer may report (not "unverified", which only the guard
 * records for a range no gap covered).
 */
static const struct
{
	const char *name;
	bool		reportable;
}			gap_reasons[] = {
	{"no_buffer_hash", true}, {"hash_mismatch", true}, {"divergence", true},
	{"identity_changed", true}, {"retention", true}, {"scope_changed", true},
	{"coverage_unproven", true}, {"no_finality", true}, {"receipts_pruned", true},
	{"mismatch", true}, {"unverifiable", true}, {"coverage_gap", true},
	{"unverified", false}
};

/* SQL function: sog.gap_reasons() -> text[] (every reason a gap row may have) */
PG_FUNCTION_INFO_V1(sog_gap_reasons);
Datum
sog_gap_reasons(PG_FUNCTION_ARGS)
{
	Datum		names[lengthof(gap_reasons)];
	int			i;

	for (i = 0; i < (int) lengthof(gap_reasons); i++)
		names[i] = CStringGetTextDatum(gap_reasons[i].name);
	PG_RETURN_ARRAYTYPE_P(construct_array(names, lengthof(gap_reasons), TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * SQL function: sog.verify_gap(checkpoint_id bigint, generation bigint,
 *	   replay_hash text) -> boolean
 */
SOG_ENTRY(sog_verify_gap, true)
{
	SogCheckpoint cp;
	char	   *replay;
	bool		match;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "replay_hash");
	replay = text_to_cstring(PG_GETARG_TEXT_PP(2));
	sog_check_buffer_hash("replay_hash", replay);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "verify_gap");
	if (cp.state != SOG_STATE_REPLAYING || cp.read_hash == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint " INT64_FORMAT " has no gap awaiting verification", cp.id),
				 errdetail("Its state is %s.", sog_state_label(cp.state)),
				 errhint("Call it after sog.claim() returned gap_replay_required.")));

	sog_store_begin();
	match = pg_strcasecmp(replay, cp.read_hash) == 0;
	if (match)
		cp.state = SOG_STATE_RUNNING;
	else
	{
		sog_gap_record(cp.id, cp.generation, "hash_mismatch", SOG_VERDICT_FAIL_CLOSED,
					   sog_boundary_base(&cp), cp.source_cursor, NULL);
		cp.state = SOG_STATE_FAILED_CLOSED;
	}
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_BOOL(match);
}

static void
check_gap_reason(const char *reason)
{
	StringInfoData list;
	int			i;

	initStringInfo(&list);
	for (i = 0; i < (int) lengthof(gap_reasons); i++)
	{
		if (!gap_reasons[i].reportable)
			continue;
		if (reason && strcmp(reason, gap_reasons[i].name) == 0)
			return;
		appendStringInfo(&list, "%s%s", list.len ? ", " : "", gap_reasons[i].name);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid gap reason %s", sog_quoted(reason, "NULL")),
			 errdetail("A gap's reason is one of %s.", list.data),
			 errhint("Use \"retention\" for records the broker discarded before they were applied.")));
}

/*
 * SQL function: sog.report_gap(checkpoint_id bigint, generation bigint,
 *	   to_position sog.position, reason text, detail text DEFAULT NULL)
 *	   -> bigint
 *
 * The consumer saw that records it never applied are gone: records the gap
 * (from, to_position], fails the checkpoint closed, notifies, and returns the
 * gap's id.  from is the applied position (the read boundary's base if an
 * apply entered it: checkpoint/boundary.c), moved past the gaps that already
 * account for what lies above it, open ones and losses an operator accepted,
 * as long as they join up: a loss beyond an open gap is recorded next to it,
 * not over it, and one right after an accepted loss on its own.  Idempotent:
 * when those gaps already cover the range, returns the id of the one that
 * reaches to_position and changes nothing.
 */
SOG_ENTRY(sog_report_gap, true)
{
	SogCheckpoint cp;
	SogPosition *to;
	char	   *reason = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	char	   *detail = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	int64		gap_id;
	const SogPosition *from;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "to_position");
	to = PG_GETARG_SOG_POSITION_P(2);
	check_gap_reason(reason);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "report_gap");
	if (sog_position_cmp_nullable(to, cp.applied_position) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot report a gap through %s of checkpoint " INT64_FORMAT,
						sog_position_label(to), cp.id),
				 errdetail("The checkpoint has applied through %s: nothing at or below it can be lost.",
						   sog_position_label(cp.applied_position)),
				 errhint("Report the last position that is gone, above the applied position.")));

	sog_store_begin();
	gap_id = sog_gap_losses_through(cp.id, sog_boundary_base(&cp), to, &from);
	if (gap_id == 0)
	{
		gap_id = sog_gap_record(cp.id, cp.generation, reason, SOG_VERDICT_FAIL_CLOSED,
								from, to, detail);

		/* what was read beyond the loss can no longer be verified */
		sog_boundary_record_rest(&cp, to);
		cp.state = SOG_STATE_FAILED_CLOSED;
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_INT64(gap_id);
}

/*
 * SQL function: sog.skip_gap(checkpoint_id bigint, generation bigint,
 *	   reason text) -> void
 *
 * Telemetry checkpoints only: every open gap is resolved as
 * skipped_telemetry and applied_position moves to the read cursor.  What is
 * skipped is always on record: a range (applied, cursor] that no open gap
 * covers (an unverified replay, or records the worker noted and drops) is
 * first recorded as a gap (reason unverified) and resolved with the others.
 */
SOG_ENTRY(sog_skip_gap, true)
{
	SogCheckpoint cp;
	char	   *reason = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	SogManifest m;
	SogPosition *from;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "skip_gap");
	if (!cp.telemetry)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_REFUSED),
				 errmsg("cannot skip a gap of critical checkpoint " INT64_FORMAT, cp.id),
				 errdetail("Checkpoint %s/%s/%s is critical; records in (%s, %s] would be lost.",
						   sog_cut(cp.consumer), sog_cut(cp.stream), sog_cut(cp.partition),
						   sog_position_label(cp.applied_position), sog_position_label(cp.source_cursor)),
				 errhint("Replay the gap, or have an operator accept the loss with sog.resolve_gap().")));
	if (sog_is_blank(reason))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a skipped gap needs a reason"),
				 errdetail("The reason is recorded with the gap for audit."),
				 errhint("Say why losing these records is acceptable.")));

	sog_store_begin();
	from = (SogPosition *) sog_boundary_base(&cp);
	if (sog_boundary_open(&cp) &&
		sog_gap_open_covering(cp.id, from, cp.source_cursor) == 0)
		sog_gap_record(cp.id, cp.generation, "unverified", SOG_VERDICT_FAIL_CLOSED,
					   from, cp.source_cursor,
					   cp.state == SOG_STATE_REPLAYING ?
					   "skipped before verify_gap" : "buffered records skipped");
	sog_gap_resolve_open(cp.id, "skipped_telemetry", reason);
	if (sog_position_cmp_nullable(cp.source_cursor, cp.applied_position) > 0)
		cp.applied_position = cp.source_cursor;
	sog_clear_read_boundary(&cp);
	cp.state = SOG_STATE_RUNNING;
	sog_evaluate_boundary(cp.applied_position, cp.applied_position, NULL, &m);
	sog_manifest_record(cp.id, cp.generation, cp.owner, cp.applied_position, "skip",
						cp.applied_position, NULL, true, 0, &m, 0,
						psprintf("skipped (%s, %s]: %s", sog_position_label(from),
								 sog_position_label(cp.applied_position), reason));
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_VOID();
}

/*
 * SQL function: sog.resolve_gap(gap_id bigint, resolution text, note text)
 *	   -> void
 */
SOG_ENTRY(sog_resolve_gap, true)
{
	int64		gap_id;
	char	   *resolution = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *note = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	int64		checkpoint_id;
	char	   *what;
	SogCheckpoint cp;

	sog_require_arg(fcinfo, 0, "gap_id");
	gap_id = PG_GETARG_INT64(0);
	if (resolution == NULL ||
		(strcmp(resolution, "replayed") != 0 && strcmp(resolution, "accepted_loss") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid gap resolution %s", sog_quoted(resolution, "NULL")),
				 errdetail("A gap is resolved as \"replayed\" or \"accepted_loss\"."),
				 errhint("Use \"replayed\" when the records were re-applied, \"accepted_loss\" with a note otherwise.")));
	if (strcmp(resolution, "accepted_loss") == 0 && sog_is_blank(note))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("accepting a loss needs a note"),
				 errdetail("Gap " INT64_FORMAT " would be closed as accepted_loss without an explanation.", gap_id),
				 errhint("Say who accepted the loss and why.")));

	sog_store_begin();
	checkpoint_id = sog_gap_checkpoint(gap_id);
	what = psprintf("gap " INT64_FORMAT, gap_id);
	if (checkpoint_id < 0)
		sog_check_access_missing(what, SOG_ACCESS_OPERATOR);
	else						/* refused as the gap, not its checkpoint */
		sog_check_access_to(what, sog_checkpoint_consumer(checkpoint_id, SOG_ACCESS_OPERATOR),
							SOG_ACCESS_OPERATOR);
	sog_store_end();
	if (checkpoint_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gap " INT64_FORMAT " does not exist", gap_id),
				 errdetail("No row of sog.gap has id " INT64_FORMAT ".", gap_id),
				 errhint("Look up open gaps in sog.unresolved_gaps.")));

	/* serialize with the checkpoint's workers, then resolve */
	sog_checkpoint_lock(checkpoint_id, &cp, SOG_ACCESS_OPERATOR, false);
	sog_store_begin();
	if (!sog_gap_resolve(gap_id, resolution, note))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gap " INT64_FORMAT " is already resolved", gap_id),
				 errdetail("Its resolution is recorded in sog.gap."),
				 errhint("Nothing to do; see sog.unresolved_gaps for open gaps.")));

	if (sog_gap_count_open(cp.id) == 0)
	{
		if (sog_boundary_unverified(&cp))
			cp.state = SOG_STATE_REPLAYING;
		else
		{
			sog_clear_read_boundary(&cp);
			cp.state = SOG_STATE_RUNNING;
		}
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_VOID();
}

/*
 * SQL function: sog.gaps(checkpoint_id bigint) -> TABLE(gap_id bigint,
 *	   from_position sog.position, to_position sog.position, reason text,
 *	   detected_at timestamptz, resolution text, resolved_at timestamptz,
 *	   note text)
 *
 * Every gap of the checkpoint, open (resolution NULL) and resolved, in order
 * of detection; for consumers (of that checkpoint) and operators.  Reads on
 * the transaction snapshot.
 */
SOG_ENTRY(sog_gaps, false)
{
	int64		id;
	ReturnSetInfo *rsinfo;
	char	   *consumer;
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	uint64		r;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	id = PG_GETARG_INT64(0);
	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	sog_store_begin();
	consumer = sog_checkpoint_consumer(id, SOG_ACCESS_ANY);
	sog_check_access(id, consumer, SOG_ACCESS_ANY);
	values[0] = Int64GetDatum(id);
	sog_exec_snapshot("SELECT id, from_position, to_position, reason, detected_at, "
					  "resolution, resolved_at, note FROM sog.gap "
					  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
					  "ORDER BY id USING OPERATOR(pg_catalog.<)",
					  1, types, values);
	for (r = 0; r < SPI_processed; r++)
	{
		Datum		row[8];
		bool		isnull[8];
		int			c;

		for (c = 0; c < 8; c++)
			row[c] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc,
								   c + 1, &isnull[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, isnull);
	}
	sog_store_end();
	return (Datum) 0;
}
