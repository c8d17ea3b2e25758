-- gpusort 1.2 -> 1.3: gpusort_stats() is no longer executable by PUBLIC.
\echo Use "ALTER EXTENSION gpusort UPDATE TO '1.3'" to load this file. \quit

-- The view gpusort_stats was readable only by superusers and whom they
-- granted it, but its function gpusort_stats() was open to PUBLIC and
-- showed the same counters to everyone. A view calls its functions with
-- the reader's privileges, not its owner's, so the roles granted SELECT on
-- the view are granted EXECUTE on the function (with the same grant
-- option) and keep reading it. Revoked first: a view granted to PUBLIC
-- keeps its function open to PUBLIC too.
REVOKE EXECUTE ON FUNCTION gpusort_stats() FROM PUBLIC;
DO $update$
DECLARE
  command text;
BEGIN
  FOR command IN
    SELECT format('GRANT EXECUTE ON FUNCTION gpusort_stats() TO %s%s',
                  CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END,
                  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = 'gpusort_stats'::regclass
      AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner
  LOOP
    EXECUTE command;
  END LOOP;
END
$update$;
