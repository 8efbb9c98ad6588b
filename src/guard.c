/*-------------------------------------------------------------------------
 *
 * guard.c
 *	  The guarded sink transaction (contract section 5): claim, note_read,
 *	  apply, apply_batch, halt, verify_gap, skip_gap, resolve_gap,
 *	  commit_page, receipts, prune_receipts, and the trigger that keeps
 *	  applied_position and generation monotonic.
 *
 * Locking: every function that changes a checkpoint first calls
 * sog_checkpoint_lock() (store.c), which serializes all changes of that
 * checkpoint on its row and reads the newest committed version, then checks
 * the caller's generation (SG001) before anything else.  The lock is held to
 * the end of the caller's transaction, so the receipts, the advance of
 * applied_position and the caller's own sink rows commit or roll back
 * together, and a claim waits for an in-flight sink transaction.
 *
 * The decision boundary (claim, halt) is the evaluation of halt.c: read
 * cursor against applied position, with the recorded buffer hash; gaps that
 * cannot be proven become rows of sog.gap (and a NOTIFY on sog_gap), never
 * an error that would roll the record back.
 *
 * Memory: each SQL function works in its caller's memory context; SPI runs
 * between sog_store_begin() and sog_store_end(), and anything returned is
 * built after sog_store_end().
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
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "halt.h"
#include "hash.h"
#include "position.h"
#include "store.h"

/* ------------------------------------------------------------ arguments */

static char *
text_arg_or_null(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* ------------------------------------------------------ shared state moves */

/*
 * Reset the read boundary to the applied position: nothing is buffered.
 */
static void
clear_read_boundary(SogCheckpoint *cp)
{
	cp->source_cursor = cp->applied_position;
	cp->read_base = NULL;
	cp->read_hash = NULL;
	cp->read_count_isnull = true;
	cp->read_count = 0;
}

/*
 * Record that the worker holds, unapplied, every record in
 * (applied_position, cursor], hashed as hash.
 */
static void
record_read_boundary(SogCheckpoint *cp, SogPosition *cursor, char *hash,
					 bool count_isnull, int64 count)
{
	if (sog_position_cmp_nullable(cursor, cp->applied_position) == 0)
	{
		clear_read_boundary(cp);
		return;
	}
	cp->source_cursor = cursor;
	cp->read_base = cp->applied_position;
	cp->read_hash = (hash && hash[0]) ? hash : NULL;
	cp->read_count_isnull = count_isnull;
	cp->read_count = count;
}

/* Refuse a position above applied while a gap is open or unverified. */
static void
report_gap_pending(const SogCheckpoint *cp, const SogPosition *pos)
{
	if (cp->state == SOG_STATE_REPLAYING)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unverified gap of checkpoint " INT64_FORMAT,
						sog_pos_str(pos), cp->id),
				 errdetail("The predecessor read through %s but applied only through %s; the records in (%s, %s] have not been verified.",
						   sog_pos_str(cp->source_cursor), sog_pos_str(cp->applied_position),
						   cp->read_base ? sog_pos_str(cp->read_base) : "start",
						   sog_pos_str(cp->source_cursor)),
				 errhint("Re-fetch (%s, %s], hash it and call sog.verify_gap() before applying newer events.",
						 cp->read_base ? sog_pos_str(cp->read_base) : "start",
						 sog_pos_str(cp->source_cursor))));
	else
		ereport(ERROR,
				(errcode(ERRCODE_SOG_GAP_PENDING),
				 errmsg("position %s is beyond an unresolved gap of checkpoint " INT64_FORMAT,
						sog_pos_str(pos), cp->id),
				 errdetail("The checkpoint failed closed at applied position %s; records after it cannot be proven.",
						   sog_pos_str(cp->applied_position)),
				 errhint("An operator must resolve the gap (see sog.unresolved_gaps and sog.resolve_gap()).")));
}

/* ----------------------------------------------------------------- apply */

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
					sog_pos_str(pos), cp->id),
			 errdetail("The receipt records payload digest %s; this event carries %s.",
					   hx1, hx2),
			 errhint("The source returned different bytes for an applied position: stop and audit the stream; do not write this event.")));
}

/*
 * Apply n events to the locked checkpoint *cp: decide each one, store the
 * new receipts as one run and advance applied_position.  result[i] is true
 * for a new event.  Runs inside SPI.
 */
static void
apply_events(SogCheckpoint *cp, int n, SogPosition **pos, const uint8 **dig,
			 bool *result)
{
	SogReceiptRun run;
	SogReceiptRun probe;
	SogPosition *applied = cp->applied_position;
	int			i;

	sog_receipt_run_init(&run, n);
	sog_receipt_run_init(&probe, 1);
	for (i = 0; i < n; i++)
	{
		uint8		have[SOG_DIGEST_LEN];

		CHECK_FOR_INTERRUPTS();
		if (sog_position_cmp_nullable(pos[i], applied) > 0)
		{
			if (cp->state != SOG_STATE_RUNNING)
				report_gap_pending(cp, pos[i]);

			/*
			 * Above applied, a receipt exists only where a recovery attempt
			 * wrote the event (its effect is durable already).  Up to
			 * receipts_through, every receipt gets a row of its own, so that
			 * no stored row can span one of the attempt's.
			 */
			if (cp->receipts_through &&
				sog_position_cmp(pos[i], cp->receipts_through) <= 0)
			{
				sog_receipt_run_store(cp->id, &run);
				sog_receipt_run_init(&run, n - i);
				applied = pos[i];
				if (sog_receipt_lookup(cp->id, pos[i], have, &probe))
				{
					if (memcmp(have, dig[i], SOG_DIGEST_LEN) != 0)
						report_receipt_conflict(cp, pos[i], have, dig[i]);
					result[i] = false;
				}
				else
				{
					sog_receipt_run_add(&run, pos[i], dig[i]);
					sog_receipt_run_store(cp->id, &run);
					sog_receipt_run_init(&run, n - i);
					result[i] = true;
				}
				continue;
			}
			sog_receipt_run_add(&run, pos[i], dig[i]);
			applied = pos[i];
			result[i] = true;
			continue;
		}

		/* at or below applied: a duplicate, a conflict or out of order */
		if (sog_receipt_run_find(&run, pos[i], have) ||
			sog_receipt_lookup(cp->id, pos[i], have, &probe))
		{
			if (memcmp(have, dig[i], SOG_DIGEST_LEN) != 0)
				report_receipt_conflict(cp, pos[i], have, dig[i]);
			result[i] = false;
		}
		else if (cp->prune_horizon &&
				 sog_position_cmp(pos[i], cp->prune_horizon) <= 0)
			result[i] = false;	/* pruned: known to be applied */
		else
			ereport(ERROR,
					(errcode(ERRCODE_SOG_REGRESSION),
					 errmsg("position %s of checkpoint " INT64_FORMAT " is out of order",
							sog_pos_str(pos[i]), cp->id),
					 errdetail("The checkpoint has applied through %s and holds no receipt for %s (prune horizon %s).",
							   sog_pos_str(applied), sog_pos_str(pos[i]), sog_pos_str(cp->prune_horizon)),
					 errhint("Apply events in increasing position order, resuming from the resume_from of sog.claim().")));
	}

	if (sog_position_cmp_nullable(applied, cp->applied_position) > 0)
	{
		sog_receipt_run_store(cp->id, &run);
		cp->applied_position = applied;
		if (sog_position_cmp_nullable(applied, cp->receipts_through) > 0)
			cp->receipts_through = applied;
		if (sog_position_cmp_nullable(cp->source_cursor, applied) <= 0)
			clear_read_boundary(cp);
		sog_checkpoint_write(cp);
	}
}

/*
 * SQL function: sog.apply(checkpoint_id bigint, generation bigint,
 *	   position sog.position, payload_digest bytea) -> boolean
 */
PG_FUNCTION_INFO_V1(sog_apply);
Datum
sog_apply(PG_FUNCTION_ARGS)
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

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "apply");
	sog_store_begin();
	apply_events(&cp, 1, &pos, &dig, &result);
	sog_store_end();
	PG_RETURN_BOOL(result);
}

/*
 * SQL function: sog.apply_batch(checkpoint_id bigint, generation bigint,
 *	   positions sog.position[], payload_digests bytea[]) -> boolean[]
 */
PG_FUNCTION_INFO_V1(sog_apply_batch);
Datum
sog_apply_batch(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	ArrayType  *parr;
	ArrayType  *darr;
	Datum	   *pd;
	bool	   *pn;
	Datum	   *dd;
	bool	   *dn;
	int			np;
	int			nd;
	SogPosition **pos;
	const uint8 **dig;
	bool	   *result;
	Datum	   *out;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "positions");
	sog_require_arg(fcinfo, 3, "payload_digests");
	parr = PG_GETARG_ARRAYTYPE_P(2);
	darr = PG_GETARG_ARRAYTYPE_P(3);
	if (ARR_NDIM(parr) > 1 || ARR_NDIM(darr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("positions and payload digests must be one-dimensional arrays"),
				 errdetail("The arrays have %d and %d dimensions.", ARR_NDIM(parr), ARR_NDIM(darr)),
				 errhint("Pass one flat array of positions and one of digests.")));
	get_typlenbyvalalign(ARR_ELEMTYPE(parr), &typlen, &typbyval, &typalign);
	deconstruct_array(parr, ARR_ELEMTYPE(parr), typlen, typbyval, typalign, &pd, &pn, &np);
	deconstruct_array(darr, BYTEAOID, -1, false, TYPALIGN_INT, &dd, &dn, &nd);
	if (np != nd)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("position and digest arrays differ in length"),
				 errdetail("There are %d positions and %d digests.", np, nd),
				 errhint("Pass one payload digest per position, in the same order.")));

	pos = palloc(sizeof(SogPosition *) * Max(np, 1));
	dig = palloc(sizeof(uint8 *) * Max(np, 1));
	result = palloc(sizeof(bool) * Max(np, 1));
	for (i = 0; i < np; i++)
	{
		bytea	   *d;

		if (pn[i] || dn[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("events need a position and a payload digest"),
					 errdetail("The %s of element %d is NULL.",
							   pn[i] ? "position" : "payload digest", i + 1),
					 errhint("Remove incomplete events from the batch.")));
		pos[i] = DatumGetSogPositionP(pd[i]);
		d = DatumGetByteaPP(dd[i]);
		sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(d));
		dig[i] = (const uint8 *) VARDATA_ANY(d);
	}

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "apply_batch");
	sog_store_begin();
	apply_events(&cp, np, pos, dig, result);
	sog_store_end();

	out = palloc(sizeof(Datum) * Max(np, 1));
	for (i = 0; i < np; i++)
		out[i] = BoolGetDatum(result[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(out, np, BOOLOID, 1, true, TYPALIGN_CHAR));
}

/* ------------------------------------------------------------- note_read */

/*
 * SQL function: sog.note_read(checkpoint_id bigint, generation bigint,
 *	   source_cursor sog.position, buffer_hash text, buffered_count bigint)
 *	   -> void
 */
PG_FUNCTION_INFO_V1(sog_note_read);
Datum
sog_note_read(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	SogPosition *cursor;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "source_cursor");
	cursor = PG_GETARG_SOG_POSITION_P(2);

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "note_read");
	if (cp.state != SOG_STATE_RUNNING)
		report_gap_pending(&cp, cursor);
	if (sog_position_cmp_nullable(cursor, cp.applied_position) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_REGRESSION),
				 errmsg("read cursor %s of checkpoint " INT64_FORMAT " is behind its applied position",
						sog_pos_str(cursor), cp.id),
				 errdetail("The checkpoint has applied through %s.", sog_pos_str(cp.applied_position)),
				 errhint("Report the last position fetched from the source; it cannot be below what was applied.")));
	if (!PG_ARGISNULL(4) && PG_GETARG_INT64(4) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffered count must not be negative"),
				 errdetail("The count is " INT64_FORMAT ".", PG_GETARG_INT64(4)),
				 errhint("Pass the number of records held in the buffer.")));

	record_read_boundary(&cp, cursor, text_arg_or_null(fcinfo, 3),
						 PG_ARGISNULL(4), PG_ARGISNULL(4) ? 0 : PG_GETARG_INT64(4));
	sog_store_begin();
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_VOID();
}

/* ----------------------------------------------------------------- claim */

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
 * The last position a gap may hold (contract section 7): the read cursor
 * of an unverifiable read; unknown (NULL) for a divergence, where the
 * cursor lies behind the applied position.
 */
static SogPosition *
gap_end(SogVerdict v, SogPosition *cursor)
{
	return v == SOG_VERDICT_DIVERGENCE ? NULL : cursor;
}

/*
 * SQL function: sog.claim(checkpoint_id bigint, owner text,
 *	   source_identity text DEFAULT NULL) -> sog.resume_plan
 */
PG_FUNCTION_INFO_V1(sog_claim);
Datum
sog_claim(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	char	   *owner;
	char	   *identity;
	SogManifest m;
	int64		gap_id = 0;
	SogPosition *cursor;
	char	   *expected_hash = NULL;
	bool		expected_count_isnull = true;
	int64		expected_count = 0;
	SogPosition *verify_from = NULL;
	SogPosition *verify_to = NULL;
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12];

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	owner = text_arg_or_null(fcinfo, 1);
	if (sog_is_blank(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("owner must not be blank"),
				 errdetail("The owner names the worker that claims the checkpoint."),
				 errhint("Pass a worker name, for example host and process id.")));
	identity = text_arg_or_null(fcinfo, 2);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_store_begin();

	cp.generation++;
	cp.claimed = true;
	cp.owner = owner;
	cursor = cp.source_cursor;

	if (cp.state == SOG_STATE_FAILED_CLOSED &&
		(gap_id = manifest_for_open_gap(&cp, &m)) > 0)
	{
		/* already failed closed: report the newest open gap, record none */
	}
	else if (identity && cp.source_identity && strcmp(identity, cp.source_identity) != 0)
	{
		/* a different source behind the same name: as a divergence */
		SogPosition *above = cp.applied_position ? cp.applied_position :
		sog_position_from_cstring("0");

		sog_evaluate_boundary(NULL, above, NULL, &m);
		m.resume_from = cp.applied_position;
		gap_id = sog_gap_record(&cp, "identity_changed", m.verdict,
								cp.applied_position,
								sog_position_cmp_nullable(cursor, cp.applied_position) > 0 ?
								cursor : NULL);
		cp.state = SOG_STATE_FAILED_CLOSED;
	}
	else
	{
		if (identity && cp.source_identity == NULL)
			cp.source_identity = identity;	/* first sighting */
		sog_evaluate_boundary(cursor, cp.applied_position, cp.read_hash, &m);
		switch (m.verdict)
		{
			case SOG_VERDICT_ALIGNED:
				cp.state = SOG_STATE_RUNNING;
				break;
			case SOG_VERDICT_GAP_REPLAY:
				cp.state = SOG_STATE_REPLAYING;
				verify_from = cp.read_base;
				verify_to = cursor;
				expected_hash = cp.read_hash;
				expected_count_isnull = cp.read_count_isnull;
				expected_count = cp.read_count;
				break;
			case SOG_VERDICT_FAIL_CLOSED:
			case SOG_VERDICT_DIVERGENCE:
				gap_id = sog_gap_record(&cp, gap_reason_for(m.verdict), m.verdict,
										cp.applied_position,
										gap_end(m.verdict, cursor));
				cp.state = SOG_STATE_FAILED_CLOSED;
				break;
		}
	}

	sog_manifest_record(&cp, "claim", cursor, cp.read_hash, cp.read_count_isnull,
						cp.read_count, &m, gap_id, NULL);
	sog_checkpoint_write(&cp);
	sog_recovery_fence_open(&cp, 0);	/* the new generation fences them */
	sog_store_end();

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum(cp.id);
	values[1] = Int64GetDatum(cp.generation);
	values[2] = sog_verdict_datum(m.verdict, TupleDescAttr(tupdesc, 2)->atttypid);
	values[3] = PointerGetDatum(m.resume_from);
	nulls[3] = m.resume_from == NULL;
	values[4] = PointerGetDatum(verify_from);
	nulls[4] = verify_from == NULL;
	values[5] = PointerGetDatum(verify_to);
	nulls[5] = verify_to == NULL;
	nulls[6] = expected_hash == NULL;
	if (expected_hash)
		values[6] = CStringGetTextDatum(expected_hash);
	values[7] = Int64GetDatum(expected_count);
	nulls[7] = expected_count_isnull;
	values[8] = m.gap_size;
	nulls[8] = m.gap_isnull;
	nulls[9] = cp.provider_token == NULL;
	if (cp.provider_token)
		values[9] = CStringGetTextDatum(cp.provider_token);
	nulls[10] = m.digest_isnull;
	if (!m.digest_isnull)
		values[10] = CStringGetTextDatum(m.digest);
	values[11] = Int64GetDatum(gap_id);
	nulls[11] = gap_id == 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* ------------------------------------------------------------------ halt */

/*
 * SQL function: sog.halt(checkpoint_id bigint, generation bigint,
 *	   source_cursor sog.position, buffer_hash text, buffered_count bigint)
 *	   -> sog.manifest
 *
 * A NULL source_cursor means "nothing read beyond what is recorded".
 */
PG_FUNCTION_INFO_V1(sog_halt);
Datum
sog_halt(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	SogPosition *cursor;
	char	   *hash = text_arg_or_null(fcinfo, 3);	/* may be replaced below */
	bool		count_isnull = PG_ARGISNULL(4);
	int64		count = count_isnull ? 0 : PG_GETARG_INT64(4);
	SogManifest m;
	int64		gap_id = 0;
	TupleDesc	tupdesc;
	Datum		result;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	if (!count_isnull && count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffered count must not be negative"),
				 errdetail("The count is " INT64_FORMAT ".", count),
				 errhint("Pass the number of records held in the buffer.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "halt");
	sog_store_begin();

	if (cp.state != SOG_STATE_RUNNING || PG_ARGISNULL(2))
	{
		/*
		 * A gap is already pending, or nothing new was read: keep the
		 * recorded boundary and its hash.
		 */
		cursor = cp.source_cursor;
		hash = cp.read_hash;
		count_isnull = cp.read_count_isnull;
		count = cp.read_count;
	}
	else
	{
		cursor = PG_GETARG_SOG_POSITION_P(2);
		if (sog_position_cmp_nullable(cursor, cp.applied_position) >= 0)
			record_read_boundary(&cp, cursor, hash, count_isnull, count);
	}

	if (cp.state == SOG_STATE_FAILED_CLOSED &&
		manifest_for_open_gap(&cp, &m) > 0)
		;						/* hand over the open gap's verdict */
	else
		sog_evaluate_boundary(cursor, cp.applied_position, hash, &m);
	if (cp.state == SOG_STATE_RUNNING &&
		(m.verdict == SOG_VERDICT_FAIL_CLOSED || m.verdict == SOG_VERDICT_DIVERGENCE))
	{
		gap_id = sog_gap_record(&cp, gap_reason_for(m.verdict), m.verdict,
								cp.applied_position, gap_end(m.verdict, cursor));
		cp.state = SOG_STATE_FAILED_CLOSED;
	}
	sog_manifest_record(&cp, "halt", cursor, hash, count_isnull, count, &m,
						gap_id, NULL);
	cp.owner = NULL;			/* released */
	sog_checkpoint_write(&cp);
	sog_store_end();

	result = sog_manifest_datum(&m, tupdesc);
	PG_RETURN_DATUM(result);
}

/* ------------------------------------------------------------ verify_gap */

/*
 * SQL function: sog.verify_gap(checkpoint_id bigint, generation bigint,
 *	   replay_hash text) -> boolean
 */
PG_FUNCTION_INFO_V1(sog_verify_gap);
Datum
sog_verify_gap(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	char	   *replay;
	bool		match;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_require_arg(fcinfo, 2, "replay_hash");
	replay = text_to_cstring(PG_GETARG_TEXT_PP(2));

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
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
		sog_gap_record(&cp, "hash_mismatch", SOG_VERDICT_FAIL_CLOSED,
					   cp.applied_position, cp.source_cursor);
		cp.state = SOG_STATE_FAILED_CLOSED;
	}
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_BOOL(match);
}

/* --------------------------------------------------------------- skip_gap */

/*
 * SQL function: sog.skip_gap(checkpoint_id bigint, generation bigint,
 *	   reason text) -> void
 */
PG_FUNCTION_INFO_V1(sog_skip_gap);
Datum
sog_skip_gap(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	char	   *reason = text_arg_or_null(fcinfo, 2);
	SogManifest m;
	SogPosition *from;

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "skip_gap");
	if (!cp.telemetry)
		ereport(ERROR,
				(errcode(ERRCODE_SOG_REFUSED),
				 errmsg("cannot skip a gap of critical checkpoint " INT64_FORMAT, cp.id),
				 errdetail("Checkpoint %s/%s/%s is critical; records in (%s, %s] would be lost.",
						   cp.consumer, cp.stream, cp.partition,
						   sog_pos_str(cp.applied_position), sog_pos_str(cp.source_cursor)),
				 errhint("Replay the gap, or have an operator accept the loss with sog.resolve_gap().")));
	if (sog_is_blank(reason))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a skipped gap needs a reason"),
				 errdetail("The reason is recorded with the gap for audit."),
				 errhint("Say why losing these records is acceptable.")));

	sog_store_begin();
	sog_gap_resolve_open(cp.id, "skipped_telemetry", reason);
	from = cp.applied_position;
	if (sog_position_cmp_nullable(cp.source_cursor, cp.applied_position) > 0)
		cp.applied_position = cp.source_cursor;
	clear_read_boundary(&cp);
	cp.state = SOG_STATE_RUNNING;
	sog_evaluate_boundary(cp.applied_position, cp.applied_position, NULL, &m);
	sog_manifest_record(&cp, "skip", cp.applied_position, NULL, true, 0, &m, 0,
						psprintf("skipped (%s, %s]: %s", sog_pos_str(from),
								 sog_pos_str(cp.applied_position), reason));
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------ resolve_gap */

/*
 * SQL function: sog.resolve_gap(gap_id bigint, resolution text, note text)
 *	   -> void
 */
PG_FUNCTION_INFO_V1(sog_resolve_gap);
Datum
sog_resolve_gap(PG_FUNCTION_ARGS)
{
	int64		gap_id;
	char	   *resolution = text_arg_or_null(fcinfo, 1);
	char	   *note = text_arg_or_null(fcinfo, 2);
	int64		checkpoint_id;
	SogCheckpoint cp;

	sog_require_arg(fcinfo, 0, "gap_id");
	gap_id = PG_GETARG_INT64(0);
	if (resolution == NULL ||
		(strcmp(resolution, "replayed") != 0 && strcmp(resolution, "accepted_loss") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid gap resolution %s%s%s", resolution ? "\"" : "",
						resolution ? resolution : "NULL", resolution ? "\"" : ""),
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
	sog_store_end();
	if (checkpoint_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gap " INT64_FORMAT " does not exist", gap_id),
				 errdetail("No row of sog.gap has id " INT64_FORMAT ".", gap_id),
				 errhint("Look up open gaps in sog.unresolved_gaps.")));

	/* serialize with the checkpoint's workers, then resolve */
	sog_checkpoint_lock(checkpoint_id, &cp);
	sog_store_begin();
	if (!sog_gap_resolve(gap_id, resolution, note))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gap " INT64_FORMAT " is already resolved", gap_id),
				 errdetail("Its resolution is recorded in sog.gap."),
				 errhint("Nothing to do; see sog.unresolved_gaps for open gaps.")));

	if (sog_gap_count_open(cp.id) == 0)
	{
		clear_read_boundary(&cp);
		cp.state = SOG_STATE_RUNNING;
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_VOID();
}

/* ------------------------------------------------------------ commit_page */

/*
 * SQL function: sog.commit_page(checkpoint_id bigint, generation bigint,
 *	   expected_token text, successor_token text) -> void
 */
PG_FUNCTION_INFO_V1(sog_commit_page);
Datum
sog_commit_page(PG_FUNCTION_ARGS)
{
	SogCheckpoint cp;
	char	   *expected = text_arg_or_null(fcinfo, 2);
	char	   *successor = text_arg_or_null(fcinfo, 3);

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	sog_require_arg(fcinfo, 1, "generation");
	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
	sog_check_generation(&cp, PG_GETARG_INT64(1), "commit_page");

	if (!sog_text_eq(expected, cp.provider_token))
		ereport(ERROR,
				(errcode(ERRCODE_SOG_TOKEN_MISMATCH),
				 errmsg("provider token of checkpoint " INT64_FORMAT " is not the expected one", cp.id),
				 errdetail("Expected %s%s%s, but the checkpoint holds %s%s%s.",
						   expected ? "\"" : "", expected ? expected : "no token", expected ? "\"" : "",
						   cp.provider_token ? "\"" : "",
						   cp.provider_token ? cp.provider_token : "no token",
						   cp.provider_token ? "\"" : ""),
				 errhint("Another transaction committed a page first: roll back, re-read the checkpoint and continue from its token.")));
	cp.provider_token = successor;
	sog_store_begin();
	sog_checkpoint_write(&cp);
	sog_store_end();
	PG_RETURN_VOID();
}

/* --------------------------------------------------------------- receipts */

typedef struct ReceiptSink
{
	ReturnSetInfo *rsinfo;
	MemoryContext tupctx;
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
	Oid			types[1] = {INT8OID};
	Datum		values[1];

	sog_require_arg(fcinfo, 0, "checkpoint_id");
	id = PG_GETARG_INT64(0);
	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	sink.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	sog_store_begin();
	values[0] = Int64GetDatum(id);
	if (sog_exec("SELECT 1 FROM sog.checkpoint WHERE id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, true) != SPI_OK_SELECT)
		elog(ERROR, "could not read sog.checkpoint");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint " INT64_FORMAT " does not exist", id),
				 errdetail("No row of sog.checkpoint has id " INT64_FORMAT ".", id),
				 errhint("Look up checkpoint ids in sog.status.")));
	sog_receipt_scan(id, from, to, emit_receipt, &sink);
	sog_store_end();
	return (Datum) 0;
}

/* --------------------------------------------------------- prune_receipts */

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

	sog_checkpoint_lock(PG_GETARG_INT64(0), &cp);
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

	sog_store_begin();
	dropped = sog_receipt_prune(cp.id, through);
	if (sog_position_cmp_nullable(through, cp.prune_horizon) > 0)
	{
		cp.prune_horizon = through;
		sog_checkpoint_write(&cp);
	}
	sog_store_end();
	PG_RETURN_INT64(dropped);
}

/* -------------------------------------------------- monotonicity trigger */

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
