/*-------------------------------------------------------------------------
 *
 * type/position.h
 *	  The SQL type sog.position: access macros and helpers for other files.
 *
 * A sog.position datum is a varlena whose payload is the encoding described
 * in type/position_codec.h (version byte, then per component a digit count and
 * packed BCD).  The type has storage "main" (never moved out of line), so on
 * disk a position takes a 1-byte short varlena header, which needs no
 * alignment padding, plus its encoding: "42" takes 4 bytes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_POSITION_H
#define SOG_POSITION_H

#include "postgres.h"
#include "fmgr.h"

#include "compat.h"

#include "type/position_codec.h"

typedef struct varlena SogPosition;

#define DatumGetSogPositionP(X)		((SogPosition *) PG_DETOAST_DATUM_PACKED(X))
#define PG_GETARG_SOG_POSITION_P(n)	DatumGetSogPositionP(PG_GETARG_DATUM(n))
#define PG_RETURN_SOG_POSITION_P(x)	PG_RETURN_POINTER(x)

#define SOG_POS_BYTES(p)	((const uint8_t *) VARDATA_ANY(p))
#define SOG_POS_NBYTES(p)	((size_t) VARSIZE_ANY_EXHDR(p))

/* Build a datum (palloc'd, 4-byte header) from an encoding. */
extern SogPosition *sog_position_from_encoding(const uint8_t *enc, size_t len);

/* The position of a bigint; 22023 if negative (element > 0: of an array). */
extern SogPosition *sog_position_from_int64(int64 v, int element);

/* Parse text; raises 22P02 on bad input. */
extern SogPosition *sog_position_from_cstring(const char *str);

/* Canonical text, palloc'd. */
extern char *sog_position_to_cstring(const SogPosition *p);

/* Total order; NULL pointers sort below every position ("nothing yet"). */
extern int	sog_position_cmp_nullable(const SogPosition *a, const SogPosition *b);

static inline int
sog_position_cmp(const SogPosition *a, const SogPosition *b)
{
	return sog_pos_compare(SOG_POS_BYTES(a), SOG_POS_NBYTES(a),
						   SOG_POS_BYTES(b), SOG_POS_NBYTES(b));
}

/*
 * b - a as a numeric Datum when both are one-component positions, else
 * isnull is set.  A NULL (nothing yet) argument gives NULL.
 */
extern Datum sog_position_distance(const SogPosition *a, const SogPosition *b,
								   bool *isnull);

/* Datum of the position one above a one-component position; NULL if not. */
extern SogPosition *sog_position_successor(const SogPosition *p);

/*
 * The position just below p (p - 1 for one component; see type/position.c for
 * tuples); NULL for '0'.
 */
extern SogPosition *sog_position_predecessor(const SogPosition *p);

#endif							/* SOG_POSITION_H */
