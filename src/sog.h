/*-------------------------------------------------------------------------
 *
 * sog.h
 *	  Declarations shared by every file of stream_offset_guard: the
 *	  extension's own SQLSTATEs and the digest length (the helpers every
 *	  file uses are type/util.c's, in type/util.h).
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

#endif							/* SOG_H */
