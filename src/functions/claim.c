/*-------------------------------------------------------------------------
 *
 * functions/claim.c
 *	  Ownership of a checkpoint and its handoff (docs/consumer.md):
 *	  claim, halt, owner_check.
 *
 * The decision boundary (claim, halt) is the evaluation of type/halt.c: read
 * cursor against applied position, with the recorded buffer hash; gaps that
 * cannot be proven become rows of sog.gap (and a NOTIFY on sog_gap), never
 * an error that would roll the record back.
 *
 * Locking: claim and halt lock the checkpoint's row (sog_checkpoint_lock,
 * checkpoint/checkpoint.c) before reading it.  A claim waits for the previous
 * owner's open sink transaction and then sees its outcome; sog.claim_timeout
 * bounds that wait.  owner_check takes no lock: it reads the newest committed
 * row.
 *
 * Relies on: store/access.c, checkpoint/checkpoint.c, store/gap.c,
 * type/halt.c, type/position.c, functions/promote.c, store/tables.c,
 * type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "functions/recovery.h"
#include "store/access.h"
#include "store/gap.h"
#include "type/halt.h"
#include "type/position.h"
#include "type/util.h"

/*
 * The manifest of a checkpoint that already failed closed: the verdict of
 * its newest open gap (whose id is returned, 0 if there is none), resume
 * from the applied position, the gap size of the recorded boundary, and the
 * digest that verdict has (none for fail_closed, DIVERGED for a divergence).
 */
static int64
manifest_for_open_gap(const SogCheckpoint *cp, SogManifest *m)
{
	SogVerdict	v;
	int64		gap_id = sog_gap_newest_open(cp->id, &v);

	if (gap_id == 0)
		return 0;
	if (v == SOG_VERDICT_DIVERGENCE)
	{
		/* evaluating "source behind sink" yields the DIVERGED manifest */
		SogPosition *above = cp->applied_position ? cp->applied_position :
		sog_position_from_cstring("0");

		sog_evaluate_boundary(NULL, above, NULL, m);
	}
	else
	{
		sog_evaluate_boundary(cp->source_cursor, cp->applied_position, NULL, m);
		m->digest_isnull = true;
	}
	m->verdict = v;
	m->resume_from = cp->applied_position;
	return gap_id;
}

static const char *
gap_reason_for(SogVerdict v)
{
	return v == SOG_VERDICT_FAIL_CLOSED ? "no_buffer_hash" : "divergence";
}

/*
 * The last position a gap may hold (docs/reference.md: what a gap row covers): the read cursor
 * of an unverifiable read; unknown (NULL: every position above the applied
 * one is suspect) for a divergence, where the cursor lies behind the
 * applied position.
 */
static SogPosition *
gap_end(SogVerdict v, SogPosition *cursor)
{
	return v == SOG_VERDICT_DIVERGENCE ? NULL : cursor;
}

/*
 * A claim with a source identity other than the registered one: a
 * different source behind the same name, reported as a divergence.  The
 * gap (identity_changed) is recorded unless one is already open, so a
 * worker that keeps claiming does not flood the gap log; either way the
 * checkpoint is failed_closed and the plan names the open gap.
 */
static int64
claim_identity_changed(SogCheckpoint *cp, const char *identity, SogManifest *m)
{
	SogPosition *above = cp->applied_position ? cp->applied_position :
	sog_position_from_cstring("0");
	int64		gap_id = sog_gap_open_with_reason(cp->id, "identity_changed");

	sog_evaluate_boundary(NULL, above, NULL, m);
	m->resume_from = cp->applied_position;
	if (gap_id == 0)
		gap_id = sog_gap_record(cp->id, cp->generation, "identity_changed", m->verdict,
								sog_boundary_base(cp),
								sog_position_cmp_nullable(cp->source_cursor,
														  cp->applied_position) > 0 ?
								cp->source_cursor : NULL,
								psprintf("claimed with source identity \"%s\"; registered \"%s\"",
										 sog_cut(identity), sog_cut(cp->source_identity)));
	cp->state = SOG_STATE_FAILED_CLOSED;
	return gap_id;
}

/* The outcome of a claim: what the plan returns beyond the manifest. */
typedef struct ClaimPlan
{
	SogManifest m;
	int64		gap_id;
	SogPosition *verify_from;
	SogPosition *verify_to;
	char	   *expected_hash;
	bool		expected_count_isnull;
	int64		expected_count;
} ClaimPlan;

/* Evaluate the predecessor's boundary of a claimed checkpoint. */
static void
claim_evaluate(SogCheckpoint *cp, const char *identity, ClaimPlan *plan)
{
	SogPosition *cursor = cp->source_cursor;

	memset(plan, 0, sizeof(*plan));
	plan->expected_count_isnull = true;
	if (identity && cp->source_identity && strcmp(identity, cp->source_identity) != 0)
	{
		/* checked on every claim, whatever the state */
		plan->gap_id = claim_identity_changed(cp, identity, &plan->m);
		return;
	}
	if (cp->state == SOG_STATE_FAILED_CLOSED &&
		(plan->gap_id = manifest_for_open_gap(cp, &plan->m)) > 0)
		return;					/* report the newest open gap, record none */

	if (identity && cp->source_identity == NULL)
		cp->source_identity = pstrdup(identity);	/* first sighting */
	sog_evaluate_boundary(cursor, cp->applied_position, cp->read_hash, &plan->m);
	switch (plan->m.verdict)
	{
		case SOG_VERDICT_ALIGNED:
			cp->state = SOG_STATE_RUNNING;
			break;
		case SOG_VERDICT_GAP_REPLAY:
			cp->state = SOG_STATE_REPLAYING;
			plan->verify_from = cp->read_base;
			plan->verify_to = cursor;
			plan->expected_hash = cp->read_hash;
			plan->expected_count_isnull = cp->read_count_isnull;
			plan->expected_count = cp->read_count;
			break;
		case SOG_VERDICT_FAIL_CLOSED:
		case SOG_VERDICT_DIVERGENCE:
			plan->gap_id = sog_gap_record(cp->id, cp->generation, gap_reason_for(plan->m.verdict),
										  plan->m.verdict, sog_boundary_base(cp),
										  gap_end(plan->m.verdict, cursor), NULL);
			cp->state = SOG_STATE_FAILED_CLOSED;
			break;
	}
}

/*
 * SQL function: sog.claim(checkpoint_id bigint, owner text,
 *	   source_identity text DEFAULT NULL) -> sog.resume_plan
 */
SOG_ENTRY(sog_claim, true)
{
	SogCheckpoint cp;
	char	   *owner = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *identity = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	ClaimPlan	plan;
	SogPosition *cursor;
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12];

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	if (sog_is_blank(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("owner must not be blank"),
				 errdetail("The owner names the worker that claims the checkpoint."),
				 errhint("Pass a worker name, for example host and process id.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, true);
	sog_check_generation_room(&cp);
	sog_store_begin();

	cp.generation++;
	cp.claimed = true;
	cp.owner = owner;
	cursor = cp.source_cursor;
	claim_evaluate(&cp, identity, &plan);

	sog_manifest_record(cp.id, cp.generation, cp.owner, cp.applied_position, "claim",
						cursor, cp.read_hash, cp.read_count_isnull, cp.read_count,
						&plan.m, plan.gap_id, NULL);
	sog_checkpoint_write(&cp);
	sog_recovery_fence_open(&cp, 0);	/* the new generation fences them */
	sog_store_end();

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum(cp.id);
	values[1] = Int64GetDatum(cp.generation);
	values[2] = sog_verdict_datum(plan.m.verdict, TupleDescAttr(tupdesc, 2)->atttypid);
	values[3] = PointerGetDatum(plan.m.resume_from);
	nulls[3] = plan.m.resume_from == NULL;
	values[4] = PointerGetDatum(plan.verify_from);
	nulls[4] = plan.verify_from == NULL;
	values[5] = PointerGetDatum(plan.verify_to);
	nulls[5] = plan.verify_to == NULL;
	nulls[6] = plan.expected_hash == NULL;
	if (plan.expected_hash)
		values[6] = CStringGetTextDatum(plan.expected_hash);
	values[7] = Int64GetDatum(plan.expected_count);
	nulls[7] = plan.expected_count_isnull;
	values[8] = plan.m.gap_size;
	nulls[8] = plan.m.gap_isnull;
	nulls[9] = sog_checkpoint_token(&cp) == NULL;
	if (!nulls[9])
		values[9] = CStringGetTextDatum(sog_checkpoint_token(&cp));
	nulls[10] = plan.m.digest_isnull;
	if (!plan.m.digest_isnull)
		values[10] = CStringGetTextDatum(plan.m.digest);
	values[11] = Int64GetDatum(plan.gap_id);
	nulls[11] = plan.gap_id == 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * SQL function: sog.halt(checkpoint_id bigint, generation bigint,
 *	   source_cursor sog.position, buffer_hash text, buffered_count bigint)
 *	   -> sog.manifest
 *
 * A NULL source_cursor means "nothing read beyond what is recorded".
 */
SOG_ENTRY(sog_halt, true)
{
	SogCheckpoint cp;
	SogPosition *cursor;
	char	   *hash = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	bool		count_isnull = PG_ARGISNULL(4);
	int64		count = count_isnull ? 0 : PG_GETARG_INT64(4);
	SogManifest m;
	int64		gap_id = 0;
	bool		kept;
	TupleDesc	tupdesc;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_check_buffer_hash("buffer_hash", hash);
	if (!count_isnull && count < 0)
		sog_check_buffered_count(count, NULL, NULL);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "halt");

	cursor = PG_ARGISNULL(2) ? NULL : PG_GETARG_SOG_POSITION_P(2);
	if (cursor && cp.state == SOG_STATE_RUNNING && !count_isnull)
		sog_check_buffered_count(count, cursor, cp.applied_position);

	/*
	 * The boundary handed over: the halt's own, or one still open as it was
	 * noted (a gap is pending, nothing new was read, or records noted earlier
	 * are not applied: checkpoint/boundary.c).
	 */
	sog_boundary_halt(&cp, &cursor, &hash, &count_isnull, &count, &kept);

	sog_store_begin();
	if (cp.state == SOG_STATE_FAILED_CLOSED &&
		manifest_for_open_gap(&cp, &m) > 0)
		;						/* hand over the open gap's verdict */
	else
		sog_evaluate_boundary(cursor, cp.applied_position, hash, &m);
	if (cp.state == SOG_STATE_RUNNING &&
		(m.verdict == SOG_VERDICT_FAIL_CLOSED || m.verdict == SOG_VERDICT_DIVERGENCE))
	{
		gap_id = sog_gap_record(cp.id, cp.generation, gap_reason_for(m.verdict), m.verdict,
								sog_boundary_base(&cp), gap_end(m.verdict, cursor), NULL);
		cp.state = SOG_STATE_FAILED_CLOSED;
	}
	sog_manifest_record(cp.id, cp.generation, cp.owner, cp.applied_position, "halt",
						cursor, hash, count_isnull, count, &m, gap_id,
						kept ? psprintf("the read boundary %s noted earlier is not applied: handed over as noted, not as the halt gave it",
										sog_boundary_str(&cp)) : NULL);
	cp.owner = NULL;			/* released */
	sog_checkpoint_write(&cp);
	sog_store_end();

	PG_RETURN_DATUM(sog_manifest_datum(&m, tupdesc));
}

/*
 * SQL function: sog.owner_check(checkpoint_id bigint, generation bigint)
 *	   -> boolean
 *
 * True when generation is the checkpoint's current one and its owner has
 * not halted: a worker that reconnects asks this instead of claiming again
 * (a blind re-claim would fence whoever took over).  Reads the newest
 * committed row without locking it, so it never waits for a sink
 * transaction, and works on a hot standby.
 */
SOG_ENTRY(sog_owner_check, false)
{
	int64		id;
	int64		generation;
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	bool		isnull;
	bool		owned;
	char	   *consumer;
	int64		current;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	id = PG_GETARG_INT64(0);
	generation = PG_GETARG_INT64(1);

	sog_store_begin();
	values[0] = Int64GetDatum(id);
	sog_exec("SELECT consumer, generation, owner IS NOT NULL FROM sog.checkpoint "
			 "WHERE id OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	if (SPI_processed == 0)
		sog_report_unknown_checkpoint(id, SOG_ACCESS_ANY);
	consumer = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	current = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	owned = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	sog_store_end();
	sog_check_access(id, consumer, SOG_ACCESS_ANY);
	PG_RETURN_BOOL(current == generation && owned);
}
