/*-------------------------------------------------------------------------
 *
 * store/writer.c
 *	  Writing the extension's tables through the executor, the way
 *	  PostgreSQL's logical replication apply worker writes user tables.
 *
 * The store never writes a tuple itself.  Every insert and update of
 * sog.checkpoint and sog.receipt goes through ExecSimpleRelationInsert /
 * ExecSimpleRelationUpdate (execReplication.c) with an EState and a
 * ResultRelInfo built for the call, as the apply worker builds them
 * (create_edata_for_relation in worker.c): the executor then maintains
 * every index the relation has (of any kind: expressions, predicates,
 * uniqueness, exclusion), checks NOT NULL and CHECK constraints, computes
 * stored generated columns and fires row triggers (the extension's own
 * monotonicity trigger among them), all from the relcache as it is at that
 * moment.  Nothing about the relation is cached here: whatever the table's
 * owner did with ALTER TABLE, CREATE INDEX or CREATE TRIGGER, or another
 * session with REINDEX CONCURRENTLY, is what the next write sees.
 *
 * An update builds the new version from the stored one and replaces only
 * the columns the caller changes: unchanged columns keep their datums, so
 * a TOASTed provider token is not detoasted and written again, the update
 * of a row whose indexed columns do not change can be HOT, and the WAL
 * record of a same-page update logs only the changed bytes.
 *
 * Nothing is filled in by hand either: the executor builds the CHECK
 * constraints' expressions itself (ExecRelCheck, on the first row), from
 * the relcache and the functions as they are now.  (1.1 kept them planned
 * across calls, dropped only by a relcache invalidation, and set
 * ri_ConstraintExprs itself: a CREATE OR REPLACE of a function that a
 * CHECK constraint calls went unseen, and a claim wrote a row the
 * constraint refuses.)
 *
 * Callers hold the checkpoint's row lock (checkpoint/checkpoint.c) and the
 * relation's RowExclusiveLock; a writer session lives within one SQL function
 * call.
 *
 * Relies on: store/citus.c, store/tables.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/rel.h"

#include "compat.h"
#include "store/citus.h"
#include "store/tables.h"
#include "store/writer.h"

void
sog_writer_begin(SogWriter *w, Relation rel, bool update,
				 const AttrNumber *changed, int nchanged)
{
	RangeTblEntry *rte;
	Bitmapset  *updated = NULL;
	int			i;

	sog_citus_recheck_placement();	/* a conversion we waited for */
	memset(w, 0, sizeof(*w));
	w->rel = rel;
	w->update = update;
	w->estate = CreateExecutorState();

	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	for (i = 0; update && i < nchanged; i++)
		updated = bms_add_member(updated, changed[i] - FirstLowInvalidHeapAttributeNumber);
	sog_init_range_table(w->estate, rte, updated);

	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, rel, 1, NULL, 0);
	/* as the apply worker does: enough for ExecGetTriggerResultRel */
	w->estate->es_opened_result_relations =
		lappend(w->estate->es_opened_result_relations, w->rri);
	SOG_CHECK_VALID_RESULT_REL(w->rri, update ? CMD_UPDATE : CMD_INSERT);
	ExecOpenIndices(w->rri, false);
	if (update)
		SOG_EVALPLANQUAL_INIT(&w->epq, w->estate);

	w->slot = table_slot_create(rel, &w->estate->es_tupleTable);
	if (update)
		w->oldslot = table_slot_create(rel, &w->estate->es_tupleTable);

	AfterTriggerBeginQuery();
}

/*
 * Fill the columns the caller does not set with their defaults, as
 * slot_fill_defaults does in the apply worker: build_column_default gives
 * the expression an INSERT would use (none for a generated column, which
 * the executor computes).
 */
static void
fill_defaults(SogWriter *w, const bool *given)
{
	TupleDesc	desc = RelationGetDescr(w->rel);
	ExprContext *econtext = GetPerTupleExprContext(w->estate);
	int			a;

	for (a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		Expr	   *defexpr;

		if (given[a] || attr->attisdropped || attr->attgenerated)
			continue;
		defexpr = (Expr *) build_column_default(w->rel, a + 1);
		if (defexpr == NULL)
			continue;			/* stays NULL */
		w->slot->tts_values[a] = ExecEvalExpr(ExecPrepareExpr(defexpr, w->estate),
											  econtext, &w->slot->tts_isnull[a]);
	}
}

void
sog_writer_insert(SogWriter *w, int n, const AttrNumber *atts,
				  const Datum *values, const bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(w->rel);
	bool	   *given = palloc0(sizeof(bool) * desc->natts);
	int			i;

	Assert(!w->update);
	ExecClearTuple(w->slot);
	for (i = 0; i < desc->natts; i++)
	{
		w->slot->tts_values[i] = (Datum) 0;
		w->slot->tts_isnull[i] = true;
	}
	for (i = 0; i < n; i++)
	{
		w->slot->tts_values[atts[i] - 1] = values[i];
		w->slot->tts_isnull[atts[i] - 1] = isnull[i];
		given[atts[i] - 1] = true;
	}
	fill_defaults(w, given);
	ExecStoreVirtualTuple(w->slot);

	w->estate->es_output_cid = GetCurrentCommandId(true);
	ExecSimpleRelationInsert(w->rri, w->estate, w->slot);
	ResetPerTupleExprContext(w->estate);
	CommandCounterIncrement();	/* the next query of this call sees it */
	pfree(given);
}

HeapTuple
sog_writer_update(SogWriter *w, HeapTuple oldtup, int nchanged,
				  const AttrNumber *atts, const Datum *values, const bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(w->rel);
	HeapTuple	newtup;
	int			i;

	Assert(w->update);
	/* a version written earlier in this same command must be visible */
	CommandCounterIncrement();

	ExecForceStoreHeapTuple(oldtup, w->oldslot, false);
	w->oldslot->tts_tid = oldtup->t_self;
	slot_getallattrs(w->oldslot);
	ExecClearTuple(w->slot);
	memcpy(w->slot->tts_values, w->oldslot->tts_values, sizeof(Datum) * desc->natts);
	memcpy(w->slot->tts_isnull, w->oldslot->tts_isnull, sizeof(bool) * desc->natts);
	for (i = 0; i < nchanged; i++)
	{
		w->slot->tts_values[atts[i] - 1] = values[i];
		w->slot->tts_isnull[atts[i] - 1] = isnull[i];
	}
	ExecStoreVirtualTuple(w->slot);

	w->estate->es_output_cid = GetCurrentCommandId(true);
	EvalPlanQualSetSlot(&w->epq, w->slot);
	ExecSimpleRelationUpdate(w->rri, w->estate, &w->epq, w->oldslot, w->slot);
	ResetPerTupleExprContext(w->estate);

	newtup = ExecCopySlotHeapTuple(w->slot);
	newtup->t_self = w->slot->tts_tid;
	CommandCounterIncrement();
	return newtup;
}

void
sog_writer_end(SogWriter *w)
{
	AfterTriggerEndQuery(w->estate);
	if (w->update)
		EvalPlanQualEnd(&w->epq);
	ExecCloseIndices(w->rri);
	ExecResetTupleTable(w->estate->es_tupleTable, false);
	FreeExecutorState(w->estate);
	pfree(w->rri);
}
