/*-------------------------------------------------------------------------
 *
 * store/writer.h
 *	  Writing the extension's tables through the executor (see store/writer.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_WRITER_H
#define SOG_WRITER_H

#include "postgres.h"

#include "access/htup.h"
#include "nodes/bitmapset.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"

/* One writer session on one relation, within one SQL function call. */
typedef struct SogWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	EPQState	epq;
	TupleTableSlot *slot;		/* the tuple to write */
	TupleTableSlot *oldslot;	/* updates: the version replaced */
	bool		update;
} SogWriter;

/*
 * Start writing rel (open, locked RowExclusiveLock by the caller).  For an
 * update, changed lists the attribute numbers the writes change (for
 * column triggers and the index-unchanged hint, as an UPDATE's SET list).
 */
extern void sog_writer_begin(SogWriter *w, Relation rel, bool update,
							 const AttrNumber *changed, int nchanged);

/*
 * Insert a row whose columns atts[i] (n of them) have values[i] /
 * isnull[i]; every other column gets its default, as an INSERT naming only
 * those columns would (a column the table's owner added).
 */
extern void sog_writer_insert(SogWriter *w, int n, const AttrNumber *atts,
							  const Datum *values, const bool *isnull);

/*
 * Replace oldtup (the caller's locked, newest version, with t_self set) by
 * a version that differs only in the nchanged columns atts[i], which get
 * values[i] / isnull[i].  Every other column keeps its stored datum (a
 * TOASTed token is not rewritten).  Returns the new version, palloc'd.
 */
extern HeapTuple sog_writer_update(SogWriter *w, HeapTuple oldtup, int nchanged,
								   const AttrNumber *atts, const Datum *values,
								   const bool *isnull);

/* Fire queued AFTER triggers and release the writer. */
extern void sog_writer_end(SogWriter *w);

#endif							/* SOG_WRITER_H */
