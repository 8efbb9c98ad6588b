/*-------------------------------------------------------------------------
 *
 * checkpoint/boundary.c
 *	  The read boundary: what a worker noted as read and not yet applied,
 *	  (read_base, source_cursor] with a buffer hash or a count of its
 *	  records.  Recording it (note_read, halt), refusing what would drop
 *	  it, checking it when an apply or a promotion closes it, and where a
 *	  gap that may hold one of its records starts.
 *
 * The rule, in one paragraph.  A boundary, once recorded, is discharged
 * only by (a) an apply that reaches its cursor with records that hash to it
 * (or make up its count), checked here (sog_boundary_check_close), (b) a
 * verify_gap that matches, after which the apply that reaches the cursor
 * still checks it, or (c) a gap row that covers it.  Nothing else may
 * replace, shrink, move back or close it: a note_read of another boundary
 * while it is open is refused, the same note again changes nothing, a halt
 * keeps it for the successor, a read cursor moves back only through claim,
 * and a promotion that would end inside it does not promote.  A sink
 * transaction that applies part of a boundary and stops short of its
 * cursor does not commit either (sog_boundary_commit_check: a write that
 * leaves the applied position inside a boundary registers the checkpoint,
 * and the transaction's PRE_COMMIT and PRE_PREPARE callback refuses if
 * the row is still so): what an apply wrote inside a boundary is checked
 * against the hash only when the cursor is reached, so the whole boundary
 * is applied in the transaction that reaches it.  At every commit, then,
 * the applied position is the boundary's base or at or past its cursor, a
 * failed check leaves the boundary exactly as it was noted (a successor
 * verifies it
 * against the source and replays it), and a gap recorded for it starts at
 * its base.  Before 1.2 a transaction could commit a partly applied
 * boundary; for such a checkpoint the gaps start at read_base
 * (sog_boundary_base), so what its applies wrote there is inside them.
 *
 * Locking: every function here works on a checkpoint its caller locked
 * (checkpoint/checkpoint.c), inside the caller's SPI connection where it reads
 * receipts or gaps.
 *
 * Relies on: checkpoint/checkpoint.c, store/gap.c, type/hash.c,
 * type/position.c, store/receipt.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "checkpoint/boundary.h"
#include "store/gap.h"
#include "store/receipt.h"
#include "type/hash.h"
#include "type/util.h"

bool
sog_boundary_open(const SogCheckpoint *cp)
{
	return sog_position_cmp_nullable(cp->source_cursor, cp->applied_position) > 0;
}

bool
sog_boundary_entered(const SogCheckpoint *cp)
{
	return sog_boundary_open(cp) &&
		sog_position_cmp_nullable(cp->read_base, cp->applied_position) < 0;
}

const SogPosition *
sog_boundary_base(const SogCheckpoint *cp)
{
	return sog_boundary_entered(cp) ? cp->read_base : cp->applied_position;
}

bool
sog_boundary_checkable(const SogCheckpoint *cp)
{
	return (cp->read_hash != NULL || !cp->read_count_isnull) && sog_boundary_open(cp);
}

void
sog_clear_read_boundary(SogCheckpoint *cp)
{
	cp->source_cursor = cp->applied_position;
	cp->read_base = NULL;
	cp->read_hash = NULL;
	cp->read_count_isnull = true;
	cp->read_count = 0;
}

/* Record (applied, cursor] as the boundary; a cursor at applied clears it. */
static void
record_boundary(SogCheckpoint *cp, SogPosition *cursor, char *hash,
				bool count_isnull, int64 count)
{
	if (sog_position_cmp_nullable(cursor, cp->applied_position) == 0)
	{
		sog_clear_read_boundary(cp);
		return;
	}
	cp->source_cursor = cursor;
	cp->read_base = cp->applied_position;
	cp->read_hash = hash;
	cp->read_count_isnull = count_isnull;
	cp->read_count = count;
	cp->boundary_recorded = true;
}

void
sog_boundary_record_rest(const SogCheckpoint *cp, const SogPosition *lost_to)
{
	if ((cp->read_hash == NULL && cp->read_count_isnull) ||
		sog_position_cmp_nullable(cp->source_cursor, cp->applied_position) <= 0 ||
		sog_position_cmp_nullable(lost_to, cp->applied_position) <= 0 ||
		sog_position_cmp_nullable(cp->source_cursor, lost_to) <= 0)
		return;
	sog_gap_record(cp->id, cp->generation, "unverified", SOG_VERDICT_FAIL_CLOSED,
				   lost_to, cp->source_cursor,
				   psprintf(cp->read_hash ?
							"read through %s under a hash that also covers the lost records: re-read and replay them, or accept their loss" :
							"read through %s as a count that includes the lost records: re-read and replay them, or accept their loss",
							sog_position_label(cp->source_cursor)));
}

/*
 * The gap floor of a boundary note_read or halt recorded, taken as the
 * checkpoint's row is written (checkpoint/checkpoint.c): the newest gap's id
 * then. Gaps recorded later, under the row's lock, have higher ids: they are
 * the ones found since the boundary was recorded (sog_boundary_unverified).
 */
int64
sog_boundary_gap_floor(const SogCheckpoint *cp)
{
	return sog_gap_newest_id(cp->id);
}

char *
sog_boundary_str(const SogCheckpoint *cp)
{
	return psprintf("(%s, %s]",
					cp->read_base ? sog_position_label(cp->read_base) : "start",
					sog_position_label(cp->source_cursor));
}

/* What the open boundary holds and how much of it is applied, for details. */
static char *
boundary_state(const SogCheckpoint *cp)
{
	const char *noted;

	if (cp->read_hash && !cp->read_count_isnull)
		noted = psprintf("with a buffer hash of " INT64_FORMAT " records", cp->read_count);
	else if (cp->read_hash)
		noted = "with a buffer hash";
	else if (!cp->read_count_isnull)
		noted = psprintf("as " INT64_FORMAT " records, without a hash", cp->read_count);
	else
		noted = "without a hash or a count";
	if (sog_boundary_entered(cp))
		return psprintf("The read boundary %s was noted %s; it is applied through %s, not to its cursor.",
						sog_boundary_str(cp), noted, sog_position_label(cp->applied_position));
	return psprintf("The read boundary %s was noted %s; none of it is applied.",
					sog_boundary_str(cp), noted);
}

/* SG005: a note_read or halt would move the open boundary's cursor back. */
static void
report_cursor_back(const SogCheckpoint *cp, const SogPosition *cursor, const char *call)
{
	ereport(ERROR,
			(errcode(ERRCODE_SOG_REGRESSION),
			 errmsg("read cursor of checkpoint " INT64_FORMAT " cannot move back from %s to %s",
					cp->id, sog_position_label(cp->source_cursor), sog_position_label(cursor)),
			 errdetail("%s %s", boundary_state(cp),
					   psprintf("The %s would drop the records noted in (%s, %s].", call,
								sog_position_label(cursor), sog_position_label(cp->source_cursor))),
			 strcmp(call, "halt") == 0 ?
			 errhint("Halt with source_cursor NULL to hand the noted boundary %s to the successor, or apply the records through %s first.",
					 sog_boundary_str(cp), sog_position_label(cp->source_cursor)) :
			 errhint("A read cursor moves back only through sog.claim(). Apply the records noted through %s first, or stop this worker: its successor verifies %s and replays it.",
					 sog_position_label(cp->source_cursor), sog_boundary_str(cp))));
}

static bool
hash_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return pg_strcasecmp(a, b) == 0;
}

bool
sog_boundary_note(SogCheckpoint *cp, SogPosition *cursor, char *hash,
				  bool count_isnull, int64 count)
{
	if (!sog_boundary_open(cp))
	{
		record_boundary(cp, cursor, hash, count_isnull, count);
		return true;
	}
	/* the same boundary noted again (a retried note): nothing changes */
	if (sog_position_cmp(cursor, cp->source_cursor) == 0 &&
		hash_eq(hash, cp->read_hash) && count_isnull == cp->read_count_isnull &&
		(count_isnull || count == cp->read_count))
		return false;
	if (sog_position_cmp(cursor, cp->source_cursor) < 0)
		report_cursor_back(cp, cursor, "note_read");
	ereport(ERROR,
			(errcode(ERRCODE_SOG_GAP_PENDING),
			 errmsg("read boundary %s of checkpoint " INT64_FORMAT " is not applied yet",
					sog_boundary_str(cp), cp->id),
			 errdetail("%s A note_read through %s would replace it, and a record noted there and not applied would be skipped unchecked.",
					   boundary_state(cp), sog_position_label(cursor)),
			 errhint("Apply every record noted through %s before noting the next page (retry a rolled-back sink transaction whole, its note included). A worker that no longer holds them stops: its successor verifies %s and replays it.",
					 sog_position_label(cp->source_cursor), sog_boundary_str(cp))));
	return false;				/* not reached */
}

void
sog_boundary_halt(SogCheckpoint *cp, SogPosition **cursor, char **hash,
				  bool *count_isnull, int64 *count, bool *kept)
{
	*kept = false;
	if (*cursor != NULL && cp->state == SOG_STATE_RUNNING &&
		sog_position_cmp_nullable(*cursor, cp->applied_position) >= 0)
	{
		if (!sog_boundary_open(cp))
		{
			record_boundary(cp, *cursor, *hash, *count_isnull, *count);
			return;
		}
		if (sog_position_cmp(*cursor, cp->source_cursor) < 0)
			report_cursor_back(cp, *cursor, "halt");

		/*
		 * The noted boundary is what the successor verifies.  What a halt may
		 * add to it: a hash or a count it was noted without, for the same
		 * records (same cursor, none applied).
		 */
		if (sog_position_cmp(*cursor, cp->source_cursor) == 0 && !sog_boundary_entered(cp))
		{
			if (cp->read_hash == NULL && *hash != NULL)
				cp->read_hash = *hash;
			if (cp->read_count_isnull && !*count_isnull)
			{
				cp->read_count_isnull = false;
				cp->read_count = *count;
			}
		}
		*kept = sog_position_cmp(*cursor, cp->source_cursor) != 0 ||
			!hash_eq(*hash, cp->read_hash) || *count_isnull != cp->read_count_isnull ||
			(!*count_isnull && *count != cp->read_count);
	}
	else if (*cursor != NULL && cp->state == SOG_STATE_RUNNING)
		return;					/* behind applied: the caller evaluates it */

	/* a gap is pending, nothing new was read, or the noted one is kept */
	*cursor = cp->source_cursor;
	*hash = cp->read_hash;
	*count_isnull = cp->read_count_isnull;
	*count = cp->read_count;
}

SogPosition *
sog_boundary_stored_through(const SogCheckpoint *cp)
{
	if (sog_position_cmp_nullable(cp->receipts_through, cp->applied_position) <= 0)
		return cp->applied_position;
	if (sog_position_cmp(cp->receipts_through, cp->source_cursor) >= 0)
		return cp->source_cursor;
	return cp->receipts_through;
}

/* The records of a read boundary, folded as note_read's hash folds them. */
typedef struct BoundaryFold
{
	const SogPosition *base;	/* exclusive */
	SogBufferHash hash;
} BoundaryFold;

static void
fold_receipt(void *arg, SogPosition *pos, const uint8 *digest)
{
	BoundaryFold *f = (BoundaryFold *) arg;

	if (f->base && sog_position_cmp(pos, f->base) <= 0)
		return;
	sog_buffer_hash_step(&f->hash, SOG_POS_BYTES(pos), SOG_POS_NBYTES(pos), digest);
}

/*
 * The buffer hash of the receipts stored in (read_base, stored_through]
 * and then of the extra records above skip_through (NULL: all of them), in
 * order, into *f.
 */
static void
fold_boundary(const SogCheckpoint *cp, const SogPosition *stored_through,
			  const SogPosition *skip_through, int nextra,
			  SogPosition *const *extra_pos, const uint8 *const *extra_dig,
			  BoundaryFold *f)
{
	int			i;

	f->base = cp->read_base;
	sog_buffer_hash_init(&f->hash);
	if (stored_through && sog_position_cmp_nullable(stored_through, cp->read_base) > 0)
	{
		/* the newest committed receipts, as every other read of the store */
		PushActiveSnapshot(GetLatestSnapshot());
		sog_receipt_scan(cp->id, cp->prune_horizon, cp->read_base, stored_through,
						 fold_receipt, f);
		PopActiveSnapshot();
	}
	for (i = 0; i < nextra; i++)
		if (sog_position_cmp_nullable(extra_pos[i], skip_through) > 0)
			sog_buffer_hash_step(&f->hash, SOG_POS_BYTES(extra_pos[i]),
								 SOG_POS_NBYTES(extra_pos[i]), extra_dig[i]);
}

/* Does the fold hash to the boundary's hash? */
static bool
fold_matches(const SogCheckpoint *cp, BoundaryFold *f)
{
	char		hex[2 * SOG_DIGEST_LEN + 1];

	sog_buffer_hash_hex(&f->hash, hex);
	return pg_strcasecmp(hex, cp->read_hash) == 0;
}

/*
 * Are the records applied in (read_base, cursor] exactly those noted?
 * With the boundary's hash: the buffer hash of their receipts (stored ones
 * through stored_through, then the extra records above it, in order)
 * equals it; or, where a recovery attempt stored receipts above applied
 * (the applied position when the call began), that of the receipts through
 * applied and then every extra record: the worker did not deliver those
 * receipts' records again because the source no longer had them when it
 * read (both folds hold applied records only, so either proves every noted
 * record applied).  Without a hash, their number is at least the noted
 * count.  True when nothing can be checked (no hash and no count, or the
 * boundary's receipts were pruned).  *found is how many records the first
 * fold holds (-1 when nothing was checked).
 */
static bool
boundary_applied(const SogCheckpoint *cp, const SogPosition *stored_through,
				 const SogPosition *applied, int nextra,
				 SogPosition *const *extra_pos,
				 const uint8 *const *extra_dig, int64 *found)
{
	BoundaryFold f;

	*found = -1;
	if (cp->read_hash == NULL && cp->read_count_isnull)
		return true;			/* nothing was said about the records */
	if (cp->prune_horizon &&
		sog_position_cmp_nullable(cp->prune_horizon, cp->read_base) > 0)
		return true;			/* receipts of the boundary were pruned */

	fold_boundary(cp, stored_through, stored_through, nextra, extra_pos, extra_dig, &f);
	*found = f.hash.count;
	if (cp->read_hash == NULL)
		return f.hash.count >= cp->read_count;
	if (fold_matches(cp, &f))
		return true;
	if (sog_position_cmp_nullable(stored_through, applied) <= 0)
		return false;			/* no receipt above applied: one fold */
	fold_boundary(cp, applied, NULL, nextra, extra_pos, extra_dig, &f);
	return fold_matches(cp, &f);
}

void
sog_boundary_check_close(const SogCheckpoint *cp, const SogPosition *at,
						 const SogPosition *stored, int nextra,
						 SogPosition *const *extra_pos,
						 const uint8 *const *extra_dig)
{
	int64		found;

	if (boundary_applied(cp, stored, cp->applied_position, nextra, extra_pos, extra_dig, &found))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_SOG_GAP_PENDING),
			 errmsg("position %s would skip records read before it on checkpoint " INT64_FORMAT,
					sog_position_label(at), cp->id),
			 cp->read_hash ?
			 errdetail("The read boundary %s was noted with %s records and a buffer hash; the " INT64_FORMAT " records applied in it do not hash to it.",
					   sog_boundary_str(cp),
					   cp->read_count_isnull ? "its" : psprintf(INT64_FORMAT, cp->read_count), found) :
			 errdetail("The read boundary %s holds " INT64_FORMAT " records, but only " INT64_FORMAT " of them are applied.",
					   sog_boundary_str(cp), cp->read_count, found),
			 errhint("Apply every record noted in %s from the applied position %s on, never from the read cursor; a worker that no longer holds them rolls back and stops: its successor verifies %s against the source and replays it.",
					 sog_boundary_str(cp), cp->orig.applied_position ? sog_position_label(cp->orig.applied_position) : "(none)",
					 sog_boundary_str(cp))));
}

bool
sog_boundary_promotable(const SogCheckpoint *cp, const SogPosition *advance_through)
{
	int64		found;

	if (!sog_boundary_open(cp) ||
		sog_position_cmp_nullable(advance_through, cp->applied_position) <= 0)
		return true;
	if (sog_position_cmp_nullable(advance_through, cp->source_cursor) < 0)
		return false;			/* it would end inside: never checked */
	return boundary_applied(cp, cp->source_cursor, cp->source_cursor, 0, NULL, NULL, &found);
}

bool
sog_boundary_unverified(const SogCheckpoint *cp)
{
	if (!sog_boundary_checkable(cp))
		return false;
	return !sog_gaps_since_cover(cp->id, sog_boundary_base(cp), cp->source_cursor,
								 cp->read_gap_floor_isnull ? 0 : cp->read_gap_floor);
}

/*
 * The commit check.  Checkpoints that an apply of this transaction left
 * with the applied position inside a read boundary, in
 * TopTransactionContext; forgotten at the end of the transaction.  A
 * subtransaction that rolls back leaves its entries: the check reads the
 * row as the transaction leaves it, so they pass.
 */
static int64 *commit_checks = NULL;
static int	n_commit_checks = 0;
static int	max_commit_checks = 0;

/*
 * Refuse (SG004) if checkpoint id is left partly applied; see the header.
 * At COMMIT no call is running, so the message names the checkpoint by
 * its consumer, stream and partition, which the worker knows.
 */
static void
check_left_applied(int64 id)
{
	SogCheckpoint cp;

	if (!sog_checkpoint_read_own(id, &cp) || !sog_boundary_entered(&cp))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_SOG_GAP_PENDING),
			 errmsg("read boundary %s of checkpoint %s/%s/%s is applied only through %s",
					sog_boundary_str(&cp), sog_cut(cp.consumer), sog_cut(cp.stream),
					sog_cut(cp.partition), sog_position_label(cp.applied_position)),
			 errdetail("The transaction applied records of the read boundary noted %s but did not reach its cursor %s; a noted record missing below %s would never be checked against the boundary.",
					   cp.read_hash ? "with a buffer hash" :
					   !cp.read_count_isnull ? psprintf("as " INT64_FORMAT " records", cp.read_count) :
					   "without a hash or a count",
					   sog_position_label(cp.source_cursor), sog_position_label(cp.applied_position)),
			 errhint("Apply every record noted through %s in this transaction, or roll it back; a worker that no longer holds them rolls back and stops: its successor verifies %s and replays it.",
					 sog_position_label(cp.source_cursor), sog_boundary_str(&cp))));
}

static void
commit_check_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			for (i = 0; i < n_commit_checks; i++)
				check_left_applied(commit_checks[i]);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			commit_checks = NULL;	/* freed with TopTransactionContext */
			n_commit_checks = max_commit_checks = 0;
			break;
		default:
			break;
	}
}

void
sog_boundary_commit_check(const SogCheckpoint *cp)
{
	static bool registered = false;
	int			i;

	if (!sog_boundary_entered(cp))
		return;
	if (!registered)
	{
		RegisterXactCallback(commit_check_callback, NULL);
		registered = true;
	}
	for (i = 0; i < n_commit_checks; i++)
		if (commit_checks[i] == cp->id)
			return;
	if (n_commit_checks == max_commit_checks)
	{
		max_commit_checks = Max(8, 2 * max_commit_checks);
		commit_checks = commit_checks == NULL ?
			MemoryContextAlloc(TopTransactionContext, sizeof(int64) * max_commit_checks) :
			repalloc(commit_checks, sizeof(int64) * max_commit_checks);
	}
	commit_checks[n_commit_checks++] = cp->id;
}
