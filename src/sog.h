/*-------------------------------------------------------------------------
 *
 * sog.h
 *	  Declarations shared by every file of stream_offset_guard: the
 *	  extension's own SQLSTATEs and small helpers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_H
#define SOG_H

#include "postgres.h"

/* The SQLSTATEs of the extension (docs/consumer.md: what each SQLSTATE tells the consumer) */
#define ERRCODE_SOG_FENCED			MAKE_SQLSTATE('S','G','0','0','1')
#define ERRCODE_SOG_FAIL_CLOSED		MAKE_SQLSTATE('S','G','0','0','2')
#define ERRCODE_SOG_RECEIPT_CONFLICT MAKE_SQLSTATE('S','G','0','0','3')
#define ERRCODE_SOG_GAP_PENDING		MAKE_SQLSTATE('S','G','0','0','4')
#define ERRCODE_SOG_REGRESSION		MAKE_SQLSTATE('S','G','0','0','5')
#define ERRCODE_SOG_TOKEN_MISMATCH	MAKE_SQLSTATE('S','G','0','0','6')
#define ERRCODE_SOG_REFUSED			MAKE_SQLSTATE('S','G','0','0','7')

/* SHA-256 digest length */
#define SOG_DIGEST_LEN				32

/* util.c */
struct FunctionCallInfoBaseData;
struct varlena;

/* Raise 22023 if SQL argument n (named name) is NULL. */
extern void sog_require_arg(struct FunctionCallInfoBaseData *fcinfo, int n,
							const char *name);

/* True when s is NULL, empty, or only ASCII white space. */
extern bool sog_is_blank(const char *s);

/* Equality of two nullable strings (tokens, scopes): NULL equals only NULL. */
extern bool sog_text_eq(const char *a, const char *b);

/* Canonical text of a position for messages; "(none)" for NULL. */
extern const char *sog_position_label(const struct varlena *p); /* "(none)" for NULL */

/* Longest user value shown whole in a message, in bytes. */
#define SOG_MSG_VALUE_MAX			200

/* A user value for a message: NULL as "NULL", long values cut. */
extern const char *sog_cut(const char *s);

/* The same in double quotes, or if_null for NULL. */
extern const char *sog_quoted(const char *s, const char *if_null);

/* Raise 22023 unless hash (when not NULL) is 64 hex characters. */
extern void sog_check_buffer_hash(const char *what, const char *hash);

/* Raise 22023 for a negative count or one above what (applied, cursor] holds. */
extern void sog_check_buffered_count(int64 count, const struct varlena *cursor,
									 const struct varlena *applied);

#endif							/* SOG_H */
