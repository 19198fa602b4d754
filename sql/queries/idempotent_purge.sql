WITH purged AS (DELETE FROM idempotent_requests WHERE created_at <= now() - interval '24 hours' RETURNING 1)
SELECT count(*)::int AS purged FROM purged
