/*-------------------------------------------------------------------------
 *
 * position_fuzz.c
 *	  libFuzzer target for the position codec (src/type/position_codec.c).
 *
 * Built and run by test/fuzz.sh with ASan and UBSan; links only the codec,
 * no server.  For every input it checks:
 *
 *	(a) nothing crashes or hits undefined behaviour, whatever the bytes; the
 *		texts and encodings handed to the codec live in buffers of exactly
 *		their own length, so ASan sees any read or write past them;
 *	(b) when sog_pos_parse accepts, the encoding is valid, its length is what
 *		position_codec.h documents, and formatting it gives text that parses
 *		again to the identical encoding and formats to the identical text;
 *	(c) a slow reference parser written here from the contract (trim ASCII
 *		white space, split on '-', each component non-empty ASCII digits, at
 *		most 8 components of at most 160 significant digits) agrees on
 *		accept/reject and on the canonical text;
 *	(d) the input split in two (at the first 0xFF byte, else in the middle):
 *		when both halves parse, sog_pos_compare agrees in sign with a
 *		reference compare on the canonical texts, is antisymmetric, is 0 on
 *		itself, and is 0 exactly when the encodings are byte-identical;
 *	(e) a one-component position that fits in uint64 round-trips through
 *		sog_pos_to_uint64 / sog_pos_from_uint64, and one that does not (or
 *		has more components) is refused by sog_pos_to_uint64;
 *	(f) the raw input taken as an encoding (what binary receive sees):
 *		when sog_pos_encoding_valid accepts it, it is exactly the encoding of
 *		its own formatted text, so no two valid encodings mean one position.
 *
 * Any violation prints what went wrong and calls __builtin_trap(), which
 * libFuzzer reports as a crash and saves the input.
 *
 *-------------------------------------------------------------------------
 */
#include "type/position_codec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One parsed position: the codec's encoding and the reference canonical text. */
typedef struct Parsed
{
	int			ok;				/* codec accepted */
	uint8_t    *enc;			/* exactly enclen bytes (malloc) */
	size_t		enclen;
	char	   *text;			/* canonical text, NUL-terminated (malloc) */
} Parsed;

static void
fail(const char *what, const uint8_t *data, size_t size)
{
	size_t		i;

	fprintf(stderr, "position_fuzz: invariant violated: %s\ninput (%zu bytes):", what, size);
	for (i = 0; i < size && i < 256; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "%s\n", size > 256 ? " ..." : "");
	__builtin_trap();
}

#define CHECK(cond, what, data, size) \
	do { if (!(cond)) fail((what), (data), (size)); } while (0)

/* A copy of n bytes in a heap block of exactly n bytes (1 when n is 0). */
static void *
dup_exact(const void *p, size_t n)
{
	void	   *q = malloc(n ? n : 1);

	if (q == NULL)
		abort();
	if (n)
		memcpy(q, p, n);
	return q;
}

static int
ref_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * Reference parser, written from the contract and nothing else.  Returns a
 * malloc'd canonical text, or NULL when the contract rejects the input;
 * *ncomp gets the component count.
 */
static char *
ref_parse(const uint8_t *s, size_t len, int *ncomp)
{
	size_t		b = 0,
				e = len,
				i;
	char	   *out;
	size_t		o = 0;
	int			n = 0;

	while (b < e && ref_is_space(s[b]))
		b++;
	while (e > b && ref_is_space(s[e - 1]))
		e--;
	if (b == e)
		return NULL;

	out = malloc(e - b + 1);	/* canonical is never longer than the input */
	if (out == NULL)
		abort();

	/* Walk the components: [b, e) split on every '-'. */
	i = b;
	for (;;)
	{
		size_t		cs = i;
		size_t		ce;
		size_t		sig;

		while (i < e && s[i] != '-')
			i++;
		ce = i;
		if (ce == cs)
			goto reject;		/* empty component */
		for (sig = cs; sig < ce; sig++)
			if (s[sig] < '0' || s[sig] > '9')
				goto reject;	/* not an ASCII digit */
		if (++n > SOG_POS_MAX_COMPONENTS)
			goto reject;
		sig = cs;
		while (sig < ce && s[sig] == '0')
			sig++;
		if (ce - sig > SOG_POS_MAX_DIGITS)
			goto reject;
		if (o > 0)
			out[o++] = '-';
		if (sig == ce)
			out[o++] = '0';
		else
		{
			memcpy(out + o, s + sig, ce - sig);
			o += ce - sig;
		}
		if (i == e)
			break;
		i++;					/* the '-' */
	}
	out[o] = '\0';
	*ncomp = n;
	return out;

reject:
	free(out);
	return NULL;
}

/*
 * Reference order on canonical texts: component by component, fewer digits
 * first, then digit by digit; a proper prefix tuple sorts first.
 */
static int
ref_compare(const char *a, const char *b)
{
	for (;;)
	{
		size_t		la = strcspn(a, "-");
		size_t		lb = strcspn(b, "-");
		int			c;

		if (la != lb)
			return la < lb ? -1 : 1;
		c = strncmp(a, b, la);
		if (c != 0)
			return c < 0 ? -1 : 1;
		a += la;
		b += lb;
		if (*a == '\0' || *b == '\0')
			return (*a != '\0') - (*b != '\0');
		a++;
		b++;
	}
}

static int
sign(int v)
{
	return (v > 0) - (v < 0);
}

/* Encoded length that position_codec.h documents for a canonical text. */
static size_t
doc_enclen(const char *canon)
{
	size_t		len = 1;

	for (;;)
	{
		size_t		l = strcspn(canon, "-");
		size_t		nd = (l == 1 && canon[0] == '0') ? 0 : l;

		len += 1 + (nd + 1) / 2;
		canon += l;
		if (*canon == '\0')
			return len;
		canon++;
	}
}

/* Check (e): uint64 round trip for a parsed position. */
static void
check_uint64(const Parsed *p, int ncomp, const uint8_t *data, size_t size)
{
	static const char max[] = "18446744073709551615";
	size_t		l = strlen(p->text);
	int			fits;
	uint64_t	v = 0;
	int			got;

	fits = ncomp == 1 &&
		(l < sizeof(max) - 1 || (l == sizeof(max) - 1 && strcmp(p->text, max) <= 0));
	got = sog_pos_to_uint64(p->enc, p->enclen, &v);
	CHECK(got == fits, "sog_pos_to_uint64 accepts exactly one-component values that fit", data, size);
	if (fits)
	{
		uint8_t    *enc2 = malloc(SOG_POS_MAX_ENCODED);
		size_t		len2;
		char		buf[32];

		if (enc2 == NULL)
			abort();
		snprintf(buf, sizeof(buf), "%" PRIu64, v);
		CHECK(strcmp(buf, p->text) == 0, "sog_pos_to_uint64 gives the canonical value", data, size);
		len2 = sog_pos_from_uint64(v, enc2);
		CHECK(len2 == p->enclen && memcmp(enc2, p->enc, len2) == 0,
			  "sog_pos_from_uint64(sog_pos_to_uint64(x)) == x", data, size);
		free(enc2);
	}
}

/*
 * Parse s[0..len) (copied to a block of exactly len bytes) and check (a),
 * (b), (c) and (e).  Fills *p; the caller frees with parsed_free.
 */
static void
check_one(const uint8_t *s, size_t len, Parsed *p, const uint8_t *data, size_t size)
{
	char	   *in = dup_exact(s, len);
	uint8_t    *out = malloc(SOG_POS_MAX_ENCODED);
	size_t		outlen = 0;
	SogPosParseError err;
	int			ref_ncomp = 0;
	char	   *ref;

	if (out == NULL)
		abort();
	memset(p, 0, sizeof(*p));

	err = sog_pos_parse(in, len, out, &outlen);
	ref = ref_parse(s, len, &ref_ncomp);

	CHECK((err == SOG_POS_OK) == (ref != NULL),
		  ref ? "codec rejects text the reference accepts" : "codec accepts text the reference rejects",
		  data, size);

	if (err == SOG_POS_OK)
	{
		char	   *text = malloc(SOG_POS_MAX_TEXT + 1);
		uint8_t    *out2 = malloc(SOG_POS_MAX_ENCODED);
		char	   *text2 = malloc(SOG_POS_MAX_TEXT + 1);
		size_t		tlen,
					t2len,
					out2len = 0;
		char	   *textx;

		if (text == NULL || out2 == NULL || text2 == NULL)
			abort();
		CHECK(outlen >= 2 && outlen <= SOG_POS_MAX_ENCODED, "encoded length in range", data, size);
		p->ok = 1;
		p->enclen = outlen;
		p->enc = dup_exact(out, outlen);

		CHECK(sog_pos_encoding_valid(p->enc, p->enclen), "parsed encoding is valid", data, size);
		CHECK(p->enclen == doc_enclen(ref), "encoded length is the documented one", data, size);
		CHECK(sog_pos_ncomponents(p->enc, p->enclen) == ref_ncomp, "component count", data, size);

		tlen = sog_pos_format(p->enc, p->enclen, text);
		CHECK(tlen == strlen(text) && tlen <= SOG_POS_MAX_TEXT, "format length", data, size);
		CHECK(strcmp(text, ref) == 0, "canonical text differs from the reference", data, size);

		/* parse(format(x)) == x, format(parse(format(x))) == format(x) */
		textx = dup_exact(text, tlen);
		CHECK(sog_pos_parse(textx, tlen, out2, &out2len) == SOG_POS_OK,
			  "canonical text parses again", data, size);
		CHECK(out2len == p->enclen && memcmp(out2, p->enc, out2len) == 0,
			  "parse(format(x)) == x", data, size);
		t2len = sog_pos_format(out2, out2len, text2);
		CHECK(t2len == tlen && strcmp(text2, text) == 0, "format is stable", data, size);

		CHECK(sog_pos_compare(p->enc, p->enclen, out2, out2len) == 0, "compare(a, a) == 0", data, size);

		p->text = ref;
		ref = NULL;
		check_uint64(p, ref_ncomp, data, size);

		free(textx);
		free(text);
		free(text2);
		free(out2);
	}
	free(ref);
	free(out);
	free(in);
}

static void
parsed_free(Parsed *p)
{
	free(p->enc);
	free(p->text);
}

/* Check (f): the raw bytes as an encoding. */
static void
check_raw_encoding(const uint8_t *data, size_t size)
{
	uint8_t    *enc;
	char	   *text;
	uint8_t    *out;
	size_t		tlen,
				outlen = 0;
	uint64_t	v;

	/* Only plausible encodings: saves time on the rest. */
	if (size < 2 || data[0] != SOG_POS_FORMAT_V1)
		return;
	enc = dup_exact(data, size);
	if (!sog_pos_encoding_valid(enc, size))
	{
		free(enc);
		return;
	}
	text = malloc(SOG_POS_MAX_TEXT + 1);
	out = malloc(SOG_POS_MAX_ENCODED);
	if (text == NULL || out == NULL)
		abort();
	tlen = sog_pos_format(enc, size, text);
	CHECK(tlen == strlen(text) && tlen <= SOG_POS_MAX_TEXT, "format length of a valid encoding", data, size);
	CHECK(sog_pos_parse(text, tlen, out, &outlen) == SOG_POS_OK,
		  "a valid encoding formats to parsable text", data, size);
	CHECK(outlen == size && memcmp(out, enc, size) == 0,
		  "a valid encoding is the encoding of its own text", data, size);
	(void) sog_pos_ncomponents(enc, size);
	(void) sog_pos_to_uint64(enc, size, &v);
	free(out);
	free(text);
	free(enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Parsed		whole,
				a,
				b;
	const uint8_t *ff;
	size_t		cut,
				rest;

	/* The whole input as one position. */
	check_one(data, size, &whole, data, size);
	parsed_free(&whole);

	/* Two positions: split at the first 0xFF (dropped), else in the middle. */
	ff = size ? memchr(data, 0xFF, size) : NULL;
	if (ff != NULL)
	{
		cut = (size_t) (ff - data);
		rest = cut + 1;
	}
	else
	{
		cut = size / 2;
		rest = cut;
	}
	check_one(data, cut, &a, data, size);
	check_one(data + rest, size - rest, &b, data, size);
	if (a.ok && b.ok)
	{
		int			ab = sign(sog_pos_compare(a.enc, a.enclen, b.enc, b.enclen));
		int			ba = sign(sog_pos_compare(b.enc, b.enclen, a.enc, a.enclen));
		int			ref = ref_compare(a.text, b.text);
		int			same = a.enclen == b.enclen && memcmp(a.enc, b.enc, a.enclen) == 0;

		CHECK(ab == ref, "sog_pos_compare disagrees with the reference order", data, size);
		CHECK(ba == -ab, "sog_pos_compare is antisymmetric", data, size);
		CHECK((ab == 0) == same, "compare is 0 exactly for identical encodings", data, size);
		CHECK(sog_pos_compare(b.enc, b.enclen, b.enc, b.enclen) == 0, "compare(b, b) == 0", data, size);
	}
	parsed_free(&a);
	parsed_free(&b);

	check_raw_encoding(data, size);
	return 0;
}
