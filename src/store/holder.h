/*-------------------------------------------------------------------------
 *
 * store/holder.h
 *	  Who holds a checkpoint's row, for a lock wait that timed out
 *	  (holder.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_HOLDER_H
#define SOG_HOLDER_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"

/*
 * Who holds a checkpoint's row, for the message of a lock wait that timed
 * out: filled in before waiting (after the error, no query can run).
 */
typedef struct SogHolder
{
	bool		known;			/* a single transaction holds it */
	int			pid;			/* its backend, 0 if not found */
	char	   *since;			/* its transaction's start, or NULL */
	char	   *state;			/* its backend's state, or NULL */
	char	   *gid;			/* a prepared transaction's gid, or NULL */
	char	   *gid_owner;		/* its owner */
	char	   *prepared;		/* when it was prepared */
	int64		generation;		/* the newest committed generation */
	char	   *owner;
	char	   *claimed_at;
} SogHolder;

/*
 * Fill *h for the checkpoint row version tup (att: sog.checkpoint's column
 * numbers, as store/tables.c gives them), before waiting for its lock.
 */
extern void sog_find_holder(HeapTuple tup, TupleDesc desc, const AttrNumber *att,
							SogHolder *h);

/*
 * Rewrite e, the 55P03 of a wait for checkpoint id's lock that ended after
 * timeout_ms (claim: the wait was sog.claim_timeout's), to name *h; the
 * caller re-throws it with ReThrowError.
 */
extern void sog_lock_timeout_error(ErrorData *e, int64 id, const SogHolder *h,
								   bool claim, int timeout_ms);

#endif							/* SOG_HOLDER_H */
