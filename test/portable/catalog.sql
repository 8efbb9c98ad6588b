-- test/portable/catalog.sql: the surface of schema sog as the catalog
-- describes it, one line per object, for test/portable/run.sh to compare
-- between the editions: each function's signature with its argument names,
-- result, volatility, strictness, parallel safety, security and comment;
-- each type, aggregate and operator with its comment; each table with its
-- options and comment, its columns (type, collation, NOT NULL, default,
-- identity, storage, comment), constraints, indexes, triggers and row
-- security policies; each function's argument list (names, modes,
-- defaults), result and settings; each view's definition (an md5); the
-- grants of each function, type, table, sequence, column and the schema
-- (the owner, a different role in each edition, named "owner"; no ACL is
-- the object kind's default).  Run with psql -At; -v bodies=1 adds each function's language
-- and the md5 of its body (for an upgrade compared with a fresh install of
-- the same edition).
\if :{?bodies}
\else
\set bodies 0
\endif
-- An ACL as "grantee:privilege" sorted, the object's owner as "owner",
-- PUBLIC as "PUBLIC"; the grantors left out.
CREATE FUNCTION pg_temp.grants(acl aclitem[], owner oid) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT coalesce(string_agg(g, ',' ORDER BY g), '')
	  FROM (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' WHEN a.grantee = owner THEN 'owner'
						ELSE a.grantee::regrole::text END || ':' || a.privilege_type
				   || CASE WHEN a.is_grantable THEN '*' ELSE '' END AS g
			  FROM aclexplode(acl) a
			 -- PostgreSQL 17's MAINTAIN, the owner's by default there
			 WHERE NOT (a.grantee = owner AND a.privilege_type = 'MAINTAIN')) x
$$;

SELECT 'function ' || p.oid::regprocedure::text
	   || ' args=' || pg_get_function_arguments(p.oid)
	   || ' returns=' || coalesce(pg_get_function_result(p.oid), '')
	   || ' ' || p.provolatile::text || CASE WHEN p.proisstrict THEN ' strict' ELSE '' END
	   || ' parallel=' || p.proparallel::text || CASE WHEN p.prosecdef THEN ' definer' ELSE '' END
	   || ' kind=' || p.prokind::text || ' rows=' || p.prorows
	   || ' grants=' || pg_temp.grants(coalesce(p.proacl, acldefault('f', p.proowner)), p.proowner)
	   || ' config=' || coalesce(array_to_string(p.proconfig, ','), '')
	   || CASE WHEN :bodies = 1 THEN ' language=' || (SELECT lanname FROM pg_language WHERE oid = p.prolang)
						|| ' body=' || md5(coalesce(p.prosrc, '') || '|' || coalesce(p.probin, '')) ELSE '' END
	   || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')
  FROM pg_proc p
 WHERE p.pronamespace = 'sog'::regnamespace
UNION ALL
SELECT 'type ' || t.oid::regtype::text
	   || ' grants=' || pg_temp.grants(coalesce(t.typacl, acldefault('T', t.typowner)), t.typowner)
	   || ' comment=' || coalesce(obj_description(t.oid, 'pg_type'), '')
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
	   || ' rls=' || c.relrowsecurity || CASE WHEN c.relforcerowsecurity THEN ' forced' ELSE '' END
	   || ' grants=' || pg_temp.grants(coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner)), c.relowner)
	   || CASE WHEN c.relkind IN ('v', 'm') THEN ' view=' || md5(pg_get_viewdef(c.oid)) ELSE '' END
	   || ' comment=' || coalesce(obj_description(c.oid, 'pg_class'), '')
  FROM pg_class c
 WHERE c.relnamespace = 'sog'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p', 'S')
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
	   || CASE WHEN a.attacl IS NOT NULL THEN ' grants=' || pg_temp.grants(a.attacl, c.relowner) ELSE '' END
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
   AND contype::text <> 'n'		-- PostgreSQL 18's NOT NULL constraints: the column's "not null"
UNION ALL
SELECT 'index ' || indexrelid::regclass::text || ' def=' || pg_get_indexdef(indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'sog'::regnamespace
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || '.' || quote_ident(tgname) || ' def=' || pg_get_triggerdef(oid)
	   || ' enabled=' || tgenabled::text
  FROM pg_trigger
 WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'sog'::regnamespace)
UNION ALL
SELECT 'schema sog grants=' || pg_temp.grants(coalesce(n.nspacl, acldefault('n', n.nspowner)), n.nspowner)
	   || ' comment=' || coalesce(obj_description(n.oid, 'pg_namespace'), '')
  FROM pg_namespace n WHERE n.nspname = 'sog'
UNION ALL
SELECT 'policy ' || p.polrelid::regclass::text || '.' || quote_ident(p.polname)
	   || ' def=' || p.polcmd::text || ' ' || coalesce(pg_get_expr(p.polqual, p.polrelid), '')
	   || ' check=' || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '')
  FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
 WHERE c.relnamespace = 'sog'::regnamespace
ORDER BY 1;
