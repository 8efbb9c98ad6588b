/*-------------------------------------------------------------------------
 *
 * checkpoint/checkpoint.h
 *	  The checkpoint row (checkpoint.c): its columns in memory, locking
 *	  it, reading it, writing it back, and the checks every state change
 *	  makes.
 *
 * Locking, in one paragraph (checkpoint/checkpoint.c has the details): every
 * state change of a checkpoint starts with sog_checkpoint_lock(), a FOR NO KEY
 * UPDATE row lock on the newest version of its row, held to the end of the
 * caller's transaction.  Everything the store does afterwards for that
 * checkpoint - receipts, gaps, manifests, the row's own update - happens under
 * that lock, reads the newest committed state, and commits or rolls back with
 * the caller's sink rows.  Writes go through the executor (store/writer.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_CHECKPOINT_H
#define SOG_CHECKPOINT_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "storage/itemptr.h"

#include "sog.h"
#include "store/tables.h"
#include "type/position.h"

typedef enum SogState
{
	SOG_STATE_RUNNING,
	SOG_STATE_REPLAYING,
	SOG_STATE_FAILED_CLOSED
} SogState;

/*
 * The columns of a checkpoint that its functions change, listed once: their
 * type and name.  SogCpMutable and SogCheckpoint declare them from this
 * list, and checkpoint/checkpoint.c's remember() copies them.  Pointers are NULL for a
 * NULL column.
 */
#define SOG_CP_MUTABLE_FIELDS(X) \
	X(int64, generation) \
	X(char *, owner) \
	X(char *, source_identity) \
	X(SogPosition *, source_cursor) \
	X(SogPosition *, read_base) \
	X(char *, read_hash) \
	X(bool, read_count_isnull) \
	X(int64, read_count) \
	X(SogPosition *, applied_position) \
	X(SogPosition *, prune_horizon) \
	X(SogPosition *, receipts_through)	/* greatest position with a receipt */ \
	X(SogState, state)

#define SOG_CP_FIELD(type, name)	type name;

/* The mutable columns as they were read (or last written). */
typedef struct SogCpMutable
{
	SOG_CP_MUTABLE_FIELDS(SOG_CP_FIELD)
} SogCpMutable;

/* One sog.checkpoint row, as read under its row lock. */
typedef struct SogCheckpoint
{
	int64		id;
	char	   *consumer;
	char	   *stream;
	char	   *partition;
	bool		telemetry;		/* criticality = 'telemetry' */
	char	   *provider;
	char	   *query_scope;
	/* orig: the columns below as they were read (or last written) */
	SogCpMutable orig;
	/* the provider token, detoasted only when asked for (it may be long) */
	bool		token_loaded;
	bool		token_changed;
	char	   *token;
	TimestampTz updated_at;
	bool		claimed_at_isnull;
	TimestampTz claimed_at;		/* when the current generation began */
	bool		claimed;		/* set by claim/promote: write claimed_at */
	bool		read_gap_floor_isnull;
	int64		read_gap_floor; /* the newest gap's id when the read boundary
								 * was recorded (1.1) */
	bool		boundary_recorded;	/* set by note_read/halt: write the floor */
	int			receipt_ring;	/* the receipt partition its runs go to (1.2;
								 * SOG_RING_NO_COLUMN before) */
	bool		after_snapshot; /* locked version committed after the
								 * transaction's snapshot (REPEATABLE READ,
								 * SERIALIZABLE): a write is 40001 */
	HeapTuple	tuple;			/* the row version read (and locked) */
	/* what the functions change (pgindent indents the X-macro as it likes) */
				SOG_CP_MUTABLE_FIELDS(SOG_CP_FIELD)
} SogCheckpoint;



extern const char *sog_state_label(SogState s);

/* sog.claim_timeout (milliseconds; 0: no limit) */
extern int	sog_claim_timeout;

/* Define the checkpoint's setting (sog.claim_timeout); at load. */
extern void sog_checkpoint_init(void);

/*
 * Find checkpoint id, check that the session's role may act on it with a
 * grant of the kinds in access (store/access.h; 42501), lock its newest row
 * version (waiting for any transaction that holds it: for a claim at most
 * sog.claim_timeout, and never longer than lock_timeout; either limit is a
 * 55P03 that names the holder) and read it into *cp, allocated in the
 * current memory context.  Raises 22023 for an unknown id, 25006 on a
 * standby or in a read-only transaction.
 */
extern void sog_checkpoint_lock(int64 id, SogCheckpoint *cp, int access,
								bool claim);

/*
 * Read checkpoint id's row as this transaction sees it now (its own newest
 * version, or the newest committed one), without a lock or an access
 * check, into *cp; false if there is none.  For the commit check of the
 * read boundary (checkpoint/boundary.c), which runs when no SQL function is active.
 */
extern bool sog_checkpoint_read_own(int64 id, SogCheckpoint *cp);

/*
 * Raise 40001 if *cp was locked at REPEATABLE READ or SERIALIZABLE in a
 * version committed after the transaction's snapshot (after_snapshot), as
 * an UPDATE of the row would: before any write of the checkpoint's row.
 * sog_checkpoint_write calls it; so does reconfigure, which writes the row
 * with SQL.
 */
extern void sog_checkpoint_check_snapshot(const SogCheckpoint *cp);

/*
 * Write back the columns of *cp that changed since it was read (the row
 * must be locked), through the executor; cp then describes the new row
 * version.  Nothing is written when nothing changed, but the snapshot rule
 * (sog_checkpoint_check_snapshot) is applied all the same: the caller is
 * a call that writes.
 */
extern void sog_checkpoint_write(SogCheckpoint *cp);

/*
 * The same, applying the snapshot rule only when something changed: for
 * the apply calls, which write nothing for a page of duplicates (and whose
 * note and token steps apply the rule themselves).
 */
extern void sog_checkpoint_write_changes(SogCheckpoint *cp);

/* The provider token (NULL: none), and a new one for the next write. */
extern char *sog_checkpoint_token(SogCheckpoint *cp);
extern void sog_checkpoint_set_token(SogCheckpoint *cp, char *token);

/*
 * No checkpoint has this id: 22023, or for a role whose grants do not cover
 * every checkpoint for kinds the 42501 of a checkpoint it may not act on
 * (sog_check_access_missing).
 */
extern void sog_report_unknown_checkpoint(int64 id, int kinds);

/* Raise 22003 if the generation cannot be incremented (it is INT64_MAX). */
extern void sog_check_generation_room(const SogCheckpoint *cp);

/* Raise SG001 unless generation is the checkpoint's current one. */
extern void sog_check_generation(const SogCheckpoint *cp, int64 generation,
								 const char *action);

/*
 * Raise SG005 if newt moves generation, applied_position or prune_horizon
 * of oldt backward (the monotonicity trigger's check).
 */
extern void sog_check_monotonic(HeapTuple oldt, HeapTuple newt, TupleDesc desc,
								AttrNumber generation_att, AttrNumber applied_att,
								AttrNumber horizon_att);

/*
 * Raise SG004 for a position above the applied position of a checkpoint
 * that is replaying (an unverified gap) or failed_closed (an open gap).
 */
extern void sog_report_gap_pending(const SogCheckpoint *cp, const SogPosition *pos);

/*
 * Consumer of checkpoint id (transaction snapshot); if unknown,
 * sog_report_unknown_checkpoint(id, kinds).
 */
extern char *sog_checkpoint_consumer(int64 id, int kinds);

#endif							/* SOG_CHECKPOINT_H */
