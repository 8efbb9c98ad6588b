/*-------------------------------------------------------------------------
 *
 * store/receipt.h
 *	  The receipt store (receipt.c): runs of receipts, storing them,
 *	  looking one up, pruning and scanning; all under the checkpoint's row
 *	  lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_RECEIPT_H
#define SOG_RECEIPT_H

#include "postgres.h"

#include "sog.h"
#include "type/position.h"

/* A run of receipts being built by one apply call (in memory). */
typedef struct SogReceiptRun
{
	int			n;				/* receipts in the run */
	int			cap;
	uint8	   *digests;		/* n x 32 bytes */
	SogPosition **positions;	/* n positions */
	bool		single;			/* every position has one component */
} SogReceiptRun;



extern void sog_receipt_run_init(SogReceiptRun *run, int expected);
extern void sog_receipt_run_add(SogReceiptRun *run, SogPosition *pos,
								const uint8 *digest);
extern bool sog_receipt_run_find(const SogReceiptRun *run,
								 const SogPosition *pos, uint8 *digest);

/*
 * Store a run as receipt rows (through the executor) in the partition ring
 * names (the checkpoint's receipt_ring; SOG_RING_NO_COLUMN before 1.2:
 * sog.receipt); runs inside SPI.
 */
extern void sog_receipt_run_store(int64 checkpoint_id, int ring,
								  const SogReceiptRun *run);

/* the same, with the rows' created_at (1.1) given: a pruned run's remainder */
extern void sog_receipt_run_store_at(int64 checkpoint_id, int ring,
									 const SogReceiptRun *run,
									 const Datum *created_at);

/*
 * Store the dense run first, first+1, ..., first+n-1 (first >= 0, no
 * overflow) with its n digests back to back: the rows
 * sog_receipt_run_store would write for it, without a position per event.
 */
extern void sog_receipt_store_dense(int64 checkpoint_id, int ring, int64 first,
									int n, const uint8 *digests);

/*
 * Look up the stored receipt of pos; true and its digest if there is one
 * above horizon (the checkpoint's prune horizon, NULL: none; at or below it
 * a receipt is gone, even while a ring partition still stores it).
 * probe caches the stored row fetched last (initialise it with
 * sog_receipt_run_init); pass the same probe for the events of one call.
 * Reads the newest committed data, not the transaction snapshot (the caller
 * holds the checkpoint lock, so no receipt of this checkpoint is in flight).
 */
extern bool sog_receipt_lookup(int64 checkpoint_id, const SogPosition *horizon,
							   const SogPosition *pos, uint8 *digest,
							   SogReceiptRun *probe);


/*
 * Drop receipts at or below through; returns how many receipts (those
 * above horizon, the checkpoint's prune horizon before this prune, NULL:
 * none).  Before 1.2 no receipt is left at or below horizon; from 1.2 on
 * the ring's rows stay until their partition is emptied.
 */
extern int64 sog_receipt_prune(int64 checkpoint_id, const SogPosition *through,
							   const SogPosition *horizon);

/*
 * Receipts of a checkpoint in position order within [from, to] (NULL: no
 * bound) and above horizon (its prune horizon), on the active snapshot;
 * calls emit for each.
 */
typedef void (*SogReceiptEmit) (void *arg, SogPosition *pos, const uint8 *digest);
extern void sog_receipt_scan(int64 checkpoint_id, const SogPosition *horizon,
							 const SogPosition *from, const SogPosition *to,
							 SogReceiptEmit emit, void *arg);

#endif							/* SOG_RECEIPT_H */
