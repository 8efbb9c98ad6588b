/*-------------------------------------------------------------------------
 *
 * functions/recovery.h
 *	  What recovery.c (begin_recovery, recovery_event, the attempt's SQL)
 *	  shares with promote.c.  Internal to the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_RECOVERY_H
#define SOG_RECOVERY_H

#include "checkpoint/checkpoint.h"
#include "type/position.h"

/* The state of an attempt: sog.recovery.state's CHECK, in order. */
typedef enum SogRecoveryState
{
	SOG_RECOVERY_OPEN,
	SOG_RECOVERY_FAILED,
	SOG_RECOVERY_PROMOTED,
	SOG_RECOVERY_LOST
} SogRecoveryState;

/* The label of a state, as the column holds it ("open", ...). */
extern const char *sog_recovery_state_label(SogRecoveryState state);

/* One attempt (sog.recovery row), as far as the logic needs it. */
typedef struct SogRecovery
{
	int64		id;
	int64		checkpoint_id;
	int64		generation;
	char	   *expired_token;
	char	   *provider;
	char	   *query_scope;	/* the scope it was begun under */
	SogPosition *anchor;
	bool		anchor_inclusive;
	SogPosition *retained_from;
	SogRecoveryState state;
	char	   *failure;
	SogPosition *last_position;
	SogPosition *advance_through;
	char	   *successor_token;
	bool		result_generation_isnull;
	int64		result_generation;
	SogPosition *result_applied;
	char	   *result_token;
} SogRecovery;

/*
 * Lock attempt id's checkpoint row, then read the attempt and the
 * checkpoint on the newest snapshot; an unknown attempt is an error.
 */
extern void sog_recovery_lock(int64 id, SogRecovery *r, SogCheckpoint *cp);

/*
 * Mark attempt recovery_id failed with reason, record the gap (applied, to]
 * (to exactly, or the furthest known read) and fail the checkpoint closed.
 * Returns the gap id.
 */
extern int64 sog_recovery_fail(SogCheckpoint *cp, int64 recovery_id, const char *reason,
							   const SogPosition *to, bool exact);

/* Fail every open attempt of cp begun under a scope other than scope. */
extern int	sog_recovery_fail_other_scope(SogCheckpoint *cp, const char *scope);

/* Is an empty page a barrier for this provider (sog.provider)? */
extern bool sog_recovery_empty_page_is_barrier(const char *provider);

/* Record promote's conclusion of attempt id (promoted or lost). */
extern void sog_recovery_conclude(int64 id, bool promoted, int64 generation,
								  const char *successor, const SogPosition *applied,
								  const char *token);

/* Mark every other open recovery attempt of the checkpoint lost. */
extern void sog_recovery_fence_open(SogCheckpoint *cp, int64 except_id);

#endif							/* SOG_RECOVERY_H */
