-- What a change made by one statement needs (domain/services.ts changeByStatement): the check of
-- the key that makes it, and the hand-off of its event, each callable from inside the statement.
-- Such a change commits on its own: no BEGIN, no COMMIT message, no round trip for either.

-- A change's event handed over as a row of audit_outbox (sql/migrations/0007), the one statement
-- that writes it: the prepared statement of a change's COMMIT message calls it
-- (sql/queries/audit_outbox_prepare.sql), and so do the changes made by one statement. An unknown
-- type name leaves type_id null, which fails the change instead of the drain.
CREATE FUNCTION hand_over_event(
  id text, project_id text, type text, related_table text, related_id text,
  origin text, actor_id text, ip_address text, details jsonb, created_at bigint
) RETURNS void LANGUAGE sql VOLATILE AS $$
  INSERT INTO audit_outbox (id, project_id, type_id, related_table, related_id, origin, actor_id, ip_address, details, created_at)
  VALUES ($1, $2, (SELECT t.id FROM event_types t WHERE t.name = $3), $4, $5, $6, $7, $8, $9, $10)
$$;

-- The check of the key making a change, inside the change's own statement: key_change_status
-- (sql/migrations/0014) holds the key and its owners until the change ends and reads the key as
-- the last revocation or disable left it; a key refused fails the statement, so nothing of the
-- change is written, with the service's own SQLSTATE (lib/sqlstate.ts): PMS03 refused (unknown,
-- revoked, its project or consumer disabled), PMS04 expired. NULL: a change no key makes (the
-- workspace's, the service's own).
CREATE FUNCTION change_key_check(key_id text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  status text;
BEGIN
  IF key_id IS NULL THEN
    RETURN true;
  END IF;
  status := key_change_status(key_id);
  IF status IS NOT DISTINCT FROM 'activated' THEN
    RETURN true;
  END IF;
  IF status = 'expired' THEN
    RAISE EXCEPTION 'the key has expired' USING ERRCODE = 'PMS04';
  END IF;
  RAISE EXCEPTION 'the key is refused' USING ERRCODE = 'PMS03';
END
$$;
