-- prune.sql: sog.prune_receipts(:cp, :'through') in a transaction that stays
-- open :hold seconds after the prune (holding the checkpoint's lock and the
-- deleted rows), timed server-side.  Run by bench/run.sh while another
-- connection applies on a different checkpoint, and by test/bench-smoke.sh.
--   psql -At -F' ' -v cp=ID -v through=POS -v hold=S -f prune.sql
-- Last line: pruned t0 t1 t2 (epoch seconds: before the prune, after it,
-- after COMMIT).
\set ON_ERROR_STOP 1
BEGIN;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT sog.prune_receipts(:cp, :'through') AS pruned \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT pg_sleep(:hold) \gset
COMMIT;
SELECT :'pruned', :'t0', :'t1', extract(epoch FROM clock_timestamp());
