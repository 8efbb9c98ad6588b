/*-------------------------------------------------------------------------
 *
 * store/receipt.c
 *	  The receipt store: runs of receipts, their row codec, storing them,
 *	  looking one up, pruning and scanning.
 *
 * Normally every receipt lies at or below applied_position; the one exception
 * is a recovery attempt (functions/recovery.c), which records receipts of the
 * events it writes above applied_position and advances it only when it wins
 * promotion.  sog.checkpoint.receipts_through (the greatest position with a
 * receipt) tells the hot path whether a position above applied_position can
 * have a receipt at all, so it probes only then.
 *
 * Receipts are packed: one row of sog.receipt per apply call (a "run"):
 * (checkpoint_id, first_position, last_position, n, positions, digests).
 * digests holds the n 32-byte payload digests back to back.  positions is
 * NULL for a dense run - one-component positions first, first+1, ...,
 * first+n-1 (a Kafka or NATS batch) - and otherwise holds each position as
 * a length prefix followed by its encoding.  Runs of one checkpoint never
 * overlap (receipts are only written above applied_position, which only
 * grows), so the run holding a position is the first run whose
 * last_position is at or above it: one probe of the primary key
 * (checkpoint_id, last_position).  A run is split into rows of at most
 * 3900 bytes of digests and positions (121 receipts of a dense run), kept
 * inline (STORAGE PLAIN: no TOAST, no compression attempt on digests that do
 * not compress).  Two such rows fill an 8 kB page, so a receipt takes about
 * 34 bytes on disk, and a batch of 1000 events costs 9 heap rows and 9 index
 * entries instead of 1000 of each.  A replayed batch decodes a fetched row
 * once and answers the following duplicates from it.
 *
 * Where rows go (1.2): sog.receipt is partitioned by ring.  A checkpoint's
 * runs go to the partition its row names (sog.checkpoint.receipt_ring):
 * sog.receipt_0 outside the ring, pruned by DELETE as before 1.2, or the
 * ring's current partition, whose rows stay until sog.rotate_receipts()
 * (SQL) TRUNCATEs the whole partition once every receipt in it is at or
 * below its checkpoint's prune horizon.  So a receipt at or below the
 * horizon may still be stored: every read here answers at the horizon
 * first (lookup: none; scan: skipped), as if it were gone.  Runs of one
 * checkpoint never overlap across partitions either (a checkpoint moved
 * out of the ring takes its rows above the horizon with it), so the
 * lookup's probe through the parent is still one row.  Before the update
 * sog.receipt is one plain table and everything is as in 1.1.
 *
 * Locking: every function here runs under the checkpoint's row lock
 * (checkpoint/checkpoint.c), inside the caller's SPI connection
 * (sog_store_begin). Rows are inserted through the executor (store/writer.c)
 * and read through SPI, by column name: a column the table's owner added,
 * dropped or moved changes nothing here.
 *
 * Relies on: type/hash.c, type/position.c, type/position_codec.c,
 * store/tables.c, store/writer.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/rel.h"

#include "store/receipt.h"
#include "store/tables.h"
#include "store/writer.h"

static void decode_run(int row, SogReceiptRun *run);

/*
 * Open the table a checkpoint's runs go to: its ring's partition (1.2), or
 * sog.receipt before the update (ring is SOG_RING_NO_COLUMN then).
 */
static Relation
open_target(int64 checkpoint_id, int ring)
{
	Oid			relid;

	if (!sog_receipt_partitioned())
		relid = sog_receipt_relid();
	else
	{
		if (ring == SOG_RING_NO_COLUMN)
			ring = 0;			/* the column is gone: outside the ring */
		if (ring < 0 || ring >= SOG_RING_PARTS)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("checkpoint " INT64_FORMAT " has receipt_ring %d, which is not a receipt partition",
							checkpoint_id, ring),
					 errdetail("Receipts go to sog.receipt_0 (outside the ring) or sog.receipt_1 to sog.receipt_4 (the ring)."),
					 errhint("Set it to 0 (UPDATE sog.checkpoint SET receipt_ring = 0 WHERE id = " INT64_FORMAT "); sog.rotate_receipts() puts it back in the ring.",
							 checkpoint_id)));
		relid = sog_receipt_partition_relid(ring);
	}
	return table_open(relid, RowExclusiveLock);
}

void
sog_receipt_run_init(SogReceiptRun *run, int expected)
{
	run->n = 0;
	run->cap = Max(expected, 1);
	run->digests = palloc(run->cap * SOG_DIGEST_LEN);
	run->positions = palloc(run->cap * sizeof(SogPosition *));
	run->single = true;
}

void
sog_receipt_run_add(SogReceiptRun *run, SogPosition *pos, const uint8 *digest)
{
	if (run->n == run->cap)
	{
		run->cap *= 2;
		run->digests = repalloc(run->digests, run->cap * SOG_DIGEST_LEN);
		run->positions = repalloc(run->positions, run->cap * sizeof(SogPosition *));
	}
	/* one component: a digit count, then exactly its BCD bytes */
	if (run->single &&
		SOG_POS_NBYTES(pos) != 2 + (size_t) (SOG_POS_BYTES(pos)[1] + 1) / 2)
		run->single = false;
	memcpy(run->digests + (size_t) run->n * SOG_DIGEST_LEN, digest, SOG_DIGEST_LEN);
	run->positions[run->n++] = pos;
}

bool
sog_receipt_run_find(const SogReceiptRun *run, const SogPosition *pos,
					 uint8 *digest)
{
	int			lo = 0;
	int			hi = run->n - 1;

	/* positions in a run are strictly increasing: binary search */
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = sog_position_cmp(run->positions[mid], pos);

		if (c == 0)
		{
			memcpy(digest, run->digests + (size_t) mid * SOG_DIGEST_LEN, SOG_DIGEST_LEN);
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/*
 * Length prefix of a position in a sparse receipt row: one byte for an
 * encoding shorter than 128 bytes (every practical position), else two
 * bytes, big-endian, with the high bit of the first set (encodings are at
 * most SOG_POS_MAX_ENCODED = 649 bytes).
 */
static void
put_length(StringInfo buf, size_t len)
{
	if (len < 0x80)
		appendStringInfoChar(buf, (char) len);
	else
	{
		appendStringInfoChar(buf, (char) (0x80 | (len >> 8)));
		appendStringInfoChar(buf, (char) (len & 0xFF));
	}
}

/* Read a length prefix at *p (before end); false if it is truncated. */
static bool
get_length(const uint8 **p, const uint8 *end, size_t *len)
{
	if (*p >= end)
		return false;
	if ((**p & 0x80) == 0)
	{
		*len = *(*p)++;
		return true;
	}
	if (end - *p < 2)
		return false;
	*len = ((size_t) ((*p)[0] & 0x7F) << 8) | (*p)[1];
	*p += 2;
	return true;
}

static size_t
length_bytes(size_t len)
{
	return len < 0x80 ? 1 : 2;
}

static bytea *
make_bytea(const void *data, size_t len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return b;
}

/*
 * Store one row of sog.receipt through the writer w (open on sog.receipt):
 * n receipts from first to last, positions their encoded positions (NULL:
 * a dense run), digests their n digests back to back.
 */
static void
store_row(SogWriter *w, const AttrNumber *att, int64 checkpoint_id,
		  SogPosition *first, SogPosition *last, int n, bytea *positions,
		  const uint8 *digests, const Datum *created_at)
{
	AttrNumber	atts[RC_NATTS];
	Datum		values[RC_NATTS];
	bool		isnull[RC_NATTS] = {false};
	int			ncols = RC_NCOLS;
	int			i;

	for (i = 0; i < RC_NCOLS; i++)
		atts[i] = att[i];
	if (created_at && att[RC_CREATED_AT] != InvalidAttrNumber)
	{
		atts[ncols] = att[RC_CREATED_AT];
		values[ncols] = *created_at;
		ncols++;
	}
	values[RC_CHECKPOINT_ID] = Int64GetDatum(checkpoint_id);
	values[RC_FIRST_POSITION] = PointerGetDatum(first);
	values[RC_LAST_POSITION] = PointerGetDatum(last);
	values[RC_N] = Int32GetDatum(n);
	values[RC_POSITIONS] = PointerGetDatum(positions);
	isnull[RC_POSITIONS] = (positions == NULL);
	values[RC_DIGESTS] = PointerGetDatum(make_bytea(digests, (size_t) n * SOG_DIGEST_LEN));
	sog_writer_insert(w, ncols, atts, values, isnull);
}

/*
 * Store one chunk run->positions[lo..hi) as a row of sog.receipt, through
 * the writer w (open on sog.receipt).
 */
static void
store_chunk(SogWriter *w, const AttrNumber *att, int64 checkpoint_id,
			const SogReceiptRun *run, int lo, int hi, bool dense,
			const Datum *created_at)
{
	bytea	   *positions = NULL;
	int			i;

	if (!dense)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		for (i = lo; i < hi; i++)
		{
			size_t		len = SOG_POS_NBYTES(run->positions[i]);

			put_length(&buf, len);
			appendBinaryStringInfo(&buf, (const char *) SOG_POS_BYTES(run->positions[i]), len);
		}
		positions = make_bytea(buf.data, buf.len);
	}
	store_row(w, att, checkpoint_id, run->positions[lo], run->positions[hi - 1], hi - lo,
			  positions, run->digests + (size_t) lo * SOG_DIGEST_LEN, created_at);
}

/*
 * Store a run as rows of at most SOG_RECEIPT_ROW_BYTES of digests and
 * positions each.  The limit keeps two full rows (with their tuple headers,
 * first/last positions and line pointers) within one 8 kB heap page; the
 * byte columns have STORAGE PLAIN, so rows stay inline and uncompressed.
 * A row holding the largest possible first and last positions (649 bytes
 * each) still fits a page on its own.
 */
#define SOG_RECEIPT_ROW_BYTES	3900

/*
 * Is the run dense: one-component positions first, first+1, ..., first+n-1?
 * Positions in a run strictly increase, so n one-component positions whose
 * last is first + n - 1 are exactly that sequence.
 */
static bool
run_is_dense(const SogReceiptRun *run)
{
	uint64		first;
	uint64		last;

	return run->n > 0 && run->single &&
		sog_pos_to_uint64(SOG_POS_BYTES(run->positions[0]),
						  SOG_POS_NBYTES(run->positions[0]), &first) &&
		sog_pos_to_uint64(SOG_POS_BYTES(run->positions[run->n - 1]),
						  SOG_POS_NBYTES(run->positions[run->n - 1]), &last) &&
		last - first == (uint64) (run->n - 1);
}

void
sog_receipt_run_store(int64 checkpoint_id, int ring, const SogReceiptRun *run)
{
	sog_receipt_run_store_at(checkpoint_id, ring, run, NULL);
}

void
sog_receipt_run_store_at(int64 checkpoint_id, int ring, const SogReceiptRun *run,
						 const Datum *created_at)
{
	int			lo = 0;
	bool		dense = run_is_dense(run);
	Relation	rel;
	const AttrNumber *att;
	SogWriter	w;

	if (run->n == 0)
		return;
	rel = open_target(checkpoint_id, ring);
	att = sog_receipt_attnums(rel);
	sog_writer_begin(&w, rel, false, NULL, 0);
	while (lo < run->n)
	{
		int			hi = lo;
		size_t		bytes = 0;

		while (hi < run->n)
		{
			size_t		add = SOG_DIGEST_LEN +
			(dense ? 0 : length_bytes(SOG_POS_NBYTES(run->positions[hi])) +
			 SOG_POS_NBYTES(run->positions[hi]));

			if (hi > lo && bytes + add > SOG_RECEIPT_ROW_BYTES)
				break;
			bytes += add;
			hi++;
		}
		store_chunk(&w, att, checkpoint_id, run, lo, hi, dense, created_at);
		lo = hi;
	}
	sog_writer_end(&w);
	table_close(rel, NoLock);
}

void
sog_receipt_store_dense(int64 checkpoint_id, int ring, int64 first, int n,
						const uint8 *digests)
{
	/* as many digests as sog_receipt_run_store_at puts in a dense row */
	const int	per_row = SOG_RECEIPT_ROW_BYTES / SOG_DIGEST_LEN;
	Relation	rel;
	const AttrNumber *att;
	SogWriter	w;
	int			lo;

	if (n <= 0)
		return;
	rel = open_target(checkpoint_id, ring);
	att = sog_receipt_attnums(rel);
	sog_writer_begin(&w, rel, false, NULL, 0);
	for (lo = 0; lo < n; lo += per_row)
	{
		int			hi = Min(n, lo + per_row);

		store_row(&w, att, checkpoint_id,
				  sog_position_from_int64(first + lo, 0),
				  sog_position_from_int64(first + (hi - 1), 0),
				  hi - lo, NULL, digests + (size_t) lo * SOG_DIGEST_LEN, NULL);
	}
	sog_writer_end(&w);
	table_close(rel, NoLock);
}

bool
sog_receipt_lookup(int64 checkpoint_id, const SogPosition *horizon,
				   const SogPosition *pos, uint8 *digest, SogReceiptRun *probe)
{
	Oid			types[2] = {INT8OID, sog_position_type()};
	Datum		values[2];
	SPIPlanPtr	plan;

	/* at or below the horizon: gone, whether or not a row still holds it */
	if (horizon && sog_position_cmp(pos, horizon) <= 0)
		return false;

	/* the row fetched last time often holds the next duplicate too */
	if (probe->n > 0 &&
		sog_position_cmp(pos, probe->positions[probe->n - 1]) <= 0 &&
		sog_position_cmp(pos, probe->positions[0]) >= 0)
		return sog_receipt_run_find(probe, pos, digest);

	plan = sog_keep_plan(PLAN_RECEIPT_LOOKUP,
						 "SELECT first_position, n, positions, digests FROM sog.receipt "
						 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
						 "AND last_position OPERATOR(sog.>=) $2 "
						 "ORDER BY last_position USING OPERATOR(sog.<) LIMIT 1",
						 2, types);
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(pos);
	sog_exec_latest(plan, values, NULL, true, 1);
	if (SPI_processed == 0)
		return false;
	decode_run(0, probe);
	return sog_receipt_run_find(probe, pos, digest);
}

/* A stored receipt row does not decode: the table was changed by hand. */
static void
report_corrupt_run(const SogPosition *first, int receipt, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("receipt row starting at position %s is corrupt",
					first ? sog_position_to_cstring(first) : "(unknown)"),
			 errdetail("At receipt %d: %s.", receipt + 1, what),
			 errhint("sog.receipt is written only by the extension; restore it from a backup or prune past this row.")));
}

/*
 * Decode run tuple (first_position, n, positions, digests) of the current
 * SPI result row i into a SogReceiptRun in the current memory context.
 */
static void
decode_run(int row, SogReceiptRun *run)
{
	HeapTuple	tup = SPI_tuptable->vals[row];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		isnull;
	bool		posnull;
	SogPosition *first = DatumGetSogPositionP(SPI_getbinval(tup, desc, 1, &isnull));
	int			n = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	Datum		posd = SPI_getbinval(tup, desc, 3, &posnull);
	bytea	   *dig = DatumGetByteaPP(SPI_getbinval(tup, desc, 4, &isnull));
	const uint8 *d = (const uint8 *) VARDATA_ANY(dig);
	int			i;

	if (n <= 0 || VARSIZE_ANY_EXHDR(dig) != (Size) n * SOG_DIGEST_LEN)
		report_corrupt_run(first, 0,
						   psprintf("%d receipts but %zu digest bytes",
									n, (size_t) VARSIZE_ANY_EXHDR(dig)));
	sog_receipt_run_init(run, n);
	if (posnull)
	{
		uint64		fu;

		if (!sog_pos_to_uint64(SOG_POS_BYTES(first), SOG_POS_NBYTES(first), &fu))
			report_corrupt_run(first, 0, "a dense row must start at an integer position");
		for (i = 0; i < n; i++)
		{
			uint8_t		enc[SOG_POS_MAX_ENCODED];
			size_t		len = sog_pos_from_uint64(fu + (uint64) i, enc);

			sog_receipt_run_add(run, sog_position_from_encoding(enc, len),
								d + (size_t) i * SOG_DIGEST_LEN);
		}
	}
	else
	{
		bytea	   *pb = DatumGetByteaPP(posd);
		const uint8 *p = (const uint8 *) VARDATA_ANY(pb);
		const uint8 *end = p + VARSIZE_ANY_EXHDR(pb);

		for (i = 0; i < n; i++)
		{
			size_t		len;

			if (!get_length(&p, end, &len) || len > (size_t) (end - p) ||
				!sog_pos_encoding_valid(p, len))
				report_corrupt_run(first, i, "the position list is truncated or invalid");
			sog_receipt_run_add(run, sog_position_from_encoding(p, len),
								d + (size_t) i * SOG_DIGEST_LEN);
			p += len;
		}
		if (p != end)
			report_corrupt_run(first, n - 1, "the position list is longer than its count");
	}
}

/* The first row of a checkpoint whose last position is above a position. */
typedef struct Straddler
{
	bool		found;			/* there is one, and it starts at or below */
	bool		in_ring;		/* stored in a ring partition (not receipt_0) */
	SogPosition *last;			/* its last position */
	SogReceiptRun run;			/* its receipts */
} Straddler;

/*
 * Find the row of the checkpoint across after: the first whose last
 * position is above after, if it starts at or below after (rows of one
 * checkpoint never overlap, so no other row holds after or spans it).
 */
static void
find_straddler(int64 checkpoint_id, const SogPosition *after, Straddler *st)
{
	Oid			types[2] = {INT8OID, sog_position_type()};
	Datum		values[2];
	bool		isnull;
	SogPosition *first;

	st->found = false;
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(after);
	sog_exec("SELECT first_position, n, positions, digests, last_position, ring "
			 "FROM sog.receipt "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND last_position OPERATOR(sog.>) $2 "
			 "ORDER BY last_position USING OPERATOR(sog.<) LIMIT 1",
			 2, types, values, NULL, true);
	if (SPI_processed == 0)
		return;
	first = DatumGetSogPositionP(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1, &isnull));
	if (sog_position_cmp(first, after) > 0)
		return;
	st->found = true;
	st->last = (SogPosition *) PG_DETOAST_DATUM_COPY(SPI_getbinval(SPI_tuptable->vals[0],
																   SPI_tuptable->tupdesc, 5, &isnull));
	st->in_ring = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 6, &isnull)) != 0;
	decode_run(0, &st->run);
}

/* How many receipts of the run lie in (lo, hi] (NULL: no bound). */
static int64
count_in(const SogReceiptRun *run, const SogPosition *lo, const SogPosition *hi)
{
	int64		n = 0;
	int			i;

	for (i = 0; i < run->n; i++)
		if ((!lo || sog_position_cmp(run->positions[i], lo) > 0) &&
			(!hi || sog_position_cmp(run->positions[i], hi) <= 0))
			n++;
	return n;
}

/* Run a query whose one row and column is a bigint; its value. */
static int64
exec_count(const char *sql, int nargs, Oid *types, Datum *values, bool read_only)
{
	bool		isnull;

	sog_exec(sql, nargs, types, values, NULL, read_only);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * Prune with sog.receipt partitioned (1.2): DELETE the rows of
 * sog.receipt_0 (checkpoints outside the ring) whose last position is in
 * (horizon, through], whole, and count the ring's receipts in that range
 * without touching them (their partition is emptied later; every read
 * answers at the new horizon).  The count is exact: rows strictly inside
 * the range count n (the DELETE returns them in sog.receipt_0; the ring's
 * come from the key), and the at most two rows across its ends are
 * decoded.  A row across the old horizon is possible now (the ring's rows
 * stay whole, and a checkpoint moved out of the ring took its rows across
 * the horizon to sog.receipt_0): its receipts at or below the horizon went
 * in an earlier prune.  A row across through stays until a later prune.
 */
static int64
prune_partitioned(int64 checkpoint_id, const SogPosition *through,
				  const SogPosition *horizon)
{
	Oid			types[3] = {INT8OID, sog_position_type(), sog_position_type()};
	Datum		values[3];
	int64		dropped;
	Straddler	low = {0};
	Straddler	high = {0};

	/* nothing above the horizon up to through: nothing to count or delete */
	if (horizon && sog_position_cmp(through, horizon) <= 0)
		return 0;
	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(through);
	values[2] = PointerGetDatum(horizon);
	if (horizon)
		find_straddler(checkpoint_id, horizon, &low);
	if (!low.found || sog_position_cmp(low.last, through) <= 0)
		find_straddler(checkpoint_id, through, &high);

	/* the ring's rows strictly inside (horizon, through] */
	dropped = exec_count(horizon ?
						 "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM sog.receipt "
						 "WHERE ring OPERATOR(pg_catalog.<>) 0 "
						 "AND checkpoint_id OPERATOR(pg_catalog.=) $1 "
						 "AND last_position OPERATOR(sog.<=) $2 "
						 "AND last_position OPERATOR(sog.>) $3 AND first_position OPERATOR(sog.>) $3" :
						 "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM sog.receipt "
						 "WHERE ring OPERATOR(pg_catalog.<>) 0 "
						 "AND checkpoint_id OPERATOR(pg_catalog.=) $1 "
						 "AND last_position OPERATOR(sog.<=) $2",
						 horizon ? 3 : 2, types, values, true);
	/* sog.receipt_0's rows in it, deleted (the one across the horizon too) */
	dropped += exec_count(horizon ?
						  "WITH d AS (DELETE FROM sog.receipt_0 "
						  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
						  "AND last_position OPERATOR(sog.<=) $2 "
						  "AND last_position OPERATOR(sog.>) $3 RETURNING n) "
						  "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM d" :
						  "WITH d AS (DELETE FROM sog.receipt_0 "
						  "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
						  "AND last_position OPERATOR(sog.<=) $2 RETURNING n) "
						  "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM d",
						  horizon ? 3 : 2, types, values, false);

	/* the row across the old horizon: only its receipts in the range */
	if (low.found)
	{
		if (!low.in_ring && sog_position_cmp(low.last, through) <= 0)
			dropped -= count_in(&low.run, NULL, horizon);	/* deleted whole */
		else
			dropped += count_in(&low.run, horizon, through);
	}
	/* the row across through (not the one above): its part at or below */
	if (high.found)
		dropped += count_in(&high.run, horizon, through);
	return dropped;
}

int64
sog_receipt_prune(int64 checkpoint_id, const SogPosition *through,
				  const SogPosition *horizon)
{
	Oid			types[3] = {INT8OID, sog_position_type(), sog_position_type()};
	Datum		values[3];
	bool		isnull;
	int64		dropped;
	SogReceiptRun run;
	SogReceiptRun kept;
	int			i;

	if (sog_receipt_partitioned())
		return prune_partitioned(checkpoint_id, through, horizon);

	values[0] = Int64GetDatum(checkpoint_id);
	values[1] = PointerGetDatum(through);
	values[2] = PointerGetDatum(horizon);

	/*
	 * Whole runs at or below the new horizon.  None is at or below the old
	 * one (the prune that set it dropped them, and no receipt is written
	 * there: both positions only move up), so the range starts above it: the
	 * entries of runs pruned earlier and not yet vacuumed away are not
	 * visited again, and a prune in chunks costs what each chunk drops.
	 */
	sog_exec(horizon ?
			 "WITH d AS (DELETE FROM sog.receipt "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND last_position OPERATOR(sog.<=) $2 "
			 "AND last_position OPERATOR(sog.>) $3 RETURNING n) "
			 "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM d" :
			 "WITH d AS (DELETE FROM sog.receipt "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND last_position OPERATOR(sog.<=) $2 RETURNING n) "
			 "SELECT COALESCE(pg_catalog.sum(n), 0)::pg_catalog.int8 FROM d",
			 horizon ? 3 : 2, types, values, NULL, false);
	dropped = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));

	/*
	 * The one run that straddles it, if any: keep its upper part, written
	 * when the run was (1.1's created_at is what interval policies and
	 * monitoring read; the whole row carries it without naming it, so the
	 * query is the same before the update).  Only the first row above the
	 * horizon can straddle it; the first two are looked at, through the
	 * primary key, so that an overlap there is still reported, and the
	 * receipts above the horizon (the kept ones, all of them) are not read: a
	 * prune in chunks costs what it drops, not what it keeps.
	 */
	sog_exec("DELETE FROM sog.receipt r "
			 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND last_position OPERATOR(sog.=) ANY (SELECT s.last_position FROM sog.receipt s "
			 "WHERE s.checkpoint_id OPERATOR(pg_catalog.=) $1 "
			 "AND s.last_position OPERATOR(sog.>) $2 "
			 "ORDER BY s.last_position USING OPERATOR(sog.<) LIMIT 2) "
			 "AND first_position OPERATOR(sog.<=) $2 "
			 "RETURNING first_position, n, positions, digests, r",
			 2, types, values, NULL, false);
	if (SPI_processed > 1)
		report_corrupt_run(NULL, 0, "receipt rows of one checkpoint overlap");
	if (SPI_processed == 1)
	{
		Datum		created_at = (Datum) 0;
		bool		have_created_at = false;
		Datum		row = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5, &isnull);
		AttrNumber	att;
		Relation	rel = table_open(sog_receipt_relid(), AccessShareLock);

		att = sog_receipt_attnums(rel)[RC_CREATED_AT];
		table_close(rel, NoLock);
		if (!isnull && att != InvalidAttrNumber)
		{
			created_at = GetAttributeByNum(DatumGetHeapTupleHeader(row), att, &isnull);
			have_created_at = !isnull;
		}
		decode_run(0, &run);
		sog_receipt_run_init(&kept, run.n);
		for (i = 0; i < run.n; i++)
		{
			if (sog_position_cmp(run.positions[i], through) <= 0)
				dropped++;
			else
				sog_receipt_run_add(&kept, run.positions[i],
									run.digests + (size_t) i * SOG_DIGEST_LEN);
		}
		sog_receipt_run_store_at(checkpoint_id, -1, &kept, have_created_at ? &created_at : NULL);
	}
	return dropped;
}

void
sog_receipt_scan(int64 checkpoint_id, const SogPosition *horizon,
				 const SogPosition *from, const SogPosition *to,
				 SogReceiptEmit emit, void *arg)
{
	Oid			types[3] = {INT8OID, sog_position_type(), sog_position_type()};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext batchcxt;
	SPIPlanPtr	plan;
	Portal		portal;
	bool		done = false;

	/* nothing at or below the horizon (rows there may still be stored) */
	if (horizon && (!from || sog_position_cmp(from, horizon) <= 0))
		from = horizon;
	values[0] = Int64GetDatum(checkpoint_id);
	POS_ARG(from, 1);
	POS_ARG(to, 2);
	plan = sog_keep_plan(PLAN_RECEIPT_SCAN,
						 "SELECT first_position, n, positions, digests FROM sog.receipt "
						 "WHERE checkpoint_id OPERATOR(pg_catalog.=) $1 "
						 "AND ($2 IS NULL OR last_position OPERATOR(sog.>=) $2) "
						 "AND ($3 IS NULL OR first_position OPERATOR(sog.<=) $3) "
						 "ORDER BY last_position USING OPERATOR(sog.<)",
						 3, types);
	portal = SPI_cursor_open(NULL, plan, values, nulls, true);

	/* a batch of rows at a time, so memory stays bounded however many */
	batchcxt = AllocSetContextCreate(caller, "sog receipts scan",
									 ALLOCSET_DEFAULT_SIZES);
	while (!done)
	{
		uint64		r;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 64);
		MemoryContextSwitchTo(batchcxt);
		if (SPI_processed == 0)
			break;
		for (r = 0; r < SPI_processed && !done; r++)
		{
			SogReceiptRun run;
			int			i;

			decode_run((int) r, &run);
			for (i = 0; i < run.n; i++)
			{
				if (from && sog_position_cmp(run.positions[i], from) < 0)
					continue;
				if (horizon && sog_position_cmp(run.positions[i], horizon) <= 0)
					continue;
				if (to && sog_position_cmp(run.positions[i], to) > 0)
				{
					done = true;	/* rows are in position order */
					break;
				}
				emit(arg, run.positions[i], run.digests + (size_t) i * SOG_DIGEST_LEN);
			}
		}
		SPI_freetuptable(SPI_tuptable);
		MemoryContextSwitchTo(caller);
		MemoryContextReset(batchcxt);
	}
	MemoryContextSwitchTo(caller);
	SPI_cursor_close(portal);
	MemoryContextDelete(batchcxt);
}
