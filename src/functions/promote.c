/*-------------------------------------------------------------------------
 *
 * functions/promote.c
 *	  sog.promote: the end of an expired-token recovery (docs/consumer.md: expired-token recovery).
 *
 * A promotion is a compare-and-swap on the attempt's base token and
 * generation, under the checkpoint's row lock (sog_recovery_lock, taken
 * first, as in functions/recovery.c): the winner installs its successor token,
 * advances the applied position through what its page applied or found
 * duplicate (never backward) and bumps the generation, fencing every other
 * open attempt; a loser is concluded as lost.  A retry of a concluded
 * attempt answers again without changing anything.  Before the swap, the
 * temporal-skew rule: nothing promotes above an unverified or unresolved
 * gap, nor past or into a read boundary it cannot check
 * (sog_boundary_promotable, checkpoint/boundary.c: F1, F4).
 * The attempt's SQL lives in functions/recovery.c with the rest of recovery's.
 *
 * Relies on: checkpoint/checkpoint.c, store/gap.c, type/position.c,
 * store/receipt.c, functions/recovery.c, store/tables.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "compat.h"
#include "functions/recovery.h"
#include "store/access.h"
#include "store/gap.h"
#include "store/receipt.h"
#include "type/position.h"
#include "type/util.h"

/* What promote answers: the checkpoint after the call, and why. */
typedef struct Promotion
{
	bool		promoted;
	const char *reason;
	int64		generation;
	SogPosition *applied;
	char	   *token;
} Promotion;

/*
 * An attempt already concluded answers again without changing anything: a
 * promoted one with the same successor token (a retry after an unknown
 * commit outcome), a lost one.  Returns false for an attempt that is not.
 */
static bool
promote_concluded(const SogRecovery *r, const char *successor, Promotion *out)
{
	if (r->state == SOG_RECOVERY_PROMOTED)
	{
		if (!sog_text_eq(successor, r->successor_token))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("recovery attempt " INT64_FORMAT " was promoted with another token", r->id),
					 errdetail("It installed %s; this call names %s.",
							   sog_quoted(r->successor_token, "no token"),
							   sog_quoted(successor, "no token")),
					 errhint("Continue from the checkpoint's current token.")));
		out->promoted = true;
		out->reason = "already_promoted";
	}
	else if (r->state == SOG_RECOVERY_LOST)
		out->reason = "lost";
	else
		return false;
	out->generation = r->result_generation;
	out->applied = r->result_applied;
	out->token = r->result_token;
	return true;
}

/*
 * The compare-and-swap on the attempt's base token and generation.  Won:
 * token := successor, applied_position through what the attempt applied
 * or found duplicate (never backward), generation + 1, other open attempts
 * lost.  Records the conclusion in the attempt either way.
 */
static void
promote_cas(const SogRecovery *r, SogCheckpoint *cp, char *successor,
			Promotion *out)
{
	out->promoted = cp->generation == r->generation &&
		sog_text_eq(sog_checkpoint_token(cp), r->expired_token);
	if (out->promoted)
	{
		sog_checkpoint_set_token(cp, successor);
		if (sog_position_cmp_nullable(r->advance_through, cp->applied_position) > 0)
			cp->applied_position = r->advance_through;
		if (sog_position_cmp_nullable(cp->applied_position, cp->receipts_through) > 0)
			cp->receipts_through = cp->applied_position;
		if (sog_position_cmp_nullable(cp->source_cursor, cp->applied_position) <= 0)
			sog_clear_read_boundary(cp);	/* the page covers all that was
											 * read */
		sog_check_generation_room(cp);
		cp->generation++;
		cp->claimed = true;
		sog_checkpoint_write(cp);
		sog_recovery_fence_open(cp, r->id);
	}
	out->reason = out->promoted ? "promoted" : "lost";
	out->generation = cp->generation;
	out->applied = cp->applied_position;
	out->token = sog_checkpoint_token(cp);

	sog_recovery_conclude(r->id, out->promoted, out->generation, successor,
						  out->applied, out->token);
}

/*
 * SQL function: sog.promote(recovery_id bigint, successor_token text,
 *	   page_last sog.position) -> TABLE(promoted boolean, generation bigint,
 *	   applied_position sog.position, provider_token text, reason text)
 */
SOG_ENTRY(sog_promote, true)
{
	int64		id;
	char	   *successor = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	SogPosition *page_last = PG_ARGISNULL(2) ? NULL : PG_GETARG_SOG_POSITION_P(2);
	SogRecovery r;
	SogCheckpoint cp;
	Promotion	out = {0};
	ReturnSetInfo *rsinfo;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	sog_require_arg(fcinfo, 0, "recovery_id");
	id = PG_GETARG_INT64(0);
	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	sog_store_begin();
	sog_recovery_lock(id, &r, &cp);
	out.generation = cp.generation;
	out.applied = cp.applied_position;
	out.token = sog_checkpoint_token(&cp);
	if (promote_concluded(&r, successor, &out))
		;						/* answered again */
	else if (r.state == SOG_RECOVERY_OPEN && !sog_text_eq(r.query_scope, cp.query_scope))
	{
		/* the scope changed under the attempt: its page may lack records */
		sog_recovery_fail(&cp, r.id, "scope_changed", cp.source_cursor, false);
		out.reason = "unresolved";
	}
	else if (r.state == SOG_RECOVERY_FAILED || cp.state != SOG_STATE_RUNNING ||
			 sog_gap_count_open(cp.id) > 0 || !sog_boundary_promotable(&cp, r.advance_through))
		out.reason = "unresolved";	/* an unverified or unresolved gap */
	else if (sog_position_cmp_nullable(page_last, r.last_position) != 0)
		out.reason = "page_incomplete";
	else if (page_last == NULL && !sog_recovery_empty_page_is_barrier(r.provider))
		out.reason = "empty_page_not_barrier";
	else
		promote_cas(&r, &cp, successor, &out);
	sog_store_end();

	values[0] = BoolGetDatum(out.promoted);
	values[1] = Int64GetDatum(out.generation);
	values[2] = PointerGetDatum(out.applied);
	nulls[2] = out.applied == NULL;
	if (out.token)
		values[3] = CStringGetTextDatum(out.token);
	nulls[3] = out.token == NULL;
	values[4] = CStringGetTextDatum(out.reason);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
