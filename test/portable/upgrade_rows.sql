-- test/portable/upgrade_rows.sql: every row of every table of schema sog
-- (but portable_version, which an update changes), as a count and an md5
-- per table, one line each; run as a superuser (row security) with -At.
\set ON_ERROR_STOP 1
SELECT format('SELECT %L || '' '' || count(*) || '' '' || md5(coalesce(string_agg(t::text, E''\n'' ORDER BY t::text), '''')) FROM %s t',
			  c.relname, c.oid::regclass)
  FROM pg_class c
 WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind = 'r' AND c.relname <> 'portable_version'
   AND c.relname <> 'upgrade_probe'
 ORDER BY c.relname \gexec
