/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module magic and initialization of stream_offset_guard: the settings.
 *
 * The subsystems live in their own files: position_codec.c and position.c
 * (the position type), hash.c (digests and the buffer hash), halt.c (pure
 * halt evaluation), store.c (checkpoint rows, receipts, gaps, manifests and
 * the locking rules), access.c (who may act on which checkpoint), apply.c
 * (note_read, apply, apply_batch, commit_page: the sink transaction),
 * handoff.c (claim, halt, owner_check), gaps.c (verify_gap, report_gap,
 * skip_gap, resolve_gap, gaps), operate.c (receipts, prune_receipts,
 * reconfigure, the monotonicity trigger), recovery.c (expired-token
 * recovery), util.c (argument checks, values in messages), compat.h
 * (every PG_VERSION_NUM guard).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

#include "compat.h"
#include "store.h"

SOG_MODULE_MAGIC("1.1");

void		_PG_init(void);

/*
 * Define the settings.  The library is loaded by the first call of one of
 * its functions, so a SET sog.claim_timeout before that is kept as a
 * placeholder and takes effect then.
 */
void
_PG_init(void)
{
	DefineCustomIntVariable("sog.claim_timeout",
							"How long sog.claim waits for the previous owner's open sink transaction.",
							"0 waits without limit (lock_timeout still applies). When it expires, "
							"claim fails with SQLSTATE 55P03 naming the transaction that holds the checkpoint.",
							&sog_claim_timeout,
							0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("sog");
}
