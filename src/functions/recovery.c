/*-------------------------------------------------------------------------
 *
 * functions/recovery.c
 *	  Expired-token recovery (docs/consumer.md: expired-token recovery): begin_recovery,
 *	  recovery_event, and every query of recovery; promote, its end, is in
 *	  functions/promote.c (functions/recovery.h is what the two share).
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
 * (sog_checkpoint_lock, checkpoint/checkpoint.c), then reads the attempt on
 * the newest snapshot.  All attempts of one checkpoint therefore serialize
 * with each other and with the normal sink path; a claim (new generation)
 * fences every open attempt: it concludes them as lost, so their next event is
 * refused (55000) and their promotion answers "lost".
 *
 * Every query is in one place below (SQL_*), as one-off SPI plans.
 *
 * Relies on: store/access.c, checkpoint/checkpoint.c, store/gap.c,
 * type/hash.c, type/position.c, store/receipt.c, store/tables.c, type/util.c.
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

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "compat.h"
#include "functions/recovery.h"
#include "store/access.h"
#include "store/gap.h"
#include "store/receipt.h"
#include "type/hash.h"
#include "type/position.h"
#include "type/util.h"

/* A provider's documented contract (sog.provider). */
typedef struct SogProvider
{
	bool		seek_inclusive;
	bool		no_late_arrivals;
	bool		empty_page_is_barrier;
	bool		may_backfill;
} SogProvider;


/*
 * Every query of recovery, in one place: the attempts live in sog.recovery,
 * the providers' contracts in sog.provider.  One-off plans (recovery is
 * rare; clarity beats the microseconds a kept plan would save), run on the
 * newest snapshot under the checkpoint's lock.
 */
static const char *const SQL_PROVIDER =
"SELECT seek_inclusive, no_late_arrivals, empty_page_is_barrier, may_backfill "
"FROM sog.provider WHERE name OPERATOR(pg_catalog.=) $1";
static const char *const SQL_ATTEMPT =
"SELECT * FROM sog.recovery WHERE id OPERATOR(pg_catalog.=) $1";
static const char *const SQL_ATTEMPT_ROW =
"SELECT r FROM sog.recovery r WHERE r.id OPERATOR(pg_catalog.=) $1";
static const char *const SQL_BEGIN =
"INSERT INTO sog.recovery (checkpoint_id, generation, expired_token, "
"query_scope, provider, anchor, anchor_inclusive, retained_from, "
"finalized_through, applied_at_start, checkpoint_state_at_start) "
"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";
static const char *const SQL_OTHER_SCOPE =
"SELECT id FROM sog.recovery WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
"AND state OPERATOR(pg_catalog.=) 'open' AND query_scope IS DISTINCT FROM $2 "
"ORDER BY id USING OPERATOR(pg_catalog.<)";
static const char *const SQL_FAIL =
"UPDATE sog.recovery SET state = 'failed', failure = $2, gap_id = $3, "
"concluded_at = pg_catalog.now() WHERE id OPERATOR(pg_catalog.=) $1";
static const char *const SQL_EVENT =
"UPDATE sog.recovery SET last_position = $2, "
"events_verified = events_verified OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'verified')::int), "
"events_applied = events_applied OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'apply')::int), "
"events_duplicate = events_duplicate OPERATOR(pg_catalog.+) (($3 OPERATOR(pg_catalog.=) 'duplicate')::int), "
"advance_through = CASE WHEN $3 OPERATOR(pg_catalog.=) 'verified' THEN advance_through ELSE $2 END "
"WHERE id OPERATOR(pg_catalog.=) $1";
static const char *const SQL_CONCLUDE =
"UPDATE sog.recovery SET state = $2, result_generation = $3, "
"successor_token = CASE WHEN $2 OPERATOR(pg_catalog.=) 'promoted' THEN $4 END, "
"result_applied_position = $5, result_provider_token = $6, "
"concluded_at = pg_catalog.now() WHERE id OPERATOR(pg_catalog.=) $1";

/* The parameters of one query, added in order. */
typedef struct Params
{
	int			n;
	Oid			types[12];
	Datum		values[12];
	char		nulls[12];
} Params;

static void
param(Params *p, Oid type, Datum value, bool isnull)
{
	Assert(p->n < (int) lengthof(p->types));
	p->types[p->n] = type;
	p->values[p->n] = isnull ? (Datum) 0 : value;
	p->nulls[p->n] = isnull ? 'n' : ' ';
	p->n++;
}

static void
param_text(Params *p, const char *s)
{
	param(p, TEXTOID, s ? CStringGetTextDatum(s) : (Datum) 0, s == NULL);
}

static void
param_pos(Params *p, const SogPosition *pos)
{
	param(p, sog_position_type(), PointerGetDatum(pos), pos == NULL);
}

static int
run_recovery_sql(const char *sql, Params *p, bool read_only)
{
	return sog_exec(sql, p->n, p->types, p->values, p->nulls, read_only);
}

/*
 * Read a provider's contract.  A checkpoint without a provider gets the safe
 * defaults; a provider name that is not in sog.provider is an error.
 */
static void
read_provider(const char *name, SogProvider *p)
{
	Params		params = {0};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	p->seek_inclusive = false;
	p->no_late_arrivals = false;
	p->empty_page_is_barrier = false;
	p->may_backfill = true;
	if (name == NULL)
		return;
	param_text(&params, name);
	run_recovery_sql(SQL_PROVIDER, &params, true);
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
bool
sog_recovery_empty_page_is_barrier(const char *provider)
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

/* sog.recovery.state's values, in SogRecoveryState's order. */
static const char *const recovery_state_labels[] = {"open", "failed", "promoted", "lost"};

const char *
sog_recovery_state_label(SogRecoveryState state)
{
	return recovery_state_labels[state];
}

static SogRecoveryState
recovery_state_parse(const char *label)
{
	for (int i = 0; i < (int) lengthof(recovery_state_labels); i++)
		if (strcmp(label, recovery_state_labels[i]) == 0)
			return (SogRecoveryState) i;
	elog(ERROR, "unknown recovery attempt state \"%s\"", label);
	return SOG_RECOVERY_OPEN;	/* keep compiler quiet */
}

/* Read attempt id on the newest snapshot; false if there is none. */
static bool
read_recovery(int64 id, SogRecovery *r)
{
	Params		params = {0};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	param(&params, INT8OID, Int64GetDatum(id), false);
	run_recovery_sql(SQL_ATTEMPT, &params, true);
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
	r->query_scope = get_text(tup, desc, "query_scope");
	r->anchor = get_pos(tup, desc, "anchor");
	r->anchor_inclusive = DatumGetBool(SPI_getbinval(tup, desc, SPI_fnumber(desc, "anchor_inclusive"), &isnull));
	r->retained_from = get_pos(tup, desc, "retained_from");
	r->state = recovery_state_parse(get_text(tup, desc, "state"));
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
 * Raises 22023 for an unknown attempt (42501, as for another consumer's
 * attempt, to a role whose grants do not cover every checkpoint).  Runs
 * inside SPI.
 */
void
sog_recovery_lock(int64 id, SogRecovery *r, SogCheckpoint *cp)
{
	char	   *what = psprintf("recovery attempt " INT64_FORMAT, id);

	if (!read_recovery(id, r))
	{
		sog_check_access_missing(what, SOG_ACCESS_CONSUMER);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("recovery attempt " INT64_FORMAT " does not exist", id),
				 errdetail("No row of sog.recovery has id " INT64_FORMAT ".", id),
				 errhint("Use the id returned by sog.begin_recovery().")));
	}
	/* refused as the attempt, not as its checkpoint */
	sog_check_access_to(what, sog_checkpoint_consumer(r->checkpoint_id, SOG_ACCESS_CONSUMER),
						SOG_ACCESS_CONSUMER);
	sog_checkpoint_lock(r->checkpoint_id, cp, SOG_ACCESS_CONSUMER, false);
	if (!read_recovery(id, r))
		elog(ERROR, "recovery attempt " INT64_FORMAT " vanished", id);
}

/*
 * Mark an attempt failed with reason, record the gap and fail the
 * checkpoint closed.  Returns the gap id.
 *
 * The gap runs from the applied position (the read boundary's base, if an
 * apply entered it: checkpoint/boundary.c) to the last position it may hold.
 * With exact set, that is to (the retention refusal knows exactly what is
 * gone), and the gap starts next to the losses already on record (open
 * gaps, bounded ones accepted as lost: store/gap.c sog_gap_losses_through),
 * as report_gap's does; otherwise it is the furthest known read, the
 * cursor or the event that stopped the attempt, when that is above the
 * applied position, and else unknown (NULL: every position above the
 * applied one is suspect).
 */
int64
sog_recovery_fail(SogCheckpoint *cp, int64 recovery_id, const char *reason,
				  const SogPosition *to, bool exact)
{
	Params		params = {0};
	const SogPosition *from = sog_boundary_base(cp);
	const SogPosition *reached;
	int64		gap_id;

	if (!exact && sog_position_cmp_nullable(cp->source_cursor, to) > 0)
		to = cp->source_cursor;
	if (!exact && sog_position_cmp_nullable(to, cp->applied_position) <= 0)
		to = NULL;
	/* an exact loss starts next to the losses on record, as report_gap's */
	if (exact && sog_gap_losses_through(cp->id, from, to, &reached) == 0)
		from = reached;
	gap_id = sog_gap_record(cp->id, cp->generation, reason, SOG_VERDICT_FAIL_CLOSED,
							from, to, NULL);
	if (exact)
		sog_boundary_record_rest(cp, to);	/* noted records beyond a loss */
	param(&params, INT8OID, Int64GetDatum(recovery_id), false);
	param_text(&params, reason);
	param(&params, INT8OID, Int64GetDatum(gap_id), false);
	run_recovery_sql(SQL_FAIL, &params, false);
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
 * The refusal of a new attempt, if any (in the order docs/consumer.md's recovery section gives),
 * or NULL when the attempt may open.
 */
static const char *
refusal(const SogCheckpoint *cp, const SogProvider *prov, const char *scope,
		const SogPosition *anchor, bool inclusive, const SogPosition *retained,
		const SogPosition *finalized)
{
	if (!sog_text_eq(scope, cp->query_scope))
		return "scope_changed";
	if (retention_lost(cp, anchor, inclusive, retained) &&
		!sog_gap_loss_accepted(cp->id, cp->applied_position,
							   retention_loss_end(cp, retained)))
		return "retention";		/* unless an operator accepted that loss */
	if (cp->prune_horizon && sog_position_cmp_nullable(anchor, cp->prune_horizon) <= 0)
		return "receipts_pruned";
	if (sog_position_cmp_nullable(anchor, cp->applied_position) > 0 ||
		(sog_position_cmp_nullable(anchor, cp->applied_position) == 0 &&
		 !inclusive && !prov->no_late_arrivals))
		return "coverage_unproven";
	if (prov->may_backfill &&
		(finalized == NULL ||
		 sog_position_cmp_nullable(finalized, cp->applied_position) < 0))
		return "no_finality";
	return NULL;
}

/* The attempt row as a whole-row datum, in the caller's memory context. */
static Datum
attempt_row(int64 id)
{
	Params		params = {0};
	bool		isnull;
	Datum		d;

	param(&params, INT8OID, Int64GetDatum(id), false);
	run_recovery_sql(SQL_ATTEMPT_ROW, &params, true);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return datumCopy(d, false, -1);
}

/* Raise 22023 / SG006 / 22023 for what no attempt may begin with. */
static void
check_begin(SogCheckpoint *cp, const SogProvider *prov, const char *expired,
			const SogPosition *anchor, bool inclusive)
{
	if (!sog_text_eq(expired, sog_checkpoint_token(cp)))
		ereport(ERROR,
				(errcode(ERRCODE_SOG_TOKEN_MISMATCH),
				 errmsg("provider token of checkpoint " INT64_FORMAT " is not the expired one", cp->id),
				 errdetail("The attempt names %s, but the checkpoint holds %s.",
						   sog_quoted(expired, "no token"),
						   sog_quoted(sog_checkpoint_token(cp), "no token")),
				 errhint("Another transaction moved the token: re-read the checkpoint and retry with its token.")));
	if (inclusive && !prov->seek_inclusive)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 cp->provider ?
				 errmsg("provider \"%s\" cannot seek inclusively", sog_cut(cp->provider)) :
				 errmsg("a checkpoint without a provider cannot seek inclusively"),
				 errdetail("The attempt asks to start at anchor %s itself, but sog.provider says seek_inclusive is false.",
						   sog_position_label(anchor)),
				 errhint("Seek after the anchor (anchor_inclusive false), or correct the provider's row if its documentation allows an inclusive seek.")));
}

/*
 * SQL function: sog.begin_recovery(checkpoint_id bigint, generation bigint,
 *	   expired_token text, query_scope text, anchor sog.position,
 *	   anchor_inclusive boolean, retained_from sog.position DEFAULT NULL,
 *	   finalized_through sog.position DEFAULT NULL) -> sog.recovery
 */
SOG_ENTRY(sog_begin_recovery, true)
{
	SogCheckpoint cp;
	SogProvider prov;
	char	   *expired = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *scope = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	SogPosition *anchor = PG_ARGISNULL(4) ? NULL : PG_GETARG_SOG_POSITION_P(4);
	SogPosition *retained = PG_ARGISNULL(6) ? NULL : PG_GETARG_SOG_POSITION_P(6);
	SogPosition *finalized = PG_ARGISNULL(7) ? NULL : PG_GETARG_SOG_POSITION_P(7);
	bool		inclusive;
	const char *failure;
	Params		params = {0};
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
				 errhint("Pass the applied position as the anchor; with nothing applied yet there is nothing to verify, so read from the provider's beginning without a recovery attempt.")));

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "begin_recovery");
	sog_store_begin();
	read_provider(cp.provider, &prov);
	check_begin(&cp, &prov, expired, anchor, inclusive);
	failure = refusal(&cp, &prov, scope, anchor, inclusive, retained, finalized);

	param(&params, INT8OID, Int64GetDatum(cp.id), false);
	param(&params, INT8OID, Int64GetDatum(cp.generation), false);
	param_text(&params, expired);
	param_text(&params, scope);
	param_text(&params, cp.provider);
	param_pos(&params, anchor);
	param(&params, BOOLOID, BoolGetDatum(inclusive), false);
	param_pos(&params, retained);
	param_pos(&params, finalized);
	param_pos(&params, cp.applied_position);
	param_text(&params, sog_state_label(cp.state));
	run_recovery_sql(SQL_BEGIN, &params, false);
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	if (failure && strcmp(failure, "retention") == 0)
		sog_recovery_fail(&cp, id, failure, retention_loss_end(&cp, retained), true);
	else if (failure)
		sog_recovery_fail(&cp, id, failure, cp.source_cursor, false);

	result = attempt_row(id);	/* dropped columns included */
	sog_store_end();
	PG_RETURN_DATUM(result);
}

/* Raise 55000 unless the attempt is open. */
static void
check_open(const SogRecovery *r)
{
	if (r->state == SOG_RECOVERY_OPEN)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("recovery attempt " INT64_FORMAT " is %s", r->id, sog_recovery_state_label(r->state)),
			 r->state == SOG_RECOVERY_LOST && !r->result_generation_isnull ?
			 errdetail("Only an open attempt records events; this one was concluded when the checkpoint moved on to generation " INT64_FORMAT ".",
					   r->result_generation) :
			 errdetail("Only an open attempt records events%s%s.",
					   r->failure ? "; it failed with " : "", r->failure ? r->failure : ""),
			 errhint("Begin a new attempt with sog.begin_recovery() once the checkpoint allows it.")));
}

/*
 * An inclusive seek whose anchor the source no longer holds: the attempt
 * opened only because an operator accepted the loss (applied, retained_from
 * - 1] (refusal), so the page starts at or past retained_from, not at the
 * anchor.
 */
static bool
anchor_gone_accepted(const SogRecovery *r, const SogPosition *pos)
{
	return r->retained_from && r->anchor &&
		sog_position_cmp(r->retained_from, r->anchor) > 0 &&
		sog_position_cmp(pos, r->retained_from) >= 0;
}

/*
 * Decide one fetched event of an open attempt: returns its outcome
 * (verified, apply, duplicate) or, through *stop, what stops the attempt
 * (coverage_gap, unverifiable, mismatch).  An event to apply gets its
 * receipt here.  SG004 above the applied position unless running.
 */
static const char *
decide_event(const SogRecovery *r, SogCheckpoint *cp, SogPosition *pos,
			 const uint8 *dig, const char **stop)
{
	SogReceiptRun probe;
	SogReceiptRun run;
	uint8		have[SOG_DIGEST_LEN];

	sog_receipt_run_init(&probe, 1);
	if ((r->last_position && sog_position_cmp(pos, r->last_position) <= 0) ||
		(r->last_position == NULL && !r->anchor_inclusive && r->anchor &&
		 sog_position_cmp(pos, r->anchor) <= 0) ||
		(r->last_position == NULL && r->anchor_inclusive &&
		 sog_position_cmp_nullable(r->anchor, cp->applied_position) <= 0 &&
		 sog_position_cmp_nullable(pos, r->anchor) != 0 &&
		 !anchor_gone_accepted(r, pos)))
	{
		/*
		 * Not above the previous event; an exclusive seek returned the anchor
		 * or less; an inclusive seek did not start at the anchor (nor, when
		 * the anchor is gone with an accepted loss, at or past
		 * retained_from).
		 */
		*stop = "coverage_gap";
		return NULL;
	}
	if (sog_position_cmp_nullable(pos, cp->applied_position) <= 0)
	{
		if (!sog_receipt_lookup(cp->id, cp->prune_horizon, pos, have, &probe))
			*stop = "unverifiable";
		else if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			*stop = "mismatch";
		return *stop ? NULL : "verified";
	}

	/*
	 * The temporal-skew rule, as for apply: nothing above the applied
	 * position is written or counted while a gap is unverified (replaying) or
	 * unresolved (failed_closed).  Verify the gap first.
	 */
	if (cp->state != SOG_STATE_RUNNING)
		sog_report_gap_pending(cp, pos);
	if (cp->receipts_through && sog_position_cmp(pos, cp->receipts_through) <= 0 &&
		sog_receipt_lookup(cp->id, cp->prune_horizon, pos, have, &probe))
	{
		if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			*stop = "mismatch";
		return *stop ? NULL : "duplicate";
	}
	sog_receipt_run_init(&run, 1);
	sog_receipt_run_add(&run, pos, dig);
	sog_receipt_run_store(cp->id, cp->receipt_ring, &run);
	if (sog_position_cmp_nullable(pos, cp->receipts_through) > 0)
	{
		cp->receipts_through = pos;
		sog_checkpoint_write(cp);
	}
	return "apply";
}

/*
 * SQL function: sog.recovery_event(recovery_id bigint, position sog.position,
 *	   payload_digest bytea) -> text
 */
SOG_ENTRY(sog_recovery_event, true)
{
	int64		id;
	SogPosition *pos;
	bytea	   *digest;
	SogRecovery r;
	SogCheckpoint cp;
	const char *outcome;
	const char *stop = NULL;
	Params		params = {0};

	sog_require_arg(fcinfo, 0, "recovery_id");
	sog_require_arg(fcinfo, 1, "position");
	sog_require_arg(fcinfo, 2, "payload_digest");
	id = PG_GETARG_INT64(0);
	pos = PG_GETARG_SOG_POSITION_P(1);
	digest = PG_GETARG_BYTEA_PP(2);
	sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(digest));

	sog_store_begin();
	sog_recovery_lock(id, &r, &cp);
	check_open(&r);
	sog_check_generation(&cp, r.generation, "recovery event");
	outcome = decide_event(&r, &cp, pos, (const uint8 *) VARDATA_ANY(digest), &stop);
	if (stop)
	{
		sog_recovery_fail(&cp, id, stop, pos, false);
		sog_store_end();
		PG_RETURN_TEXT_P(cstring_to_text(stop));
	}
	param(&params, INT8OID, Int64GetDatum(id), false);
	param_pos(&params, pos);
	param_text(&params, outcome);
	run_recovery_sql(SQL_EVENT, &params, false);
	sog_store_end();
	PG_RETURN_TEXT_P(cstring_to_text(outcome));
}

/*
 * The checkpoint's query_scope is now scope (sog.reconfigure): every open
 * attempt begun under another scope fails with scope_changed, as
 * begin_recovery refuses one (a gap, failed_closed).  Its page was fetched
 * under the old scope: records that only the new scope selects between its
 * anchor and the cursor were never fetched, so it must not promote.  Runs
 * inside SPI, under the checkpoint's lock.  Returns how many failed.
 */
int
sog_recovery_fail_other_scope(SogCheckpoint *cp, const char *scope)
{
	Params		params = {0};
	uint64		i;
	uint64		n;
	int64	   *ids;
	bool		isnull;

	param(&params, INT8OID, Int64GetDatum(cp->id), false);
	param_text(&params, scope);
	run_recovery_sql(SQL_OTHER_SCOPE, &params, true);
	n = SPI_processed;
	ids = palloc(sizeof(int64) * (n + 1));
	for (i = 0; i < n; i++)
		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	for (i = 0; i < n; i++)
		sog_recovery_fail(cp, ids[i], "scope_changed", cp->source_cursor, false);
	return (int) n;
}

/*
 * Record an attempt's conclusion by promote: promoted (with its successor
 * token) or lost, and the checkpoint it left.
 */
void
sog_recovery_conclude(int64 id, bool promoted, int64 generation, const char *successor,
					  const SogPosition *applied, const char *token)
{
	Params		params = {0};

	param(&params, INT8OID, Int64GetDatum(id), false);
	param_text(&params, promoted ? "promoted" : "lost");
	param(&params, INT8OID, Int64GetDatum(generation), false);
	param_text(&params, successor);
	param_pos(&params, applied);
	param_text(&params, token);
	run_recovery_sql(SQL_CONCLUDE, &params, false);
}

/*
 * Conclude every other open recovery attempt of a checkpoint whose
 * generation just changed (a claim, or another attempt's promotion): they
 * can no longer win, so they are "lost" and show the checkpoint as it is
 * now.  An attempt whose page committed events above the applied position
 * (its worker stopped before promote) leaves their effects and receipts:
 * they are not counted in the applied position, which stays "the last
 * position applied outside recovery or promoted"; re-delivered, they are
 * answered false (apply) or duplicate (recovery_event), and the applied
 * position moves through them then.  A claim (except_id 0) tells such an
 * attempt in a NOTICE; its row shows it (result_applied_position below
 * advance_through), and sog.status in recovered_through.  Runs inside SPI, under the
 * checkpoint's lock.
 */
void
sog_recovery_fence_open(SogCheckpoint *cp, int64 except_id)
{
	uint64		i;
	Oid			types[5] = {INT8OID, INT8OID, INT8OID, sog_position_type(), TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(cp->id);
	values[1] = Int64GetDatum(except_id);
	values[2] = Int64GetDatum(cp->generation);
	POS_ARG(cp->applied_position, 3);
	TEXT_ARG(sog_checkpoint_token(cp), 4);
	/* the attempts in id order: the notices do not follow the heap's */
	sog_exec("WITH lost AS (UPDATE sog.recovery SET state = 'lost', result_generation = $3, "
			 "result_applied_position = $4, result_provider_token = $5, "
			 "concluded_at = pg_catalog.now() "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND id OPERATOR(pg_catalog.<>) $2 AND state OPERATOR(pg_catalog.=) 'open' "
			 "RETURNING id, advance_through::text AS through, "
			 "advance_through OPERATOR(sog.>) $4 OR ($4 IS NULL AND advance_through IS NOT NULL) AS above) "
			 "SELECT id, through, above FROM lost ORDER BY id",
			 5, types, values, nulls, false);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		above = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));

		if (isnull || !above || except_id != 0)
			continue;			/* told only to a claim (a promotion counts
								 * its own page) */
		ereport(NOTICE,
				(errmsg("recovery attempt %s of checkpoint " INT64_FORMAT " was concluded as lost with committed events above the applied position",
						SPI_getvalue(tup, desc, 1), cp->id),
				 errdetail("Its events through %s are in the sink and have receipts, but the applied position stays %s: the attempt did not promote.",
						   SPI_getvalue(tup, desc, 2), sog_position_label(cp->applied_position)),
				 errhint("Resume from the applied position as usual: re-delivered, those events are answered false (or duplicate in a new recovery attempt) and the applied position moves through them.")));
	}
}
