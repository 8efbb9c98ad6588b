/* stream_offset_guard--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION stream_offset_guard UPDATE TO '1.2'" to load this file. \quit

------------------------------------------------------------------------------
-- Comments that still cited a document users do not have, or said what
-- 1.2 no longer does.
------------------------------------------------------------------------------

COMMENT ON COLUMN sog.gap.from_position IS
	'the gap covers (from_position, to_position]: the applied position when it was recorded, or the read boundary''s base when an apply had entered the boundary, moved past gaps that already cover the loss (NULL: the start of the stream)';
COMMENT ON COLUMN sog.gap.reason IS
	'why the range cannot be proven (see sog.gap_reasons()); unverified: the rest of a read boundary beyond a reported loss, or a telemetry skip_gap of a range no other gap covered';

------------------------------------------------------------------------------
-- The extension's triggers fire whatever session_replication_role says: a
-- sink loaded with session_replication_role = replica (to skip its own
-- foreign keys and triggers, as bulk loads and replication tools do) keeps
-- the guard's refusals.  (1.1 and before: origin only.)
------------------------------------------------------------------------------

ALTER TABLE sog.checkpoint ENABLE ALWAYS TRIGGER checkpoint_monotonic;
ALTER TABLE sog.role_grant ENABLE ALWAYS TRIGGER role_grant_bind;
