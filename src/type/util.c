/*-------------------------------------------------------------------------
 *
 * type/util.c
 *	  Small helpers shared by the SQL functions: argument checks (NULLs,
 *	  buffer hashes, buffered counts), and the text of values in messages
 *	  (nullable positions, long user values cut to a bounded length).
 *
 * Relies on: type/position.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "sog.h"
#include "type/position.h"
#include "type/util.h"

void
sog_require_arg(FunctionCallInfo fcinfo, int n, const char *name)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be NULL", name),
				 errdetail("Argument %d (%s) is NULL.", n + 1, name),
				 errhint("Pass a value for %s.", name)));
}

bool
sog_is_blank(const char *s)
{
	if (s == NULL)
		return true;
	for (; *s; s++)
		if (!(*s == ' ' || *s == '\t' || *s == '\n' || *s == '\v' ||
			  *s == '\f' || *s == '\r'))
			return false;
	return true;
}

const char *
sog_position_label(const SogPosition *p)
{
	return p ? sog_position_to_cstring(p) : "(none)";
}

bool
sog_text_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * A user-supplied value as shown in a message: NULL as "NULL", a value of at
 * most SOG_MSG_VALUE_MAX bytes whole, a longer one cut at a character
 * boundary and followed by its length, so that a 100 MB token never becomes
 * a 100 MB error detail.  Bytes that are not valid in the database encoding
 * (a SQL_ASCII database stores anything) are shown as '?'.
 */
const char *
sog_cut(const char *s)
{
	size_t		len;
	int			keep;
	char	   *out;
	int			i;

	if (s == NULL)
		return "NULL";
	len = strlen(s);
	keep = len > SOG_MSG_VALUE_MAX ?
		pg_mbcliplen(s, (int) len, SOG_MSG_VALUE_MAX) : (int) len;
	if ((size_t) keep == len && pg_verifymbstr(s, (int) len, true))
		return s;
	out = palloc(keep + 64);
	memcpy(out, s, keep);
	out[keep] = '\0';
	if (!pg_verifymbstr(out, keep, true))
		for (i = 0; i < keep; i++)
			if (IS_HIGHBIT_SET(out[i]) || out[i] < 0x20)
				out[i] = '?';
	if ((size_t) keep < len)
		snprintf(out + keep, 64, "... (%zu bytes)", len);
	return out;
}

/* The same, in double quotes, and "no token" style wording for NULL. */
const char *
sog_quoted(const char *s, const char *if_null)
{
	return s ? psprintf("\"%s\"", sog_cut(s)) : if_null;
}

/*
 * Raise 22023 unless hash is a buffer hash: 64 hexadecimal characters, any
 * case (docs/reference.md).  NULL is left to the caller (it means "no
 * hash" for note_read and halt, and is refused by verify_gap).
 */
void
sog_check_buffer_hash(const char *what, const char *hash)
{
	size_t		len;
	size_t		i;
	bool		ok;

	if (hash == NULL)
		return;
	len = strlen(hash);
	ok = len == 2 * SOG_DIGEST_LEN;
	for (i = 0; ok && i < len; i++)
		ok = (hash[i] >= '0' && hash[i] <= '9') ||
			(hash[i] >= 'a' && hash[i] <= 'f') ||
			(hash[i] >= 'A' && hash[i] <= 'F');
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not a buffer hash", what),
				 errdetail("A buffer hash is 64 hexadecimal characters; the value is %s.",
						   sog_quoted(hash, "NULL")),
				 errhint("Pass the lowercase hex of the chained SHA-256 (sog.buffer_hash), or NULL when no hash was kept.")));
}

/*
 * Raise 22023 if count records cannot be what is held in (applied, cursor]:
 * a negative count, or, when both positions have one component, more
 * records than the range has positions (cursor - applied; cursor + 1 when
 * nothing was applied yet, positions starting at 0).
 */
void
sog_check_buffered_count(int64 count, const SogPosition *cursor,
						 const SogPosition *applied)
{
	Datum		room;
	bool		isnull;

	if (count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffered count must not be negative"),
				 errdetail("The count is " INT64_FORMAT ".", count),
				 errhint("Pass the number of records held in the buffer.")));
	if (cursor == NULL)
		return;
	if (applied)
		room = sog_position_distance(applied, cursor, &isnull);
	else
	{
		SogPosition *zero = sog_position_from_cstring("0");

		room = sog_position_distance(zero, cursor, &isnull);
		if (!isnull)
			room = DirectFunctionCall2(numeric_add, room,
									   DirectFunctionCall1(int8_numeric, Int64GetDatum(1)));
	}
	if (isnull)
		return;					/* tuples: no arithmetic on positions */
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp,
										  DirectFunctionCall1(int8_numeric, Int64GetDatum(count)),
										  room)) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffered count " INT64_FORMAT " exceeds the records in (%s, %s]",
						count, applied ? sog_position_to_cstring(applied) : "start",
						sog_position_to_cstring(cursor)),
				 errdetail("That range holds at most %s positions.",
						   DatumGetCString(DirectFunctionCall1(numeric_out, room))),
				 errhint("Count only the records read above the applied position and not yet applied.")));
}
