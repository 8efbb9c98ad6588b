/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every PG_VERSION_NUM guard of stream_offset_guard, in one place.
 *
 * The extension builds on PostgreSQL 15 and later from one tree; 15, 17 and
 * 18 are tested (make test-versions), 19 (a release candidate) is built and
 * its regression suite run.  Code elsewhere uses the names below and never
 * tests the version itself.  Each entry says which major changed what.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_COMPAT_H
#define SOG_COMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "rewrite/rewriteHandler.h"
#include "utils/relcache.h"

#if PG_VERSION_NUM < 150000
#error "stream_offset_guard requires PostgreSQL 15 or later"
#endif

/*
 * 16 moved the varlena access macros (VARDATA_ANY, VARSIZE_ANY_EXHDR, ...)
 * out of postgres.h into varatt.h; 19 made them inline functions there.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 lets a library name itself and its version (shown by
 * pg_get_loaded_modules()); before, only the ABI magic block.
 */
#if PG_VERSION_NUM >= 180000
#define SOG_MODULE_MAGIC(ver) \
	PG_MODULE_MAGIC_EXT(.name = "stream_offset_guard", .version = (ver))
#else
#define SOG_MODULE_MAGIC(ver)	PG_MODULE_MAGIC
#endif

/*
 * Whether this backend holds exactly lockmode on relation relid: 17 gave
 * LockHeldByMe its "or a stronger mode" argument (false keeps 15's meaning).
 */
#include "miscadmin.h"
#include "storage/lock.h"
static inline bool
sog_relation_lock_held(Oid relid, LOCKMODE lockmode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
#if PG_VERSION_NUM >= 170000
	return LockHeldByMe(&tag, lockmode, false);
#else
	return LockHeldByMe(&tag, lockmode);
#endif
}

/*
 * Soft input errors (16): input functions report through fcinfo->context so
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

/*
 * Materialize-mode set-returning functions: 15.0 called the helper
 * SetSingleFuncCall, 15.1 renamed it InitMaterializedSRF (back-patched).
 */
#if PG_VERSION_NUM >= 150001
#define SOG_INIT_MATERIALIZED_SRF(fcinfo)	InitMaterializedSRF((fcinfo), 0)
#else
#define SOG_INIT_MATERIALIZED_SRF(fcinfo)	SetSingleFuncCall((fcinfo), 0)
#endif

/* EvalPlanQualInit gained the list of result relations in 16. */
#if PG_VERSION_NUM >= 160000
#define SOG_EVALPLANQUAL_INIT(epq, estate) \
	EvalPlanQualInit((epq), (estate), NULL, NIL, -1, NIL)
#else
#define SOG_EVALPLANQUAL_INIT(epq, estate) \
	EvalPlanQualInit((epq), (estate), NULL, NIL, -1)
#endif

/*
 * The one-relation range table of a write through the executor (what the
 * logical replication apply worker builds in create_edata_for_relation),
 * with updated_cols (offset by FirstLowInvalidHeapAttributeNumber) as the
 * columns an UPDATE sets.  16 moved the permission fields of a
 * RangeTblEntry, updatedCols among them, into an RTEPermissionInfo that
 * ExecInitRangeTable takes as a list; 18 added the relids that survive
 * initial partition pruning (here: the one relation).
 */
#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"
#endif
static inline void
sog_init_range_table(EState *estate, RangeTblEntry *rte, Bitmapset *updated_cols)
{
#if PG_VERSION_NUM >= 160000
	List	   *perminfos = NIL;
	RTEPermissionInfo *perminfo = addRTEPermissionInfo(&perminfos, rte);

	perminfo->updatedCols = updated_cols;
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, list_make1(rte), perminfos, bms_make_singleton(1));
#else
	ExecInitRangeTable(estate, list_make1(rte), perminfos);
#endif
#else
	rte->updatedCols = updated_cols;
	ExecInitRangeTable(estate, list_make1(rte));
#endif
}

/*
 * CheckValidResultRel took the MERGE actions in 17 (NIL: none), and the
 * ON CONFLICT action before them in 18 (none).
 */
#if PG_VERSION_NUM >= 180000
#define SOG_CHECK_VALID_RESULT_REL(rri, op) \
	CheckValidResultRel((rri), (op), ONCONFLICT_NONE, NIL)
#elif PG_VERSION_NUM >= 170000
#define SOG_CHECK_VALID_RESULT_REL(rri, op)	CheckValidResultRel((rri), (op), NIL)
#else
#define SOG_CHECK_VALID_RESULT_REL(rri, op)	CheckValidResultRel((rri), (op))
#endif

/*
 * The primary key's index: 18 lets the caller accept a deferrable one
 * (false keeps the earlier behaviour: an immediate primary key only).
 */
#if PG_VERSION_NUM >= 180000
#define SOG_PRIMARY_KEY_INDEX(rel)	RelationGetPrimaryKeyIndex((rel), false)
#else
#define SOG_PRIMARY_KEY_INDEX(rel)	RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * Scans.  18 gave index_beginscan an instrumentation argument (NULL: none);
 * 19 gave it and table_beginscan a word of scan options (SO_NONE).
 */
#if PG_VERSION_NUM >= 190000
#define SOG_INDEX_BEGINSCAN(heap, idx, snap, nkeys) \
	index_beginscan((heap), (idx), (snap), NULL, (nkeys), 0, SO_NONE)
#define SOG_TABLE_BEGINSCAN(rel, snap) \
	table_beginscan((rel), (snap), 0, NULL, SO_NONE)
#elif PG_VERSION_NUM >= 180000
#define SOG_INDEX_BEGINSCAN(heap, idx, snap, nkeys) \
	index_beginscan((heap), (idx), (snap), NULL, (nkeys), 0)
#define SOG_TABLE_BEGINSCAN(rel, snap)	table_beginscan((rel), (snap), 0, NULL)
#else
#define SOG_INDEX_BEGINSCAN(heap, idx, snap, nkeys) \
	index_beginscan((heap), (idx), (snap), (nkeys), 0)
#define SOG_TABLE_BEGINSCAN(rel, snap)	table_beginscan((rel), (snap), 0, NULL)
#endif

#endif							/* SOG_COMPAT_H */
