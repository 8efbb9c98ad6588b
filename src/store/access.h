/*-------------------------------------------------------------------------
 *
 * store/access.h
 *	  Who may act on which checkpoint (see store/access.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_ACCESS_H
#define SOG_ACCESS_H

#include "postgres.h"

#include "fmgr.h"

/* What a function needs: a consumer grant, an operator grant, or either. */
#define SOG_ACCESS_CONSUMER		0x01
#define SOG_ACCESS_OPERATOR		0x02
#define SOG_ACCESS_ANY			(SOG_ACCESS_CONSUMER | SOG_ACCESS_OPERATOR)

/*
 * Raise 42501 unless the calling role (sog_caller) may act on the checkpoint
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

/* Name of the role checked (sog_caller), for audit columns. */
extern const char *sog_acting_role(void);

/*
 * The role whose grants are checked: the role that called the SQL function
 * being run (the current user when it was entered, see sog_enter), or,
 * outside any entry, the current user.
 */
extern Oid	sog_caller(void);

/*
 * Every SQL function that reads or writes the guard's tables is SECURITY
 * INVOKER and enters through sog_enter, which remembers the calling role for
 * the access checks, refuses a function that writes inside a
 * security-restricted operation (an index expression run by ANALYZE, ...),
 * and runs body as the function's owner (the extension's owner), restoring
 * the role afterwards.  SOG_ENTRY(name, writes) declares the SQL-callable
 * name and opens the definition of its body:
 *
 *		SOG_ENTRY(sog_claim, true)
 *		{
 *			... PG_GETARG_..., PG_RETURN_...
 *		}
 */
typedef Datum (*SogBody) (FunctionCallInfo fcinfo);

extern Datum sog_enter(FunctionCallInfo fcinfo, SogBody body, bool writes);

#define SOG_ENTRY(name, writes) \
	static Datum name##_body(PG_FUNCTION_ARGS); \
	PG_FUNCTION_INFO_V1(name); \
	Datum \
	name(PG_FUNCTION_ARGS) \
	{ \
		return sog_enter(fcinfo, name##_body, writes); \
	} \
	static Datum \
	name##_body(PG_FUNCTION_ARGS)

#endif							/* SOG_ACCESS_H */
