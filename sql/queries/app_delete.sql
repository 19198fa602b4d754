-- An app's deletion (soft: deleted_at) in one statement, sent on its own so that it commits
-- without a BEGIN or a COMMIT message, in one round trip. Whatever locks or writes a row waits on
-- `(SELECT ok FROM checked)`, a sub-select run once before the scan beneath it, whatever order the
-- planner picks: so the caller's key is checked and held first (a refusal fails the statement),
-- and checked even when there is no such app. No row: no such app of the project.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), deleted AS (
  UPDATE apps SET deleted_at = now_seconds(), updated_at = now_seconds()
  WHERE id = :id AND project_id = :project_id AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, name, unix_seconds(deleted_at) AS deleted_at
)
SELECT d.id
FROM checked,
  LATERAL (SELECT deleted.* FROM deleted WHERE checked.ok) d,
  LATERAL (SELECT hand_over_event(:event_id, :project_id, 'app.deleted', 'app', d.id, :origin, :actor_id, :ip_address, jsonb_build_object('name', d.name), d.deleted_at)) handed_over
