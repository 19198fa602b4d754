-- What a change made by one statement needs: its key's check and its event's hand-off, callable
-- from inside the statement, so it commits with no BEGIN or COMMIT round trip.

-- The one statement writing a change's event to audit_outbox. An unknown type name leaves type_id
-- null, which fails the change instead of the drain.
CREATE FUNCTION hand_over_event(
  id text, project_id text, type text, related_table text, related_id text,
  origin text, actor_id text, ip_address text, details jsonb, created_at bigint
) RETURNS void LANGUAGE sql VOLATILE AS $$
  INSERT INTO audit_outbox (id, project_id, type_id, related_table, related_id, origin, actor_id, ip_address, details, created_at)
  VALUES ($1, $2, (SELECT t.id FROM event_types t WHERE t.name = $3), $4, $5, $6, $7, $8, $9, $10)
$$;

-- The check of the key making a change, inside its statement (key_change_status's locks); a
-- refusal fails the statement: PMS03 refused, PMS04 expired. NULL: a change no key makes.
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
