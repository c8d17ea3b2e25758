-- Versioned upgrades: every installable SQL version of gpusort, updated with
-- ALTER EXTENSION gpusort UPDATE through the chain of update scripts
-- (gpusort--1.0--1.1.sql, ...), must end with exactly the objects of a fresh
-- CREATE EXTENSION gpusort at default_version: the same functions (identity
-- arguments, defaults, results, volatility, strictness, parallel safety, C
-- symbols), views and their definitions, types, comments and privileges.
--
-- Installing an old version runs its own install script, whose C functions
-- are looked up in the current shared library (check_function_bodies): a
-- symbol that an old version's SQL names and the library lost fails here.
--
-- No version number is written below: adding a version (gpusort--X.sql,
-- gpusort--W--X.sql, default_version) needs no change to this file or its
-- expected output. It works in a database of its own, so the extension in
-- the regression database is left as it was (installed, if it was), and
-- with two roles of its own (regress_gpusort_*) that it drops.
--
-- Then who may read gpusort_stats, after every update and after a fresh
-- install.
SET client_min_messages = warning;
SELECT current_database() AS regress_db \gset
DROP DATABASE IF EXISTS gpusort_upgrade_regress;
DROP ROLE IF EXISTS regress_gpusort_reader;
DROP ROLE IF EXISTS regress_gpusort_nobody;
CREATE DATABASE gpusort_upgrade_regress TEMPLATE template0;
\c gpusort_upgrade_regress
SET client_min_messages = warning;
SET check_function_bodies = on;

-- One row per object of the extension: its identity, and everything about
-- it that an update script could get wrong, with no OIDs in it.
CREATE TABLE snapshot(installed text, object text, detail text);
CREATE FUNCTION take_snapshot(label text) RETURNS void LANGUAGE sql AS $$
INSERT INTO snapshot
SELECT label, pg_describe_object(d.classid, d.objid, 0),
  concat_ws(E'\n',
    CASE d.classid
      WHEN 'pg_proc'::regclass THEN (
        SELECT CASE WHEN p.prokind = 'a'
          THEN format('aggregate (%s) returns %s: %s', pg_get_function_arguments(p.oid),
                      pg_get_function_result(p.oid),
                      (SELECT concat_ws(' ', aggkind, aggtransfn, aggfinalfn, aggcombinefn,
                                        aggtranstype::regtype, agginitval)
                       FROM pg_aggregate WHERE aggfnoid = p.oid))
          ELSE pg_get_functiondef(p.oid) END
          || format(E'\nacl %s', p.proacl)
        FROM pg_proc p WHERE p.oid = d.objid)
      WHEN 'pg_class'::regclass THEN (
        SELECT format(E'relkind %s\ncolumns %s\nacl %s\n%s', c.relkind,
          (SELECT string_agg(format('%s %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                                    CASE WHEN a.attnotnull THEN ' not null' END), ', ' ORDER BY a.attnum)
           FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
          c.relacl,
          CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END)
        FROM pg_class c WHERE c.oid = d.objid)
      WHEN 'pg_type'::regclass THEN (
        SELECT format(E'typtype %s base %s\ncolumns %s\nlabels %s\nacl %s', t.typtype,
          NULLIF(t.typbasetype, 0)::regtype,
          (SELECT string_agg(format('%s %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
           FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped),
          (SELECT string_agg(e.enumlabel, ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
          t.typacl)
        FROM pg_type t WHERE t.oid = d.objid)
      WHEN 'pg_operator'::regclass THEN (
        SELECT format('%s(%s, %s) -> %s by %s', o.oprname, o.oprleft::regtype, o.oprright::regtype,
                      o.oprresult::regtype, o.oprcode)
        FROM pg_operator o WHERE o.oid = d.objid)
    END,
    (SELECT 'comment ' || description FROM pg_description
     WHERE objoid = d.objid AND classoid = d.classid AND objsubid = 0))
FROM pg_depend d JOIN pg_extension x ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = x.oid
WHERE x.extname = 'gpusort' AND d.deptype = 'e'
UNION ALL
SELECT label, 'extension gpusort',
  format('version %s schema %s relocatable %s config %s %s', x.extversion,
         x.extnamespace::regnamespace, x.extrelocatable, x.extconfig::regclass[], x.extcondition)
FROM pg_extension x WHERE x.extname = 'gpusort'
$$;

-- every version that can be installed: install it, update to the default
DO $$
DECLARE
  v text;
BEGIN
  FOR v IN SELECT version FROM pg_available_extension_versions WHERE name = 'gpusort' LOOP
    EXECUTE format('CREATE EXTENSION gpusort VERSION %L', v);
    ALTER EXTENSION gpusort UPDATE;
    PERFORM take_snapshot(v);
    DROP EXTENSION gpusort;
  END LOOP;
END $$;
-- and a fresh install of the default version
CREATE EXTENSION gpusort;
SELECT take_snapshot('fresh');

SELECT (SELECT count(*) FROM pg_available_extension_versions WHERE name = 'gpusort')
         = (SELECT count(DISTINCT installed) FROM snapshot WHERE installed <> 'fresh') AS every_version_updated,
       (SELECT count(*) FROM snapshot WHERE installed = 'fresh' AND object LIKE 'function %') > 0 AS has_functions,
       (SELECT extversion FROM pg_extension WHERE extname = 'gpusort')
         = (SELECT default_version FROM pg_available_extensions WHERE name = 'gpusort') AS fresh_is_default;

-- differences between each updated install and the fresh one: none
SELECT u.installed AS updated_from, 'not in a fresh install' AS difference, u.object, u.detail
FROM snapshot u
WHERE u.installed <> 'fresh'
  AND NOT EXISTS (SELECT FROM snapshot f WHERE f.installed = 'fresh'
                  AND f.object = u.object AND f.detail IS NOT DISTINCT FROM u.detail)
UNION ALL
SELECT v.installed, 'missing after the update', f.object, f.detail
FROM snapshot f, (SELECT DISTINCT installed FROM snapshot WHERE installed <> 'fresh') v
WHERE f.installed = 'fresh'
  AND NOT EXISTS (SELECT FROM snapshot u WHERE u.installed = v.installed
                  AND u.object = f.object AND u.detail IS NOT DISTINCT FROM f.detail)
ORDER BY 1, 2, 3;

-- every version any script names has an update path to the default version
SELECT s.version AS no_update_path_to_default
FROM (SELECT source AS version FROM pg_extension_update_paths('gpusort')
      UNION SELECT version FROM pg_available_extension_versions WHERE name = 'gpusort') s,
     pg_available_extensions e
WHERE e.name = 'gpusort' AND s.version <> e.default_version
  AND NOT EXISTS (SELECT FROM pg_extension_update_paths('gpusort') p
                  WHERE p.source = s.version AND p.target = e.default_version AND p.path IS NOT NULL)
ORDER BY 1;

-- gpusort_stats is for superusers and whom they grant it: PUBLIC cannot
-- execute its function (a view calls its functions with the reader's
-- privileges, so the function would show the view's counters to anyone).
-- A role granted SELECT on the view before an update, from every version
-- that has the view, can still read it after.
CREATE ROLE regress_gpusort_reader;
CREATE ROLE regress_gpusort_nobody;
DROP EXTENSION gpusort;
CREATE TABLE stats_privileges(installed text, granted boolean, reader_reads boolean,
                              public_executes boolean);
DO $$
DECLARE
  v text;
  granted boolean;
BEGIN
  FOR v IN SELECT version FROM pg_available_extension_versions WHERE name = 'gpusort' LOOP
    EXECUTE format('CREATE EXTENSION gpusort VERSION %L', v);
    -- granted where PUBLIC may still execute the function, whose update
    -- grants EXECUTE to the view's readers (from a version that revoked
    -- it, as from the newest, SELECT on the view alone does not let a role
    -- read it)
    granted := to_regclass('gpusort_stats') IS NOT NULL
      AND has_function_privilege('public', 'gpusort_stats()', 'EXECUTE');
    IF granted THEN
      GRANT SELECT ON gpusort_stats TO regress_gpusort_reader;
    END IF;
    ALTER EXTENSION gpusort UPDATE;
    INSERT INTO stats_privileges VALUES (v, granted,
      has_table_privilege('regress_gpusort_reader', 'gpusort_stats', 'SELECT')
        AND has_function_privilege('regress_gpusort_reader', 'gpusort_stats()', 'EXECUTE'),
      has_function_privilege('public', 'gpusort_stats()', 'EXECUTE'));
    DROP EXTENSION gpusort;
  END LOOP;
END $$;
SELECT installed AS updated_from, granted, reader_reads, public_executes
FROM stats_privileges
WHERE public_executes OR granted <> reader_reads
ORDER BY 1;
-- a fresh install, granted as README says
CREATE EXTENSION gpusort;
GRANT SELECT ON gpusort_stats TO regress_gpusort_reader;
GRANT EXECUTE ON FUNCTION gpusort_stats() TO regress_gpusort_reader;
SET ROLE regress_gpusort_reader;
-- reads the view (without gpusort in shared_preload_libraries the function
-- says the GPU service is not running, which is no privilege error)
DO $$
BEGIN
  PERFORM FROM gpusort_stats;
EXCEPTION WHEN object_not_in_prerequisite_state THEN
  NULL;
END $$;
SET ROLE regress_gpusort_nobody;
SELECT count(*) FROM gpusort_stats;
SELECT count(*) FROM gpusort_stats();
RESET ROLE;

\c :regress_db
DROP DATABASE gpusort_upgrade_regress WITH (FORCE);
DROP ROLE regress_gpusort_reader;
DROP ROLE regress_gpusort_nobody;
