/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module magic of stream_offset_guard.
 *
 * The subsystems live in their own files: position_codec.c and position.c
 * (the position type), hash.c (digests and the buffer hash), halt.c (pure
 * halt evaluation), store.c (checkpoint rows, receipts, gaps, manifests and
 * the locking rules), guard.c (claim, apply, halt, gaps: the guarded sink
 * transaction), recovery.c (expired-token recovery), util.c (argument
 * checks), compat.h (every PG_VERSION_NUM guard).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "compat.h"

#if PG_VERSION_NUM >= 180000
PG_MODULE_MAGIC_EXT(.name = "stream_offset_guard",.version = "1.0");
#else
PG_MODULE_MAGIC;
#endif
