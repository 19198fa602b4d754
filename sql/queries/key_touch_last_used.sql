-- At most once a minute per key, whichever process sees the call; only while the key is usable:
-- a call refused as revoked, expired or disabled is no use of it (api.md: "the last authenticated
-- call"), and the process recognising a key from memory records the use before the call's check.
UPDATE api_keys k
SET last_used_at = now_seconds()
WHERE k.id = $1 AND k.project_id = $2 AND (k.last_used_at IS NULL OR k.last_used_at <= now() - interval '60 seconds')
  AND EXISTS (SELECT FROM api_key_usable u WHERE u.id = k.id AND u.project_id = k.project_id AND u.status = 'activated')
