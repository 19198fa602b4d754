-- App creation in one statement, sent on its own so that it commits without a BEGIN or a COMMIT
-- message, in one round trip. Whatever locks or writes a row waits on `(SELECT ok FROM checked)`,
-- run once before the scan beneath it: the caller's key is checked and held before any row is
-- touched. The plan's admission comes last, so a creation waits for others only near the app
-- limit; a refused plan fails the statement. outcome: created | unknown | no-image-model.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), category AS (
  SELECT CASE WHEN :needs_image_model::boolean THEN c.image_model_id ELSE c.model_id END AS model_id
  FROM categories c WHERE c.name = :category
), model AS (
  SELECT m.model_id,
         (SELECT id FROM model_builds b WHERE b.model_id = m.model_id ORDER BY released_at DESC, id DESC LIMIT 1) AS build_id
  FROM category m
), decision AS (
  SELECT CASE
           WHEN NOT EXISTS (SELECT 1 FROM category) THEN 'unknown'
           WHEN (SELECT build_id FROM model) IS NULL THEN CASE WHEN :needs_image_model::boolean THEN 'no-image-model' ELSE 'unknown' END
           ELSE 'created'
         END AS outcome,
         (SELECT model_id FROM model) AS model_id,
         (SELECT build_id FROM model) AS build_id
), app AS (
  INSERT INTO apps (id, project_id, name, description, category, type, status, model_id, model_build_id)
  SELECT :id, :project_id, :name, :description, :category, :type, :status, d.model_id, d.build_id FROM decision d WHERE d.outcome = 'created' AND (SELECT ok FROM checked)
  RETURNING id, unix_seconds(created_at) AS created_at
), fields AS (
  INSERT INTO app_data_fields (id, app_id, project_id, position, name, type_id, placeholder, required)
  SELECT f.id, app.id, :project_id, f.position, f.name, f.type_id, f.placeholder, f.required
  FROM app, unnest(:field_ids::text[], :field_positions::int[], :field_names::text[], :field_types::text[], :field_placeholders::text[], :field_required::boolean[])
    AS f (id, position, name, type_id, placeholder, required)
  RETURNING 1
), instructions AS (
  INSERT INTO app_instructions (id, app_id, project_id, position, type, instruction)
  SELECT i.id, app.id, :project_id, i.position, i.type, i.instruction
  FROM app, unnest(:instruction_ids::text[], :instruction_positions::int[], :instruction_types::text[], :instruction_texts::text[]) AS i (id, position, type, instruction)
  RETURNING 1
)
SELECT d.outcome, d.model_id, d.build_id, a.created_at
FROM checked
CROSS JOIN LATERAL (SELECT decision.* FROM decision WHERE checked.ok) d
LEFT JOIN LATERAL (SELECT app.* FROM app WHERE d.outcome = 'created') a ON true
LEFT JOIN LATERAL (
  SELECT hand_over_event(:event_id, :project_id, 'app.created', 'app', a.id, :origin, :actor_id, :ip_address,
           jsonb_build_object('name', :name::text, 'category', :category::text, 'type', :type::text, 'status', :status::text, 'model', d.model_id),
           a.created_at)
  WHERE a.id IS NOT NULL
) handed_over ON true
CROSS JOIN LATERAL (
  SELECT plan_admission(:project_id)
  WHERE (SELECT ok FROM checked) AND d.outcome IS NOT NULL AND (SELECT count(*) FROM fields) + (SELECT count(*) FROM instructions) >= 0
) admitted
