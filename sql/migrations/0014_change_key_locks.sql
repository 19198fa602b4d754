-- A change made with a key commits before that key's revocation, or its project's or consumer's
-- disable, commits; or it waits for it and is refused. The check that rides in a change's BEGIN
-- read the key without a lock, so a change checked just before a revocation could commit just
-- after it: keys minted by a key already revoked, two keys revoking each other both answered 200.
--
-- A change holds its key, project and consumer in shared advisory locks (from its check to its
-- end); a revocation holds its key, a disable its project or consumer, exclusively. So a
-- revocation or a disable waits for the changes in flight, and a change checked after it began
-- waits for it and then reads the key as it left it. Advisory locks rather than row locks: every
-- change of a project would otherwise share-lock the same key row (a new multixact and a WAL
-- record each time), and the locks are taken before any row, so a disable cannot wait on a row
-- a change holds while that change waits on the disable. Two changes that each revoke the other's
-- key wait on each other: PostgreSQL aborts one (a deadlock) and the service runs it again,
-- when its key is found revoked (domain/services.ts change).
--
-- The two-integer advisory locks, apart from the one-bigint ones the audit drain and pg-boss
-- take; the first integer names what is locked.
CREATE FUNCTION change_lock_class(kind text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE kind WHEN 'key' THEN 1801 WHEN 'project' THEN 1802 WHEN 'consumer' THEN 1803 END
$$;

-- The check of a change's key (sql/templates/key_check_begin.sql): its owners and itself held,
-- then its status read as the last revocation or disable before it left it.
CREATE FUNCTION key_change_status(key_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  owner record;
BEGIN
  SELECT project_id, created_by INTO owner FROM api_keys WHERE id = key_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(change_lock_class('key'), hashtext(key_id));
  PERFORM pg_advisory_xact_lock_shared(change_lock_class('project'), hashtext(owner.project_id));
  PERFORM pg_advisory_xact_lock_shared(change_lock_class('consumer'), hashtext(owner.created_by));
  RETURN (SELECT status FROM api_key_usable WHERE id = key_id);
END
$$;

-- Taken by a revocation (of a key) or a disable (of a project or a consumer) before it changes
-- anything: it waits for the changes in flight of what it ends.
CREATE FUNCTION hold_changes_of(kind text, id text) RETURNS void LANGUAGE sql VOLATILE AS $$
  SELECT pg_advisory_xact_lock(change_lock_class(kind), hashtext(id))
$$;
