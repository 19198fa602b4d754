-- An answer older than 24 hours under the same key and value no longer counts: it is replaced.
INSERT INTO idempotent_requests (key_id, idempotency_key, fingerprint, status, sealed_response)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (key_id, idempotency_key) DO UPDATE
SET fingerprint = excluded.fingerprint, status = excluded.status, sealed_response = excluded.sealed_response, created_at = now()
WHERE idempotent_requests.created_at <= now() - interval '24 hours'
