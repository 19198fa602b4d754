-- App creation in one statement: the category's model, then the app with its data fields and
-- instructions. The plan is checked after it, with the plan row locked (plan_admission.sql).
-- $1 id, $2 project, $3 name, $4 description, $5 category, $6 type, $7 status,
-- $8 needs an image-reading model, $9..$14 data fields (id, position, name, type, placeholder,
-- required), $15..$18 instructions (id, position, type, text).
-- outcome: created | unknown (no such category, or no build of its model) | no-image-model.
WITH category AS (
  SELECT CASE WHEN $8::boolean THEN c.image_model_id ELSE c.model_id END AS model_id
  FROM categories c WHERE c.name = $5
), model AS (
  SELECT m.model_id,
         (SELECT id FROM model_builds b WHERE b.model_id = m.model_id ORDER BY released_at DESC, id DESC LIMIT 1) AS build_id
  FROM category m
), decision AS (
  SELECT CASE
           WHEN NOT EXISTS (SELECT 1 FROM category) THEN 'unknown'
           WHEN (SELECT build_id FROM model) IS NULL THEN CASE WHEN $8::boolean THEN 'no-image-model' ELSE 'unknown' END
           ELSE 'created'
         END AS outcome,
         (SELECT model_id FROM model) AS model_id,
         (SELECT build_id FROM model) AS build_id
), app AS (
  INSERT INTO apps (id, project_id, name, description, category, type, status, model_id, model_build_id)
  SELECT $1, $2, $3, $4, $5, $6, $7, d.model_id, d.build_id FROM decision d WHERE d.outcome = 'created'
  RETURNING id, unix_seconds(created_at) AS created_at
), fields AS (
  INSERT INTO app_data_fields (id, app_id, position, name, type_id, placeholder, required)
  SELECT f.id, app.id, f.position, f.name, f.type_id, f.placeholder, f.required
  FROM app, unnest($9::text[], $10::int[], $11::text[], $12::text[], $13::text[], $14::boolean[])
    AS f (id, position, name, type_id, placeholder, required)
), instructions AS (
  INSERT INTO app_instructions (id, app_id, position, type, instruction)
  SELECT i.id, app.id, i.position, i.type, i.instruction
  FROM app, unnest($15::text[], $16::int[], $17::text[], $18::text[]) AS i (id, position, type, instruction)
)
SELECT d.outcome, d.model_id, d.build_id, app.created_at
FROM decision d LEFT JOIN app ON true
