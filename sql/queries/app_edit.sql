-- An app's edit (PATCH) in one statement, sent on its own so that it commits without a BEGIN or a
-- COMMIT message, in one round trip. Whatever locks or writes a row waits on `(SELECT ok FROM
-- checked)`, run once before the scan beneath it: the caller's key is checked and held before the
-- app is locked, even when there is none. A refused or empty edit writes and hands over nothing;
-- :name, :description, :type are NULL when not sent. No row: no such app of the project.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), old AS MATERIALIZED (
  SELECT a.id, a.name, a.description, a.type, a.status, a.model_id, a.model_build_id,
         unix_seconds(a.created_at) AS created_at, unix_seconds(a.updated_at) AS updated_at,
         coalesce(:name, a.name) AS new_name, coalesce(:description, a.description) AS new_description, coalesce(:type, a.type) AS new_type,
         CASE WHEN :type = 'public' AND a.type <> 'public' AND a.status <> 'activated' THEN 'needs-activation'
              WHEN :type = 'public' AND a.type <> 'public'
                   AND NOT coalesce((SELECT f.is_image FROM files f WHERE f.id = a.logo_file_id AND f.project_id = :project_id), false)
                THEN 'needs-image-logo'
         END AS refusal
  FROM apps a
  WHERE (SELECT ok FROM checked) AND a.id = :id AND a.project_id = :project_id AND a.deleted_at IS NULL
  FOR UPDATE OF a
), edited AS (
  UPDATE apps
  SET name = o.new_name, description = o.new_description, type = o.new_type, updated_at = now_seconds()
  FROM old o
  WHERE apps.id = o.id AND apps.project_id = :project_id AND o.refusal IS NULL
    AND (o.new_name <> o.name OR o.new_description <> o.description OR o.new_type <> o.type)
  RETURNING apps.id, unix_seconds(apps.updated_at) AS updated_at
)
SELECT o.refusal, o.id, o.new_name AS name, o.new_description AS description, o.new_type AS type, o.status,
       o.model_id, o.model_build_id, o.created_at, coalesce(e.updated_at, o.updated_at) AS updated_at
FROM old o
LEFT JOIN LATERAL (SELECT edited.* FROM edited WHERE edited.id = o.id) e ON true
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, :project_id, v.type, 'app', e.id, :origin, :actor_id, :ip_address, v.details, e.updated_at)
    FROM (VALUES
      (1, :updated_event_id::text, 'app.updated', jsonb_build_object('changes', jsonb_strip_nulls(jsonb_build_object(
         'name', CASE WHEN o.new_name <> o.name THEN jsonb_build_object('from', o.name, 'to', o.new_name) END,
         'description', CASE WHEN o.new_description <> o.description THEN jsonb_build_object('from', o.description, 'to', o.new_description) END))),
       o.new_name <> o.name OR o.new_description <> o.description),
      (2, :type_event_id::text, CASE WHEN o.new_type = 'public' THEN 'app.published' ELSE 'app.unpublished' END,
       jsonb_build_object('changes', jsonb_build_object('type', jsonb_build_object('from', o.type, 'to', o.new_type))),
       o.new_type <> o.type)
    ) v (n, id, type, details, happened)
    WHERE e.id IS NOT NULL AND v.happened
    ORDER BY v.n
  ) events
) handed_over
