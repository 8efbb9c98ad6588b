-- portable/gaps.sql: the gap log and the gap functions in PL/pgSQL (the C
-- edition: src/gapstore.c, src/gapfuncs.c).

-- sog.gap_reasons(): every reason a gap row may have, in the C edition's
-- order (sog.gap's CHECK constraint takes them from here).
CREATE FUNCTION sog.gap_reasons() RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY['no_buffer_hash', 'hash_mismatch', 'divergence', 'identity_changed', 'retention',
			 'scope_changed', 'coverage_unproven', 'no_finality', 'receipts_pruned', 'mismatch',
			 'unverifiable', 'coverage_gap', 'unverified'];
