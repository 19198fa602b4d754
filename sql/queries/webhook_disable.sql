-- An endpoint disabled by the service itself ($2: gone or failing), what was owed to it dropped.
-- No row: it was disabled or deleted already.
WITH disabled AS (
  UPDATE webhook_endpoints
  SET status = 'disabled', disabled_reason = $2, failing_since = NULL, replay_from = NULL, replay_to = NULL, updated_at = now_seconds()
  WHERE id = $1 AND status = 'enabled' AND deleted_at IS NULL
  RETURNING id, project_id, unix_seconds(updated_at) AS updated_at
), dropped AS (
  DELETE FROM webhook_deliveries d USING disabled w WHERE d.endpoint_id = w.id
)
SELECT * FROM disabled
