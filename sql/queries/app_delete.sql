-- An app's deletion (soft: deleted_at) in one statement (domain/apps.ts deleteApp, through
-- domain/services.ts changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT
-- message, in one round trip. The caller's key checked and held first (change_key_check,
-- sql/migrations/0017; a refusal fails the statement), then the project's own app marked
-- deleted, then its app.deleted handed over (hand_over_event). No row: no such app of the project.
-- Every part that locks or writes a row waits on `(SELECT ok FROM checked)`: a sub-select of no
-- column, run once before the scan beneath it starts, whatever order the planner picks, and run
-- always, since a data-modifying part always runs. So the key is checked and held before any row
-- is locked or written, and checked even when the change finds nothing (a joined order or a
-- LATERAL is the planner's to rearrange: test/keys/change-order.test.ts).
-- $1 app, $2 project, $3 the key to check (NULL: none), $4 the event's id, $5 its origin,
-- $6 the actor's key, $7 its ip address.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($3) AS ok
), deleted AS (
  UPDATE apps SET deleted_at = now_seconds(), updated_at = now_seconds()
  WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, name, unix_seconds(deleted_at) AS deleted_at
)
SELECT d.id
FROM checked,
  LATERAL (SELECT deleted.* FROM deleted WHERE checked.ok) d,
  LATERAL (SELECT hand_over_event($4, $2, 'app.deleted', 'app', d.id, $5, $6, $7, jsonb_build_object('name', d.name), d.deleted_at)) handed_over
