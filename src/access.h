/*-------------------------------------------------------------------------
 *
 * access.h
 *	  Who may act on which checkpoint (see access.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_ACCESS_H
#define SOG_ACCESS_H

#include "postgres.h"

/* What a function needs: a consumer grant, an operator grant, or either. */
#define SOG_ACCESS_CONSUMER		0x01
#define SOG_ACCESS_OPERATOR		0x02
#define SOG_ACCESS_ANY			(SOG_ACCESS_CONSUMER | SOG_ACCESS_OPERATOR)

/*
 * Raise 42501 unless the session's current role may act on the checkpoint
 * (checkpoint_id, of consumer) with a grant of one of kinds.  checkpoint_id
 * 0 means "a consumer that has no checkpoint yet" (register).
 */
extern void sog_check_access(int64 checkpoint_id, const char *consumer, int kinds);

/*
 * The same for what ("recovery attempt 7", "gap 3") of a checkpoint of
 * consumer: the refusal names what, not the checkpoint.
 */
extern void sog_check_access_to(const char *what, const char *consumer, int kinds);

/*
 * What (a checkpoint, attempt or gap) does not exist: raise the 42501 a
 * role whose grants do not cover every checkpoint gets for one it may not
 * act on (it must not learn which ids exist); return for a role whose do
 * (the caller then reports the unknown id, 22023).
 */
extern void sog_check_access_missing(const char *what, int kinds);

/* Name of the session's current role, for audit columns. */
extern const char *sog_acting_role(void);

#endif							/* SOG_ACCESS_H */
