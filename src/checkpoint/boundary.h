/*-------------------------------------------------------------------------
 *
 * checkpoint/boundary.h
 *	  The read boundary (boundary.c): what the worker noted as read and
 *	  not yet applied, recording it, refusing what would drop it, and
 *	  checking it when an apply or a promotion closes it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_BOUNDARY_H
#define SOG_BOUNDARY_H

#include "postgres.h"

#include "checkpoint/checkpoint.h"

/*
 * The locked checkpoint holds a read boundary: its read cursor is above its
 * applied position (records were noted as read and are not all applied).
 */
extern bool sog_boundary_open(const SogCheckpoint *cp);

/*
 * An apply entered the open boundary without reaching its cursor: the
 * applied position lies strictly inside (read_base, source_cursor].
 */
extern bool sog_boundary_entered(const SogCheckpoint *cp);

/*
 * Where a gap that may hold a record of the boundary starts: read_base when
 * the boundary was entered (the records applied in it were never checked
 * against its hash), else the applied position.
 */
extern const SogPosition *sog_boundary_base(const SogCheckpoint *cp);

/*
 * After a loss through lost_to inside an open read boundary with a hash or
 * a count: record the rest (lost_to, cursor] as an unverified gap, since
 * the hash (or count) also covers the lost records and can no longer be
 * met.  Nothing when there is no such boundary.  Runs inside SPI.
 */
extern void sog_boundary_record_rest(const SogCheckpoint *cp, const SogPosition *lost_to);

/*
 * The newest gap's id as the row of a checkpoint whose boundary was just
 * recorded is written (checkpoint/checkpoint.c): later gaps are the ones found
 * since.
 */
extern int64 sog_boundary_gap_floor(const SogCheckpoint *cp);

/* "(10, 20]": the boundary (read_base, source_cursor], for messages. */
extern char *sog_boundary_str(const SogCheckpoint *cp);

/* Nothing is buffered: the read cursor returns to the applied position. */
extern void sog_clear_read_boundary(SogCheckpoint *cp);

/*
 * note_read: the worker holds, unapplied, every record in (applied,
 * cursor], hashed as hash (NULL: none) and counted as count.  Records that
 * boundary (a cursor at the applied position clears it) unless one is
 * open: then the same boundary noted again changes nothing (false), and
 * any other is refused (SG005 for a cursor that would move back, SG004
 * otherwise), since it would drop records noted and not applied.  True
 * when *cp changed.
 */
extern bool sog_boundary_note(SogCheckpoint *cp, SogPosition *cursor, char *hash,
							  bool count_isnull, int64 count);

/*
 * halt: the boundary the worker hands over, given what it says it holds
 * (*cursor NULL: nothing new).  A boundary already open is kept as it was
 * noted (its hash, count and cursor are what the successor verifies),
 * unless the halt would move its cursor back (SG005); otherwise the halt's
 * own boundary is recorded as note_read records it.  On return *cursor,
 * *hash, *count_isnull and *count describe the boundary in force, and
 * *kept says whether the halt's own was set aside for it.
 */
extern void sog_boundary_halt(SogCheckpoint *cp, SogPosition **cursor, char **hash,
							  bool *count_isnull, int64 *count, bool *kept);

/*
 * An apply call reaches or passes the open boundary's cursor: the records
 * applied in (read_base, cursor] must hash to the noted hash (or make up
 * the noted count), else SG004 naming the boundary.  at is the event that
 * reached the cursor; cp is the checkpoint as the call began, and the
 * call's nextra events are those it delivers in (applied, cursor], in
 * order.  Those records are the receipts stored through stored and the
 * call's events above it; or, with a hash, the receipts through
 * applied and every event of the call: receipts a recovery attempt wrote
 * above the applied position count whether or not the worker delivers them
 * again (the source may have trimmed them since it read).
 */
extern void sog_boundary_check_close(const SogCheckpoint *cp, const SogPosition *at,
									 const SogPosition *stored, int nextra,
									 SogPosition *const *extra_pos,
									 const uint8 *const *extra_dig);

/*
 * Would a promotion that takes the applied position to advance_through
 * leave every noted record applied?  True when it moves nothing, when no
 * boundary is open, or when it reaches the cursor and the receipts in the
 * boundary match what was noted; false when it ends inside the boundary (a
 * prefix cannot be checked against the hash) or they do not match.
 */
extern bool sog_boundary_promotable(const SogCheckpoint *cp,
									const SogPosition *advance_through);

/*
 * Through where the records of an open boundary are already stored as
 * receipts: the applied position, or further where a recovery attempt
 * recorded receipts above it, never beyond the cursor.
 */
extern SogPosition *sog_boundary_stored_through(const SogCheckpoint *cp);

/* Does the open boundary carry a hash or a count (something to check)? */
extern bool sog_boundary_checkable(const SogCheckpoint *cp);

/*
 * Once its last open gap is resolved, does the checkpoint still hold a
 * hashed or counted boundary that the gaps recorded since it was noted do
 * not cover, from its base through its cursor?  Then it must be verified
 * again (replaying).  Runs inside SPI.
 */
extern bool sog_boundary_unverified(const SogCheckpoint *cp);

/*
 * After every write of a locked checkpoint (sog_checkpoint_write): if its
 * applied position now lies strictly inside the read boundary, have the
 * transaction's COMMIT (or PREPARE TRANSACTION) refuse with SG004 unless a
 * later call of the same transaction reaches the cursor.  Every writer
 * goes through sog_checkpoint_write, so no call leaves a boundary partly
 * applied unchecked.
 */
extern void sog_boundary_commit_check(const SogCheckpoint *cp);

#endif							/* SOG_BOUNDARY_H */
