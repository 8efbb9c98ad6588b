/* stream_offset_guard--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION stream_offset_guard" to load this file. \quit

-- The schema sog is created by CREATE EXTENSION (control file: schema = sog).
GRANT USAGE ON SCHEMA sog TO PUBLIC;

------------------------------------------------------------------------------
-- 2. The position type
------------------------------------------------------------------------------

CREATE TYPE sog.position;

CREATE FUNCTION sog.position_in(cstring) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_in'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_out(sog.position) RETURNS cstring
	AS 'MODULE_PATHNAME', 'sog_position_out'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_recv(internal) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_recv'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_send(sog.position) RETURNS bytea
	AS 'MODULE_PATHNAME', 'sog_position_send'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE sog.position (
	INPUT = sog.position_in,
	OUTPUT = sog.position_out,
	RECEIVE = sog.position_recv,
	SEND = sog.position_send,
	INTERNALLENGTH = VARIABLE,
	ALIGNMENT = int4,
	STORAGE = main
);
COMMENT ON TYPE sog.position IS
	'stream position: 1 to 8 non-negative integers joined by "-", ordered component by component';

CREATE FUNCTION sog.position_cmp(sog.position, sog.position) RETURNS integer
	AS 'MODULE_PATHNAME', 'sog_position_cmp_sql'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_lt(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_lt'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_le(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_le'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_eq(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_eq'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_ne(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_ne'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_ge(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_ge'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_gt(sog.position, sog.position) RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_position_gt'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sog.position_larger(sog.position, sog.position) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_larger'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_smaller(sog.position, sog.position) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_smaller'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_sortsupport(internal) RETURNS void
	AS 'MODULE_PATHNAME', 'sog_position_sortsupport'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_hash(sog.position) RETURNS integer
	AS 'MODULE_PATHNAME', 'sog_position_hash'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_hash_extended(sog.position, bigint) RETURNS bigint
	AS 'MODULE_PATHNAME', 'sog_position_hash_extended'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_components(sog.position) RETURNS integer
	AS 'MODULE_PATHNAME', 'sog_position_components'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sog.position_cmp(sog.position, sog.position) IS 'btree support: -1, 0 or 1';
COMMENT ON FUNCTION sog.position_lt(sog.position, sog.position) IS 'implementation of < for positions';
COMMENT ON FUNCTION sog.position_le(sog.position, sog.position) IS 'implementation of <= for positions';
COMMENT ON FUNCTION sog.position_eq(sog.position, sog.position) IS 'implementation of = for positions';
COMMENT ON FUNCTION sog.position_ne(sog.position, sog.position) IS 'implementation of <> for positions';
COMMENT ON FUNCTION sog.position_ge(sog.position, sog.position) IS 'implementation of >= for positions';
COMMENT ON FUNCTION sog.position_gt(sog.position, sog.position) IS 'implementation of > for positions';
COMMENT ON FUNCTION sog.position_larger(sog.position, sog.position) IS 'the larger of two positions';
COMMENT ON FUNCTION sog.position_smaller(sog.position, sog.position) IS 'the smaller of two positions';
COMMENT ON FUNCTION sog.position_sortsupport(internal) IS 'btree sort support (memcmp of the encoding)';
COMMENT ON FUNCTION sog.position_hash(sog.position) IS 'hash support';
COMMENT ON FUNCTION sog.position_hash_extended(sog.position, bigint) IS 'hash support, 64-bit with seed';
COMMENT ON FUNCTION sog.position_components(sog.position) IS 'number of components of a position (1 to 8)';

-- The comparison operators live in pg_catalog so that WHERE pos > '100'
-- works whatever the search_path.
CREATE OPERATOR pg_catalog.< (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_lt,
	COMMUTATOR = OPERATOR(pg_catalog.>), NEGATOR = OPERATOR(pg_catalog.>=),
	RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR pg_catalog.<= (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_le,
	COMMUTATOR = OPERATOR(pg_catalog.>=), NEGATOR = OPERATOR(pg_catalog.>),
	RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR pg_catalog.= (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_eq,
	COMMUTATOR = OPERATOR(pg_catalog.=), NEGATOR = OPERATOR(pg_catalog.<>),
	RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR pg_catalog.<> (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_ne,
	COMMUTATOR = OPERATOR(pg_catalog.<>), NEGATOR = OPERATOR(pg_catalog.=),
	RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR pg_catalog.>= (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_ge,
	COMMUTATOR = OPERATOR(pg_catalog.<=), NEGATOR = OPERATOR(pg_catalog.<),
	RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR pg_catalog.> (
	LEFTARG = sog.position, RIGHTARG = sog.position, FUNCTION = sog.position_gt,
	COMMUTATOR = OPERATOR(pg_catalog.<), NEGATOR = OPERATOR(pg_catalog.<=),
	RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);

CREATE OPERATOR CLASS sog.position_ops
	DEFAULT FOR TYPE sog.position USING btree AS
		OPERATOR 1 pg_catalog.< ,
		OPERATOR 2 pg_catalog.<= ,
		OPERATOR 3 pg_catalog.= ,
		OPERATOR 4 pg_catalog.>= ,
		OPERATOR 5 pg_catalog.> ,
		FUNCTION 1 sog.position_cmp(sog.position, sog.position),
		FUNCTION 2 sog.position_sortsupport(internal);

CREATE OPERATOR CLASS sog.position_hash_ops
	DEFAULT FOR TYPE sog.position USING hash AS
		OPERATOR 1 pg_catalog.= ,
		FUNCTION 1 sog.position_hash(sog.position),
		FUNCTION 2 sog.position_hash_extended(sog.position, bigint);

CREATE AGGREGATE sog.max(sog.position) (
	SFUNC = sog.position_larger, STYPE = sog.position,
	COMBINEFUNC = sog.position_larger, SORTOP = OPERATOR(pg_catalog.>),
	PARALLEL = SAFE
);
CREATE AGGREGATE sog.min(sog.position) (
	SFUNC = sog.position_smaller, STYPE = sog.position,
	COMBINEFUNC = sog.position_smaller, SORTOP = OPERATOR(pg_catalog.<),
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE sog.max(sog.position) IS 'greatest position';
COMMENT ON AGGREGATE sog.min(sog.position) IS 'least position';

-- Casts
CREATE FUNCTION sog.position(bigint) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_from_int8'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position(numeric) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_from_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position(pg_lsn) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_from_lsn'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sog.position_to_numeric(sog.position) RETURNS numeric
	AS 'MODULE_PATHNAME', 'sog_position_to_numeric'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sog.position(bigint) IS 'one-component position from a non-negative bigint';
COMMENT ON FUNCTION sog.position(numeric) IS 'one-component position from a non-negative integral numeric';
COMMENT ON FUNCTION sog.position(pg_lsn) IS 'one-component position from a WAL location (its 64-bit value)';
COMMENT ON FUNCTION sog.position_to_numeric(sog.position) IS 'numeric value of a one-component position';

CREATE CAST (bigint AS sog.position) WITH FUNCTION sog.position(bigint) AS ASSIGNMENT;
CREATE CAST (numeric AS sog.position) WITH FUNCTION sog.position(numeric) AS ASSIGNMENT;
CREATE CAST (pg_lsn AS sog.position) WITH FUNCTION sog.position(pg_lsn);
CREATE CAST (sog.position AS numeric) WITH FUNCTION sog.position_to_numeric(sog.position);
-- text <-> sog.position: PostgreSQL's automatic I/O conversion casts.

------------------------------------------------------------------------------
-- 3. Hashes
------------------------------------------------------------------------------

CREATE FUNCTION sog.payload_digest(payload bytea) RETURNS bytea
	AS 'MODULE_PATHNAME', 'sog_payload_digest'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sog.payload_digest(bytea) IS 'SHA-256 of a record''s bytes';

CREATE FUNCTION sog.buffer_hash_accum(internal, sog.position, bytea) RETURNS internal
	AS 'MODULE_PATHNAME', 'sog_buffer_hash_accum'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION sog.buffer_hash_final(internal) RETURNS text
	AS 'MODULE_PATHNAME', 'sog_buffer_hash_final'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION sog.buffer_hash_accum(internal, sog.position, bytea) IS 'transition function of sog.buffer_hash';
COMMENT ON FUNCTION sog.buffer_hash_final(internal) IS 'final function of sog.buffer_hash';

CREATE AGGREGATE sog.buffer_hash("position" sog.position, payload_digest bytea) (
	SFUNC = sog.buffer_hash_accum,
	STYPE = internal,
	FINALFUNC = sog.buffer_hash_final
);
COMMENT ON AGGREGATE sog.buffer_hash(sog.position, bytea) IS
	'chained SHA-256 over records in strictly increasing position order; use with ORDER BY position';

CREATE FUNCTION sog.buffer_hash(positions sog.position[], payload_digests bytea[]) RETURNS text
	AS 'MODULE_PATHNAME', 'sog_buffer_hash_array'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sog.buffer_hash(sog.position[], bytea[]) IS
	'chained SHA-256 over records given as parallel arrays in strictly increasing position order';

------------------------------------------------------------------------------
-- 4. Reference-compatible halt evaluation
------------------------------------------------------------------------------

CREATE TYPE sog.verdict AS ENUM (
	'aligned', 'gap_replay_required', 'unrecoverable_divergence', 'fail_closed'
);
COMMENT ON TYPE sog.verdict IS 'outcome of evaluating a read boundary against the applied position';

CREATE TYPE sog.manifest AS (
	verdict sog.verdict,
	resume_from sog.position,
	gap_size numeric,
	manifest_digest text
);
COMMENT ON TYPE sog.manifest IS 'evaluated halt boundary: verdict, safe resume position, gap size, digest';

CREATE FUNCTION sog.evaluate_halt(source_cursor sog.position, sink_commit sog.position,
								  buffer_hash text, idempotency_key text)
	RETURNS sog.manifest
	AS 'MODULE_PATHNAME', 'sog_evaluate_halt'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION sog.evaluate_halt(sog.position, sog.position, text, text) IS
	'evaluate a halt boundary: aligned, gap_replay_required or unrecoverable_divergence; SG002 without a hash over a gap';

CREATE FUNCTION sog.verify_resume(manifest sog.manifest, requested_cursor sog.position)
	RETURNS TABLE (admissible boolean, message text)
	AS 'MODULE_PATHNAME', 'sog_verify_resume'
	LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION sog.verify_resume(sog.manifest, sog.position) IS
	'is resuming at requested_cursor admissible under this manifest';
