-- test/reliability/amcheck.sql: amcheck on every relation of the extension
-- (its tables, their TOAST tables and every btree index of both) and on the
-- workload's sink: bt_index_check(heapallindexed => true) and verify_heapam.
-- With -v portable=on the relations are those of schema sog (the portable
-- edition's plain script makes no extension to depend on); else those
-- that depend on the extension stream_offset_guard.
-- Writes one row per relation and check to the file :out:
-- (relation, check, 'ok' or what was found).  An error raised by a check is
-- caught and reported as its result.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS amcheck;
CREATE FUNCTION pg_temp.check_rel(rel regclass, kind char) RETURNS text
	LANGUAGE plpgsql AS $$
DECLARE
	found text;
BEGIN
	IF kind = 'i' THEN
		PERFORM bt_index_check(rel, heapallindexed => true);
		RETURN 'ok';
	END IF;
	SELECT string_agg(format('block %s offset %s: %s', v.blkno, v.offnum, v.msg), '; ')
	  INTO found FROM verify_heapam(rel, check_toast => true) v;
	RETURN coalesce(found, 'ok');
EXCEPTION WHEN OTHERS THEN
	RETURN format('ERROR %s: %s', SQLSTATE, SQLERRM);
END
$$;
\if :portable
SELECT 'sog' AS sog_schema \gset
\else
SELECT '' AS sog_schema \gset
\endif
\pset format unaligned
\pset tuples_only on
\pset fieldsep '\t'
\o :out
WITH ext_tables AS (
	SELECT c.oid
	  FROM pg_depend d
	  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'stream_offset_guard'
	  JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
	 WHERE d.deptype = 'e' AND c.relkind = 'r'
	UNION
	SELECT c.oid FROM pg_class c
	 WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = :'sog_schema') AND c.relkind = 'r'
	UNION
	SELECT 'rel.sink'::regclass::oid
), tables AS (
	SELECT oid FROM ext_tables
	UNION
	SELECT c.reltoastrelid FROM pg_class c JOIN ext_tables t ON t.oid = c.oid WHERE c.reltoastrelid <> 0
), indexes AS (
	SELECT i.indexrelid AS oid
	  FROM pg_index i JOIN tables t ON t.oid = i.indrelid
	  JOIN pg_class ic ON ic.oid = i.indexrelid
	  JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
)
SELECT t.oid::regclass::text, 'verify_heapam', pg_temp.check_rel(t.oid, 'r') FROM tables t
UNION ALL
SELECT i.oid::regclass::text, 'bt_index_check', pg_temp.check_rel(i.oid, 'i') FROM indexes i
ORDER BY 1, 2;
\o
