/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module magic and initialization of stream_offset_guard: each
 *	  subsystem that has settings defines them (sog_checkpoint_init).
 *
 * The map of src/, one subsystem per file, in folders by concern and in
 * layers: a file includes headers of its own layer or of those above it
 * in this list, never of a later one, named from src/ (docs/development.md,
 * "The layers of src/", which the docs check holds the tree to).  Each
 * file's header says what it relies on.
 *
 * base
 *	sog.h					the SQLSTATEs and the digest length
 *	compat.h				every PG_VERSION_NUM guard
 *	type/position_codec.c	the position type's encoding, no PostgreSQL
 *							dependency (the fuzzer links it alone)
 * type
 *	type/position.c			the SQL type sog.position: I/O, operators, casts
 *	type/hash.c				payload digests and the chained buffer hash
 *	type/halt.c				pure halt evaluation (evaluate_halt, verify_resume)
 *	type/util.c				argument checks, values in messages
 * tables
 *	store/tables.c			the extension's tables as this backend knows
 *							them, kept plans, SPI helpers
 *	store/citus.c			Citus: the tables' placement, two-phase commit
 *	store/writer.c			writes through the executor (ExecSimpleRelation*)
 * stores
 *	store/access.c			who may act on which checkpoint (the grants)
 *	store/holder.c			who holds a checkpoint's row (the 55P03 report)
 *	store/receipt.c			the receipt store
 *	store/gap.c				the gap log (and its NOTIFY at commit), the
 *							manifest log
 * checkpoint
 *	checkpoint/checkpoint.c	the checkpoint row: lock, read, write, checks,
 *							the monotonicity trigger, sog.claim_timeout
 *	checkpoint/boundary.c	the read boundary: recording it, refusing what
 *							would drop it, checking it when an apply or
 *							promote closes it, where its gaps start
 * SQL functions (functions/recovery.h is what recovery.c and promote.c share)
 *	functions/apply.c		the sink transaction: note_read, apply,
 *							apply_batch, apply_batch_int8, apply_run,
 *							commit_page, and the whole page in one call:
 *							apply_run_page, apply_batch_page
 *	functions/claim.c		ownership: claim, halt, owner_check
 *	functions/gap.c			verify_gap, report_gap, skip_gap, resolve_gap,
 *							gaps, gap_reasons
 *	functions/receipt.c		receipts, prune_receipts
 *	functions/reconfigure.c	reconfigure
 *	functions/recovery.c	expired-token recovery: begin_recovery,
 *							recovery_event, the attempt store, and the
 *							conclusion of attempts a new generation fences
 *	functions/promote.c		promote
 * module
 *	module.c				this file
 *
 * Relies on: checkpoint/checkpoint.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "checkpoint/checkpoint.h"
#include "compat.h"

SOG_MODULE_MAGIC("1.2");

void		_PG_init(void);

/*
 * Define the settings.  The library is loaded by the first call of one of
 * its functions, so a SET sog.claim_timeout before that is kept as a
 * placeholder and takes effect then.
 */
void
_PG_init(void)
{
	sog_checkpoint_init();
	MarkGUCPrefixReserved("sog");
}
