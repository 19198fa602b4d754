-- A change made with a key commits before that key's revocation (or its owners' disable), or waits
-- and is refused: it holds key, project and consumer in shared advisory locks, which a revocation
-- or disable takes exclusively. Advisory, not row locks: no multixact per change, and taken before
-- any row, so a disable cannot deadlock on a row. Two keys revoking each other do deadlock; the
-- service retries one. Two-integer locks, apart from pg-boss's; the first integer is the kind.
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
