SELECT fingerprint, status, sealed_response
FROM idempotent_requests
WHERE key_id = $1 AND idempotency_key = $2 AND created_at > now() - interval '24 hours'
