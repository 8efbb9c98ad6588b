--
-- setup: install the extension and the test oracle
--
-- The other regression files (position, casts, binary, index, hash, halt)
-- run after this one, in the same database.  pgcrypto is only a test
-- oracle: its digest() recomputes every SHA-256 the extension produces.
--
-- the position operators are in schema sog (1.2; README: types)
SET search_path = public, sog;

-- pg_regress created the extension (--load-extension); do it again by hand
-- to see that the control file pins the schema: it is not relocatable.
DROP EXTENSION stream_offset_guard;
\set VERBOSITY terse
CREATE EXTENSION stream_offset_guard SCHEMA public;
\set VERBOSITY default

CREATE EXTENSION stream_offset_guard;
CREATE EXTENSION pgcrypto;

-- Minimal \dx facts: version, schema sog, not relocatable, no requirements
-- (pgcrypto in particular is not needed at run time).
SELECT e.extname, e.extversion, e.extnamespace::regnamespace AS schema,
       e.extrelocatable
  FROM pg_extension e
 WHERE e.extname = 'stream_offset_guard';

-- 1.0 (released) and 1.1, the default, reached from 1.0 by its upgrade
-- script.
SELECT name, version, superuser, trusted, relocatable, schema, requires
  FROM pg_available_extension_versions
 WHERE name = 'stream_offset_guard' ORDER BY version;
SELECT default_version FROM pg_available_extensions WHERE name = 'stream_offset_guard';

-- The schema exists and the type is in it.
SELECT nspname FROM pg_namespace WHERE nspname = 'sog';
SELECT 'sog.position'::regtype;
