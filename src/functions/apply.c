/*-------------------------------------------------------------------------
 *
 * functions/apply.c
 *	  Applying events in the sink transaction (docs/consumer.md):
 *	  note_read, apply, apply_batch (and apply_batch_int8, apply_run) and
 *	  commit_page; and a whole page in one call (apply_run_page,
 *	  apply_batch_page: the apply, the next page's note and the token's
 *	  compare-and-swap on one lock, with one write of the row).
 *
 * Locking: each function first calls sog_checkpoint_lock()
 * (checkpoint/checkpoint.c), which checks the caller's grant, serializes every
 * change of that checkpoint on its row and reads the newest committed version;
 * then it checks the caller's generation (SG001) before anything else.  The
 * lock is held to the end of the caller's transaction, so the receipts, the
 * advance of applied_position and the caller's own sink rows commit or roll
 * back together, and a claim waits for an in-flight sink transaction.
 *
 * The temporal-skew rule: no position above applied_position is accepted
 * unless the checkpoint is running (SG004 while it is replaying or
 * failed_closed).  functions/recovery.c applies the same rule to recovery
 * events.
 *
 * Memory: each SQL function works in its caller's memory context; SPI runs
 * between sog_store_begin() and sog_store_end(), and anything returned is
 * built after sog_store_end().
 *
 * Relies on: checkpoint/checkpoint.c, type/hash.c, type/position.c,
 * type/position_codec.c, store/receipt.c, store/tables.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "checkpoint/boundary.h"
#include "checkpoint/checkpoint.h"
#include "store/access.h"
#include "store/receipt.h"
#include "type/hash.h"
#include "type/position.h"
#include "type/util.h"

static void
report_receipt_conflict(const SogCheckpoint *cp, const SogPosition *pos,
						const uint8 *have, const uint8 *got)
{
	char		hx1[2 * SOG_DIGEST_LEN + 1];
	char		hx2[2 * SOG_DIGEST_LEN + 1];

	hex_encode((const char *) have, SOG_DIGEST_LEN, hx1);
	hx1[2 * SOG_DIGEST_LEN] = '\0';
	hex_encode((const char *) got, SOG_DIGEST_LEN, hx2);
	hx2[2 * SOG_DIGEST_LEN] = '\0';
	ereport(ERROR,
			(errcode(ERRCODE_SOG_RECEIPT_CONFLICT),
			 errmsg("receipt conflict at position %s of checkpoint " INT64_FORMAT,
					sog_position_label(pos), cp->id),
			 errdetail("The receipt records payload digest %s; this event carries %s.",
					   hx1, hx2),
			 errhint("The source returned different bytes for an applied position: stop and audit the stream; do not write this event.")));
}

/*
 * An event above applied_position at or below receipts_through: a recovery
 * attempt may have written it already (its effect is durable).  Every
 * receipt here gets a row of its own, so that no stored row can span one of
 * the attempt's.  Returns true for a new event.
 */
static bool
apply_above_recovered(SogCheckpoint *cp, SogReceiptRun *run, int remaining,
					  SogPosition *pos, const uint8 *dig, SogReceiptRun *probe)
{
	uint8		have[SOG_DIGEST_LEN];

	sog_receipt_run_store(cp->id, cp->receipt_ring, run);
	sog_receipt_run_init(run, remaining);
	if (sog_receipt_lookup(cp->id, cp->prune_horizon, pos, have, probe))
	{
		if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			report_receipt_conflict(cp, pos, have, dig);
		return false;
	}
	sog_receipt_run_add(run, pos, dig);
	sog_receipt_run_store(cp->id, cp->receipt_ring, run);
	sog_receipt_run_init(run, remaining);
	return true;
}

/*
 * An event at or below applied_position: a duplicate (false) when a receipt
 * with its digest exists or it is at or below the prune horizon; SG003 for
 * another digest; SG005 otherwise (out of order).
 */
static bool
apply_at_or_below(SogCheckpoint *cp, const SogReceiptRun *run,
				  const SogPosition *applied, const SogPosition *pos,
				  const uint8 *dig, SogReceiptRun *probe)
{
	uint8		have[SOG_DIGEST_LEN];

	if (sog_receipt_run_find(run, pos, have) ||
		sog_receipt_lookup(cp->id, cp->prune_horizon, pos, have, probe))
	{
		if (memcmp(have, dig, SOG_DIGEST_LEN) != 0)
			report_receipt_conflict(cp, pos, have, dig);
		return false;
	}
	if (cp->prune_horizon && sog_position_cmp(pos, cp->prune_horizon) <= 0)
		return false;			/* pruned: known to be applied */
	ereport(ERROR,
			(errcode(ERRCODE_SOG_REGRESSION),
			 errmsg("position %s of checkpoint " INT64_FORMAT " is out of order",
					sog_position_label(pos), cp->id),
			 errdetail("The checkpoint has applied through %s and holds no receipt for %s (prune horizon %s).",
					   sog_position_label(applied), sog_position_label(pos), sog_position_label(cp->prune_horizon)),
			 errhint("Apply events in increasing position order, resuming from the resume_from of sog.claim().")));
	return false;				/* not reached */
}

/*
 * The receipts through applied are stored: advance the locked checkpoint's
 * applied position (and receipts_through) to it and end a read boundary it
 * reached.  The caller writes the row (sog_checkpoint_write), once, after
 * whatever else its call changes.
 */
static void
advance_applied(SogCheckpoint *cp, SogPosition *applied)
{
	cp->applied_position = applied;
	if (sog_position_cmp_nullable(applied, cp->receipts_through) > 0)
		cp->receipts_through = applied;
	if (sog_position_cmp_nullable(cp->source_cursor, applied) <= 0)
		sog_clear_read_boundary(cp);
}

/*
 * Apply n events to the locked checkpoint *cp: decide each one, store the
 * new receipts as one run and advance applied_position (in *cp: the caller
 * writes the row).  result[i] is true for a new event.  Runs inside SPI.
 */
static void
apply_events(SogCheckpoint *cp, int n, SogPosition **pos, const uint8 **dig,
			 bool *result)
{
	SogReceiptRun run;
	SogReceiptRun probe;
	SogPosition *applied = cp->applied_position;
	bool		boundary = sog_boundary_checkable(cp);
	SogPosition *stored = boundary ? sog_boundary_stored_through(cp) : NULL;
	SogPosition **fpos = NULL;	/* this call's records in the boundary */
	const uint8 **fdig = NULL;
	int			nf = 0;
	int			i;

	if (boundary)
	{
		fpos = palloc(sizeof(SogPosition *) * n);
		fdig = palloc(sizeof(uint8 *) * n);
	}
	sog_receipt_run_init(&run, n);
	sog_receipt_run_init(&probe, 1);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (sog_position_cmp_nullable(pos[i], applied) <= 0)
		{
			result[i] = apply_at_or_below(cp, &run, applied, pos[i], dig[i], &probe);
			continue;
		}
		if (cp->state != SOG_STATE_RUNNING)
			sog_report_gap_pending(cp, pos[i]);
		if (boundary)
		{
			int			c = sog_position_cmp(pos[i], cp->source_cursor);

			if (c <= 0)
			{
				fpos[nf] = pos[i];
				fdig[nf++] = dig[i];
			}
			if (c >= 0)
			{
				/* the boundary closes here: exactly its records applied */
				sog_boundary_check_close(cp, pos[i], stored, nf, fpos, fdig);
				boundary = false;
			}
		}
		if (cp->receipts_through &&
			sog_position_cmp(pos[i], cp->receipts_through) <= 0)
			result[i] = apply_above_recovered(cp, &run, n - i, pos[i], dig[i], &probe);
		else
		{
			sog_receipt_run_add(&run, pos[i], dig[i]);
			result[i] = true;
		}
		applied = pos[i];
	}

	if (sog_position_cmp_nullable(applied, cp->applied_position) > 0)
	{
		sog_receipt_run_store(cp->id, cp->receipt_ring, &run);
		advance_applied(cp, applied);
	}
}

/*
 * SQL function: sog.apply(checkpoint_id bigint, generation bigint,
 *	   position sog.position, payload_digest bytea) -> boolean
 */
SOG_ENTRY(sog_apply, true)
{
	SogCheckpoint cp;
	SogPosition *pos;
	bytea	   *digest;
	const uint8 *dig;
	bool		result;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "position");
	sog_require_arg(fcinfo, 3, "payload_digest");
	pos = PG_GETARG_SOG_POSITION_P(2);
	digest = PG_GETARG_BYTEA_PP(3);
	sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(digest));
	dig = (const uint8 *) VARDATA_ANY(digest);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "apply");
	sog_store_begin();
	apply_events(&cp, 1, &pos, &dig, &result);
	sog_checkpoint_write_changes(&cp);
	sog_store_end();
	PG_RETURN_BOOL(result);
}

/*
 * The rest of a page, in apply_run_page's and apply_batch_page's arguments
 * from 4 on: the next page's read boundary (next_cursor, next_buffer_hash,
 * next_buffered_count: what note_read takes) and the provider token's
 * compare-and-swap (expected_token, successor_token: what commit_page
 * takes).  Read and checked before the checkpoint is locked.
 */
typedef struct PageRest
{
	const char *fname;			/* for the error context */
	SogPosition *cursor;		/* NULL: no note */
	char	   *hash;
	bool		count_isnull;
	int64		count;
	bool		swap;			/* a token given: compare and swap */
	char	   *expected;
	char	   *successor;
} PageRest;

static void
page_rest_args(FunctionCallInfo fcinfo, const char *fname, PageRest *pr)
{
	memset(pr, 0, sizeof(*pr));
	pr->count_isnull = true;
	pr->fname = fname;
	if (PG_NARGS() < 9)
		return;
	pr->cursor = PG_ARGISNULL(4) ? NULL : PG_GETARG_SOG_POSITION_P(4);
	pr->hash = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	pr->count_isnull = PG_ARGISNULL(6);
	pr->count = pr->count_isnull ? 0 : PG_GETARG_INT64(6);
	pr->expected = PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7));
	pr->successor = PG_ARGISNULL(8) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(8));
	pr->swap = pr->expected != NULL || pr->successor != NULL;
	if (pr->cursor == NULL && (pr->hash != NULL || !pr->count_isnull))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s was given the next page's %s without its cursor", fname,
						pr->hash ? "buffer hash" : "record count"),
				 errdetail("next_cursor is NULL; next_buffer_hash is %s and next_buffered_count is %s.",
						   pr->hash ? "given" : "NULL",
						   pr->count_isnull ? "NULL" : psprintf(INT64_FORMAT, pr->count)),
				 errhint("Pass next_cursor, the last position of the next page read, with its hash or count; or none of the three when no next page is held.")));
	sog_check_buffer_hash("next_buffer_hash", pr->hash);
}

static bool note_boundary(SogCheckpoint *cp, SogPosition *cursor, char *hash,
						  bool count_isnull, int64 count);
static void swap_token(SogCheckpoint *cp, const char *expected, const char *successor);

/* An error of the note or token step names the page call's argument. */
static void
page_rest_context(void *arg)
{
	const PageRest *pr = (const PageRest *) arg;

	if (pr->cursor)
		errcontext("%s, noting the next page (next_cursor %s)%s", pr->fname,
				   sog_position_label(pr->cursor), pr->swap ? " and moving the token" : "");
	else
		errcontext("%s, moving the token", pr->fname);
}

/*
 * After the apply of a page, on the same locked checkpoint: note the next
 * page's read boundary and swap the provider token, as note_read and
 * commit_page would in the same transaction, then write the row once.  A
 * step that note_read or commit_page would have written for (a note that
 * records, any swap) applies the snapshot rule even when the row ends up
 * unchanged, as they do; the apply alone applies it only when it moved
 * the applied position, as apply_run does.
 */
static void
page_rest_write(SogCheckpoint *cp, const PageRest *pr)
{
	ErrorContextCallback ctx;
	bool		wrote = false;

	ctx.callback = page_rest_context;
	ctx.arg = (void *) pr;
	ctx.previous = error_context_stack;
	if (pr->cursor || pr->swap)
		error_context_stack = &ctx;
	if (pr->cursor &&
		note_boundary(cp, pr->cursor, pr->hash, pr->count_isnull, pr->count))
		wrote = true;
	if (pr->swap)
	{
		swap_token(cp, pr->expected, pr->successor);
		wrote = true;
	}
	error_context_stack = ctx.previous;
	if (wrote)
		sog_checkpoint_write(cp);
	else
		sog_checkpoint_write_changes(cp);
}

/*
 * apply_batch, apply_batch_int8 and apply_batch_page (fname, for the
 * errors): the checkpoint id, generation, positions and digests of
 * fcinfo's first four arguments, and apply_batch_page's rest (PageRest).
 *
 * The result has the subscripts of the positions array: result[i] answers
 * for positions[i], whatever the array's lower bound.
 */
static Datum
apply_batch_call(FunctionCallInfo fcinfo, const char *fname)
{
	SogCheckpoint cp;
	SogPosition **pos;
	const uint8 **dig;
	bool	   *result;
	Datum	   *out;
	PageRest	pr;
	int			n;
	int			lbound;
	int			i;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "positions");
	sog_require_arg(fcinfo, 3, "payload_digests");
	n = sog_records_from_arrays(PG_GETARG_ARRAYTYPE_P(2), PG_GETARG_ARRAYTYPE_P(3),
								"events", &pos, &dig, &lbound);
	page_rest_args(fcinfo, fname, &pr);
	result = palloc(sizeof(bool) * Max(n, 1));

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), fname);
	sog_store_begin();
	apply_events(&cp, n, pos, dig, result);
	page_rest_write(&cp, &pr);
	sog_store_end();

	if (n == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(BOOLOID));
	out = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		out[i] = BoolGetDatum(result[i]);
	PG_RETURN_ARRAYTYPE_P(construct_md_array(out, NULL, 1, &n, &lbound,
											 BOOLOID, 1, true, TYPALIGN_CHAR));
}

/*
 * SQL function: sog.apply_batch(checkpoint_id bigint, generation bigint,
 *	   positions sog.position[], payload_digests bytea[]) -> boolean[]
 */
SOG_ENTRY(sog_apply_batch, true)
{
	return apply_batch_call(fcinfo, "apply_batch");
}

/*
 * SQL function: sog.apply_batch_int8(checkpoint_id bigint, generation bigint,
 *	   positions bigint[], payload_digests bytea[]) -> boolean[]
 *
 * apply_batch for a client whose positions are integers (a Kafka offset, a
 * JetStream sequence): no int8[] -> sog.position[] cast and no array of
 * positions built for the call.  A name of its own, not an overload: with
 * both, sog.apply_batch(1, 1, '{1,2}', ...) and ARRAY[1,2] would no longer
 * resolve ("function is not unique").
 */
SOG_ENTRY(sog_apply_batch_int8, true)
{
	return apply_batch_call(fcinfo, "apply_batch_int8");
}

/*
 * SQL function: sog.apply_batch_page(checkpoint_id bigint, generation
 *	   bigint, positions sog.position[], payload_digests bytea[],
 *	   next_cursor sog.position, next_buffer_hash text, next_buffered_count
 *	   bigint, expected_token text, successor_token text) -> boolean[]
 *
 * A whole page in one call: apply_batch, then (next_cursor given) the
 * next page's note_read and (a token given) commit_page, on one lock of
 * the checkpoint and with one write of its row.
 */
SOG_ENTRY(sog_apply_batch_page, true)
{
	return apply_batch_call(fcinfo, "apply_batch_page");
}

/*
 * apply_run's events one by one, as apply_batch decides them: the number of
 * leading duplicates, or 55000 when a duplicate follows a new event.
 */
static int
apply_run_events(SogCheckpoint *cp, int64 first, int n, const uint8 *d)
{
	SogPosition **pos = palloc(sizeof(SogPosition *) * n);
	const uint8 **dig = palloc(sizeof(uint8 *) * n);
	bool	   *result = palloc(sizeof(bool) * n);
	int			skipped = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		pos[i] = sog_position_from_int64(first + i, 0);
		dig[i] = d + (size_t) i * SOG_DIGEST_LEN;
	}
	apply_events(cp, n, pos, dig, result);
	while (skipped < n && !result[skipped])
		skipped++;
	for (i = skipped; i < n; i++)
		if (!result[i])
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("a duplicate follows a new event in the run from " INT64_FORMAT " on checkpoint " INT64_FORMAT,
							first, cp->id),
					 errdetail("Position " INT64_FORMAT " is new, but position " INT64_FORMAT " after it was applied before (a recovery attempt recorded it).",
							   first + skipped, first + i),
					 errhint("Apply this batch with sog.apply_batch_int8, which answers for each event.")));
	return skipped;
}

/*
 * Does the dense run first .. first + n - 1 close the locked checkpoint's
 * read boundary (read_base, cursor] exactly as it was noted, with nothing
 * of the boundary stored yet?  The run then holds every record the worker
 * noted: its events up to the cursor must fold to the noted hash (or make
 * up the noted count), as apply_events checks when the boundary closes.
 * False when the run does not reach the cursor or the check fails (the
 * caller's general path then raises what apply_batch raises).
 */
static bool
dense_closes_boundary(const SogCheckpoint *cp, int64 first, int n, const uint8 *d)
{
	SogBufferHash h;
	uint64		cursor;
	uint64		v;
	char		hex[2 * SOG_DIGEST_LEN + 1];

	if (sog_position_cmp_nullable(cp->read_base, cp->applied_position) != 0 ||
		!sog_pos_to_uint64(SOG_POS_BYTES(cp->source_cursor),
						   SOG_POS_NBYTES(cp->source_cursor), &cursor) ||
		cursor < (uint64) first || cursor > (uint64) (first + (n - 1)))
		return false;
	if (cp->read_hash == NULL && cp->read_count_isnull)
		return true;			/* nothing was said about the records */
	sog_buffer_hash_init(&h);
	for (v = (uint64) first; v <= cursor; v++)	/* cursor <= 2^63 - 1: no wrap */
	{
		uint8		enc[SOG_POS_MAX_ENCODED];
		size_t		len = sog_pos_from_uint64(v, enc);

		sog_buffer_hash_step(&h, enc, len, d + (size_t) (v - (uint64) first) * SOG_DIGEST_LEN);
	}
	if (cp->read_hash == NULL)
		return h.count >= cp->read_count;
	sog_buffer_hash_hex(&h, hex);
	return pg_strcasecmp(hex, cp->read_hash) == 0;
}

/*
 * apply_run and apply_run_page (fname, for the errors); see apply_run.
 */
static Datum
apply_run_call(FunctionCallInfo fcinfo, const char *fname)
{
	SogCheckpoint cp;
	bytea	   *digests;
	const uint8 *d;
	int64		first;
	SogPosition *first_pos;
	PageRest	pr;
	size_t		len;
	int			n;
	int			skipped = 0;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "first_position");
	sog_require_arg(fcinfo, 3, "payload_digests");
	first = PG_GETARG_INT64(2);
	first_pos = sog_position_from_int64(first, 0);	/* 22023 if negative */
	digests = PG_GETARG_BYTEA_PP(3);
	len = VARSIZE_ANY_EXHDR(digests);
	d = (const uint8 *) VARDATA_ANY(digests);
	if (len == 0 || len % SOG_DIGEST_LEN != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("payload digests must be whole 32-byte digests"),
				 errdetail("payload_digests has %zu bytes, not a positive multiple of 32.", len),
				 errhint("Pass the digests of the run's events back to back, 32 bytes each, in position order.")));
	n = (int) (len / SOG_DIGEST_LEN);
	if (first > PG_INT64_MAX - (n - 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the run's positions do not fit a bigint"),
				 errdetail("A run of %d events from " INT64_FORMAT " would end above " INT64_FORMAT ".",
						   n, first, PG_INT64_MAX),
				 errhint("Apply the events from 9223372036854775807 on with sog.apply_batch.")));
	page_rest_args(fcinfo, fname, &pr);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), fname);
	sog_store_begin();
	if (cp.state == SOG_STATE_RUNNING &&
		sog_position_cmp_nullable(first_pos, cp.applied_position) > 0 &&
		sog_position_cmp_nullable(cp.receipts_through, cp.applied_position) <= 0 &&
		(!sog_boundary_checkable(&cp) || dense_closes_boundary(&cp, first, n, d)))
	{
		sog_receipt_store_dense(cp.id, cp.receipt_ring, first, n, d);
		advance_applied(&cp, sog_position_from_int64(first + (n - 1), 0));
	}
	else
		skipped = apply_run_events(&cp, first, n, d);
	page_rest_write(&cp, &pr);
	sog_store_end();
	PG_RETURN_INT32(skipped);
}

/*
 * SQL function: sog.apply_run(checkpoint_id bigint, generation bigint,
 *	   first_position bigint, payload_digests bytea) -> integer
 *
 * A dense run, as a Kafka or JetStream batch is: the events at positions
 * first_position, first_position + 1, ..., with their digests back to back
 * in one bytea (n x 32 bytes).  Decides each event as apply_batch does and
 * answers how many leading events were applied before (duplicates); the
 * rest are new.  A run in which a new event precedes a duplicate (possible
 * only where a recovery attempt left receipts above the applied position)
 * has no such answer: 55000, and apply_batch_int8 is the call for it.
 *
 * The usual case - the whole run above the applied position of a running
 * checkpoint with no receipts above it, and either no read boundary open or
 * one the run closes exactly as noted (the whole protocol's page) - stores
 * the run's rows directly, without a position per event.
 */
SOG_ENTRY(sog_apply_run, true)
{
	return apply_run_call(fcinfo, "apply_run");
}

/*
 * SQL function: sog.apply_run_page(checkpoint_id bigint, generation
 *	   bigint, first_position bigint, payload_digests bytea, next_cursor
 *	   sog.position, next_buffer_hash text, next_buffered_count bigint,
 *	   expected_token text, successor_token text) -> integer
 *
 * A whole page in one call: apply_run, then (next_cursor given) the next
 * page's note_read and (a token given) commit_page, on one lock of the
 * checkpoint and with one write of its row: the pipelined protocol's
 * three statements, at the cost of one.
 */
SOG_ENTRY(sog_apply_run_page, true)
{
	return apply_run_call(fcinfo, "apply_run_page");
}

/*
 * Record the read boundary (applied_position, cursor] on the locked
 * checkpoint *cp, in memory (note_read's checks, then checkpoint/boundary.c's rule).
 * False when it changes nothing (the same note again).
 */
static bool
note_boundary(SogCheckpoint *cp, SogPosition *cursor, char *hash,
			  bool count_isnull, int64 count)
{
	if (cp->state != SOG_STATE_RUNNING)
		sog_report_gap_pending(cp, cursor);
	if (sog_position_cmp_nullable(cursor, cp->applied_position) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_REGRESSION),
				 errmsg("read cursor %s of checkpoint " INT64_FORMAT " is behind its applied position",
						sog_position_label(cursor), cp->id),
				 errdetail("The checkpoint has applied through %s.", sog_position_label(cp->applied_position)),
				 errhint("Report the last position fetched from the source; it cannot be below what was applied.")));
	if (!count_isnull)
		sog_check_buffered_count(count, cursor, cp->applied_position);
	return sog_boundary_note(cp, cursor, hash, count_isnull, count);
}

/*
 * SQL function: sog.note_read(checkpoint_id bigint, generation bigint,
 *	   source_cursor sog.position, buffer_hash text, buffered_count bigint)
 *	   -> void
 *
 * The worker holds, unapplied, every record in (applied_position,
 * source_cursor].  It commits before the sink transaction that applies
 * them, or inside the previous page's, after its apply.  While a boundary
 * noted earlier is not applied, only the same note again is accepted (it
 * changes nothing): checkpoint/boundary.c.
 */
SOG_ENTRY(sog_note_read, true)
{
	SogCheckpoint cp;
	SogPosition *cursor;
	char	   *hash = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	bool		count_isnull = PG_ARGISNULL(4);
	int64		count = count_isnull ? 0 : PG_GETARG_INT64(4);

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "source_cursor");
	cursor = PG_GETARG_SOG_POSITION_P(2);
	sog_check_buffer_hash("buffer_hash", hash);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "note_read");
	if (note_boundary(&cp, cursor, hash, count_isnull, count))
	{
		sog_store_begin();
		sog_checkpoint_write(&cp);
		sog_store_end();
	}
	PG_RETURN_VOID();
}

/*
 * The provider token's compare-and-swap on the locked checkpoint *cp, in
 * memory: SG006 unless it holds expected (NULL: no token yet).
 */
static void
swap_token(SogCheckpoint *cp, const char *expected, const char *successor)
{
	if (!sog_text_eq(expected, sog_checkpoint_token(cp)))
		ereport(ERROR,
				(errcode(ERRCODE_SOG_TOKEN_MISMATCH),
				 errmsg("provider token of checkpoint " INT64_FORMAT " is not the expected one", cp->id),
				 errdetail("Expected %s, but the checkpoint holds %s.",
						   sog_quoted(expected, "no token"),
						   sog_quoted(sog_checkpoint_token(cp), "no token")),
				 errhint("Another transaction committed a page first: roll back and claim again (the claim returns the checkpoint's token).")));
	sog_checkpoint_set_token(cp, (char *) successor);
}

/*
 * SQL function: sog.commit_page(checkpoint_id bigint, generation bigint,
 *	   expected_token text, successor_token text) -> void
 */
SOG_ENTRY(sog_commit_page, true)
{
	SogCheckpoint cp;
	char	   *expected = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *successor = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp, SOG_ACCESS_CONSUMER, false);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "commit_page");
	swap_token(&cp, expected, successor);
	sog_store_begin();
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_VOID();
}
