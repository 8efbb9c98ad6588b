/*-------------------------------------------------------------------------
 *
 * type/hash.h
 *	  SHA-256 (OpenSSL's, or PostgreSQL's cryptohash API without OpenSSL),
 *	  payload digests and the chained buffer hash (docs/reference.md: hash
 *	  definitions).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_HASH_H
#define SOG_HASH_H

#include "postgres.h"

#include "utils/array.h"

#include "sog.h"
#include "type/position.h"
#include "type/position_codec.h"

/* "sog:buffer:v1", the chain's seed */
#define SOG_BUFFER_HASH_SEED	"sog:buffer:v1"

/* Running state of a buffer hash over records in strictly increasing order. */
typedef struct SogBufferHash
{
	uint8		h[SOG_DIGEST_LEN];	/* h(i) */
	int64		count;			/* records folded in */
	size_t		lastlen;		/* encoding of the last position, if count>0 */
	uint8		last[SOG_POS_MAX_ENCODED];
} SogBufferHash;

/* SHA-256 of the concatenation of n parts. */
extern void sog_sha256(const uint8 *const *parts, const size_t *lens, int n,
					   uint8 *out);

/* h0 */
extern void sog_buffer_hash_init(SogBufferHash *state);

/*
 * Fold one record in: position encoding enc/enclen and its 32-byte payload
 * digest.  Raises 22023 when the position is not above the previous one.
 */
extern void sog_buffer_hash_step(SogBufferHash *state, const uint8 *enc,
								 size_t enclen, const uint8 *digest);

/* Lowercase hex of h(n) into out (65 bytes with the terminator). */
extern void sog_buffer_hash_hex(const SogBufferHash *state, char *out);

/*
 * The records of a positions array (sog.position[], or bigint[] converted
 * as the cast sog.position(bigint) converts) and a digests array (bytea[]),
 * checked: one-dimensional, as many positions as digests, no NULL element,
 * 32-byte digests; else 22023 (what names the records in the message).
 * *lbound (when not NULL) gets the positions' lower bound.  Returns n.
 */
extern int	sog_records_from_arrays(ArrayType *parr, ArrayType *darr, const char *what,
									SogPosition ***pos, const uint8 ***dig, int *lbound);

/* Raise 22023 unless a bytea digest is exactly 32 bytes. */
extern void sog_check_digest_len(const char *what, int len);

#endif							/* SOG_HASH_H */
