-- test/portable/catalog.sql: the surface of schema sog as the catalog
-- describes it, one line per object, for test/portable/run.sh to compare
-- between the editions: each function's signature with its argument names,
-- result, volatility, strictness, parallel safety, security and comment;
-- each type, aggregate and operator with its comment; each table with its
-- options and comment, its columns (type, collation, NOT NULL, default,
-- identity, storage, comment), constraints, indexes and triggers.  Run
-- with psql -At.
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
UNION ALL
SELECT 'table ' || c.oid::regclass::text || ' kind=' || c.relkind::text
	   || ' options=' || coalesce(array_to_string(c.reloptions, ','), '')
	   || ' rls=' || c.relrowsecurity
	   || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
  FROM pg_class c
 WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
UNION ALL
SELECT 'column ' || a.attrelid::regclass::text || '.' || quote_ident(a.attname)
	   || ' type=' || format_type(a.atttypid, a.atttypmod)
	   -- a position column's collation and storage are its type's, which
	   -- differ by edition (docs/portable.md): not compared
	   || CASE WHEN format_type(a.atttypid, NULL) = 'sog."position"' THEN ''
			   ELSE ' collation=' || CASE WHEN a.attcollation <> 0 THEN a.attcollation::regcollation::text ELSE '' END END
	   || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
	   || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
	   || ' identity=' || a.attidentity::text
	   || CASE WHEN format_type(a.atttypid, NULL) = 'sog."position"' THEN '' ELSE ' storage=' || a.attstorage::text END
	   || ' comment=' || coalesce(col_description(a.attrelid, a.attnum), '')
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p')
   AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || '.' || quote_ident(conname) || ' def=' || pg_get_constraintdef(oid)
  FROM pg_constraint
 WHERE connamespace = 'sog'::regnamespace AND conrelid <> 0
UNION ALL
SELECT 'index ' || indexrelid::regclass::text || ' def=' || pg_get_indexdef(indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'sog'::regnamespace
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || '.' || quote_ident(tgname) || ' def=' || pg_get_triggerdef(oid)
	   || ' enabled=' || tgenabled::text
  FROM pg_trigger
 WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'sog'::regnamespace)
ORDER BY 1;
