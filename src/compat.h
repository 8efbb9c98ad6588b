/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every PG_VERSION_NUM guard of stream_offset_guard, in one place.
 *
 * The extension is tested on PostgreSQL 15 and keeps building on 14 to 18.
 * Code elsewhere uses the macros below and never tests the version itself.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_COMPAT_H
#define SOG_COMPAT_H

#include "postgres.h"
#include "funcapi.h"

#if PG_VERSION_NUM < 140000
#error "stream_offset_guard requires PostgreSQL 14 or later"
#endif

/*
 * Soft input errors (16+): input functions report through fcinfo->context so
 * that pg_input_is_valid() works.  Before 16 they simply raise.
 */
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#define SOG_ESCONTEXT(fcinfo)	((fcinfo)->context)
#define SOG_INPUT_ERROR(escontext, ...) \
	ereturn((escontext), (Datum) 0, __VA_ARGS__)
#else
#define SOG_ESCONTEXT(fcinfo)	((Node *) NULL)
#define SOG_INPUT_ERROR(escontext, ...) \
	do { (void) (escontext); ereport(ERROR, __VA_ARGS__); } while (0)
#endif

/* Materialize-mode set-returning functions (InitMaterializedSRF is 15+). */
#if PG_VERSION_NUM >= 150000
#define SOG_INIT_MATERIALIZED_SRF(fcinfo)	InitMaterializedSRF((fcinfo), 0)
#else
#define SOG_INIT_MATERIALIZED_SRF(fcinfo)	SetSingleFuncCall((fcinfo), 0)
#endif

/* pg_cryptohash_error() appeared in 15. */
#if PG_VERSION_NUM >= 150000
#define SOG_CRYPTOHASH_ERROR(ctx)	pg_cryptohash_error(ctx)
#else
#define SOG_CRYPTOHASH_ERROR(ctx)	"unknown error"
#endif

/* Custom settings' prefix: MarkGUCPrefixReserved is 15+. */
#if PG_VERSION_NUM >= 150000
#define SOG_MARK_GUC_PREFIX_RESERVED(p)	MarkGUCPrefixReserved(p)
#else
#define SOG_MARK_GUC_PREFIX_RESERVED(p)	EmitWarningsOnPlaceholders(p)
#endif

/* EvalPlanQualInit gained a list of result relations in 16. */
#if PG_VERSION_NUM >= 160000
#define SOG_EVALPLANQUAL_INIT(epq, estate) \
	EvalPlanQualInit((epq), (estate), NULL, NIL, -1, NIL)
#else
#define SOG_EVALPLANQUAL_INIT(epq, estate) \
	EvalPlanQualInit((epq), (estate), NULL, NIL, -1)
#endif

#endif							/* SOG_COMPAT_H */
