/*-------------------------------------------------------------------------
 *
 * store/citus.h
 *	  The extension on a Citus cluster: where its tables are, and the
 *	  two-phase commit of a transaction that changes its state.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_CITUS_H
#define SOG_CITUS_H

/*
 * Refuse (0A000) if Citus has moved a table of the extension off this
 * node's heap, or this node is a Citus worker, as of the newest committed
 * catalog state.  With always false, a no-op until a relcache
 * invalidation of one of the extension's tables arrives (or nsp, the
 * schema sog, changed).  sog_tables_refresh calls it at every call.
 */
extern void sog_citus_check_placement(Oid nsp, bool always);

/*
 * The same, in the schema of the last check: writers call it after
 * opening their table (a conversion they waited for).
 */
extern void sog_citus_recheck_placement(void);

/*
 * A relcache invalidation of relid (InvalidOid: of every relation): Citus
 * invalidates the table it distributes, so the placement is checked again
 * after an invalidation of one of the extension's tables or of
 * sog.citus_2pc, not after the DDL of other tables.  Only clears flags: the
 * relcache callback of store/tables.c calls it at any point, even inside a
 * call (one callback for both: PostgreSQL has a few slots for every
 * extension of a backend).
 */
extern void sog_citus_invalidate(Oid relid);

/*
 * On a Citus coordinator: have Citus commit this transaction with 2PC (a
 * write of sog.citus_2pc that Citus runs here), or refuse (0A000).
 */
extern void sog_citus_use_2pc(void);

#endif							/* SOG_CITUS_H */
