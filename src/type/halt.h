/*-------------------------------------------------------------------------
 *
 * type/halt.h
 *	  Boundary evaluation shared by the pure functions (evaluate_halt,
 *	  verify_resume; docs/reference.md: pure halt evaluation) and the guard (claim,
 *	  halt).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_HALT_H
#define SOG_HALT_H

#include "postgres.h"
#include "access/tupdesc.h"

#include "sog.h"
#include "type/position.h"

typedef enum SogVerdict
{
	SOG_VERDICT_ALIGNED,
	SOG_VERDICT_GAP_REPLAY,
	SOG_VERDICT_DIVERGENCE,
	SOG_VERDICT_FAIL_CLOSED
} SogVerdict;

/* A manifest: the values of the composite type sog.manifest. */
typedef struct SogManifest
{
	SogVerdict	verdict;
	SogPosition *resume_from;	/* NULL: start of the stream */
	bool		gap_isnull;
	Datum		gap_size;		/* numeric */
	bool		digest_isnull;
	char		digest[2 * SOG_DIGEST_LEN + 1];
} SogManifest;

/* The enum label of a verdict ("aligned", ...). */
extern const char *sog_verdict_label(SogVerdict v);

/*
 * Evaluate a read boundary (source cursor) against the durable applied
 * position with the rules of docs/reference.md's pure halt evaluation.  NULL positions are
 * "nothing yet", below every position; buffer_hash NULL or "" means no hash.
 * Never raises: a gap without a hash yields SOG_VERDICT_FAIL_CLOSED with
 * resume_from = commit, the gap size and no digest.
 */
extern void sog_evaluate_boundary(const SogPosition *cursor,
								  const SogPosition *commit,
								  const char *buffer_hash,
								  SogManifest *m);

/*
 * Build a datum of the composite whose descriptor is tupdesc (sog.manifest,
 * or a type whose first four columns match it).
 */
extern Datum sog_manifest_datum(const SogManifest *m, TupleDesc tupdesc);

/* Datum of the sog.verdict enum value for v; enumtype is its OID. */
extern Datum sog_verdict_datum(SogVerdict v, Oid enumtype);

#endif							/* SOG_HALT_H */
