-- Key roll (POST /v1/key/<key_id>/roll): its event type, and the rule that a new key never
-- outlives the key that makes it, read from the stored row. A roll can shorten the calling key's
-- expires_at in another process, and the expiry a web process remembers with the key would then
-- let that key make one that lives on.
INSERT INTO event_types (id, name) VALUES ('evty_634fb059ab0ca8fc344f', 'key.rolled');

-- True, or PMS06 (lib/sqlstate.ts): `expires_at` (Unix seconds, NULL for never) is later than the
-- calling key's own expiry. NULL caller: no key makes the change.
CREATE FUNCTION key_within_caller_life(caller_id text, expires_at bigint) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF EXISTS (
    SELECT FROM api_keys k
    WHERE k.id = caller_id AND k.expires_at IS NOT NULL
      AND (key_within_caller_life.expires_at IS NULL OR key_within_caller_life.expires_at > unix_seconds(k.expires_at))
  ) THEN
    RAISE EXCEPTION 'the new key would outlive the calling key' USING ERRCODE = 'PMS06';
  END IF;
  RETURN true;
END
$$;
