-- test/portable/receipts_portable.sql: the portable edition's
-- sog.receipt_rows for each run of receipt_runs.sql, printed as
-- receipts_c.sql prints the C edition's rows, and its own packed rows read
-- back by sog.receipt_positions.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\ir receipt_runs.sql
SELECT 'run ' || k || ' row ' || r.first_position || ' ' || r.last_position || ' ' || r.n || ' '
	   || coalesce(encode(r.packed, 'hex'), 'NULL') || ' '
	   || encode(sha256((SELECT string_agg(sog.payload_digest(convert_to(p, 'UTF8')), ''::bytea ORDER BY i)
						   FROM unnest(runs.positions) WITH ORDINALITY u(p, i) WHERE i BETWEEN r.lo AND r.hi)), 'hex')
  FROM runs, LATERAL sog.receipt_rows(runs.positions::sog.position[]) r
 ORDER BY k, r.hi;
SELECT 'run ' || k || ' reads ' || (SELECT string_agg(p::text, ' ' ORDER BY o, ord)
									  FROM sog.receipt_rows(runs.positions::sog.position[]) r,
										   LATERAL unnest(sog.receipt_positions(r.first_position, r.n, r.packed)) WITH ORDINALITY AS x(p, ord)
										   , LATERAL (SELECT r.hi AS o) z)
  FROM runs ORDER BY k;
