/*-------------------------------------------------------------------------
 *
 * type/position_codec.c
 *	  Text <-> order-preserving binary encoding of stream positions.
 *
 * The encoding is described in type/position_codec.h.  Nothing here allocates
 * or depends on the server, so the fuzzer links this file alone.
 *
 * Relies on: PostgreSQL only.
 *
 *-------------------------------------------------------------------------
 */
#include "type/position_codec.h"

#include <string.h>

/* The white space allowed around a position (ASCII only; docs/reference.md: types). */
static inline int
pos_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * Append one component, given as its significant digits (no leading zero;
 * ndigits 0 for the value zero), to out at *o.
 */
static void
pos_put_component(const char *digits, int ndigits, uint8_t *out, size_t *o)
{
	int			i;

	out[(*o)++] = (uint8_t) ndigits;
	for (i = 0; i < ndigits; i += 2)
	{
		uint8_t		hi = (uint8_t) (digits[i] - '0');
		uint8_t		lo = (i + 1 < ndigits) ? (uint8_t) (digits[i + 1] - '0') : 0;

		out[(*o)++] = (uint8_t) ((hi << 4) | lo);
	}
}

SogPosParseError
sog_pos_parse(const char *input, size_t len, uint8_t *out, size_t *outlen)
{
	size_t		start = 0;
	size_t		end = len;
	size_t		i;
	size_t		o = 0;
	int			ncomp = 0;

	while (start < end && pos_is_space((unsigned char) input[start]))
		start++;
	while (end > start && pos_is_space((unsigned char) input[end - 1]))
		end--;
	if (start == end)
		return SOG_POS_ERR_EMPTY;

	out[o++] = SOG_POS_FORMAT_V1;
	i = start;
	for (;;)
	{
		size_t		cstart = i;
		size_t		first;

		while (i < end && input[i] >= '0' && input[i] <= '9')
			i++;
		if (i == cstart)
		{
			/* no digit here: a stray byte, a minus sign or an empty component */
			if (i < end && input[i] != '-')
				return SOG_POS_ERR_CHAR;
			if (i == start && i + 1 < end && input[i + 1] >= '0' && input[i + 1] <= '9')
				return SOG_POS_ERR_SIGN;
			return SOG_POS_ERR_EMPTY_COMPONENT;
		}
		if (i < end && input[i] != '-')
			return SOG_POS_ERR_CHAR;
		if (++ncomp > SOG_POS_MAX_COMPONENTS)
			return SOG_POS_ERR_TOO_MANY;

		/* drop leading zeros; "000" is the value 0, with no digits */
		first = cstart;
		while (first < i && input[first] == '0')
			first++;
		if (i - first > SOG_POS_MAX_DIGITS)
			return SOG_POS_ERR_TOO_LONG;
		pos_put_component(input + first, (int) (i - first), out, &o);

		if (i == end)
			break;
		i++;					/* skip '-' */
		if (i == end)
			return SOG_POS_ERR_EMPTY_COMPONENT;
	}
	*outlen = o;
	return SOG_POS_OK;
}

size_t
sog_pos_format(const uint8_t *enc, size_t enclen, char *out)
{
	size_t		i = 1;
	size_t		o = 0;

	while (i < enclen)
	{
		int			nd = enc[i++];
		int			k;

		if (o > 0)
			out[o++] = '-';
		if (nd == 0)
			out[o++] = '0';
		for (k = 0; k < nd; k++)
		{
			uint8_t		b = enc[i + k / 2];

			out[o++] = (char) ('0' + ((k % 2 == 0) ? (b >> 4) : (b & 0x0F)));
		}
		i += (size_t) (nd + 1) / 2;
	}
	out[o] = '\0';
	return o;
}

int
sog_pos_encoding_valid(const uint8_t *enc, size_t enclen)
{
	size_t		i = 1;
	int			ncomp = 0;

	if (enclen < 2 || enclen > SOG_POS_MAX_ENCODED || enc[0] != SOG_POS_FORMAT_V1)
		return 0;
	while (i < enclen)
	{
		int			nd = enc[i++];
		size_t		nbytes = (size_t) (nd + 1) / 2;
		int			k;

		if (nd > SOG_POS_MAX_DIGITS || ++ncomp > SOG_POS_MAX_COMPONENTS ||
			nbytes > enclen - i)
			return 0;
		for (k = 0; k < nd; k++)
		{
			uint8_t		b = enc[i + k / 2];
			uint8_t		d = (k % 2 == 0) ? (b >> 4) : (b & 0x0F);

			if (d > 9 || (k == 0 && d == 0))
				return 0;
		}
		if (nd % 2 == 1 && (enc[i + nbytes - 1] & 0x0F) != 0)
			return 0;
		i += nbytes;
	}
	return ncomp >= 1;
}

int
sog_pos_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

int
sog_pos_ncomponents(const uint8_t *enc, size_t enclen)
{
	size_t		i = 1;
	int			n = 0;

	while (i < enclen)
	{
		i += 1 + (size_t) (enc[i] + 1) / 2;
		n++;
	}
	return n;
}

size_t
sog_pos_from_uint64(uint64_t v, uint8_t *out)
{
	char		buf[20];
	char		digits[20];
	int			n = 0;
	int			k;
	size_t		o = 0;

	while (v > 0)
	{
		buf[n++] = (char) ('0' + v % 10);
		v /= 10;
	}
	for (k = 0; k < n; k++)
		digits[k] = buf[n - 1 - k];
	out[o++] = SOG_POS_FORMAT_V1;
	pos_put_component(digits, n, out, &o);
	return o;
}

int
sog_pos_to_uint64(const uint8_t *enc, size_t enclen, uint64_t *v)
{
	int			nd;
	uint64_t	acc = 0;
	int			k;

	if (enclen < 2)
		return 0;
	nd = enc[1];
	if (enclen != 2 + (size_t) (nd + 1) / 2 || nd > 20)
		return 0;
	for (k = 0; k < nd; k++)
	{
		uint8_t		b = enc[2 + k / 2];
		uint64_t	d = (k % 2 == 0) ? (b >> 4) : (b & 0x0F);

		if (acc > (UINT64_MAX - d) / 10)
			return 0;
		acc = acc * 10 + d;
	}
	*v = acc;
	return 1;
}
