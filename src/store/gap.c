/*-------------------------------------------------------------------------
 *
 * store/gap.c
 *	  The gap log: gap rows and their NOTIFY at commit, the manifest log, the queries
 *	  on gaps, and the conclusion of recovery attempts a new generation
 *	  fences.
 *
 * Everything here runs under the checkpoint's row lock
 * (checkpoint/checkpoint.c), inside the caller's SPI connection
 * (sog_store_begin), on the newest snapshot: under the lock no change of this
 * checkpoint is in flight. Gap and manifest rows are rare (one per claim, halt
 * or gap), so they go through SPI INSERTs with kept plans; the plan cache
 * keeps them valid across DDL.
 *
 * Relies on: store/access.c, type/halt.c, type/position.c, store/tables.c,
 * type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "store/access.h"
#include "store/gap.h"
#include "store/tables.h"

/*
 * The bigint in the first column of the first row the last query returned,
 * or if_none when it returned no row (or a NULL).
 */
static int64
first_int8(int64 if_none)
{
	bool		isnull;
	Datum		d;

	if (SPI_processed == 0)
		return if_none;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? if_none : DatumGetInt64(d);
}

/*
 * NOTIFY sog_gap, once, when a transaction that recorded a gap commits.
 *
 * Not from sog_gap_record itself: PostgreSQL refuses to PREPARE a
 * transaction that executed NOTIFY, and a gap recorded in a sink
 * transaction that a two-phase coordinator prepares must commit with it.
 * So the notification is queued in the transaction's PRE_COMMIT callback
 * (which runs before PostgreSQL queues a transaction's notifications, and
 * never for PREPARE TRANSACTION): a prepared transaction's gaps commit with
 * COMMIT PREPARED without one, and operators find them in
 * sog.unresolved_gaps as every other gap.  The payload is empty ('{}'):
 * any role may LISTEN, so it says nothing a listener could not read
 * through sog.gaps() or sog.status itself.
 *
 * notify_level is the nesting level of the outermost live (sub)transaction
 * that recorded a gap, 0 for none: a gap recorded in a subtransaction that
 * rolls back is not announced.
 */
static int	notify_level = 0;

static void
notify_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT && notify_level > 0)
		Async_Notify("sog_gap", "{}");
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		notify_level = 0;
}

static void
notify_subxact_callback(SubXactEvent event, SubTransactionId sub,
						SubTransactionId parent, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();	/* the one ending */

	if (notify_level < level)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		notify_level = 0;
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		notify_level = level - 1;
}

static void
notify_at_commit(void)
{
	static bool registered = false;
	int			level = GetCurrentTransactionNestLevel();

	if (!registered)
	{
		RegisterXactCallback(notify_xact_callback, NULL);
		RegisterSubXactCallback(notify_subxact_callback, NULL);
		registered = true;
	}
	if (notify_level == 0 || level < notify_level)
		notify_level = level;
}

int64
sog_gap_record(int64 checkpoint_id, int64 generation, const char *reason, SogVerdict verdict,
			   const SogPosition *from, const SogPosition *to,
			   const char *detail)
{
	Oid			types[7] = {INT8OID, INT8OID, sog_position_type(),
	sog_position_type(), TEXTOID, TEXTOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	SPIPlanPtr	plan;
	int64		gap_id;
	bool		isnull;

	plan = sog_keep_plan(PLAN_GAP_INSERT,
						 "INSERT INTO sog.gap (checkpoint_id, generation, from_position, "
						 "to_position, reason, verdict, detail) "
						 "VALUES ($1, $2, $3, $4, $5, $6::sog.verdict, $7) RETURNING id",
						 7, types);
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = Int64GetDatum(generation);
	POS_ARG(from, 2);
	POS_ARG(to, 3);
	TEXT_ARG(reason, 4);
	TEXT_ARG(sog_verdict_label(verdict), 5);
	TEXT_ARG(detail, 6);
	if (sog_exec_latest(plan, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record gap of checkpoint " INT64_FORMAT, checkpoint_id);
	gap_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));

	notify_at_commit();
	return gap_id;
}

int64
sog_manifest_record(int64 checkpoint_id, int64 generation, const char *owner,
					const SogPosition *applied_position, const char *kind,
					const SogPosition *source_cursor, const char *buffer_hash,
					bool count_isnull, int64 count, const SogManifest *m,
					int64 gap_id, const char *note)
{
	Oid			types[14] = {INT8OID, INT8OID, TEXTOID, TEXTOID,
		sog_position_type(), sog_position_type(), TEXTOID, INT8OID,
	TEXTOID, sog_position_type(), NUMERICOID, TEXTOID, INT8OID, TEXTOID};
	Datum		values[14];
	char		nulls[14];
	SPIPlanPtr	plan;
	bool		isnull;

	memset(nulls, ' ', sizeof(nulls));
	plan = sog_keep_plan(PLAN_MANIFEST_INSERT,
						 "INSERT INTO sog.manifest_log (checkpoint_id, generation, kind, owner, "
						 "source_cursor, applied_position, buffer_hash, buffered_count, "
						 "verdict, resume_from, gap_size, manifest_digest, gap_id, note) "
						 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::sog.verdict, $10, $11, "
						 "$12, $13, $14) RETURNING id",
						 14, types);
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = Int64GetDatum(generation);
	TEXT_ARG(kind, 2);
	TEXT_ARG(owner, 3);
	POS_ARG(source_cursor, 4);
	POS_ARG(applied_position, 5);
	TEXT_ARG(buffer_hash, 6);
	values[7] = Int64GetDatum(count);
	nulls[7] = count_isnull ? 'n' : ' ';
	TEXT_ARG(sog_verdict_label(m->verdict), 8);
	POS_ARG(m->resume_from, 9);
	values[10] = m->gap_size;
	nulls[10] = m->gap_isnull ? 'n' : ' ';
	TEXT_ARG(m->digest_isnull ? NULL : m->digest, 11);
	values[12] = Int64GetDatum(gap_id);
	nulls[12] = gap_id > 0 ? ' ' : 'n';
	TEXT_ARG(note, 13);
	if (sog_exec_latest(plan, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not log manifest of checkpoint " INT64_FORMAT, checkpoint_id);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_newest_open(int64 checkpoint_id, SogVerdict *verdict)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(checkpoint_id)};
	bool		isnull;
	char	   *label;
	int			i;

	sog_exec("SELECT id, verdict::text FROM sog.gap "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			 "ORDER BY id DESC LIMIT 1",
			 1, types, values, NULL, true);
	if (SPI_processed == 0)
		return 0;
	label = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	*verdict = SOG_VERDICT_FAIL_CLOSED;
	for (i = SOG_VERDICT_ALIGNED; i <= SOG_VERDICT_FAIL_CLOSED; i++)
		if (strcmp(label, sog_verdict_label((SogVerdict) i)) == 0)
			*verdict = (SogVerdict) i;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_open_with_reason(int64 checkpoint_id, const char *reason)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(checkpoint_id), CStringGetTextDatum(reason)};

	sog_exec("SELECT id FROM sog.gap "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			 "AND reason OPERATOR(pg_catalog.=) $2 ORDER BY id DESC LIMIT 1",
			 2, types, values, NULL, true);
	return first_int8(0);
}

/* Run a read-only query on sog.gap whose $1 is a checkpoint and $2, $3 a
 * range of positions (NULL for an open end). */
static void
exec_range(const char *sql, int64 checkpoint_id, const SogPosition *from,
		   const SogPosition *to)
{
	Oid			types[3] = {INT8OID, sog_position_type(), sog_position_type()};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int64GetDatum(checkpoint_id);
	POS_ARG(from, 1);
	POS_ARG(to, 2);
	sog_exec(sql, 3, types, values, nulls, true);
}

int64
sog_gap_open_covering(int64 checkpoint_id, const SogPosition *from, const SogPosition *to)
{
	exec_range("SELECT id FROM sog.gap "
			   "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL "
			   "AND (from_position IS NULL OR "
			   "     ($2 IS NOT NULL AND from_position OPERATOR(sog.<=) $2)) "
			   "AND (to_position IS NULL OR to_position OPERATOR(sog.>=) $3) "
			   "ORDER BY id DESC LIMIT 1",
			   checkpoint_id, from, to);
	return first_int8(0);
}

/*
 * Follow the gaps SPI_tuptable holds as (id, from_position, to_position),
 * in the order of their start, from from while they join up: a gap (f, t]
 * extends the covered range when it starts within it.  True when they
 * reach to, with *gap_id the one that does (an unbounded one covers
 * everything above); *reached is where they end (from when none starts at
 * or below it).  Rows that start above the covered range end the walk: the
 * rows after them start higher still.
 */
static bool
gaps_reach(const SogPosition *from, const SogPosition *to, int64 *gap_id,
		   const SogPosition **reached)
{
	bool		start = (from == NULL); /* *reached is "the start" */
	uint64		r;

	*gap_id = 0;
	*reached = from;
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	row = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		fnull;
		bool		tnull;
		int64		id = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));
		Datum		f = SPI_getbinval(row, desc, 2, &fnull);
		Datum		t = SPI_getbinval(row, desc, 3, &tnull);

		CHECK_FOR_INTERRUPTS();
		if (!fnull && (start || sog_position_cmp(DatumGetSogPositionP(f), *reached) > 0))
			break;
		if (tnull)
		{
			*gap_id = id;
			return true;
		}
		if (start || sog_position_cmp(DatumGetSogPositionP(t), *reached) > 0)
		{
			*reached = DatumGetSogPositionP(t);
			start = false;
		}
		if (sog_position_cmp_nullable(*reached, to) >= 0)
		{
			*gap_id = id;
			return true;
		}
	}
	return false;
}

int64
sog_gap_losses_through(int64 checkpoint_id, const SogPosition *from,
					   const SogPosition *to, const SogPosition **reached)
{
	int64		gap_id;

	exec_range("SELECT id, from_position, to_position FROM sog.gap "
			   "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			   "AND (resolved_at IS NULL OR "
			   "     (resolution OPERATOR(pg_catalog.=) 'accepted_loss' AND to_position IS NOT NULL)) "
			   "AND (to_position IS NULL OR $2 IS NULL OR to_position OPERATOR(sog.>) $2) "
			   "ORDER BY from_position USING OPERATOR(sog.<) NULLS FIRST, id",
			   checkpoint_id, from, to);
	gaps_reach(from, to, &gap_id, reached);
	return gap_id;
}

bool
sog_gap_loss_accepted(int64 checkpoint_id, const SogPosition *from, const SogPosition *through)
{
	int64		gap_id;
	const SogPosition *reached;

	/*
	 * A gap that ends at from counts only as the empty loss (from, from] that
	 * a refusal records when the anchor itself was discarded.
	 */
	exec_range("SELECT id, from_position, to_position FROM sog.gap "
			   "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			   "AND resolution OPERATOR(pg_catalog.=) 'accepted_loss' "
			   "AND (to_position IS NOT NULL OR reason OPERATOR(pg_catalog.=) 'retention') "
			   "AND (to_position IS NULL OR $2 IS NULL OR to_position OPERATOR(sog.>) $2 "
			   "     OR from_position OPERATOR(sog.=) $2) "
			   "ORDER BY from_position USING OPERATOR(sog.<) NULLS FIRST, id",
			   checkpoint_id, from, through);
	return gaps_reach(from, through, &gap_id, &reached);
}

bool
sog_gaps_since_cover(int64 checkpoint_id, const SogPosition *from, const SogPosition *to,
					 int64 after_id)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(checkpoint_id), Int64GetDatum(after_id)};
	int64		gap_id;
	const SogPosition *reached;

	sog_exec("SELECT id, from_position, to_position FROM sog.gap "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND id OPERATOR(pg_catalog.>) $2 "
			 "ORDER BY from_position USING OPERATOR(sog.<) NULLS FIRST, id",
			 2, types, values, NULL, true);
	if (gaps_reach(from, to, &gap_id, &reached))
		return true;
	/* an empty range above a position needs no gap: it counts as covered */
	return from != NULL && sog_position_cmp_nullable(from, to) >= 0;
}

int64
sog_gap_newest_id(int64 checkpoint_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(checkpoint_id)};
	bool		connected = SPI_connect() == SPI_OK_CONNECT;
	bool		isnull;
	Datum		d;
	int64		id;

	if (!connected)
		elog(ERROR, "SPI_connect failed");
	/* every read boundary asks: a kept plan, on the (checkpoint_id, id) index */
	sog_exec_latest(sog_keep_plan(PLAN_GAP_NEWEST_ID,
								  "SELECT pg_catalog.max(id) FROM sog.gap "
								  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1",
								  1, types),
					values, NULL, true, 0);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	id = isnull ? 0 : DatumGetInt64(d);
	SPI_finish();
	return id;
}

int64
sog_gap_count_open(int64 checkpoint_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(checkpoint_id)};
	bool		isnull;

	sog_exec("SELECT pg_catalog.count(*) FROM sog.gap "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL",
			 1, types, values, NULL, true);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

int64
sog_gap_checkpoint(int64 gap_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(gap_id)};

	sog_exec("SELECT checkpoint_id FROM sog.gap WHERE id OPERATOR(pg_catalog.=) $1",
			 1, types, values, NULL, true);
	return first_int8(-1);
}

/*
 * Resolve the open gaps whose key column (id or checkpoint_id) is key, as
 * the acting role; returns how many it resolved.
 */
static uint64
resolve_open_where(const char *column, int64 key, const char *resolution,
				   const char *note)
{
	Oid			types[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(key);
	TEXT_ARG(resolution, 1);
	TEXT_ARG(note, 2);
	TEXT_ARG(sog_acting_role(), 3);
	sog_exec(psprintf("UPDATE sog.gap SET resolved_at = pg_catalog.now(), resolution = $2, "
					  "note = $3, resolved_by = $4 "
					  "WHERE %s OPERATOR(pg_catalog.=) $1 AND resolved_at IS NULL", column),
			 4, types, values, nulls, false);
	return SPI_processed;
}

bool
sog_gap_resolve(int64 gap_id, const char *resolution, const char *note)
{
	return resolve_open_where("id", gap_id, resolution, note) == 1;
}

int64
sog_gap_resolve_open(int64 checkpoint_id, const char *resolution, const char *note)
{
	return (int64) resolve_open_where("checkpoint_id", checkpoint_id, resolution, note);
}
