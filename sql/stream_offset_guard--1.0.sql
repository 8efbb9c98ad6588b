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
COMMENT ON FUNCTION sog.position_in(cstring) IS 'text input of sog.position (22P02 on bad input)';
COMMENT ON FUNCTION sog.position_out(sog.position) IS 'canonical text output of sog.position';
COMMENT ON FUNCTION sog.position_recv(internal) IS 'binary input: version byte 1, then the canonical text (22P03 on bad input)';
COMMENT ON FUNCTION sog.position_send(sog.position) IS 'binary output: version byte 1, then the canonical text';
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
CREATE FUNCTION sog.position(integer) RETURNS sog.position
	AS 'MODULE_PATHNAME', 'sog_position_from_int4'
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
COMMENT ON FUNCTION sog.position(integer) IS 'one-component position from a non-negative integer';
COMMENT ON FUNCTION sog.position(numeric) IS 'one-component position from a non-negative integral numeric';
COMMENT ON FUNCTION sog.position(pg_lsn) IS 'one-component position from a WAL location (its 64-bit value)';
COMMENT ON FUNCTION sog.position_to_numeric(sog.position) IS 'numeric value of a one-component position';

CREATE FUNCTION sog.position(bigint[]) RETURNS sog.position[]
	AS 'MODULE_PATHNAME', 'sog_positions_from_int8'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sog.position(bigint[]) IS 'array of one-component positions from an array of non-negative bigints (one call for the whole array)';
CREATE CAST (bigint AS sog.position) WITH FUNCTION sog.position(bigint) AS IMPLICIT;
CREATE CAST (bigint[] AS sog.position[]) WITH FUNCTION sog.position(bigint[]) AS IMPLICIT;
CREATE CAST (integer AS sog.position) WITH FUNCTION sog.position(integer) AS IMPLICIT;
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

------------------------------------------------------------------------------
-- 5. Checkpoints, receipts, gaps, manifests
------------------------------------------------------------------------------

CREATE TABLE sog.checkpoint (
	id bigint GENERATED BY DEFAULT AS IDENTITY,
	consumer text NOT NULL,
	stream text NOT NULL,
	"partition" text NOT NULL,
	criticality text NOT NULL DEFAULT 'critical',
	provider text,
	query_scope text,
	source_identity text,
	generation bigint NOT NULL DEFAULT 0,
	owner text,
	provider_token text,
	source_cursor sog.position,
	read_base sog.position,
	read_hash text,
	read_count bigint,
	applied_position sog.position,
	prune_horizon sog.position,
	receipts_through sog.position,
	state text NOT NULL DEFAULT 'running',
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	claimed_at timestamptz,
	CONSTRAINT checkpoint_pkey PRIMARY KEY (id),
	CONSTRAINT checkpoint_key UNIQUE (consumer, stream, "partition"),
	CONSTRAINT checkpoint_criticality CHECK (criticality IN ('critical', 'telemetry')),
	CONSTRAINT checkpoint_state CHECK (state IN ('running', 'replaying', 'failed_closed')),
	CONSTRAINT checkpoint_generation CHECK (generation >= 0)
) WITH (fillfactor = 50);
COMMENT ON TABLE sog.checkpoint IS
	'one row per (consumer, stream, partition): generation, read boundary, applied position, provider token';
COMMENT ON COLUMN sog.checkpoint.source_cursor IS 'last position read from the source (the read boundary)';
COMMENT ON COLUMN sog.checkpoint.read_base IS 'applied position when the read boundary was recorded';
COMMENT ON COLUMN sog.checkpoint.read_hash IS 'buffer hash of the records in (read_base, source_cursor]';
COMMENT ON COLUMN sog.checkpoint.read_count IS 'number of records in (read_base, source_cursor]';
COMMENT ON COLUMN sog.checkpoint.applied_position IS 'greatest durably applied position; never moves backward';
COMMENT ON COLUMN sog.checkpoint.prune_horizon IS 'receipts at or below this position were pruned';
COMMENT ON COLUMN sog.checkpoint.claimed_at IS 'when the current generation began (claim or recovery promotion)';
COMMENT ON COLUMN sog.checkpoint.receipts_through IS 'greatest position with a receipt (above applied_position only after a recovery attempt)';

CREATE FUNCTION sog.checkpoint_guard() RETURNS trigger
	AS 'MODULE_PATHNAME', 'sog_checkpoint_guard'
	LANGUAGE C;
COMMENT ON FUNCTION sog.checkpoint_guard() IS
	'refuses updates that move applied_position, prune_horizon or generation backward (SG005)';
CREATE TRIGGER checkpoint_monotonic BEFORE UPDATE ON sog.checkpoint
	FOR EACH ROW EXECUTE FUNCTION sog.checkpoint_guard();

-- Receipts, packed one row per apply call (see src/store.c).
CREATE TABLE sog.receipt (
	checkpoint_id bigint NOT NULL,
	first_position sog.position NOT NULL,
	last_position sog.position NOT NULL,
	n integer NOT NULL CHECK (n > 0),
	positions bytea,
	digests bytea NOT NULL,
	CONSTRAINT receipt_pkey PRIMARY KEY (checkpoint_id, last_position)
);
ALTER TABLE sog.receipt ALTER COLUMN positions SET STORAGE PLAIN,
	ALTER COLUMN digests SET STORAGE PLAIN;
COMMENT ON TABLE sog.receipt IS
	'receipts packed in runs: n payload digests for first_position..last_position; read them with sog.receipts()';
COMMENT ON COLUMN sog.receipt.positions IS
	'NULL for a dense run (consecutive one-component positions), else each position as a length byte and its encoding';
COMMENT ON COLUMN sog.receipt.digests IS 'n 32-byte SHA-256 payload digests, in position order';

CREATE TABLE sog.gap (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	checkpoint_id bigint NOT NULL REFERENCES sog.checkpoint (id),
	generation bigint NOT NULL,
	from_position sog.position,
	to_position sog.position,
	reason text NOT NULL CHECK (reason IN ('no_buffer_hash', 'hash_mismatch',
		'divergence', 'identity_changed', 'retention', 'scope_changed',
		'coverage_unproven', 'no_finality', 'receipts_pruned', 'mismatch',
		'unverifiable', 'coverage_gap', 'unverified')),
	verdict sog.verdict NOT NULL,
	detail text,
	detected_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	resolved_at timestamptz,
	resolution text CHECK (resolution IN ('replayed', 'accepted_loss', 'skipped_telemetry')),
	note text,
	resolved_by text
);
CREATE INDEX gap_open ON sog.gap (checkpoint_id) WHERE resolved_at IS NULL;
COMMENT ON TABLE sog.gap IS
	'gaps that could not be proven: records in (from_position, to_position] of a checkpoint';
COMMENT ON COLUMN sog.gap.from_position IS 'the applied position when the gap was recorded (NULL: nothing was applied yet)';
COMMENT ON COLUMN sog.gap.to_position IS
	'the last position the gap may hold; NULL: unknown, every position above from_position is suspect';
COMMENT ON COLUMN sog.gap.reason IS
	'why it cannot be proven (contract section 7); unverified: a telemetry skip_gap of a range no other gap covered';
COMMENT ON COLUMN sog.gap.detail IS 'what the reporter said (sog.report_gap), or what the extension saw (identity_changed, unverified)';

CREATE TABLE sog.manifest_log (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	checkpoint_id bigint NOT NULL REFERENCES sog.checkpoint (id),
	generation bigint NOT NULL,
	kind text NOT NULL CHECK (kind IN ('claim', 'halt', 'skip')),
	owner text,
	source_cursor sog.position,
	applied_position sog.position,
	buffer_hash text,
	buffered_count bigint,
	verdict sog.verdict NOT NULL,
	resume_from sog.position,
	gap_size numeric,
	manifest_digest text,
	gap_id bigint,
	note text,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX manifest_log_checkpoint ON sog.manifest_log (checkpoint_id, id);
COMMENT ON TABLE sog.manifest_log IS 'every boundary evaluated at claim and halt, and every telemetry skip';

SELECT pg_catalog.pg_extension_config_dump('sog.checkpoint', '');
SELECT pg_catalog.pg_extension_config_dump('sog.receipt', '');
SELECT pg_catalog.pg_extension_config_dump('sog.gap', '');
SELECT pg_catalog.pg_extension_config_dump('sog.manifest_log', '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('sog.checkpoint', 'id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('sog.gap', 'id'), '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('sog.manifest_log', 'id'), '');

CREATE TYPE sog.resume_plan AS (
	checkpoint_id bigint,
	generation bigint,
	verdict sog.verdict,
	resume_from sog.position,
	verify_from sog.position,
	verify_to sog.position,
	expected_hash text,
	expected_count bigint,
	gap_size numeric,
	provider_token text,
	manifest_digest text,
	gap_id bigint
);
COMMENT ON TYPE sog.resume_plan IS 'what a worker that claimed a checkpoint must do first';

CREATE FUNCTION sog.register(consumer text, stream text, "partition" text,
							 criticality text DEFAULT 'critical',
							 provider text DEFAULT NULL,
							 query_scope text DEFAULT NULL,
							 source_identity text DEFAULT NULL)
	RETURNS sog.checkpoint
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r sog.checkpoint;
	conflict text;
BEGIN
	IF register.consumer IS NULL OR btrim(register.consumer, E' \t\n\r\f\x0B') = ''
	   OR register.stream IS NULL OR btrim(register.stream, E' \t\n\r\f\x0B') = ''
	   OR register."partition" IS NULL OR btrim(register."partition", E' \t\n\r\f\x0B') = '' THEN
		RAISE EXCEPTION 'consumer, stream and partition must not be blank'
			USING ERRCODE = '22023',
				  DETAIL = format('The consumer is %L, the stream %L and the partition %L.',
								  left(register.consumer, 200), left(register.stream, 200),
								  left(register."partition", 200)),
				  HINT = 'Name the consumer, the stream and the partition, for example (''orders-sink'', ''orders'', ''0'').';
	END IF;
	IF octet_length(register.consumer) > 800 OR octet_length(register.stream) > 800
	   OR octet_length(register."partition") > 800 THEN
		RAISE EXCEPTION 'consumer, stream and partition names are limited to 800 bytes each'
			USING ERRCODE = '22023',
				  DETAIL = format('The consumer has %s bytes, the stream %s and the partition %s.',
								  octet_length(register.consumer), octet_length(register.stream),
								  octet_length(register."partition")),
				  HINT = 'Use shorter names (at most 800 bytes each, so that the three fit one index entry); keep long descriptions elsewhere, e.g. in query_scope.';
	END IF;
	IF register.criticality IS NULL OR register.criticality NOT IN ('critical', 'telemetry') THEN
		RAISE EXCEPTION 'invalid criticality %', coalesce('"' || left(register.criticality, 200) || '"', 'NULL')
			USING ERRCODE = '22023',
				  DETAIL = 'A checkpoint is critical (gaps are never skipped) or telemetry (gaps may be skipped, with audit).',
				  HINT = 'Pass ''critical'' or ''telemetry''.';
	END IF;
	IF register.provider IS NOT NULL AND NOT EXISTS (
		SELECT FROM sog.provider p WHERE p.name OPERATOR(pg_catalog.=) register.provider) THEN
		RAISE EXCEPTION 'provider "%" is not described in sog.provider', left(register.provider, 200)
			USING ERRCODE = '22023',
				  DETAIL = 'A checkpoint''s provider names a row of sog.provider: its seek, ordering, empty-page and backfill contract, which recovery relies on.',
				  HINT = 'INSERT a row for it into sog.provider first, or use one of the seeded providers (SELECT name FROM sog.provider).';
	END IF;
	PERFORM sog.check_consumer_access(register.consumer);

	INSERT INTO sog.checkpoint AS c (consumer, stream, "partition", criticality,
									 provider, query_scope, source_identity)
	VALUES (register.consumer, register.stream, register."partition", register.criticality,
			register.provider, register.query_scope, register.source_identity)
	ON CONFLICT ON CONSTRAINT checkpoint_key DO NOTHING
	RETURNING * INTO r;
	IF FOUND THEN
		RETURN r;
	END IF;

	SELECT * INTO STRICT r FROM sog.checkpoint c
	 WHERE c.consumer OPERATOR(pg_catalog.=) register.consumer
	   AND c.stream OPERATOR(pg_catalog.=) register.stream
	   AND c."partition" OPERATOR(pg_catalog.=) register."partition";
	IF r.criticality IS DISTINCT FROM register.criticality THEN
		conflict := format('criticality is %L, not %L', r.criticality, register.criticality);
	ELSIF register.provider IS NOT NULL AND r.provider IS DISTINCT FROM register.provider THEN
		conflict := format('provider is %L, not %L', left(r.provider, 200), left(register.provider, 200));
	ELSIF register.query_scope IS NOT NULL AND r.query_scope IS DISTINCT FROM register.query_scope THEN
		conflict := format('query_scope is %L, not %L', left(r.query_scope, 200), left(register.query_scope, 200));
	ELSIF register.source_identity IS NOT NULL AND r.source_identity IS DISTINCT FROM register.source_identity THEN
		conflict := format('source_identity is %L, not %L', left(r.source_identity, 200),
						   left(register.source_identity, 200));
	END IF;
	IF conflict IS NOT NULL THEN
		RAISE EXCEPTION 'checkpoint % is registered with other settings', r.id
			USING ERRCODE = '22023',
				  DETAIL = format('Checkpoint %s/%s/%s: its %s.', left(r.consumer, 200),
								  left(r.stream, 200), left(r."partition", 200), conflict),
				  HINT = 'Register with the same settings, or have an operator change them with sog.reconfigure().';
	END IF;
	RETURN r;
END
$$;
COMMENT ON FUNCTION sog.register(text, text, text, text, text, text, text) IS
	'create the checkpoint of (consumer, stream, partition), or return the existing one';

CREATE FUNCTION sog.claim(checkpoint_id bigint, owner text, source_identity text DEFAULT NULL)
	RETURNS sog.resume_plan
	AS 'MODULE_PATHNAME', 'sog_claim'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.claim(bigint, text, text) IS
	'take over a checkpoint: new generation, evaluated boundary, resume plan';

CREATE FUNCTION sog.note_read(checkpoint_id bigint, generation bigint,
							  source_cursor sog.position, buffer_hash text,
							  buffered_count bigint)
	RETURNS void
	AS 'MODULE_PATHNAME', 'sog_note_read'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.note_read(bigint, bigint, sog.position, text, bigint) IS
	'record the read boundary: records in (applied_position, source_cursor] are buffered, with their hash';

CREATE FUNCTION sog.apply(checkpoint_id bigint, generation bigint,
						  "position" sog.position, payload_digest bytea)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_apply'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.apply(bigint, bigint, sog.position, bytea) IS
	'in the sink transaction: true if the event is new (write its effect), false for a verified duplicate';

CREATE FUNCTION sog.apply_batch(checkpoint_id bigint, generation bigint,
								positions sog.position[], payload_digests bytea[])
	RETURNS boolean[]
	AS 'MODULE_PATHNAME', 'sog_apply_batch'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.apply_batch(bigint, bigint, sog.position[], bytea[]) IS
	'sog.apply for a batch in one call; element i answers for event i';

CREATE FUNCTION sog.halt(checkpoint_id bigint, generation bigint,
						 source_cursor sog.position, buffer_hash text,
						 buffered_count bigint)
	RETURNS sog.manifest
	AS 'MODULE_PATHNAME', 'sog_halt'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.halt(bigint, bigint, sog.position, text, bigint) IS
	'graceful handoff: record the read boundary, evaluate it, log the manifest, release ownership';

CREATE FUNCTION sog.verify_gap(checkpoint_id bigint, generation bigint, replay_hash text)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_verify_gap'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.verify_gap(bigint, bigint, text) IS
	'compare the hash of the re-fetched gap with the recorded one; a mismatch fails closed';

CREATE FUNCTION sog.skip_gap(checkpoint_id bigint, generation bigint, reason text)
	RETURNS void
	AS 'MODULE_PATHNAME', 'sog_skip_gap'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.skip_gap(bigint, bigint, text) IS
	'telemetry checkpoints only: resolve open gaps as skipped and move applied_position to the read cursor';

CREATE FUNCTION sog.resolve_gap(gap_id bigint, resolution text, note text)
	RETURNS void
	AS 'MODULE_PATHNAME', 'sog_resolve_gap'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.resolve_gap(bigint, text, text) IS
	'operators: close a gap as replayed or accepted_loss (with a note); never moves applied_position';

CREATE FUNCTION sog.commit_page(checkpoint_id bigint, generation bigint,
								expected_token text, successor_token text)
	RETURNS void
	AS 'MODULE_PATHNAME', 'sog_commit_page'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.commit_page(bigint, bigint, text, text) IS
	'in the sink transaction of a page: compare-and-swap of the provider token (SG006 if another won)';

CREATE FUNCTION sog.receipts(checkpoint_id bigint, from_position sog.position DEFAULT NULL,
							 to_position sog.position DEFAULT NULL)
	RETURNS TABLE ("position" sog.position, payload_digest bytea)
	AS 'MODULE_PATHNAME', 'sog_receipts'
	LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.receipts(bigint, sog.position, sog.position) IS
	'receipts of a checkpoint in position order, both bounds inclusive';

CREATE FUNCTION sog.prune_receipts(checkpoint_id bigint, through sog.position)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'sog_prune_receipts'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.prune_receipts(bigint, sog.position) IS
	'drop receipts at or below through (at most applied_position) and raise the prune horizon';

CREATE FUNCTION sog.report_gap(checkpoint_id bigint, generation bigint,
								to_position sog.position, reason text,
								detail text DEFAULT NULL)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'sog_report_gap'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.report_gap(bigint, bigint, sog.position, text, text) IS
	'records that (applied_position, to_position] is lost (e.g. broker retention): a gap, failed_closed, NOTIFY; idempotent';

CREATE FUNCTION sog.gaps(checkpoint_id bigint)
	RETURNS TABLE (gap_id bigint, from_position sog.position, to_position sog.position,
				   reason text, detected_at timestamptz, resolution text,
				   resolved_at timestamptz, note text)
	AS 'MODULE_PATHNAME', 'sog_gaps'
	LANGUAGE C STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.gaps(bigint) IS
	'every gap of a checkpoint, open (resolution NULL) and resolved, in order of detection';

CREATE FUNCTION sog.owner_check(checkpoint_id bigint, generation bigint)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'sog_owner_check'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.owner_check(bigint, bigint) IS
	'true when the generation is current and its owner has not halted (ask this after a reconnect instead of claiming)';

------------------------------------------------------------------------------
-- 6. Expired-token recovery
------------------------------------------------------------------------------

CREATE TABLE sog.provider (
	name text PRIMARY KEY,
	seek_inclusive boolean NOT NULL DEFAULT false,
	no_late_arrivals boolean NOT NULL DEFAULT false,
	empty_page_is_barrier boolean NOT NULL DEFAULT false,
	may_backfill boolean NOT NULL DEFAULT true,
	builtin boolean NOT NULL DEFAULT false,
	doc_url text,
	notes text
);
COMMENT ON TABLE sog.provider IS
	'each provider''s documented contract; the columns default to the safe (refusing) values';
COMMENT ON COLUMN sog.provider.seek_inclusive IS 'a read can start AT a given position';
COMMENT ON COLUMN sog.provider.no_late_arrivals IS 'once P is visible, no record at or below P appears later';
COMMENT ON COLUMN sog.provider.empty_page_is_barrier IS 'an empty page proves nothing more exists before its continuation';
COMMENT ON COLUMN sog.provider.may_backfill IS 'records may appear at or below positions already delivered (finality needed)';
COMMENT ON COLUMN sog.provider.doc_url IS 'where the flags are justified (for seeded rows: the cited research in the project''s docs/providers.md)';
COMMENT ON COLUMN sog.provider.builtin IS 'seeded by the extension (not dumped); rows users add are dumped';

-- Seeded from each provider's documentation; README.md cites the sources.
INSERT INTO sog.provider (name, seek_inclusive, no_late_arrivals, empty_page_is_barrier,
						  may_backfill, builtin, doc_url, notes) VALUES
	('kafka', true, true, false, false, true,
	 'docs/providers.md#2-kafka',
	 'seek(offset) returns that offset first; offsets are assigned at append per partition; an empty poll proves nothing'),
	('kinesis', true, false, false, false, true,
	 'docs/providers.md#3-kinesis',
	 'AT_SEQUENCE_NUMBER is inclusive; GetRecords may return an empty page while records exist further on'),
	('dynamodb_streams', true, false, false, true, true,
	 'docs/providers.md#4-dynamodb_streams',
	 'AT_SEQUENCE_NUMBER is inclusive; ordering is per item only; empty pages prove nothing; pass a closed shard''s EndingSequenceNumber as finalized_through'),
	('nats_jetstream', true, true, false, false, true,
	 'docs/providers.md#5-nats_jetstream',
	 'DeliverByStartSequence is inclusive; stream sequences are monotonic'),
	('redis_streams', true, true, false, false, true,
	 'docs/providers.md#6-redis_streams',
	 'XRANGE start is inclusive; XADD IDs must be strictly increasing'),
	('http_paged', false, false, false, true, true,
	 'docs/providers.md#7-http_paged-generic',
	 'generic paged HTTP API: opaque cursors, no positional seek, backfill possible');

SELECT pg_catalog.pg_extension_config_dump('sog.provider', 'WHERE NOT builtin');

CREATE TABLE sog.recovery (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	checkpoint_id bigint NOT NULL REFERENCES sog.checkpoint (id),
	generation bigint NOT NULL,
	expired_token text,
	query_scope text,
	provider text,
	anchor sog.position,
	anchor_inclusive boolean NOT NULL,
	retained_from sog.position,
	finalized_through sog.position,
	applied_at_start sog.position,
	checkpoint_state_at_start text,
	state text NOT NULL DEFAULT 'open'
		CHECK (state IN ('open', 'failed', 'promoted', 'lost')),
	failure text,
	gap_id bigint,
	last_position sog.position,
	advance_through sog.position,
	events_verified bigint NOT NULL DEFAULT 0,
	events_applied bigint NOT NULL DEFAULT 0,
	events_duplicate bigint NOT NULL DEFAULT 0,
	successor_token text,
	result_generation bigint,
	result_applied_position sog.position,
	result_provider_token text,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	concluded_at timestamptz
);
CREATE INDEX recovery_open ON sog.recovery (checkpoint_id) WHERE state = 'open';
COMMENT ON TABLE sog.recovery IS
	'expired-token recovery attempts: anchor, events seen, outcome; result_* show the checkpoint after conclusion (the winner''s for a lost attempt)';
SELECT pg_catalog.pg_extension_config_dump('sog.recovery', '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('sog.recovery', 'id'), '');

CREATE FUNCTION sog.begin_recovery(checkpoint_id bigint, generation bigint,
								   expired_token text, query_scope text,
								   anchor sog.position, anchor_inclusive boolean,
								   retained_from sog.position DEFAULT NULL,
								   finalized_through sog.position DEFAULT NULL)
	RETURNS sog.recovery
	AS 'MODULE_PATHNAME', 'sog_begin_recovery'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position) IS
	'open an expired-token recovery attempt from an anchor; refusals fail the attempt and record a gap';

CREATE FUNCTION sog.recovery_event(recovery_id bigint, "position" sog.position,
								   payload_digest bytea)
	RETURNS text
	AS 'MODULE_PATHNAME', 'sog_recovery_event'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.recovery_event(bigint, sog.position, bytea) IS
	'per fetched event, in the sink transaction: verified, apply, duplicate, or a stop (mismatch, unverifiable, coverage_gap)';

CREATE FUNCTION sog.promote(recovery_id bigint, successor_token text, page_last sog.position)
	RETURNS TABLE (promoted boolean, generation bigint, applied_position sog.position,
				   provider_token text, reason text)
	AS 'MODULE_PATHNAME', 'sog_promote'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1;
COMMENT ON FUNCTION sog.promote(bigint, text, sog.position) IS
	'conclude an attempt''s page by compare-and-swap on its base token and generation';

REVOKE ALL ON TABLE sog.provider, sog.recovery FROM PUBLIC;
GRANT SELECT ON sog.provider TO PUBLIC;
REVOKE ALL ON FUNCTION
	sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position),
	sog.recovery_event(bigint, sog.position, bytea),
	sog.promote(bigint, text, sog.position)
FROM PUBLIC;

------------------------------------------------------------------------------
-- 7. For operators
------------------------------------------------------------------------------

CREATE VIEW sog.unresolved_gaps AS
SELECT g.id AS gap_id, g.checkpoint_id, c.consumer, c.stream, c."partition",
	   c.criticality, g.from_position, g.to_position, g.reason, g.detected_at,
	   pg_catalog.now() OPERATOR(pg_catalog.-) g.detected_at AS age
  FROM sog.gap g
  JOIN sog.checkpoint c ON c.id OPERATOR(pg_catalog.=) g.checkpoint_id
 WHERE g.resolved_at IS NULL;
COMMENT ON VIEW sog.unresolved_gaps IS 'gaps awaiting an operator';

CREATE VIEW sog.status AS
SELECT c.id AS checkpoint_id, c.consumer, c.stream, c."partition", c.state,
	   c.owner, c.generation, c.applied_position, c.source_cursor,
	   CASE WHEN sog.position_components(c.source_cursor) OPERATOR(pg_catalog.=) 1
			 AND sog.position_components(c.applied_position) OPERATOR(pg_catalog.=) 1
			THEN sog.position_to_numeric(c.source_cursor)
				 OPERATOR(pg_catalog.-) sog.position_to_numeric(c.applied_position)
	   END AS lag,
	   c.read_count AS buffered_count,
	   (SELECT pg_catalog.count(*) FROM sog.gap g
		 WHERE g.checkpoint_id OPERATOR(pg_catalog.=) c.id AND g.resolved_at IS NULL) AS open_gaps,
	   (SELECT pg_catalog.count(*) FROM sog.recovery r
		 WHERE r.checkpoint_id OPERATOR(pg_catalog.=) c.id AND r.state OPERATOR(pg_catalog.=) 'open') AS open_recoveries,
	   c.updated_at
  FROM sog.checkpoint c;
COMMENT ON VIEW sog.status IS 'one row per checkpoint: state, owner, positions, lag, open gaps';

CREATE TABLE sog.reconfiguration (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	checkpoint_id bigint NOT NULL REFERENCES sog.checkpoint (id),
	setting text NOT NULL CHECK (setting IN ('criticality', 'provider', 'query_scope', 'source_identity')),
	old_value text,
	new_value text NOT NULL,
	note text,
	changed_by text NOT NULL,
	changed_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX reconfiguration_checkpoint ON sog.reconfiguration (checkpoint_id, id);
COMMENT ON TABLE sog.reconfiguration IS
	'every setting changed by sog.reconfigure: who, when, old and new value, and the note';
SELECT pg_catalog.pg_extension_config_dump('sog.reconfiguration', '');
SELECT pg_catalog.pg_extension_config_dump(pg_catalog.pg_get_serial_sequence('sog.reconfiguration', 'id'), '');

CREATE FUNCTION sog.reconfigure(checkpoint_id bigint, criticality text DEFAULT NULL,
								provider text DEFAULT NULL, query_scope text DEFAULT NULL,
								source_identity text DEFAULT NULL, note text DEFAULT NULL)
	RETURNS sog.checkpoint
	AS 'MODULE_PATHNAME', 'sog_reconfigure'
	LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION sog.reconfigure(bigint, text, text, text, text, text) IS
	'operators: change a checkpoint''s non-NULL settings, recorded in sog.reconfiguration';

CREATE FUNCTION sog.verify_storage()
	RETURNS TABLE (relation regclass, problem text)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	amcheck_schema name;
	r record;
	msg text;
BEGIN
	SELECT n.nspname INTO amcheck_schema
	  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
	 WHERE e.extname OPERATOR(pg_catalog.=) 'amcheck';
	IF amcheck_schema IS NULL THEN
		RAISE EXCEPTION 'extension "amcheck" is not installed'
			USING ERRCODE = '55000',
				  DETAIL = 'sog.verify_storage() runs amcheck''s verify_heapam and bt_index_check on the extension''s tables and indexes.',
				  HINT = 'Run CREATE EXTENSION amcheck (PostgreSQL''s contrib) in this database.';
	END IF;
	-- the extension's tables, their TOAST tables, and every btree index on them
	FOR r IN
		SELECT c.oid::pg_catalog.regclass AS rel, c.relkind, am.amname
		  FROM pg_catalog.pg_class c
		  LEFT JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) c.relam
		 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'sog'::pg_catalog.regnamespace
		   AND c.relkind IN ('r', 'i')
		UNION ALL
		SELECT c.reltoastrelid::pg_catalog.regclass, 't', NULL
		  FROM pg_catalog.pg_class c
		 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'sog'::pg_catalog.regnamespace
		   AND c.relkind OPERATOR(pg_catalog.=) 'r' AND c.reltoastrelid OPERATOR(pg_catalog.<>) 0
		 ORDER BY 1
	LOOP
		IF r.relkind OPERATOR(pg_catalog.=) 'i' THEN
			CONTINUE WHEN r.amname OPERATOR(pg_catalog.<>) 'btree';
			BEGIN
				EXECUTE pg_catalog.format('SELECT %I.bt_index_check($1, true)', amcheck_schema) USING r.rel;
			EXCEPTION WHEN OTHERS THEN
				GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
				relation := r.rel;
				problem := 'bt_index_check: ' || msg;
				RETURN NEXT;
			END;
		ELSE
			FOR msg IN EXECUTE pg_catalog.format(
				'SELECT pg_catalog.concat(''block '', blkno, '', item '', offnum, '': '', msg) FROM %I.verify_heapam($1)',
				amcheck_schema) USING r.rel
			LOOP
				relation := r.rel;
				problem := 'verify_heapam: ' || msg;
				RETURN NEXT;
			END LOOP;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION sog.verify_storage() IS
	'amcheck over the extension''s tables (verify_heapam) and btree indexes (bt_index_check with heapallindexed): one row per problem, none when all is well';

-- Nothing stateful is usable by PUBLIC.
REVOKE ALL ON TABLE sog.checkpoint, sog.receipt, sog.gap, sog.manifest_log,
	sog.unresolved_gaps, sog.status, sog.reconfiguration FROM PUBLIC;
REVOKE ALL ON FUNCTION
	sog.register(text, text, text, text, text, text, text),
	sog.claim(bigint, text, text),
	sog.note_read(bigint, bigint, sog.position, text, bigint),
	sog.apply(bigint, bigint, sog.position, bytea),
	sog.apply_batch(bigint, bigint, sog.position[], bytea[]),
	sog.halt(bigint, bigint, sog.position, text, bigint),
	sog.verify_gap(bigint, bigint, text),
	sog.skip_gap(bigint, bigint, text),
	sog.resolve_gap(bigint, text, text),
	sog.commit_page(bigint, bigint, text, text),
	sog.receipts(bigint, sog.position, sog.position),
	sog.prune_receipts(bigint, sog.position),
	sog.report_gap(bigint, bigint, sog.position, text, text),
	sog.gaps(bigint),
	sog.owner_check(bigint, bigint),
	sog.reconfigure(bigint, text, text, text, text, text),
	sog.verify_storage(),
	sog.checkpoint_guard()
FROM PUBLIC;

------------------------------------------------------------------------------
-- 9. Privileges
------------------------------------------------------------------------------

-- Who may act on which checkpoint (src/access.c): one row per grant.  A
-- consumer grant with a consumer name limits the role to that consumer's
-- checkpoints (several rows add names); one without a name, and an operator
-- grant, cover every checkpoint.  Every stateful function checks the
-- session's current role against these rows (42501 otherwise).
CREATE TABLE sog.role_grant (
	role regrole NOT NULL,
	kind text NOT NULL CHECK (kind IN ('consumer', 'operator')),
	consumer text CHECK (consumer IS NULL OR kind OPERATOR(pg_catalog.=) 'consumer'),
	granted_by text NOT NULL DEFAULT CURRENT_USER,
	granted_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE UNIQUE INDEX role_grant_all ON sog.role_grant (role, kind) WHERE consumer IS NULL;
CREATE UNIQUE INDEX role_grant_scoped ON sog.role_grant (role, kind, consumer) WHERE consumer IS NOT NULL;
COMMENT ON TABLE sog.role_grant IS
	'grants of sog.grant_consumer and sog.grant_operator: which roles may act on which consumers'' checkpoints';
REVOKE ALL ON TABLE sog.role_grant FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('sog.role_grant', '');

CREATE FUNCTION sog.check_consumer_access(consumer text) RETURNS void
	AS 'MODULE_PATHNAME', 'sog_check_consumer_access'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION sog.check_consumer_access(text) IS
	'raises 42501 unless the session''s current role may act on checkpoints of this consumer (used by sog.register)';
REVOKE ALL ON FUNCTION sog.check_consumer_access(text) FROM PUBLIC;

CREATE FUNCTION sog.grant_consumer(role regrole, consumer text DEFAULT NULL) RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF grant_consumer.role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = '22023',
				  DETAIL = 'sog.grant_consumer() needs the role that runs the consumer.',
				  HINT = 'Pass a role name, for example sog.grant_consumer(''orders_consumer'').';
	END IF;
	IF grant_consumer.consumer IS NOT NULL
	   AND btrim(grant_consumer.consumer, E' \t\n\r\f\x0B') OPERATOR(pg_catalog.=) '' THEN
		RAISE EXCEPTION 'consumer must not be blank'
			USING ERRCODE = '22023',
				  DETAIL = format('The consumer name given for role %s is blank.', grant_consumer.role),
				  HINT = 'Pass the consumer name the role may act on, or NULL for every consumer.';
	END IF;
	EXECUTE format('GRANT EXECUTE ON FUNCTION '
		'sog.register(text, text, text, text, text, text, text), '
		'sog.claim(bigint, text, text), '
		'sog.note_read(bigint, bigint, sog.position, text, bigint), '
		'sog.apply(bigint, bigint, sog.position, bytea), '
		'sog.apply_batch(bigint, bigint, sog.position[], bytea[]), '
		'sog.halt(bigint, bigint, sog.position, text, bigint), '
		'sog.verify_gap(bigint, bigint, text), '
		'sog.skip_gap(bigint, bigint, text), '
		'sog.commit_page(bigint, bigint, text, text), '
		'sog.receipts(bigint, sog.position, sog.position), '
		'sog.report_gap(bigint, bigint, sog.position, text, text), '
		'sog.gaps(bigint), '
		'sog.owner_check(bigint, bigint), '
		'sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position), '
		'sog.recovery_event(bigint, sog.position, bytea), '
		'sog.promote(bigint, text, sog.position) TO %s', grant_consumer.role);
	EXECUTE format('GRANT SELECT ON sog.status TO %s', grant_consumer.role);
	IF grant_consumer.consumer IS NULL THEN
		-- every consumer: the scoped grants, if any, are subsumed
		DELETE FROM sog.role_grant g
		 WHERE g.role OPERATOR(pg_catalog.=) grant_consumer.role
		   AND g.kind OPERATOR(pg_catalog.=) 'consumer' AND g.consumer IS NOT NULL;
		INSERT INTO sog.role_grant (role, kind, consumer)
		VALUES (grant_consumer.role, 'consumer', NULL)
		ON CONFLICT DO NOTHING;
	ELSIF EXISTS (SELECT FROM sog.role_grant g
				   WHERE g.role OPERATOR(pg_catalog.=) grant_consumer.role
					 AND g.kind OPERATOR(pg_catalog.=) 'consumer' AND g.consumer IS NULL) THEN
		RAISE NOTICE 'role % may already act on every consumer''s checkpoints', grant_consumer.role
			USING HINT = 'To limit it to some consumers, run sog.revoke_consumer() first, then grant each name.';
	ELSE
		INSERT INTO sog.role_grant (role, kind, consumer)
		VALUES (grant_consumer.role, 'consumer', grant_consumer.consumer)
		ON CONFLICT DO NOTHING;
	END IF;
END
$$;
COMMENT ON FUNCTION sog.grant_consumer(regrole, text) IS
	'let a role run a consumer (register, claim, apply, halt, ...), on one consumer''s checkpoints or (NULL) all; extension owner only';

CREATE FUNCTION sog.revoke_consumer(role regrole, consumer text DEFAULT NULL) RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF revoke_consumer.role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = '22023',
				  DETAIL = 'sog.revoke_consumer() needs the role to take the grant from.',
				  HINT = 'Pass a role name.';
	END IF;
	DELETE FROM sog.role_grant g
	 WHERE g.role OPERATOR(pg_catalog.=) revoke_consumer.role
	   AND g.kind OPERATOR(pg_catalog.=) 'consumer'
	   AND (revoke_consumer.consumer IS NULL
			OR g.consumer OPERATOR(pg_catalog.=) revoke_consumer.consumer);
	-- the functions stay executable while another consumer grant remains
	IF NOT EXISTS (SELECT FROM sog.role_grant g
				   WHERE g.role OPERATOR(pg_catalog.=) revoke_consumer.role
					 AND g.kind OPERATOR(pg_catalog.=) 'consumer') THEN
		EXECUTE format('REVOKE EXECUTE ON FUNCTION '
			'sog.register(text, text, text, text, text, text, text), '
			'sog.claim(bigint, text, text), '
			'sog.note_read(bigint, bigint, sog.position, text, bigint), '
			'sog.apply(bigint, bigint, sog.position, bytea), '
			'sog.apply_batch(bigint, bigint, sog.position[], bytea[]), '
			'sog.halt(bigint, bigint, sog.position, text, bigint), '
			'sog.verify_gap(bigint, bigint, text), '
			'sog.skip_gap(bigint, bigint, text), '
			'sog.commit_page(bigint, bigint, text, text), '
			'sog.report_gap(bigint, bigint, sog.position, text, text), '
			'sog.owner_check(bigint, bigint), '
			'sog.begin_recovery(bigint, bigint, text, text, sog.position, boolean, sog.position, sog.position), '
			'sog.recovery_event(bigint, sog.position, bytea), '
			'sog.promote(bigint, text, sog.position) FROM %s', revoke_consumer.role);
		IF NOT EXISTS (SELECT FROM sog.role_grant g
					   WHERE g.role OPERATOR(pg_catalog.=) revoke_consumer.role) THEN
			EXECUTE format('REVOKE EXECUTE ON FUNCTION sog.receipts(bigint, sog.position, sog.position), '
				'sog.gaps(bigint) FROM %s', revoke_consumer.role);
			EXECUTE format('REVOKE SELECT ON sog.status FROM %s', revoke_consumer.role);
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION sog.revoke_consumer(regrole, text) IS
	'take back a consumer grant (one consumer name, or NULL: all of them); extension owner only';

CREATE FUNCTION sog.grant_operator(role regrole) RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF grant_operator.role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = '22023',
				  DETAIL = 'sog.grant_operator() needs the role that watches and repairs checkpoints.',
				  HINT = 'Pass a role name, for example sog.grant_operator(''stream_ops'').';
	END IF;
	EXECUTE format('GRANT EXECUTE ON FUNCTION '
		'sog.receipts(bigint, sog.position, sog.position), '
		'sog.resolve_gap(bigint, text, text), '
		'sog.prune_receipts(bigint, sog.position), '
		'sog.gaps(bigint), '
		'sog.owner_check(bigint, bigint), '
		'sog.reconfigure(bigint, text, text, text, text, text), '
		'sog.verify_storage() TO %s', grant_operator.role);
	EXECUTE format('GRANT SELECT ON sog.status, sog.unresolved_gaps, sog.reconfiguration TO %s',
				   grant_operator.role);
	INSERT INTO sog.role_grant (role, kind, consumer)
	VALUES (grant_operator.role, 'operator', NULL)
	ON CONFLICT DO NOTHING;
END
$$;
COMMENT ON FUNCTION sog.grant_operator(regrole) IS
	'let a role watch and repair (views, receipts, gaps, resolve_gap, prune_receipts, reconfigure); extension owner only';

REVOKE ALL ON FUNCTION sog.grant_consumer(regrole, text), sog.revoke_consumer(regrole, text),
	sog.grant_operator(regrole) FROM PUBLIC;
