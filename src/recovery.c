/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  Expired-token recovery (contract section 6): begin_recovery,
 *	  recovery_event, promote.
 *
 * When a provider permanently rejects a continuation token, the consumer
 * re-reads from a proven anchor instead of resyncing blindly or skipping.
 * An attempt (a row of sog.recovery) is tied to the checkpoint's
 * generation, provider token and query scope at its start.  Each fetched
 * event is checked against the receipts: at or below the applied position it
 * must match a receipt ("verified"); above it, it is written ("apply", with a
 * receipt) unless a concurrent attempt already wrote it ("duplicate").  The
 * applied position does not move until promotion, a compare-and-swap on the
 * attempt's base token and generation: the winner installs its successor
 * token, advances applied_position through what it applied or found
 * duplicate (never backward) and bumps the generation; a loser is marked
 * lost and shows the winner's checkpoint.  Every refusal or stop records a
 * gap and leaves the checkpoint failed_closed until an operator resolves it.
 *
 * Locking: every function locks the attempt's checkpoint row first
 * (sog_checkpoint_lock, see store.c), then reads the attempt on the newest
 * snapshot.  All attempts of one checkpoint therefore serialize with each
 * other and with the normal sink path; a claim (new generation) fences
 * every open attempt: it concludes them as lost, so their next event is
 * refused (55000) and their promotion answers "lost".
 *
 * All queries here go through one-off SPI plans: recovery is rare, and
 * clarity beats the microseconds a kept plan would save.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"

#include "access.h"
#include "compat.h"
#include "hash.h"
#include "position.h"
#include "store.h"

/* A provider's documented contract (sog.provider). */
typedef struct SogProvider
{
	bool		seek_inclusive;
	bool		no_late_arrivals;
	bool		empty_page_is_barrier;
	bool		may_backfill;
} SogProvider;

/* One attempt (sog.recovery row), as far as the logic needs it. */
typedef struct SogRecovery
{
	int64		id;
	int64		checkpoint_id;
	int64		generation;
	char	   *expired_token;
	char	   *provider;
	SogPosition *anchor;
	bool		anchor_inclusive;
	char	   *state;
	char	   *failure;
	SogPosition *last_position;
	SogPosition *advance_through;
	char	   *successor_token;
	bool		result_generation_isnull;
	int64		result_generation;
	SogPosition *result_applied;
	char	   *result_token;
} SogRecovery;

/*
 * Read a provider's contract.  A checkpoint without a provider gets the safe
 * defaults; a provider name that is not in sog.provider is an error.
 */
static void
read_provider(const char *name, SogProvider *p)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	p->seek_inclusive = false;
	p->no_late_arrivals = false;
	p->empty_page_is_barrier = false;
	p->may_backfill = true;
	if (name == NULL)
		return;
	values[0] = CStringGetTextDatum(name);
	sog_exec("SELECT seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill "
			 "FROM sog.provider WHERE name OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("provider \"%s\" is not described in sog.provider", sog_cut(name)),
				 errdetail("Recovery needs the provider's seek, ordering, empty-page and backfill contract."),
				 errhint("INSERT a row for \"%s\" into sog.provider.", sog_cut(name))));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	p->seek_inclusive = DatumGetBool(SPI_getbinval(tup, desc, 1, &isnull));
	p->no_late_arrivals = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
	p->empty_page_is_barrier = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	p->may_backfill = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
}

/* Does the provider document that an empty page proves "nothing more"? */
static bool
empty_page_is_barrier(const char *provider)
{
	SogProvider prov;

	read_provider(provider, &prov);
	return prov.empty_page_is_barrier;
}

static char *
get_text(HeapTuple tup, TupleDesc desc, const char *col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, SPI_fnumber(desc, col), &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

static SogPosition *
get_pos(HeapTuple tup, TupleDesc desc, const char *col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, SPI_fnumber(desc, col), &isnull);

	return isnull ? NULL : (SogPosition *) PG_DETOAST_DATUM_COPY(d);
}

/* Read attempt id on the newest snapshot; false if there is none. */
static bool
read_recovery(int64 id, SogRecovery *r)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	sog_exec("SELECT * FROM sog.recovery WHERE id OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->checkpoint_id = DatumGetInt64(SPI_getbinval(tup, desc, SPI_fnumber(desc, "checkpoint_id"), &isnull));
	r->generation = DatumGetInt64(SPI_getbinval(tup, desc, SPI_fnumber(desc, "generation"), &isnull));
	r->expired_token = get_text(tup, desc, "expired_token");
	r->provider = get_text(tup, desc, "provider");
	r->anchor = get_pos(tup, desc, "anchor");
	r->anchor_inclusive = DatumGetBool(SPI_getbinval(tup, desc, SPI_fnumber(desc, "anchor_inclusive"), &isnull));
	r->state = get_text(tup, desc, "state");
	r->failure = get_text(tup, desc, "failure");
	r->last_position = get_pos(tup, desc, "last_position");
	r->advance_through = get_pos(tup, desc, "advance_through");
	r->successor_token = get_text(tup, desc, "successor_token");
	d = SPI_getbinval(tup, desc, SPI_fnumber(desc, "result_generation"), &isnull);
	r->result_generation_isnull = isnull;
	r->result_generation = isnull ? 0 : DatumGetInt64(d);
	r->result_applied = get_pos(tup, desc, "result_applied_position");
	r->result_token = get_text(tup, desc, "result_provider_token");
	return true;
}

/*
 * Find attempt id, lock its checkpoint, and read both on the newest state.
 * Raises 22023 for an unknown attempt.  Runs inside SPI.
 */
static void
lock_recovery(int64 id, SogRecovery *r, SogCheckpoint *cp)
{
	if (!read_recovery(id, r))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("recovery attempt " INT64_FORMAT " does not exist", id),
				 errdetail("No row of sog.recovery has id " INT64_FORMAT ".", id),
				 errhint("Use the id returned by sog.begin_recovery().")));
	sog_checkpoint_lock(r->checkpoint_id, cp, SOG_ACCESS_CONSUMER, false);
	if (!read_recovery(id, r))
		elog(ERROR, "recovery attempt " INT64_FORMAT " vanished", id);
}

/*
 * Mark an attempt failed with reason, record the gap and fail the
 * checkpoint closed.  Returns the gap id.
 *
 * The gap runs from the applied position to the last position it may hold.
 * With exact set, that is to (the retention refusal knows exactly what is
 * gone); otherwise it is the furthest known read, the cursor or the event
 * that stopped the attempt, when that is above the applied position, and
 * else unknown (NULL: every position above the applied one is suspect).
 */
static int64
fail_attempt(SogCheckpoint *cp, int64 recovery_id, const char *reason,
			 const SogPosition *to, bool exact)
{
	Oid			types[3] = {INT8OID, TEXTOID, INT8OID};
	Datum		values[3];
	int64		gap_id;

	if (!exact && sog_position_cmp_nullable(cp->source_cursor, to) > 0)
		to = cp->source_cursor;
	if (!exact && sog_position_cmp_nullable(to, cp->applied_position) <= 0)
		to = NULL;
	gap_id = sog_gap_record(cp, reason, SOG_VERDICT_FAIL_CLOSED,
							cp->applied_position, to, NULL);
	values[0] = Int64GetDatum(recovery_id);
	values[1] = CStringGetTextDatum(reason);
	values[2] = Int64GetDatum(gap_id);
	sog_exec("UPDATE sog.recovery SET state = 'failed', failure = $2, gap_id = $3, "
			 "concluded_at = pg_catalog.now() WHERE id OPERATOR(pg_catalog.=) $1",
			 3, types, values, NULL, false);
	cp->state = SOG_STATE_FAILED_CLOSED;
	sog_checkpoint_write(cp);
	return gap_id;
}

/*
 * What a retention refusal proves lost: (applied, the last position below
 * retained_from].  For one component that is retained_from - 1; for tuples
 * see sog_position_predecessor.  When that is at or below the applied
 * position nothing unapplied is gone (the anchor itself was discarded):
 * the gap is then empty, to = from = the applied position.
 */
static const SogPosition *
retention_loss_end(const SogCheckpoint *cp, const SogPosition *retained_from)
{
	SogPosition *last = sog_position_predecessor(retained_from);

	if (last == NULL || sog_position_cmp_nullable(last, cp->applied_position) < 0)
		return cp->applied_position;
	return last;
}

/*
 * The first record an anchor's seek needs is above retained_from?  See the
 * contract, check 2.
 */
static bool
retention_lost(const SogCheckpoint *cp, const SogPosition *anchor,
			   bool inclusive, const SogPosition *retained_from)
{
	const SogPosition *first;

	if (retained_from == NULL)
		return false;
	if (cp->applied_position == NULL || anchor == NULL)
		first = sog_position_from_cstring("0");
	else if (inclusive)
		first = anchor;
	else
	{
		first = sog_position_successor(anchor);
		if (first == NULL)
			first = anchor;		/* tuples: above the anchor */
	}
	return sog_position_cmp(retained_from, first) > 0;
}

/*
 * SQL function: sog.begin_recovery(checkpoint_id bigint, generation bigint,
 *	   expired_token text, query_scope text, anchor sog.position,
 *	   anchor_inclusive boolean, retained_from sog.position DEFAULT NULL,
 *	   finalized_through sog.position DEFAULT NULL) -> sog.recovery
 */
PG_FUNCTION_INFO_V1(sog_begin_recovery);
Datum
sog_begin_recovery(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	SogProvider prov;
	char	   *expired = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *scope = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	SogPosition *anchor = PG_ARGISNULL(4) ? NULL : PG_GETARG_SOG_POSITION_P(4);
	bool		inclusive;
	SogPosition *retained = PG_ARGISNULL(6) ? NULL : PG_GETARG_SOG_POSITION_P(6);
	SogPosition *finalized = PG_ARGISNULL(7) ? NULL : PG_GETARG_SOG_POSITION_P(7);
	const char *failure = NULL;
	Oid			types[11];
	Datum		values[11];
	char		nulls[11];
	int64		id;
	bool		isnull;
	Datum		result;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 5, "anchor_inclusive");
	inclusive = PG_GETARG_BOOL(5);
	if (inclusive && anchor == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("an inclusive seek needs an anchor"),
				 errdetail("anchor is NULL and anchor_inclusive is true: there is no position to start at."),
				 errhint("Pass the applied position as the anchor, or anchor_inclusive false with a NULL anchor to read from the provider's beginning.")));

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "begin_recovery");
	if (!sog_text_eq(expired, sog_checkpoint_token(&cp)))
		ereport(ERROR,
				(errcode(ERRCODE_SOG_TOKEN_MISMATCH),
				 errmsg("provider token of checkpoint " INT64_FORMAT " is not the expired one", cp.id),
				 errdetail("The attempt names %s, but the checkpoint holds %s.",
						   sog_quoted(expired, "no token"),
						   sog_quoted(sog_checkpoint_token(&cp), "no token")),
				 errhint("Another transaction moved the token: re-read the checkpoint and retry with its token.")));

	sog_store_begin();
	read_provider(cp.provider, &prov);
	if (inclusive && !prov.seek_inclusive)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 cp.provider ?
				 errmsg("provider \"%s\" cannot seek inclusively", sog_cut(cp.provider)) :
				 errmsg("a checkpoint without a provider cannot seek inclusively"),
				 errdetail("The attempt asks to start at anchor %s itself, but sog.provider says seek_inclusive is false.",
						   sog_pos_str(anchor)),
				 errhint("Seek after the anchor (anchor_inclusive false), or correct the provider's row if its documentation allows an inclusive seek.")));

	/* the checks of the contract, in its order */
	if (!sog_text_eq(scope, cp.query_scope))
		failure = "scope_changed";
	else if (retention_lost(&cp, anchor, inclusive, retained))
		failure = "retention";
	else if (cp.prune_horizon && sog_position_cmp_nullable(anchor, cp.prune_horizon) <= 0)
		failure = "receipts_pruned";
	else if (sog_position_cmp_nullable(anchor, cp.applied_position) > 0 ||
			 (sog_position_cmp_nullable(anchor, cp.applied_position) == 0 &&
			  !inclusive && !prov.no_late_arrivals))
		failure = "coverage_unproven";
	else if (prov.may_backfill &&
			 (finalized == NULL ||
			  sog_position_cmp_nullable(finalized, cp.applied_position) < 0))
		failure = "no_finality";

	memset(nulls, ' ', sizeof(nulls));
	types[0] = INT8OID;
	values[0] = Int64GetDatum(cp.id);
	types[1] = INT8OID;
	values[1] = Int64GetDatum(cp.generation);
	types[2] = TEXTOID;
	values[2] = expired ? CStringGetTextDatum(expired) : (Datum) 0;
	nulls[2] = expired ? ' ' : 'n';
	types[3] = TEXTOID;
	values[3] = scope ? CStringGetTextDatum(scope) : (Datum) 0;
	nulls[3] = scope ? ' ' : 'n';
	types[4] = TEXTOID;
	values[4] = cp.provider ? CStringGetTextDatum(cp.provider) : (Datum) 0;
	nulls[4] = cp.provider ? ' ' : 'n';
	types[5] = sog_position_type();
	values[5] = PointerGetDatum(anchor);
	nulls[5] = anchor ? ' ' : 'n';
	types[6] = BOOLOID;
	values[6] = BoolGetDatum(inclusive);
	types[7] = sog_position_type();
	values[7] = PointerGetDatum(retained);
	nulls[7] = retained ? ' ' : 'n';
	types[8] = sog_position_type();
	values[8] = PointerGetDatum(finalized);
	nulls[8] = finalized ? ' ' : 'n';
	types[9] = sog_position_type();
	values[9] = PointerGetDatum(cp.applied_position);
	nulls[9] = cp.applied_position ? ' ' : 'n';
	types[10] = TEXTOID;
	values[10] = CStringGetTextDatum(sog_state_label(cp.state));
	sog_exec("INSERT INTO sog.recovery (checkpoint_id, generation, expired_token, "
			 "query_scope, provider, anchor, anchor_inclusive, retained_from, "
			 "finalized_through, applied_at_start, checkpoint_state_at_start) "
			 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
			 11, types, values, nulls, false);
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	if (failure && strcmp(failure, "retention") == 0)
		fail_attempt(&cp, id, failure, retention_loss_end(&cp, retained), true);
	else if (failure)
		fail_attempt(&cp, id, failure, cp.source_cursor, false);

	values[0] = Int64GetDatum(id);
	sog_exec("SELECT r FROM sog.recovery r WHERE r.id OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	/* the whole-row datum (dropped columns included), in the caller's context */
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = datumCopy(result, false, -1);
	sog_store_end();
	PG_RETURN_DATUM(result);
}

/*
 * SQL function: sog.recovery_event(recovery_id bigint, position sog.position,
 *	   payload_digest bytea) -> text
 */
PG_FUNCTION_INFO_V1(sog_recovery_event);
Datum
sog_recovery_event(PG_FUNCTION_ARGS)
{
	int64		id;
	SogPosition *pos;
	bytea	   *digest;
	const uint8 *dig;
	SogRecovery r;
	SogCheckpoint cp;
	SogReceiptRun probe;
	uint8		have[SOG_DIGEST_LEN];
	const char *outcome = NULL;
	const char *stop = NULL;
	Oid			types[3];
	Datum		values[3];

	sog_require_arg(fcinfo, 0, "recovery_id");
	sog_require_arg(fcinfo, 1, "position");
	sog_require_arg(fcinfo, 2, "payload_digest");
	id = PG_GETARG_INT64(0);
	pos = PG_GETARG_SOG_POSITION_P(1);
	digest = PG_GETARG_BYTEA_PP(2);
	sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(digest));
	dig = (const uint8 *) VARDATA_ANY(digest);

	sog_store_begin();
	lock_recovery(id, &r, &cp);
	if (strcmp(r.state, "open") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery attempt " INT64_FORMAT " is %s", id, r.state),
				 strcmp(r.state, "lost") == 0 && !r.result_generation_isnull ?
				 errdetail("Only an open attempt records events; this one was concluded when the checkpoint moved on to generation " INT64_FORMAT ".",
						   r.result_generation) :
				 errdetail("Only an open attempt records events%s%s.",
						   r.failure ? "; it failed with " : "", r.failure ? r.failure : ""),
				 errhint("Begin a new attempt with sog.begin_recovery() once the checkpoint allows it.")));
	sog_check_generation(&cp, r.generation, "recovery event");

	sog_receipt_run_init(&probe, 1);
	if (r.last_position && sog_position_cmp(pos, r.last_position) <= 0)
		stop = "coverage_gap";	/* not above the previous event */
	else if (r.last_position == NULL && !r.anchor_inclusive && r.anchor &&
			 sog_position_cmp(pos, r.anchor) <= 0)
		stop = "coverage_gap";	/* an exclusive seek returned the anchor or less */
	else if (r.last_position == NULL && r.anchor_inclusive &&
			 sog_position_cmp_nullable(r.anchor, cp.applied_position) <= 0 &&
			 sog_position_cmp_nullable(pos, r.anchor) != 0)
		stop = "coverage_gap";	/* an inclusive seek must start at the anchor */
	else if (sog_position_cmp_nullable(pos, cp.applied_position) <= 0)
	{
		if (!sog_receipt_lookup(cp.id, pos, have, &probe))
			stop = "unverifiable";
		else if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			stop = "mismatch";
		else
			outcome = "verified";
	}
	else if (cp.state != SOG_STATE_RUNNING)
	{
		/*
		 * The temporal-skew rule, as for apply: nothing above the applied
		 * position is written or counted while a gap is unverified
		 * (replaying) or unresolved (failed_closed).  Verify the gap first.
		 */
		sog_report_gap_pending(&cp, pos);
	}
	else if (cp.receipts_through &&
			 sog_position_cmp(pos, cp.receipts_through) <= 0 &&
			 sog_receipt_lookup(cp.id, pos, have, &probe))
	{
		if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			stop = "mismatch";
		else
			outcome = "duplicate";
	}
	else
	{
		SogReceiptRun run;

		sog_receipt_run_init(&run, 1);
		sog_receipt_run_add(&run, pos, dig);
		sog_receipt_run_store(cp.id, &run);
		if (sog_position_cmp_nullable(pos, cp.receipts_through) > 0)
		{
			cp.receipts_through = pos;
			sog_checkpoint_write(&cp);
		}
		outcome = "apply";
	}

	if (stop)
	{
		fail_attempt(&cp, id, stop, pos, false);
		sog_store_end();
		PG_RETURN_TEXT_P(cstring_to_text(stop));
	}

	types[0] = INT8OID;
	values[0] = Int64GetDatum(id);
	types[1] = sog_position_type();
	values[1] = PointerGetDatum(pos);
	types[2] = TEXTOID;
	values[2] = CStringGetTextDatum(outcome);
	sog_exec("UPDATE sog.recovery SET last_position = $2, "
			 "events_verified = events_verified OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'verified')::int), "
			 "events_applied = events_applied OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'apply')::int), "
			 "events_duplicate = events_duplicate OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'duplicate')::int), "
			 "advance_through = CASE WHEN $3 OPERATOR(pg_catalog.=) 'verified' THEN advance_through ELSE $2 END "
			 "WHERE id OPERATOR(pg_catalog.=) $1",
			 3, types, values, NULL, false);
	sog_store_end();
	PG_RETURN_TEXT_P(cstring_to_text(outcome));
}

/*
 * SQL function: sog.promote(recovery_id bigint, successor_token text,
 *	   page_last sog.position) -> TABLE(promoted boolean, generation bigint,
 *	   applied_position sog.position, provider_token text, reason text)
 */
PG_FUNCTION_INFO_V1(sog_promote);
Datum
sog_promote(PG_FUNCTION_ARGS)
{
	int64		id;
	char	   *successor = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	SogPosition *page_last = PG_ARGISNULL(2) ? NULL : PG_GETARG_SOG_POSITION_P(2);
	SogRecovery r;
	SogCheckpoint cp;
	bool		promoted = false;
	const char *reason;
	int64		out_generation;
	SogPosition *out_applied;
	char	   *out_token;
	ReturnSetInfo *rsinfo;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	sog_require_arg(fcinfo, 0, "recovery_id");
	id = PG_GETARG_INT64(0);
	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	sog_store_begin();
	lock_recovery(id, &r, &cp);
	out_generation = cp.generation;
	out_applied = cp.applied_position;
	out_token = sog_checkpoint_token(&cp);

	if (strcmp(r.state, "promoted") == 0)
	{
		if (!sog_text_eq(successor, r.successor_token))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("recovery attempt " INT64_FORMAT " was promoted with another token", id),
					 errdetail("It installed %s; this call names %s.",
							   sog_quoted(r.successor_token, "no token"),
							   sog_quoted(successor, "no token")),
					 errhint("Continue from the checkpoint's current token.")));
		promoted = true;
		reason = "already_promoted";
		out_generation = r.result_generation;
		out_applied = r.result_applied;
		out_token = r.result_token;
	}
	else if (strcmp(r.state, "lost") == 0)
	{
		reason = "lost";
		out_generation = r.result_generation;
		out_applied = r.result_applied;
		out_token = r.result_token;
	}
	else if (strcmp(r.state, "failed") == 0 || cp.state != SOG_STATE_RUNNING ||
			 sog_gap_count_open(cp.id) > 0)
		reason = "unresolved";	/* an unverified or unresolved gap */
	else if (sog_position_cmp_nullable(page_last, r.last_position) != 0)
		reason = "page_incomplete";
	else if (page_last == NULL && !empty_page_is_barrier(r.provider))
		reason = "empty_page_not_barrier";
	else
	{
		Oid			types[5] = {INT8OID, TEXTOID, INT8OID, INT8OID, TEXTOID};
		Datum		v[5];
		char		n[5] = {' ', ' ', ' ', ' ', ' '};
		const char *state;
		bool		won;

		won = cp.generation == r.generation &&
			sog_text_eq(sog_checkpoint_token(&cp), r.expired_token);
		if (won)
		{
			sog_checkpoint_set_token(&cp, successor);
			if (sog_position_cmp_nullable(r.advance_through, cp.applied_position) > 0)
				cp.applied_position = r.advance_through;
			if (sog_position_cmp_nullable(cp.applied_position, cp.receipts_through) > 0)
				cp.receipts_through = cp.applied_position;
			if (sog_position_cmp_nullable(cp.source_cursor, cp.applied_position) <= 0)
				sog_clear_read_boundary(&cp);	/* the page covers all that was read */
			sog_check_generation_room(&cp);
			cp.generation++;
			cp.claimed = true;
			sog_checkpoint_write(&cp);
			sog_recovery_fence_open(&cp, id);
			promoted = true;
			reason = "promoted";
			state = "promoted";
		}
		else
		{
			reason = "lost";
			state = "lost";
		}
		out_generation = cp.generation;
		out_applied = cp.applied_position;
		out_token = sog_checkpoint_token(&cp);

		v[0] = Int64GetDatum(id);
		v[1] = CStringGetTextDatum(state);
		v[2] = Int64GetDatum(out_generation);
		v[3] = (Datum) 0;
		n[3] = 'n';
		v[4] = successor ? CStringGetTextDatum(successor) : (Datum) 0;
		n[4] = successor ? ' ' : 'n';
		sog_exec("UPDATE sog.recovery SET state = $2, result_generation = $3, "
				 "successor_token = CASE WHEN $2 OPERATOR(pg_catalog.=) 'promoted' THEN $5 END, "
				 "concluded_at = pg_catalog.now() WHERE id OPERATOR(pg_catalog.=) $1",
				 5, types, v, n, false);
		{
			Oid			t2[3] = {INT8OID, sog_position_type(), TEXTOID};
			Datum		v2[3];
			char		n2[3] = {' ', ' ', ' '};

			v2[0] = Int64GetDatum(id);
			v2[1] = PointerGetDatum(out_applied);
			n2[1] = out_applied ? ' ' : 'n';
			v2[2] = out_token ? CStringGetTextDatum(out_token) : (Datum) 0;
			n2[2] = out_token ? ' ' : 'n';
			sog_exec("UPDATE sog.recovery SET result_applied_position = $2, "
					 "result_provider_token = $3 WHERE id OPERATOR(pg_catalog.=) $1",
					 3, t2, v2, n2, false);
		}
	}
	sog_store_end();

	values[0] = BoolGetDatum(promoted);
	values[1] = Int64GetDatum(out_generation);
	values[2] = PointerGetDatum(out_applied);
	nulls[2] = out_applied == NULL;
	if (out_token)
		values[3] = CStringGetTextDatum(out_token);
	nulls[3] = out_token == NULL;
	values[4] = CStringGetTextDatum(reason);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
