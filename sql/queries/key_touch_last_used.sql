-- At most once a minute per key, whichever process sees the call.
UPDATE api_keys
SET last_used_at = now_seconds()
WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= now() - interval '60 seconds')
