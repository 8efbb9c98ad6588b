/*-------------------------------------------------------------------------
 *
 * type/position_codec.h
 *	  Text <-> order-preserving binary encoding of stream positions.
 *
 * This file and type/position_codec.c depend on nothing but the C library, so
 * the fuzzer (test/fuzz/) links them without a server.  type/position.c wraps
 * them as the SQL type sog.position.
 *
 * A position is a tuple of 1 to SOG_POS_MAX_COMPONENTS non-negative
 * integers, each of at most SOG_POS_MAX_DIGITS decimal digits once leading
 * zeros are dropped.  Text form: components joined by '-', canonical output
 * without leading zeros ("007" -> "7").
 *
 * Encoding (what follows the varlena header on disk):
 *
 *	byte 0        format version, SOG_POS_FORMAT_V1 (0x01)
 *	per component:
 *	  1 byte      d = number of significant decimal digits (0 for the value 0,
 *	              else 1..160)
 *	  ceil(d/2)   the digits as packed BCD, most significant first, high
 *	              nibble before low nibble; an odd count leaves the last
 *	              low nibble 0
 *
 * The per-component code is prefix-free and its byte order is numeric order
 * (more digits means larger; equal digit counts compare digit by digit), so
 * memcmp over whole encodings is the type's order: component by
 * component, a proper prefix first (5 < 5-0 < 5-1 < 6).  Equal positions
 * have identical encodings, so hashing the bytes is a valid hash opclass.
 *
 * Sizes: "42" is 3 bytes, a 19-digit Kafka offset 12, a 56-digit Kinesis
 * sequence number 30; the worst case (8 x 160 digits) is 649.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_POSITION_CODEC_H
#define SOG_POSITION_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define SOG_POS_FORMAT_V1		0x01
#define SOG_POS_MAX_COMPONENTS	8
#define SOG_POS_MAX_DIGITS		160
/* version byte + 8 x (length byte + 80 BCD bytes) */
#define SOG_POS_MAX_ENCODED		(1 + SOG_POS_MAX_COMPONENTS * (1 + SOG_POS_MAX_DIGITS / 2))
/* 8 x 160 digits + 7 separators, without the terminating NUL */
#define SOG_POS_MAX_TEXT		(SOG_POS_MAX_COMPONENTS * (SOG_POS_MAX_DIGITS + 1) - 1)

/* Why a parse failed; type/position.c turns these into error details. */
typedef enum SogPosParseError
{
	SOG_POS_OK = 0,
	SOG_POS_ERR_EMPTY,			/* nothing but white space */
	SOG_POS_ERR_CHAR,			/* a byte that is not a digit or '-' */
	SOG_POS_ERR_EMPTY_COMPONENT,	/* leading, trailing or doubled '-' */
	SOG_POS_ERR_TOO_MANY,		/* more than 8 components */
	SOG_POS_ERR_TOO_LONG,		/* a component over 160 significant digits */
	SOG_POS_ERR_SIGN			/* a leading '-' before a digit: a minus sign */
} SogPosParseError;

/*
 * Parse len bytes of text (not necessarily NUL-terminated; embedded NULs are
 * rejected as bad characters).  On success writes the encoding to out (at
 * least SOG_POS_MAX_ENCODED bytes), stores its length in *outlen and returns
 * SOG_POS_OK.  On failure returns the reason and leaves *outlen undefined.
 */
extern SogPosParseError sog_pos_parse(const char *input, size_t len,
									  uint8_t *out, size_t *outlen);

/*
 * Write the canonical text of a valid encoding to out (at least
 * SOG_POS_MAX_TEXT + 1 bytes), NUL-terminated; returns the text length.
 */
extern size_t sog_pos_format(const uint8_t *enc, size_t enclen, char *out);

/*
 * Check that enc/enclen is a well-formed encoding (version byte, 1..8
 * components, digit counts in range, no leading zero digit, zero padding
 * nibble).  Used on data that did not come from sog_pos_parse.
 */
extern int	sog_pos_encoding_valid(const uint8_t *enc, size_t enclen);

/* Total order of two valid encodings: <0, 0, >0. */
extern int	sog_pos_compare(const uint8_t *a, size_t alen,
							const uint8_t *b, size_t blen);

/* Number of components of a valid encoding. */
extern int	sog_pos_ncomponents(const uint8_t *enc, size_t enclen);

/*
 * Encode an unsigned 64-bit integer as a one-component position; returns the
 * encoded length.
 */
extern size_t sog_pos_from_uint64(uint64_t v, uint8_t *out);

/*
 * If enc is a one-component position that fits in uint64, store it in *v and
 * return 1; else return 0.
 */
extern int	sog_pos_to_uint64(const uint8_t *enc, size_t enclen, uint64_t *v);

#endif							/* SOG_POSITION_CODEC_H */
