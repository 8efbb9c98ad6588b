/*-------------------------------------------------------------------------
 *
 * type/halt.c
 *	  Reference-compatible halt evaluation (docs/reference.md: pure halt evaluation):
 *	  sog.evaluate_halt(), sog.verify_resume(), and the boundary evaluation
 *	  that claim and halt reuse.
 *
 * The manifest digest of a gap is the SHA-256 of the UTF-8 JSON text that
 * Python's json.dumps({"hash": H, "sink": S, "src": C}, sort_keys=True)
 * writes: separators ", " and ": ", every character outside printable ASCII
 * written as \uXXXX (lowercase hex, surrogate pairs above U+FFFF), '"' and
 * '\' escaped, \b \f \n \r \t in their short forms, positions as JSON
 * strings of their canonical text and a NULL position as null.  Aligned and
 * divergent boundaries hash the fixed words ALIGNED and DIVERGED.
 *
 * Relies on: type/hash.c, type/position.c, type/util.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "compat.h"
#include "type/halt.h"
#include "type/hash.h"
#include "type/util.h"

static const char *const verdict_labels[] = {
	"aligned",
	"gap_replay_required",
	"unrecoverable_divergence",
	"fail_closed"
};

const char *
sog_verdict_label(SogVerdict v)
{
	return verdict_labels[v];
}

static SogVerdict
verdict_from_label(const char *label)
{
	int			i;

	for (i = 0; i < (int) lengthof(verdict_labels); i++)
		if (strcmp(label, verdict_labels[i]) == 0)
			return (SogVerdict) i;
	elog(ERROR, "unknown verdict \"%s\"", label);
	return SOG_VERDICT_FAIL_CLOSED; /* keep compiler quiet */
}

Datum
sog_verdict_datum(SogVerdict v, Oid enumtype)
{
	return DirectFunctionCall2(enum_in, CStringGetDatum(sog_verdict_label(v)),
							   ObjectIdGetDatum(enumtype));
}

/* Append s as a JSON string the way Python's json.dumps (ensure_ascii) does. */
static void
append_python_json_string(StringInfo out, const char *s)
{
	const unsigned char *u;
	char	   *utf8;

	/* work on UTF-8 whatever the server encoding */
	utf8 = (char *) pg_server_to_any(s, strlen(s), PG_UTF8);
	u = (const unsigned char *) utf8;

	appendStringInfoChar(out, '"');
	while (*u)
	{
		pg_wchar	cp;
		int			len = pg_utf_mblen(u);

		cp = utf8_to_unicode(u);
		u += len;
		switch (cp)
		{
			case '"':
				appendStringInfoString(out, "\\\"");
				break;
			case '\\':
				appendStringInfoString(out, "\\\\");
				break;
			case '\b':
				appendStringInfoString(out, "\\b");
				break;
			case '\f':
				appendStringInfoString(out, "\\f");
				break;
			case '\n':
				appendStringInfoString(out, "\\n");
				break;
			case '\r':
				appendStringInfoString(out, "\\r");
				break;
			case '\t':
				appendStringInfoString(out, "\\t");
				break;
			default:
				if (cp >= 0x20 && cp < 0x7f)
					appendStringInfoChar(out, (char) cp);
				else if (cp <= 0xFFFF)
					appendStringInfo(out, "\\u%04x", (unsigned int) cp);
				else
				{
					pg_wchar	v = cp - 0x10000;

					appendStringInfo(out, "\\u%04x\\u%04x",
									 (unsigned int) (0xD800 | (v >> 10)),
									 (unsigned int) (0xDC00 | (v & 0x3FF)));
				}
				break;
		}
	}
	appendStringInfoChar(out, '"');
	if (utf8 != s)
		pfree(utf8);
}

static void
append_json_position(StringInfo out, const SogPosition *p)
{
	if (p == NULL)
		appendStringInfoString(out, "null");
	else
	{
		appendStringInfoChar(out, '"');
		appendStringInfoString(out, sog_position_to_cstring(p));
		appendStringInfoChar(out, '"');
	}
}

static void
sha256_hex(const char *data, size_t len, char *hex)
{
	const uint8 *parts[1] = {(const uint8 *) data};
	size_t		lens[1] = {len};
	uint8		d[SOG_DIGEST_LEN];

	sog_sha256(parts, lens, 1, d);
	hex_encode((const char *) d, SOG_DIGEST_LEN, hex);
	hex[2 * SOG_DIGEST_LEN] = '\0';
}

void
sog_evaluate_boundary(const SogPosition *cursor, const SogPosition *commit,
					  const char *buffer_hash, SogManifest *m)
{
	int			c = sog_position_cmp_nullable(cursor, commit);

	memset(m, 0, sizeof(*m));
	m->gap_isnull = false;
	m->gap_size = DirectFunctionCall3(numeric_in, CStringGetDatum("0"),
									  ObjectIdGetDatum(InvalidOid),
									  Int32GetDatum(-1));
	m->digest_isnull = false;

	if (c == 0)
	{
		m->verdict = SOG_VERDICT_ALIGNED;
		m->resume_from = (SogPosition *) cursor;
		sha256_hex("ALIGNED", 7, m->digest);
	}
	else if (c < 0)
	{
		m->verdict = SOG_VERDICT_DIVERGENCE;
		m->resume_from = (SogPosition *) commit;
		sha256_hex("DIVERGED", 8, m->digest);
	}
	else
	{
		m->resume_from = (SogPosition *) commit;
		m->gap_size = sog_position_distance(commit, cursor, &m->gap_isnull);
		if (buffer_hash == NULL || buffer_hash[0] == '\0')
		{
			m->verdict = SOG_VERDICT_FAIL_CLOSED;
			m->digest_isnull = true;
		}
		else
		{
			StringInfoData json;

			m->verdict = SOG_VERDICT_GAP_REPLAY;
			initStringInfo(&json);
			appendStringInfoString(&json, "{\"hash\": ");
			append_python_json_string(&json, buffer_hash);
			appendStringInfoString(&json, ", \"sink\": ");
			append_json_position(&json, commit);
			appendStringInfoString(&json, ", \"src\": ");
			append_json_position(&json, cursor);
			appendStringInfoChar(&json, '}');
			sha256_hex(json.data, json.len, m->digest);
			pfree(json.data);
		}
	}
}

Datum
sog_manifest_datum(const SogManifest *m, TupleDesc tupdesc)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	values[0] = sog_verdict_datum(m->verdict, TupleDescAttr(tupdesc, 0)->atttypid);
	if (m->resume_from == NULL)
		nulls[1] = true;
	else
		values[1] = PointerGetDatum(m->resume_from);
	values[2] = m->gap_size;
	nulls[2] = m->gap_isnull;
	if (m->digest_isnull)
		nulls[3] = true;
	else
		values[3] = CStringGetTextDatum(m->digest);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/*
 * SQL function: sog.evaluate_halt(source_cursor sog.position,
 *	   sink_commit sog.position, buffer_hash text, idempotency_key text)
 *	   -> sog.manifest
 *
 * Not strict: NULL positions mean "nothing yet".
 */
PG_FUNCTION_INFO_V1(sog_evaluate_halt);
Datum
sog_evaluate_halt(PG_FUNCTION_ARGS)
{
	SogPosition *cursor = PG_ARGISNULL(0) ? NULL : PG_GETARG_SOG_POSITION_P(0);
	SogPosition *commit = PG_ARGISNULL(1) ? NULL : PG_GETARG_SOG_POSITION_P(1);
	char	   *hash = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *key = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	TupleDesc	tupdesc;
	SogManifest m;

	if (sog_is_blank(key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("idempotency key must not be blank"),
				 errdetail("The key is %s.", key == NULL ? "NULL" :
						   key[0] == '\0' ? "empty" : "only white space"),
				 errhint("Pass the key that names this consumer and partition, for example \"orders-0\".")));

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	sog_evaluate_boundary(cursor, commit, hash, &m);
	if (m.verdict == SOG_VERDICT_FAIL_CLOSED)
	{
		char	   *gap = m.gap_isnull ? "unknown" :
		DatumGetCString(DirectFunctionCall1(numeric_out, m.gap_size));

		ereport(ERROR,
				(errcode(ERRCODE_SOG_FAIL_CLOSED),
				 errmsg("uncommitted gap cannot be verified"),
				 errdetail("Source cursor %s is beyond sink commit %s (gap of %s) and no buffer hash was recorded.",
						   sog_position_to_cstring(cursor),
						   commit ? sog_position_to_cstring(commit) : "(none)",
						   gap),
				 errhint("Record the buffer hash of the uncommitted records at halt; without it an operator must resolve the gap.")));
	}
	PG_RETURN_DATUM(sog_manifest_datum(&m, tupdesc));
}

/*
 * SQL function: sog.verify_resume(manifest sog.manifest,
 *	   requested_cursor sog.position) -> TABLE(admissible boolean, message text)
 *
 * A NULL requested cursor means "from the start", below every position.
 */
PG_FUNCTION_INFO_V1(sog_verify_resume);
Datum
sog_verify_resume(PG_FUNCTION_ARGS)
{
	HeapTupleHeader mtup;
	SogPosition *requested = PG_ARGISNULL(1) ? NULL : PG_GETARG_SOG_POSITION_P(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		d;
	bool		isnull;
	SogVerdict	verdict;
	SogPosition *resume_from;
	char	   *gap;
	bool		admissible;
	char	   *message;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("manifest must not be NULL"),
				 errdetail("A resume can only be judged against the manifest of a halt or a claim."),
				 errhint("Pass the result of sog.evaluate_halt(), sog.halt() or the fields of sog.claim().")));
	mtup = PG_GETARG_HEAPTUPLEHEADER(0);

	d = GetAttributeByNum(mtup, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("manifest has no verdict"),
				 errdetail("The verdict field of the manifest is NULL."),
				 errhint("Pass a manifest produced by sog.evaluate_halt() or sog.halt().")));
	verdict = verdict_from_label(DatumGetCString(DirectFunctionCall1(enum_out, d)));
	d = GetAttributeByNum(mtup, 2, &isnull);
	resume_from = isnull ? NULL : DatumGetSogPositionP(d);
	d = GetAttributeByNum(mtup, 3, &isnull);
	gap = isnull ? "unknown size" : DatumGetCString(DirectFunctionCall1(numeric_out, d));

	if (verdict == SOG_VERDICT_DIVERGENCE)
	{
		admissible = false;
		message = "HALT: Sink is ahead of source. Manual audit required.";
	}
	else if (verdict == SOG_VERDICT_FAIL_CLOSED)
	{
		admissible = false;
		message = "FAIL_CLOSED: Uncommitted gap cannot be verified. Operator resolution required.";
	}
	else if (sog_position_cmp_nullable(requested, resume_from) > 0)
	{
		admissible = false;
		message = psprintf("CURSOR_SKIP: Requested %s exceeds safe %s. Replay gap of %s.",
						   sog_position_to_cstring(requested),
						   resume_from ? sog_position_to_cstring(resume_from) : "start",
						   gap);
	}
	else
	{
		admissible = true;
		message = "RESUME_ADMISSIBLE";
	}

	SOG_INIT_MATERIALIZED_SRF(fcinfo);
	values[0] = BoolGetDatum(admissible);
	values[1] = CStringGetTextDatum(message);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
