/*-------------------------------------------------------------------------
 *
 * type/util.h
 *	  The small helpers every SQL function uses (type/util.c): argument checks,
 *	  and user values in messages, cut to a readable length.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_UTIL_H
#define SOG_UTIL_H

#include "postgres.h"

#include "fmgr.h"

#include "type/position.h"

/* Raise 22023 if SQL argument n (named name) is NULL. */
extern void sog_require_arg(FunctionCallInfo fcinfo, int n,
							const char *name);

/* True when s is NULL, empty, or only ASCII white space. */
extern bool sog_is_blank(const char *s);

/* Equality of two nullable strings (tokens, scopes): NULL equals only NULL. */
extern bool sog_text_eq(const char *a, const char *b);

/* Canonical text of a position for messages; "(none)" for NULL. */
extern const char *sog_position_label(const SogPosition *p);

/* Longest user value shown whole in a message, in bytes. */
#define SOG_MSG_VALUE_MAX			200

/* A user value for a message: NULL as "NULL", long values cut. */
extern const char *sog_cut(const char *s);

/* The same in double quotes, or if_null for NULL. */
extern const char *sog_quoted(const char *s, const char *if_null);

/* Raise 22023 unless hash (when not NULL) is 64 hex characters. */
extern void sog_check_buffer_hash(const char *what, const char *hash);

/* Raise 22023 for a negative count or one above what (applied, cursor] holds. */
extern void sog_check_buffered_count(int64 count, const SogPosition *cursor,
									 const SogPosition *applied);

#endif							/* SOG_UTIL_H */
