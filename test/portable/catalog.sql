-- test/portable/catalog.sql: the surface of schema sog as the catalog
-- describes it, one line per object, for test/portable/run.sh to compare
-- between the editions: each function's signature with its argument names,
-- result, volatility, strictness, parallel safety, security and comment;
-- each type, aggregate and operator with its comment.  Run with psql -At.
SELECT 'function ' || p.oid::regprocedure::text
	   || ' names=' || coalesce(array_to_string(p.proargnames, ','), '')
	   || ' returns=' || CASE WHEN p.proretset THEN 'setof ' ELSE '' END || p.prorettype::regtype::text
	   || ' ' || p.provolatile::text || CASE WHEN p.proisstrict THEN ' strict' ELSE '' END
	   || ' parallel=' || p.proparallel::text || CASE WHEN p.prosecdef THEN ' definer' ELSE '' END
	   || ' kind=' || p.prokind::text || ' rows=' || p.prorows
	   || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')
  FROM pg_proc p
 WHERE p.pronamespace = 'sog'::regnamespace
UNION ALL
SELECT 'type ' || t.oid::regtype::text || ' comment=' || coalesce(obj_description(t.oid, 'pg_type'), '')
  FROM pg_type t
 WHERE t.typnamespace = 'sog'::regnamespace AND t.typelem = 0
   AND NOT EXISTS (SELECT FROM pg_class c WHERE c.reltype = t.oid)
UNION ALL
SELECT 'operator ' || o.oid::regoperator::text || ' function=' || o.oprcode::regproc::text
  FROM pg_operator o
 WHERE o.oprnamespace = 'sog'::regnamespace
ORDER BY 1;
