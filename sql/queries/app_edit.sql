-- An app's edit (PATCH) in one statement (domain/apps.ts updateApp, through domain/services.ts
-- changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT message, in one
-- round trip. In order: the caller's key checked and held (change_key_check,
-- sql/migrations/0017; a refusal fails the statement) before the app is read; the project's own
-- app locked; the edit, unless it changes nothing or publishing is refused (refusal: the app must
-- be activated, then have an image logo); then its events handed over (hand_over_event), in the
-- order listed. A refused or empty edit writes nothing and hands nothing over. No row: no such
-- app of the project.
-- Every part that locks or writes a row waits on `(SELECT ok FROM checked)`: a sub-select of no
-- column, run once before the scan beneath it starts, whatever order the planner picks, and run
-- always, since a data-modifying part always runs. So the key is checked and held before any row
-- is locked or written, and checked even when the change finds nothing (a joined order or a
-- LATERAL is the planner's to rearrange: test/keys/change-order.test.ts).
-- $1 app, $2 project, $3 name, $4 description, $5 type (each NULL when not sent), $6 the key to
-- check (NULL: none), $7 app.updated's id, $8 the type event's id, $9 origin, $10 the actor's
-- key, $11 ip address.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($6) AS ok
), old AS MATERIALIZED (
  SELECT a.id, a.name, a.description, a.type, a.status, a.model_id, a.model_build_id,
         unix_seconds(a.created_at) AS created_at, unix_seconds(a.updated_at) AS updated_at,
         coalesce($3, a.name) AS new_name, coalesce($4, a.description) AS new_description, coalesce($5, a.type) AS new_type,
         CASE WHEN $5 = 'public' AND a.type <> 'public' AND a.status <> 'activated' THEN 'needs-activation'
              WHEN $5 = 'public' AND a.type <> 'public' AND NOT coalesce(f.is_image, false) THEN 'needs-image-logo'
         END AS refusal
  FROM apps a
  LEFT JOIN files f ON f.id = a.logo_file_id
  WHERE (SELECT ok FROM checked) AND a.id = $1 AND a.project_id = $2 AND a.deleted_at IS NULL
  FOR UPDATE OF a
), edited AS (
  UPDATE apps
  SET name = o.new_name, description = o.new_description, type = o.new_type, updated_at = now_seconds()
  FROM old o
  WHERE apps.id = o.id AND o.refusal IS NULL
    AND (o.new_name <> o.name OR o.new_description <> o.description OR o.new_type <> o.type)
  RETURNING apps.id, unix_seconds(apps.updated_at) AS updated_at
)
SELECT o.refusal, o.id, o.new_name AS name, o.new_description AS description, o.new_type AS type, o.status,
       o.model_id, o.model_build_id, o.created_at, coalesce(e.updated_at, o.updated_at) AS updated_at
FROM old o
LEFT JOIN LATERAL (SELECT edited.* FROM edited WHERE edited.id = o.id) e ON true
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, $2, v.type, 'app', e.id, $9, $10, $11, v.details, e.updated_at)
    FROM (VALUES
      (1, $7::text, 'app.updated', jsonb_build_object('changes', jsonb_strip_nulls(jsonb_build_object(
         'name', CASE WHEN o.new_name <> o.name THEN jsonb_build_object('from', o.name, 'to', o.new_name) END,
         'description', CASE WHEN o.new_description <> o.description THEN jsonb_build_object('from', o.description, 'to', o.new_description) END))),
       o.new_name <> o.name OR o.new_description <> o.description),
      (2, $8::text, CASE WHEN o.new_type = 'public' THEN 'app.published' ELSE 'app.unpublished' END,
       jsonb_build_object('changes', jsonb_build_object('type', jsonb_build_object('from', o.type, 'to', o.new_type))),
       o.new_type <> o.type)
    ) v (n, id, type, details, happened)
    WHERE e.id IS NOT NULL AND v.happened
    ORDER BY v.n
  ) events
) handed_over
