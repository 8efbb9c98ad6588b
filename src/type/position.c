/*-------------------------------------------------------------------------
 *
 * type/position.c
 *	  The SQL type sog.position: text and binary I/O, total order, btree
 *	  and hash support, casts.
 *
 * On-disk layout: see type/position_codec.h.  Because the encoding is
 * order-preserving, every comparison is one memcmp of the two payloads; the
 * btree opclass also offers sort support with the same comparator, and the
 * hash opclass hashes the payload bytes (equal positions have identical
 * bytes).
 *
 * Binary wire format (send/recv), for clients in other languages:
 *	1 byte   format version, 1
 *	rest     the canonical text, ASCII, no terminator
 * recv parses the text with the same rules as the input function, so a
 * malformed message is rejected exactly like malformed text.
 *
 * Relies on: type/position_codec.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/pg_lsn.h"
#include "utils/sortsupport.h"

#include "compat.h"
#include "sog.h"
#include "type/position.h"

#define SOG_POS_WIRE_V1		1

/*
 * Human explanation of a parse failure, for errdetail.
 */
static const char *
parse_error_detail(SogPosParseError err)
{
	switch (err)
	{
		case SOG_POS_ERR_EMPTY:
			return "A position needs at least one component.";
		case SOG_POS_ERR_CHAR:
			return "Components are ASCII digits separated by \"-\"; signs, decimal points and other characters are not allowed.";
		case SOG_POS_ERR_EMPTY_COMPONENT:
			return "A component is empty: \"-\" must stand between two components.";
		case SOG_POS_ERR_TOO_MANY:
			return "A position has at most 8 components.";
		case SOG_POS_ERR_TOO_LONG:
			return "A component has at most 160 digits once leading zeros are dropped.";
		case SOG_POS_ERR_SIGN:
			return "Positions are not negative: a leading \"-\" is not a sign.";
		case SOG_POS_OK:
			break;
	}
	return NULL;
}

SogPosition *
sog_position_from_encoding(const uint8_t *enc, size_t len)
{
	SogPosition *p = (SogPosition *) palloc(VARHDRSZ + len);

	SET_VARSIZE(p, VARHDRSZ + len);
	memcpy(VARDATA(p), enc, len);
	return p;
}

/*
 * Parse len bytes of text into a position.  On bad input reports 22P02
 * through escontext (soft error on 16+) and returns NULL.
 */
static SogPosition *
position_parse(const char *str, size_t len, const char *shown, int sqlstate,
			   Node *escontext)
{
	uint8_t		enc[SOG_POS_MAX_ENCODED];
	size_t		enclen;
	SogPosParseError err;

	err = sog_pos_parse(str, len, enc, &enclen);
	if (err != SOG_POS_OK)
	{
		SOG_INPUT_ERROR(escontext,
						(errcode(sqlstate),
						 errmsg("invalid input syntax for type %s: \"%s\"",
								"position", shown),
						 errdetail("%s", parse_error_detail(err)),
						 errhint("Write a position as 1 to 8 non-negative integers joined by \"-\", for example \"42\" or \"1700000000000-3\".")));
		return NULL;
	}
	return sog_position_from_encoding(enc, enclen);
}

SogPosition *
sog_position_from_cstring(const char *str)
{
	return position_parse(str, strlen(str), str,
						  ERRCODE_INVALID_TEXT_REPRESENTATION, NULL);
}

char *
sog_position_to_cstring(const SogPosition *p)
{
	char	   *out = palloc(SOG_POS_MAX_TEXT + 1);

	sog_pos_format(SOG_POS_BYTES(p), SOG_POS_NBYTES(p), out);
	return out;
}

int
sog_position_cmp_nullable(const SogPosition *a, const SogPosition *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return sog_position_cmp(a, b);
}

Datum
sog_position_distance(const SogPosition *a, const SogPosition *b, bool *isnull)
{
	Datum		na;
	Datum		nb;

	*isnull = true;
	if (a == NULL || b == NULL ||
		sog_pos_ncomponents(SOG_POS_BYTES(a), SOG_POS_NBYTES(a)) != 1 ||
		sog_pos_ncomponents(SOG_POS_BYTES(b), SOG_POS_NBYTES(b)) != 1)
		return (Datum) 0;
	na = DirectFunctionCall3(numeric_in, CStringGetDatum(sog_position_to_cstring(a)),
							 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	nb = DirectFunctionCall3(numeric_in, CStringGetDatum(sog_position_to_cstring(b)),
							 ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	*isnull = false;
	return DirectFunctionCall2(numeric_sub, nb, na);
}

SogPosition *
sog_position_successor(const SogPosition *p)
{
	char	   *txt;
	size_t		n;
	char	   *buf;
	int			i;

	if (sog_pos_ncomponents(SOG_POS_BYTES(p), SOG_POS_NBYTES(p)) != 1)
		return NULL;
	txt = sog_position_to_cstring(p);
	n = strlen(txt);
	buf = palloc(n + 2);
	buf[0] = '0';
	memcpy(buf + 1, txt, n + 1);
	for (i = (int) n; i >= 0; i--)
	{
		if (buf[i] == '9')
			buf[i] = '0';
		else
		{
			buf[i]++;
			break;
		}
	}
	{
		uint8_t		enc[SOG_POS_MAX_ENCODED];
		size_t		enclen;

		if (sog_pos_parse(buf, n + 1, enc, &enclen) != SOG_POS_OK)
			return NULL;		/* 160 nines: no successor */
		return sog_position_from_encoding(enc, enclen);
	}
}

/*
 * The position just below p, as a gap's last position (docs/reference.md: what a gap row covers):
 * for one component, p - 1 (NULL for 0: nothing is below it).  For a tuple
 * whose last component is 0, p without that component: in the type's order
 * it is the greatest position below p (5 < 5-0).  For a tuple whose last
 * component is above 0, p with that component decreased by one: the
 * greatest position below p among positions with as many components, which
 * is what a stream whose positions all have the same shape (Redis stream
 * IDs, Kinesis sequence and subsequence) can hold.
 */
SogPosition *
sog_position_predecessor(const SogPosition *p)
{
	char	   *txt = sog_position_to_cstring(p);
	char	   *last = strrchr(txt, '-');
	char	   *c = last ? last + 1 : txt;
	int			i;
	uint8_t		enc[SOG_POS_MAX_ENCODED];
	size_t		enclen;

	if (strcmp(c, "0") == 0)
	{
		if (last == NULL)
			return NULL;
		*last = '\0';			/* 5-0 -> 5 */
	}
	else
	{
		/* decimal decrement of the last component (it is above 0) */
		for (i = (int) strlen(c) - 1; i >= 0; i--)
		{
			if (c[i] == '0')
				c[i] = '9';
			else
			{
				c[i]--;
				break;
			}
		}
	}
	if (sog_pos_parse(txt, strlen(txt), enc, &enclen) != SOG_POS_OK)
		elog(ERROR, "predecessor of position \"%s\" does not parse", txt);
	return sog_position_from_encoding(enc, enclen);
}

/* SQL function: sog.position_predecessor(sog.position) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_predecessor_sql);
Datum
sog_position_predecessor_sql(PG_FUNCTION_ARGS)
{
	SogPosition *p = sog_position_predecessor(PG_GETARG_SOG_POSITION_P(0));

	if (p == NULL)
		PG_RETURN_NULL();
	PG_RETURN_SOG_POSITION_P(p);
}

/* SQL function: sog.position_in(cstring) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_in);
Datum
sog_position_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	SogPosition *p;

	p = position_parse(str, strlen(str), str,
					   ERRCODE_INVALID_TEXT_REPRESENTATION, SOG_ESCONTEXT(fcinfo));
	if (p == NULL)
		PG_RETURN_NULL();
	PG_RETURN_SOG_POSITION_P(p);
}

/* SQL function: sog.position_out(sog.position) -> cstring */
PG_FUNCTION_INFO_V1(sog_position_out);
Datum
sog_position_out(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);

	PG_RETURN_CSTRING(sog_position_to_cstring(p));
}

/* SQL function: sog.position_recv(internal) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_recv);
Datum
sog_position_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			version = pq_getmsgbyte(buf);
	int			len;
	const char *str;
	char	   *shown;
	int			i;

	if (version != SOG_POS_WIRE_V1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("unsupported binary format version %d for type %s",
						version, "position"),
				 errdetail("This server reads version %d.", SOG_POS_WIRE_V1),
				 errhint("Send the version byte 1 followed by the canonical text.")));
	len = buf->len - buf->cursor;
	str = pq_getmsgbytes(buf, len);
	/* show at most 200 bytes, non-printable ones as '?' */
	shown = palloc(Min(len, 200) + 1);
	for (i = 0; i < Min(len, 200); i++)
		shown[i] = (str[i] >= 0x20 && str[i] < 0x7f) ? str[i] : '?';
	shown[i] = '\0';
	PG_RETURN_SOG_POSITION_P(position_parse(str, (size_t) len, shown,
											ERRCODE_INVALID_BINARY_REPRESENTATION,
											NULL));
}

/* SQL function: sog.position_send(sog.position) -> bytea */
PG_FUNCTION_INFO_V1(sog_position_send);
Datum
sog_position_send(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);
	char	   *txt = sog_position_to_cstring(p);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, SOG_POS_WIRE_V1);
	pq_sendbytes(&buf, txt, strlen(txt));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Comparison functions: one memcmp each. */

static int
position_cmp_args(FunctionCallInfo fcinfo)
{
	SogPosition *a = PG_GETARG_SOG_POSITION_P(0);
	SogPosition *b = PG_GETARG_SOG_POSITION_P(1);
	int			c = sog_position_cmp(a, b);

	PG_FREE_IF_COPY(a, 0);
	PG_FREE_IF_COPY(b, 1);
	return c;
}

/* SQL function: sog.position_cmp(sog.position, sog.position) -> int4 */
PG_FUNCTION_INFO_V1(sog_position_cmp_sql);
Datum
sog_position_cmp_sql(PG_FUNCTION_ARGS)
{
	int			c = position_cmp_args(fcinfo);

	PG_RETURN_INT32((c > 0) - (c < 0));
}

/* SQL function: sog.position_lt(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_lt);
Datum
sog_position_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) < 0);
}

/* SQL function: sog.position_le(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_le);
Datum
sog_position_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) <= 0);
}

/* SQL function: sog.position_eq(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_eq);
Datum
sog_position_eq(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) == 0);
}

/* SQL function: sog.position_ne(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_ne);
Datum
sog_position_ne(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) != 0);
}

/* SQL function: sog.position_ge(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_ge);
Datum
sog_position_ge(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) >= 0);
}

/* SQL function: sog.position_gt(sog.position, sog.position) -> bool */
PG_FUNCTION_INFO_V1(sog_position_gt);
Datum
sog_position_gt(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(position_cmp_args(fcinfo) > 0);
}

/* SQL function: sog.position_larger(sog.position, sog.position) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_larger);
Datum
sog_position_larger(PG_FUNCTION_ARGS)
{
	SogPosition *a = PG_GETARG_SOG_POSITION_P(0);
	SogPosition *b = PG_GETARG_SOG_POSITION_P(1);

	PG_RETURN_SOG_POSITION_P(sog_position_cmp(a, b) >= 0 ? a : b);
}

/* SQL function: sog.position_smaller(sog.position, sog.position) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_smaller);
Datum
sog_position_smaller(PG_FUNCTION_ARGS)
{
	SogPosition *a = PG_GETARG_SOG_POSITION_P(0);
	SogPosition *b = PG_GETARG_SOG_POSITION_P(1);

	PG_RETURN_SOG_POSITION_P(sog_position_cmp(a, b) <= 0 ? a : b);
}

static int
position_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	SogPosition *a = DatumGetSogPositionP(x);
	SogPosition *b = DatumGetSogPositionP(y);
	int			c = sog_position_cmp(a, b);

	if ((Pointer) a != DatumGetPointer(x))
		pfree(a);
	if ((Pointer) b != DatumGetPointer(y))
		pfree(b);
	return c;
}

/* SQL function: sog.position_sortsupport(internal) -> void */
PG_FUNCTION_INFO_V1(sog_position_sortsupport);
Datum
sog_position_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = position_fastcmp;
	PG_RETURN_VOID();
}

/* SQL function: sog.position_hash(sog.position) -> int4 */
PG_FUNCTION_INFO_V1(sog_position_hash);
Datum
sog_position_hash(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);
	Datum		h = hash_any(SOG_POS_BYTES(p), (int) SOG_POS_NBYTES(p));

	PG_FREE_IF_COPY(p, 0);
	return h;
}

/* SQL function: sog.position_hash_extended(sog.position, int8) -> int8 */
PG_FUNCTION_INFO_V1(sog_position_hash_extended);
Datum
sog_position_hash_extended(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);
	Datum		h = hash_any_extended(SOG_POS_BYTES(p), (int) SOG_POS_NBYTES(p),
									  PG_GETARG_INT64(1));

	PG_FREE_IF_COPY(p, 0);
	return h;
}

/* Casts */

/*
 * The position of a bigint (what the cast sog.position(bigint) gives):
 * 22023 for a negative value, naming element (1-based) of an array when
 * element > 0.
 */
SogPosition *
sog_position_from_int64(int64 v, int element)
{
	uint8_t		enc[SOG_POS_MAX_ENCODED];
	size_t		len;

	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot convert a negative number to a position"),
				 element > 0 ?
				 errdetail("Element %d of the array is " INT64_FORMAT ".", element, v) :
				 errdetail("The value is " INT64_FORMAT ".", v),
				 errhint("Positions are non-negative integers.")));
	len = sog_pos_from_uint64((uint64_t) v, enc);
	return sog_position_from_encoding(enc, len);
}

/* SQL function: sog.position(bigint) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_from_int8);
Datum
sog_position_from_int8(PG_FUNCTION_ARGS)
{
	PG_RETURN_SOG_POSITION_P(sog_position_from_int64(PG_GETARG_INT64(0), 0));
}

/*
 * SQL function: sog.position(bigint[]) -> sog.position[]
 *
 * The cast of a whole array in one call (a client that sends its batch's
 * positions as int8[]): the same values as the element cast, without a
 * function call per element.  Keeps dimensions, bounds and NULLs.
 */
PG_FUNCTION_INFO_V1(sog_positions_from_int8);
Datum
sog_positions_from_int8(PG_FUNCTION_ARGS)
{
	ArrayType  *in = PG_GETARG_ARRAYTYPE_P(0);
	Oid			rettype = get_fn_expr_rettype(fcinfo->flinfo);
	Oid			elemtype = OidIsValid(rettype) ? get_element_type(rettype) : InvalidOid;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			i;

	if (!OidIsValid(elemtype))
		elog(ERROR, "sog_positions_from_int8 needs its result type");
	deconstruct_array(in, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &values, &nulls, &n);
	for (i = 0; i < n; i++)
	{
		if (!nulls[i])
			values[i] = PointerGetDatum(sog_position_from_int64(DatumGetInt64(values[i]), i + 1));
	}
	if (ARR_NDIM(in) == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(elemtype));
	PG_RETURN_ARRAYTYPE_P(construct_md_array(values, nulls, ARR_NDIM(in), ARR_DIMS(in),
											 ARR_LBOUND(in), elemtype, -1, false,
											 TYPALIGN_INT));
}

/* SQL function: sog.position(integer) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_from_int4);
Datum
sog_position_from_int4(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(sog_position_from_int8,
							   Int64GetDatum((int64) PG_GETARG_INT32(0)));
}

/* SQL function: sog.position(pg_lsn) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_from_lsn);
Datum
sog_position_from_lsn(PG_FUNCTION_ARGS)
{
	XLogRecPtr	lsn = PG_GETARG_LSN(0);
	uint8_t		enc[SOG_POS_MAX_ENCODED];
	size_t		len = sog_pos_from_uint64((uint64_t) lsn, enc);

	PG_RETURN_SOG_POSITION_P(sog_position_from_encoding(enc, len));
}

/* SQL function: sog.position(numeric) -> sog.position */
PG_FUNCTION_INFO_V1(sog_position_from_numeric);
Datum
sog_position_from_numeric(PG_FUNCTION_ARGS)
{
	Numeric		num = PG_GETARG_NUMERIC(0);
	char	   *txt = DatumGetCString(DirectFunctionCall1(numeric_out,
														  NumericGetDatum(num)));
	char	   *dot = strchr(txt, '.');
	bool		ok = true;
	uint8_t		enc[SOG_POS_MAX_ENCODED];
	size_t		len;

	/* NaN, Infinity, negatives and non-integers are not positions */
	if (txt[0] < '0' || txt[0] > '9')
		ok = false;
	if (ok && dot != NULL)
	{
		const char *f;

		for (f = dot + 1; *f; f++)
			if (*f != '0')
				ok = false;
		*dot = '\0';
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot convert numeric %s to a position",
						DatumGetCString(DirectFunctionCall1(numeric_out,
															NumericGetDatum(num)))),
				 errdetail("Only non-negative integers can be positions."),
				 errhint("Round the value, or use a multi-component position such as \"5-1\".")));
	if (sog_pos_parse(txt, strlen(txt), enc, &len) != SOG_POS_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("numeric value out of range for a position component"),
				 errdetail("The value has %d digits; a component has at most %d.",
						   (int) strlen(txt), SOG_POS_MAX_DIGITS),
				 errhint("Split the value into several components.")));
	PG_RETURN_SOG_POSITION_P(sog_position_from_encoding(enc, len));
}

/* SQL function: sog.position_to_numeric(sog.position) -> numeric */
PG_FUNCTION_INFO_V1(sog_position_to_numeric);
Datum
sog_position_to_numeric(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);
	int			n = sog_pos_ncomponents(SOG_POS_BYTES(p), SOG_POS_NBYTES(p));
	char	   *txt = sog_position_to_cstring(p);

	if (n != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot convert position \"%s\" to numeric", txt),
				 errdetail("The position has %d components; only a one-component position is a number.", n),
				 errhint("Cast to text instead, or compare positions directly.")));
	return DirectFunctionCall3(numeric_in, CStringGetDatum(txt),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* SQL function: sog.position_components(sog.position) -> int4 */
PG_FUNCTION_INFO_V1(sog_position_components);
Datum
sog_position_components(PG_FUNCTION_ARGS)
{
	SogPosition *p = PG_GETARG_SOG_POSITION_P(0);

	PG_RETURN_INT32(sog_pos_ncomponents(SOG_POS_BYTES(p), SOG_POS_NBYTES(p)));
}
