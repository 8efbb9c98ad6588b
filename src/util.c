/*-------------------------------------------------------------------------
 *
 * util.c
 *	  Small helpers shared by the SQL functions: argument checks and the
 *	  text of a nullable position in messages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "position.h"
#include "sog.h"

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
sog_pos_str(const SogPosition *p)
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
