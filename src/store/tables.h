/*-------------------------------------------------------------------------
 *
 * store/tables.h
 *	  The extension's own tables as this backend knows them, and the SPI
 *	  helpers every store file uses (see store/tables.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SOG_TABLES_H
#define SOG_TABLES_H

#include "postgres.h"

#include "executor/spi.h"
#include "utils/relcache.h"

/* Columns of sog.checkpoint the store reads and writes, found by name. */
typedef enum SogCpCol
{
	CP_ID,
	CP_CONSUMER,
	CP_STREAM,
	CP_PARTITION,
	CP_CRITICALITY,
	CP_PROVIDER,
	CP_QUERY_SCOPE,
	CP_SOURCE_IDENTITY,
	CP_GENERATION,
	CP_OWNER,
	CP_PROVIDER_TOKEN,
	CP_SOURCE_CURSOR,
	CP_READ_BASE,
	CP_READ_HASH,
	CP_READ_COUNT,
	CP_APPLIED_POSITION,
	CP_PRUNE_HORIZON,
	CP_RECEIPTS_THROUGH,
	CP_STATE,
	CP_UPDATED_AT,
	CP_CLAIMED_AT,
	CP_NCOLS,					/* the columns above are required */
	CP_APPLIED_AT = CP_NCOLS,	/* 1.1; InvalidAttrNumber before the update */
	CP_READ_GAP_FLOOR,			/* 1.1; likewise */
	CP_RECEIPT_RING,			/* 1.2; likewise */
	CP_NATTS
} SogCpCol;

/* Columns of sog.receipt. */
typedef enum SogRcCol
{
	RC_CHECKPOINT_ID,
	RC_FIRST_POSITION,
	RC_LAST_POSITION,
	RC_N,
	RC_POSITIONS,
	RC_DIGESTS,
	RC_NCOLS,					/* the columns above are required */
	RC_CREATED_AT = RC_NCOLS,	/* 1.1; InvalidAttrNumber before the update */
	RC_NATTS
} SogRcCol;

/* Plans kept across calls (prepared once, re-prepared after re-creation). */
typedef enum SogPlan
{
	PLAN_RECEIPT_LOOKUP,
	PLAN_RECEIPT_SCAN,
	PLAN_GAP_INSERT,
	PLAN_MANIFEST_INSERT,
	PLAN_GAP_NEWEST_ID,
	PLAN_CITUS_2PC,				/* sog_citus_use_2pc */
	SOG_NPLANS
} SogPlan;

/*
 * Check that the extension is installed and refresh what changed since the
 * last call: after DROP/CREATE EXTENSION, the kept plans are freed.  Every
 * SQL function calls this (through sog_store_begin or sog_checkpoint_lock)
 * before it touches a table.
 */
extern void sog_tables_refresh(void);

/*
 * The store's query text sql as this database can run it: the position
 * type's operators are written OPERATOR(sog.<) and so on; while a database
 * not yet updated to 1.2 has them in pg_catalog, a copy naming that
 * schema.  sog_keep_plan and sog_exec apply it.
 */
extern const char *sog_query(const char *sql);

/* OIDs of sog.checkpoint, sog.receipt and the type sog.position. */
extern Oid	sog_checkpoint_relid(void);
extern Oid	sog_receipt_relid(void);
extern Oid	sog_position_type(void);

/*
 * 1.2 partitions sog.receipt by ring: sog.receipt_0 (checkpoints outside
 * the ring) and sog.receipt_1 .. sog.receipt_4 (the ring).  Before the
 * update it is one plain table.
 */
#define SOG_RING_PARTS	5
#define SOG_RC_PARENT	SOG_RING_PARTS	/* attnum slot of sog.receipt itself */
#define SOG_RC_SLOTS	(SOG_RING_PARTS + 1)
/* A checkpoint row without the column receipt_ring (before 1.2). */
#define SOG_RING_NO_COLUMN	INT_MIN
extern bool sog_receipt_partitioned(void);

/* OID of sog.receipt_<ring> (0 <= ring < SOG_RING_PARTS); 55000 if missing */
extern Oid	sog_receipt_partition_relid(int ring);

/*
 * Attribute numbers of the columns above in rel (open and locked), as the
 * relcache describes it now: recomputed after any invalidation of rel.
 * Raises 55000 naming the column if the table owner dropped a required
 * one.  A column a later version added (CP_APPLIED_AT, CP_READ_GAP_FLOOR,
 * CP_RECEIPT_RING, RC_CREATED_AT) is InvalidAttrNumber while the extension is at an older
 * version (the module is newer than the installed SQL until ALTER
 * EXTENSION UPDATE) or when it is not of the type that version gave it:
 * the store then leaves it to its default.
 */
extern const AttrNumber *sog_checkpoint_attnums(Relation rel);
extern const AttrNumber *sog_receipt_attnums(Relation rel);

/* The SPI connection of a SQL function's store calls. */
extern void sog_store_begin(void);
extern void sog_store_end(void);

/* A kept plan, prepared on first use. */
extern SPIPlanPtr sog_keep_plan(SogPlan which, const char *sql, int nargs,
								Oid *argtypes);

/* Run a plan on the newest snapshot; returns SPI's result code. */
extern int	sog_exec_latest(SPIPlanPtr plan, Datum *values, const char *nulls,
							bool read_only, long count);

/*
 * Prepare, run on the newest snapshot and free a one-off query; returns
 * SPI's result code (errors raise).  The caller holds the checkpoint lock.
 */
extern int	sog_exec(const char *sql, int nargs, Oid *types, Datum *values,
					 const char *nulls, bool read_only);

/* The same on the transaction snapshot (read-only). */
extern int	sog_exec_snapshot(const char *sql, int nargs, Oid *types, Datum *values);

/* Datum and null flag of a nullable position / C string parameter. */
#define POS_ARG(p, i) \
	do { values[i] = (p) ? PointerGetDatum(p) : (Datum) 0; nulls[i] = (p) ? ' ' : 'n'; } while (0)
#define TEXT_ARG(s, i) \
	do { values[i] = (s) ? CStringGetTextDatum(s) : (Datum) 0; nulls[i] = (s) ? ' ' : 'n'; } while (0)

#endif							/* SOG_TABLES_H */
