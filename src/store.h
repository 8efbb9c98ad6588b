/*-------------------------------------------------------------------------
 *
 * store.h
 *	  The checkpoint/receipt store: the checkpoint row (checkpoint.c), the
 *	  receipt store (receipt.c), the gap log (gaplog.c), and the tables and
 *	  SPI helpers they share (tables.h).
 *
 * Locking, in one paragraph (checkpoint.c has the details): every state
 * change of a checkpoint starts with sog_checkpoint_lock(), a FOR NO KEY
 * UPDATE row lock on the newest version of its row, held to the end of the
 * caller's transaction.  Everything the store does afterwards for that
 * checkpoint - receipts, gaps, manifests, the row's own update - happens
 * under that lock, reads the newest committed state, and commits or rolls
 * back with the caller's sink rows.  Writes go through the executor
 * (writer.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_STORE_H
#define SOG_STORE_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "storage/itemptr.h"

#include "halt.h"
#include "position.h"
#include "sog.h"
#include "tables.h"

typedef enum SogState
{
	SOG_STATE_RUNNING,
	SOG_STATE_REPLAYING,
	SOG_STATE_FAILED_CLOSED
} SogState;

/*
 * The columns of a checkpoint that its functions change, listed once: their
 * type and name.  SogCpMutable and SogCheckpoint declare them from this
 * list, and checkpoint.c's remember() copies them.  Pointers are NULL for a
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
	/* what the functions change; orig is what was read (or last written) */
	SOG_CP_MUTABLE_FIELDS(SOG_CP_FIELD)
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
	HeapTuple	tuple;			/* the row version read (and locked) */
} SogCheckpoint;

/* A run of receipts being built by one apply call (in memory). */
typedef struct SogReceiptRun
{
	int			n;				/* receipts in the run */
	int			cap;
	uint8	   *digests;		/* n x 32 bytes */
	SogPosition **positions;	/* n positions */
	bool		single;			/* every position has one component */
} SogReceiptRun;

/* ------------------------------------------------------- checkpoint.c */

extern const char *sog_state_label(SogState s);

/* sog.claim_timeout (milliseconds; 0: no limit) */
extern int	sog_claim_timeout;

/*
 * Find checkpoint id, check that the session's role may act on it with a
 * grant of the kinds in access (access.h; 42501), lock its newest row
 * version (waiting for any transaction that holds it: for a claim at most
 * sog.claim_timeout, and never longer than lock_timeout; either limit is a
 * 55P03 that names the holder) and read it into *cp, allocated in the
 * current memory context.  Raises 22023 for an unknown id, 25006 on a
 * standby or in a read-only transaction.
 */
extern void sog_checkpoint_lock(int64 id, SogCheckpoint *cp, int access,
								bool claim);

/*
 * Write back the columns of *cp that changed since it was read (the row
 * must be locked), through the executor; cp then describes the new row
 * version.  Nothing is written when nothing changed.
 */
extern void sog_checkpoint_write(SogCheckpoint *cp);

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

/* Nothing is buffered: the read cursor returns to the applied position. */
extern void sog_clear_read_boundary(SogCheckpoint *cp);

/*
 * The worker holds, unapplied, every record in (applied_position, cursor],
 * hashed as hash (NULL: no hash).  A cursor at the applied position clears
 * the boundary.
 */
extern void sog_record_read_boundary(SogCheckpoint *cp, SogPosition *cursor,
									 char *hash, bool count_isnull, int64 count);

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

/* ---------------------------------------------------------- receipt.c */

extern void sog_receipt_run_init(SogReceiptRun *run, int expected);
extern void sog_receipt_run_add(SogReceiptRun *run, SogPosition *pos,
								const uint8 *digest);
extern bool sog_receipt_run_find(const SogReceiptRun *run,
								 const SogPosition *pos, uint8 *digest);

/* Store a run as receipt rows (through the executor); runs inside SPI. */
extern void sog_receipt_run_store(int64 checkpoint_id, const SogReceiptRun *run);
/* the same, with the rows' created_at (1.1) given: a pruned run's remainder */
extern void sog_receipt_run_store_at(int64 checkpoint_id, const SogReceiptRun *run,
									 const Datum *created_at);

/*
 * Store the dense run first, first+1, ..., first+n-1 (first >= 0, no
 * overflow) with its n digests back to back: the rows
 * sog_receipt_run_store would write for it, without a position per event.
 */
extern void sog_receipt_store_dense(int64 checkpoint_id, int64 first, int n,
									const uint8 *digests);

/*
 * Look up the stored receipt of pos; true and its digest if there is one.
 * probe caches the stored row fetched last (initialise it with
 * sog_receipt_run_init); pass the same probe for the events of one call.
 * Reads the newest committed data, not the transaction snapshot (the caller
 * holds the checkpoint lock, so no receipt of this checkpoint is in flight).
 */
extern bool sog_receipt_lookup(int64 checkpoint_id, const SogPosition *pos,
							   uint8 *digest, SogReceiptRun *probe);


/* Drop receipts at or below through; returns how many receipts. */
extern int64 sog_receipt_prune(int64 checkpoint_id, const SogPosition *through);

/*
 * Receipts of a checkpoint in position order within [from, to] (NULL: no
 * bound), on the transaction snapshot; calls emit for each.
 */
typedef void (*SogReceiptEmit) (void *arg, SogPosition *pos, const uint8 *digest);
extern void sog_receipt_scan(int64 checkpoint_id, const SogPosition *from,
							 const SogPosition *to, SogReceiptEmit emit, void *arg);

/*
 * At the close of a read boundary (the applied position reaches or passes
 * its cursor): are the records applied in (read_base, cursor] exactly those
 * the worker noted?  With the boundary's hash: the buffer hash of their
 * receipts (stored ones through stored_through, then this call's nextra
 * events, in order) equals it; without one, their number is at least the
 * noted count.  True when nothing can be checked (no hash and no count, or
 * the boundary's receipts were pruned).  *found is how many records were
 * folded (-1 when nothing was checked).  Runs inside SPI.
 */
extern bool sog_boundary_applied(const SogCheckpoint *cp, const SogPosition *stored_through,
								 int nextra, SogPosition *const *extra_pos,
								 const uint8 *const *extra_dig, int64 *found);

/* ----------------------------------------------------------- gaplog.c */

/* Gaps and manifests; both return the new row's id.  Run inside SPI. */
extern int64 sog_gap_record(const SogCheckpoint *cp, const char *reason,
							SogVerdict verdict, const SogPosition *from,
							const SogPosition *to, const char *detail);
extern int64 sog_manifest_record(const SogCheckpoint *cp, const char *kind,
								 const SogPosition *source_cursor,
								 const char *buffer_hash, bool count_isnull,
								 int64 count, const SogManifest *m,
								 int64 gap_id, const char *note);

/* Newest open gap of a checkpoint: its id (0 if none) and verdict. */
extern int64 sog_gap_newest_open(int64 checkpoint_id, SogVerdict *verdict);

/* Newest open gap of a checkpoint with this reason; 0 if none. */
extern int64 sog_gap_open_with_reason(int64 checkpoint_id, const char *reason);

/*
 * Newest open gap of a checkpoint that covers (from, to]: its from is at
 * or below from (NULL: the start) and its to at or above to (NULL:
 * unbounded).  0 if none.
 */
extern int64 sog_gap_covering(int64 checkpoint_id, const SogPosition *from,
							  const SogPosition *to);

/*
 * Is a retention loss (from, through] already on the record and accepted:
 * a 'retention' gap resolved as accepted_loss that starts exactly at from
 * (the applied position it was recorded at) and reaches through?  Runs
 * inside SPI.
 */
extern bool sog_gap_loss_accepted(int64 checkpoint_id, const SogPosition *from,
								  const SogPosition *through);

/*
 * Do the gaps of a checkpoint with an id above after_id (recorded after
 * that one, resolved or not) together cover (from, to]?  Runs inside SPI.
 */
extern bool sog_gaps_cover(int64 checkpoint_id, const SogPosition *from,
						   const SogPosition *to, int64 after_id);

/* The id of the checkpoint's newest gap, 0 if none (connects to SPI). */
extern int64 sog_gap_newest_id(int64 checkpoint_id);

/*
 * After a loss through lost_to inside an open read boundary with a hash or
 * a count: record the rest (lost_to, cursor] as an unverified gap, since
 * the hash (or count) also covers the lost records and can no longer be
 * met.  Nothing when there is no such boundary.  Runs inside SPI.
 */
extern void sog_gap_record_boundary_rest(const SogCheckpoint *cp,
										 const SogPosition *lost_to);

/* Number of open gaps of a checkpoint. */
extern int64 sog_gap_count_open(int64 checkpoint_id);

/* Checkpoint of a gap, or -1 if there is no such gap. */
extern int64 sog_gap_checkpoint(int64 gap_id);

/* Resolve one gap; false if it was already resolved. */
extern bool sog_gap_resolve(int64 gap_id, const char *resolution, const char *note);

/* Mark every open gap of a checkpoint resolved; returns how many. */
extern int64 sog_gap_resolve_open(int64 checkpoint_id, const char *resolution,
								  const char *note);

/* Mark every other open recovery attempt of the checkpoint lost. */
extern void sog_recovery_fence_open(SogCheckpoint *cp, int64 except_id);

#endif							/* SOG_STORE_H */
