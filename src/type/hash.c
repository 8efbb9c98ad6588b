/*-------------------------------------------------------------------------
 *
 * type/hash.c
 *	  SHA-256 payload digests and the chained buffer hash (docs/reference.md: hash
 *	  definitions), on OpenSSL's SHA-256 where PostgreSQL is built with
 *	  OpenSSL, else on PostgreSQL's own common/cryptohash.h.
 *
 * Buffer hash definition (clients compute the same while they buffer):
 *
 *	h0 = SHA-256("sog:buffer:v1")
 *	hi = SHA-256(h(i-1) || be16(len(Pi)) || Pi || Di)
 *	Pi = canonical position text, Di = 32-byte payload digest
 *	result = lowercase hex of h(n)
 *
 * Where PostgreSQL is built with OpenSSL (USE_OPENSSL, as Debian's and
 * every major distribution's packages are), SHA-256 goes straight to
 * OpenSSL's SHA256_Init/Update/Final on a context on the stack (below):
 * nothing allocated, nothing looked up, nothing kept between digests.
 * PostgreSQL's cryptohash layer initialises with EVP_sha256(), which
 * OpenSSL 3 resolves through its provider store again at every init: 0.63
 * us per record of a buffer hash against 0.17 us here (bench/hashloop.c),
 * and the apply that reaches a noted cursor hashes the whole page.  Where
 * OpenSSL is built without its deprecated interfaces, EVP with one context
 * for the backend's life and the algorithm fetched once (EVP_MD_fetch):
 * the context and the algorithm are OpenSSL's own allocations (malloc),
 * tied to no memory context or resource owner, one of each per backend,
 * made on first use; EVP_DigestInit_ex resets the context before each
 * digest, so an error half-way through one leaves nothing stale.
 *
 * Without OpenSSL, one PostgreSQL cryptohash context serves every hash of a
 * transaction.  It is created on first use under the transaction's top
 * resource owner (so that a subtransaction's end does not free it), freed
 * by a transaction callback before COMMIT or PREPARE releases that owner
 * (which would warn of a leak), and forgotten at ABORT, whose release frees
 * it.
 *
 * Relies on: type/position_codec.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"

#include "compat.h"
#include "type/hash.h"
#include "type/position.h"

#ifdef USE_OPENSSL

/*
 * OpenSSL's SHA-256 itself (SHA256_Init/Update/Final), on a context on the
 * stack: no allocation, no provider dispatch.  OpenSSL 3 marks these
 * deprecated in favour of EVP, whose dispatch, context reset and cleanup
 * cost about half as much again as the compression of a short input (a
 * chain step hashes under 100 bytes): bench/hashloop.c's record (a payload
 * digest and a chain step) takes 0.27 us through EVP with the algorithm
 * fetched once and 0.17 us here, the same SHA-NI or AVX2 code doing the
 * work; the read boundary's check of 1000 records (bench/micro.sql) goes
 * from about 170-220 us to 130.  A build of OpenSSL without the
 * deprecated interfaces gets EVP, as before.  These calls use OpenSSL's own
 * implementation, not a provider's: on a host that enforces FIPS
 * providers, SHA-256 is still SHA-256 (a digest for integrity, not a
 * secret), but where every digest must come from the FIPS provider, build
 * against an OpenSSL without the deprecated interfaces (EVP then).
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/sha.h>

/*
 * PostgreSQL's pg_config.h sets OPENSSL_API_COMPAT to 1.0.1's level, so
 * OPENSSL_NO_DEPRECATED_3_0 is defined only by an OpenSSL built without
 * them (its configuration.h), as OPENSSL_NO_DEPRECATED is.
 */
#if !defined(OPENSSL_NO_DEPRECATED_3_0) && !defined(OPENSSL_NO_DEPRECATED)

void
sog_sha256(const uint8 *const *parts, const size_t *lens, int n, uint8 *out)
{
	SHA256_CTX	ctx;
	int			i;

	if (SHA256_Init(&ctx) != 1)
		goto fail;
	for (i = 0; i < n; i++)
		if (SHA256_Update(&ctx, parts[i], lens[i]) != 1)
			goto fail;
	if (SHA256_Final(out, &ctx) != 1)
		goto fail;
	return;

fail:
	elog(ERROR, "could not compute SHA-256 digest with OpenSSL");
}

#else							/* OpenSSL without its deprecated interfaces */

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#define SOG_EVP_FETCH 1
#endif

static EVP_MD_CTX *evp_ctx = NULL;
static const EVP_MD *evp_sha256 = NULL;

/*
 * The backend's SHA-256 context and algorithm, made on first use (see file
 * header).
 */
static void
evp_setup(void)
{
	if (evp_sha256 == NULL)
	{
#ifdef SOG_EVP_FETCH
		evp_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
#else
		evp_sha256 = EVP_sha256();
#endif
		if (evp_sha256 == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not load OpenSSL's SHA-256 algorithm")));
	}
	if (evp_ctx == NULL)
	{
		evp_ctx = EVP_MD_CTX_new();
		if (evp_ctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
}

void
sog_sha256(const uint8 *const *parts, const size_t *lens, int n, uint8 *out)
{
	unsigned int outlen = 0;
	int			i;

	if (unlikely(evp_ctx == NULL || evp_sha256 == NULL))
		evp_setup();
	if (EVP_DigestInit_ex(evp_ctx, evp_sha256, NULL) != 1)
		goto fail;
	for (i = 0; i < n; i++)
		if (EVP_DigestUpdate(evp_ctx, parts[i], lens[i]) != 1)
			goto fail;
	if (EVP_DigestFinal_ex(evp_ctx, out, &outlen) != 1 || outlen != SOG_DIGEST_LEN)
		goto fail;
	return;

fail:
	elog(ERROR, "could not compute SHA-256 digest with OpenSSL");
}

#endif							/* OpenSSL without its deprecated interfaces */

#else							/* !USE_OPENSSL */

static pg_cryptohash_ctx *sha256_ctx = NULL;

static void
sha256_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (sha256_ctx != NULL)
				pg_cryptohash_free(sha256_ctx);
			sha256_ctx = NULL;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			sha256_ctx = NULL;	/* the owner's release frees it */
			break;
		default:
			break;
	}
}

/*
 * The transaction's SHA-256 context, created on first use (see file header).
 */
static pg_cryptohash_ctx *
get_sha256_ctx(void)
{
	static bool registered = false;

	if (sha256_ctx == NULL)
	{
		ResourceOwner save = CurrentResourceOwner;

		if (!registered)
		{
			RegisterXactCallback(sha256_xact_callback, NULL);
			registered = true;
		}
		Assert(TopTransactionResourceOwner != NULL);
		CurrentResourceOwner = TopTransactionResourceOwner;
		PG_TRY();
		{
			sha256_ctx = pg_cryptohash_create(PG_SHA256);
		}
		PG_FINALLY();
		{
			CurrentResourceOwner = save;
		}
		PG_END_TRY();
		if (sha256_ctx == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	return sha256_ctx;
}

void
sog_sha256(const uint8 *const *parts, const size_t *lens, int n, uint8 *out)
{
	pg_cryptohash_ctx *ctx = get_sha256_ctx();
	int			i;

	if (pg_cryptohash_init(ctx) < 0)
		goto fail;
	for (i = 0; i < n; i++)
		if (pg_cryptohash_update(ctx, parts[i], lens[i]) < 0)
			goto fail;
	if (pg_cryptohash_final(ctx, out, SOG_DIGEST_LEN) < 0)
		goto fail;
	return;

fail:
	elog(ERROR, "could not compute SHA-256 digest: %s", pg_cryptohash_error(ctx));
}

#endif							/* USE_OPENSSL */

void
sog_check_digest_len(const char *what, int len)
{
	if (len != SOG_DIGEST_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a 32-byte SHA-256 digest", what),
				 errdetail("The value has %d bytes.", len),
				 errhint("Pass sog.payload_digest(record_bytes).")));
}

void
sog_buffer_hash_init(SogBufferHash *state)
{
	const uint8 *parts[1] = {(const uint8 *) SOG_BUFFER_HASH_SEED};
	size_t		lens[1] = {strlen(SOG_BUFFER_HASH_SEED)};

	sog_sha256(parts, lens, 1, state->h);
	state->count = 0;
	state->lastlen = 0;
}

void
sog_buffer_hash_step(SogBufferHash *state, const uint8 *enc, size_t enclen,
					 const uint8 *digest)
{
	char		txt[SOG_POS_MAX_TEXT + 1];
	size_t		tlen;
	uint8		be16[2];
	const uint8 *parts[4];
	size_t		lens[4];

	if (state->count > 0 &&
		sog_pos_compare(enc, enclen, state->last, state->lastlen) <= 0)
	{
		char		prev[SOG_POS_MAX_TEXT + 1];

		sog_pos_format(enc, enclen, txt);
		sog_pos_format(state->last, state->lastlen, prev);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffer hash positions must be strictly increasing"),
				 errdetail("Position %s follows position %s (record %lld).",
						   txt, prev, (long long) state->count + 1),
				 errhint("Hash the records in position order, each once: sog.buffer_hash(pos, digest ORDER BY pos).")));
	}
	tlen = sog_pos_format(enc, enclen, txt);
	be16[0] = (uint8) (tlen >> 8);
	be16[1] = (uint8) (tlen & 0xFF);
	parts[0] = state->h;
	lens[0] = SOG_DIGEST_LEN;
	parts[1] = be16;
	lens[1] = 2;
	parts[2] = (const uint8 *) txt;
	lens[2] = tlen;
	parts[3] = digest;
	lens[3] = SOG_DIGEST_LEN;
	sog_sha256(parts, lens, 4, state->h);
	memcpy(state->last, enc, enclen);
	state->lastlen = enclen;
	state->count++;
}

void
sog_buffer_hash_hex(const SogBufferHash *state, char *out)
{
	hex_encode((const char *) state->h, SOG_DIGEST_LEN, out);
	out[2 * SOG_DIGEST_LEN] = '\0';
}

/* SQL function: sog.payload_digest(bytea) -> bytea */
PG_FUNCTION_INFO_V1(sog_payload_digest);
Datum
sog_payload_digest(PG_FUNCTION_ARGS)
{
	bytea	   *payload = PG_GETARG_BYTEA_PP(0);
	bytea	   *result = (bytea *) palloc(VARHDRSZ + SOG_DIGEST_LEN);
	const uint8 *parts[1] = {(const uint8 *) VARDATA_ANY(payload)};
	size_t		lens[1] = {VARSIZE_ANY_EXHDR(payload)};

	sog_sha256(parts, lens, 1, (uint8 *) VARDATA(result));
	SET_VARSIZE(result, VARHDRSZ + SOG_DIGEST_LEN);
	PG_RETURN_BYTEA_P(result);
}

/*
 * SQL function: sog.buffer_hash_accum(internal, sog.position, bytea) -> internal
 *
 * Transition function of the buffer_hash aggregate.  Not strict: a NULL
 * position or digest is an error, not a record to skip.  The state lives in
 * the aggregate context.
 */
PG_FUNCTION_INFO_V1(sog_buffer_hash_accum);
Datum
sog_buffer_hash_accum(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	SogBufferHash *state;
	SogPosition *pos;
	bytea	   *digest;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "sog_buffer_hash_accum called in non-aggregate context");

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buffer hash records need a position and a payload digest"),
				 errdetail("The %s of a record is NULL.",
						   PG_ARGISNULL(1) ? "position" : "payload digest"),
				 errhint("Filter out incomplete records, or compute their digest with sog.payload_digest().")));

	if (PG_ARGISNULL(0))
	{
		state = (SogBufferHash *) MemoryContextAlloc(aggcontext, sizeof(SogBufferHash));
		sog_buffer_hash_init(state);
	}
	else
		state = (SogBufferHash *) PG_GETARG_POINTER(0);

	pos = PG_GETARG_SOG_POSITION_P(1);
	digest = PG_GETARG_BYTEA_PP(2);
	sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(digest));
	sog_buffer_hash_step(state, SOG_POS_BYTES(pos), SOG_POS_NBYTES(pos),
						 (const uint8 *) VARDATA_ANY(digest));
	PG_RETURN_POINTER(state);
}

/*
 * SQL function: sog.buffer_hash_final(internal) -> text
 *
 * No records at all gives the hex of h0.
 */
PG_FUNCTION_INFO_V1(sog_buffer_hash_final);
Datum
sog_buffer_hash_final(PG_FUNCTION_ARGS)
{
	SogBufferHash empty;
	SogBufferHash *state;
	char		hex[2 * SOG_DIGEST_LEN + 1];

	if (PG_ARGISNULL(0))
	{
		sog_buffer_hash_init(&empty);
		state = &empty;
	}
	else
		state = (SogBufferHash *) PG_GETARG_POINTER(0);
	sog_buffer_hash_hex(state, hex);
	PG_RETURN_TEXT_P(cstring_to_text(hex));
}

int
sog_records_from_arrays(ArrayType *parr, ArrayType *darr, const char *what,
						SogPosition ***pos, const uint8 ***dig, int *lbound)
{
	Datum	   *pd;
	bool	   *pn;
	Datum	   *dd;
	bool	   *dn;
	int			np;
	int			nd;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	int			i;

	if (ARR_NDIM(parr) > 1 || ARR_NDIM(darr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("positions and payload digests must be one-dimensional arrays"),
				 errdetail("The arrays have %d and %d dimensions.", ARR_NDIM(parr), ARR_NDIM(darr)),
				 errhint("Pass one flat array of positions and one of digests.")));
	if (lbound)
		*lbound = ARR_NDIM(parr) == 1 ? ARR_LBOUND(parr)[0] : 1;
	get_typlenbyvalalign(ARR_ELEMTYPE(parr), &typlen, &typbyval, &typalign);
	deconstruct_array(parr, ARR_ELEMTYPE(parr), typlen, typbyval, typalign, &pd, &pn, &np);
	deconstruct_array(darr, BYTEAOID, -1, false, TYPALIGN_INT, &dd, &dn, &nd);
	if (np != nd)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("position and digest arrays differ in length"),
				 errdetail("There are %d positions and %d digests.", np, nd),
				 errhint("Pass one payload digest per position, in the same order.")));

	*pos = palloc(sizeof(SogPosition *) * Max(np, 1));
	*dig = palloc(sizeof(uint8 *) * Max(np, 1));
	for (i = 0; i < np; i++)
	{
		bytea	   *d;

		if (pn[i] || dn[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s need a position and a payload digest", what),
					 errdetail("The %s of element %d is NULL.",
							   pn[i] ? "position" : "payload digest", i + 1),
					 errhint("Remove the incomplete element from the arrays.")));
		if (ARR_ELEMTYPE(parr) == INT8OID)
			(*pos)[i] = sog_position_from_int64(DatumGetInt64(pd[i]), i + 1);
		else
			(*pos)[i] = DatumGetSogPositionP(pd[i]);
		d = DatumGetByteaPP(dd[i]);
		sog_check_digest_len("payload digest", VARSIZE_ANY_EXHDR(d));
		(*dig)[i] = (const uint8 *) VARDATA_ANY(d);
	}
	return np;
}

/* SQL function: sog.buffer_hash(sog.position[], bytea[]) -> text */
PG_FUNCTION_INFO_V1(sog_buffer_hash_array);
Datum
sog_buffer_hash_array(PG_FUNCTION_ARGS)
{
	SogPosition **pos;
	const uint8 **dig;
	SogBufferHash state;
	char		hex[2 * SOG_DIGEST_LEN + 1];
	int			n;
	int			i;

	n = sog_records_from_arrays(PG_GETARG_ARRAYTYPE_P(0), PG_GETARG_ARRAYTYPE_P(1),
								"buffer hash records", &pos, &dig, NULL);
	sog_buffer_hash_init(&state);
	for (i = 0; i < n; i++)
	{
		CHECK_FOR_INTERRUPTS();
		sog_buffer_hash_step(&state, SOG_POS_BYTES(pos[i]), SOG_POS_NBYTES(pos[i]), dig[i]);
	}
	sog_buffer_hash_hex(&state, hex);
	PG_RETURN_TEXT_P(cstring_to_text(hex));
}
