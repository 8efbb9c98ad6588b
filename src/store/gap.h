/*-------------------------------------------------------------------------
 *
 * store/gap.h
 *	  The gap log (store/gap.c): gap rows and their NOTIFY, the manifest log,
 *	  and the queries on gaps; all under the checkpoint's row lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_GAP_H
#define SOG_GAP_H

#include "postgres.h"

#include "type/halt.h"
#include "type/position.h"

/*
 * Gaps and manifests of a checkpoint (its id and generation; a manifest
 * also its owner and applied position, as the caller holds them); both
 * return the new row's id.  Run inside SPI.
 */
extern int64 sog_gap_record(int64 checkpoint_id, int64 generation, const char *reason,
							SogVerdict verdict, const SogPosition *from,
							const SogPosition *to, const char *detail);
extern int64 sog_manifest_record(int64 checkpoint_id, int64 generation,
								 const char *owner, const SogPosition *applied_position,
								 const char *kind,
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
extern int64 sog_gap_open_covering(int64 checkpoint_id, const SogPosition *from,
								   const SogPosition *to);

/*
 * The gaps of a checkpoint that already account for records above from:
 * open gaps and bounded gaps resolved as accepted_loss, followed from from
 * while they join up.  Returns the id of the one that reaches to (0 if
 * they do not reach it), and in *reached where they end (from when none
 * starts at or below it).  Runs inside SPI.
 */
extern int64 sog_gap_losses_through(int64 checkpoint_id, const SogPosition *from,
									const SogPosition *to, const SogPosition **reached);

/*
 * Is the loss (from, through] already on the record and accepted: gaps
 * resolved as accepted_loss (bounded, or unbounded 'retention' ones) that
 * join up from from through through, whatever their reasons?  A chain
 * counts as one: a hash mismatch accepted, then a retention loss reported
 * above it.  Runs inside SPI.
 */
extern bool sog_gap_loss_accepted(int64 checkpoint_id, const SogPosition *from,
								  const SogPosition *through);

/*
 * Do the gaps of a checkpoint with an id above after_id (recorded after
 * that one, resolved or not) together cover (from, to]?  Runs inside SPI.
 */
extern bool sog_gaps_since_cover(int64 checkpoint_id, const SogPosition *from,
								 const SogPosition *to, int64 after_id);

/* The id of the checkpoint's newest gap, 0 if none (connects to SPI). */
extern int64 sog_gap_newest_id(int64 checkpoint_id);


/* Number of open gaps of a checkpoint. */
extern int64 sog_gap_count_open(int64 checkpoint_id);

/* Checkpoint of a gap, or -1 if there is no such gap. */
extern int64 sog_gap_checkpoint(int64 gap_id);

/* Resolve one gap; false if it was already resolved. */
extern bool sog_gap_resolve(int64 gap_id, const char *resolution, const char *note);

/* Mark every open gap of a checkpoint resolved; returns how many. */
extern int64 sog_gap_resolve_open(int64 checkpoint_id, const char *resolution,
								  const char *note);

#endif							/* SOG_GAP_H */
