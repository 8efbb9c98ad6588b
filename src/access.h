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

/* Name of the session's current role, for audit columns. */
extern const char *sog_acting_role(void);

#endif							/* SOG_ACCESS_H */
