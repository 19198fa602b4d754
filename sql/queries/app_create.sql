-- App creation in one statement (domain/apps.ts createApp, through domain/services.ts
-- changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT message, in one
-- round trip. In order: the caller's key checked and held (change_key_check, sql/migrations/0017; a refusal fails the
-- statement) before any row is written or locked; the category's model; the app with its data
-- fields and instructions; its app.created handed over (hand_over_event); and last the plan's
-- admission (sql/migrations/0018), which holds the project's admission lock, shared far from the
-- app limit and exclusively near it, so a creation waits for others only near the limit, and then
-- only for their count, last inserts and commit. A refused plan fails the statement, so its answer
-- comes before a body's or a category's fault (decisions.md).
-- Every part that locks or writes a row waits on `(SELECT ok FROM checked)`: a sub-select of no
-- column, run once before the scan beneath it starts, whatever order the planner picks, and run
-- always, since a data-modifying part always runs. So the key is checked and held before any row
-- is locked or written, and checked even when the change finds nothing (a joined order or a
-- LATERAL is the planner's to rearrange: test/keys/change-order.test.ts).
-- $1 id, $2 project, $3 name, $4 description, $5 category, $6 type, $7 status,
-- $8 needs an image-reading model, $9..$14 data fields (id, position, name, type, placeholder,
-- required), $15..$18 instructions (id, position, type, text), $19 the key to check (NULL: none),
-- $20 the event's id, $21 its origin, $22 the actor's key, $23 its ip address.
-- outcome: created | unknown (no such category, or no build of its model) | no-image-model.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($19) AS ok
), category AS (
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
  SELECT $1, $2, $3, $4, $5, $6, $7, d.model_id, d.build_id FROM decision d WHERE d.outcome = 'created' AND (SELECT ok FROM checked)
  RETURNING id, unix_seconds(created_at) AS created_at
), fields AS (
  INSERT INTO app_data_fields (id, app_id, position, name, type_id, placeholder, required)
  SELECT f.id, app.id, f.position, f.name, f.type_id, f.placeholder, f.required
  FROM app, unnest($9::text[], $10::int[], $11::text[], $12::text[], $13::text[], $14::boolean[])
    AS f (id, position, name, type_id, placeholder, required)
  RETURNING 1
), instructions AS (
  INSERT INTO app_instructions (id, app_id, position, type, instruction)
  SELECT i.id, app.id, i.position, i.type, i.instruction
  FROM app, unnest($15::text[], $16::int[], $17::text[], $18::text[]) AS i (id, position, type, instruction)
  RETURNING 1
)
SELECT d.outcome, d.model_id, d.build_id, a.created_at
FROM checked
CROSS JOIN LATERAL (SELECT decision.* FROM decision WHERE checked.ok) d
LEFT JOIN LATERAL (SELECT app.* FROM app WHERE d.outcome = 'created') a ON true
LEFT JOIN LATERAL (
  SELECT hand_over_event($20, $2, 'app.created', 'app', a.id, $21, $22, $23,
           jsonb_build_object('name', $3::text, 'category', $5::text, 'type', $6::text, 'status', $7::text, 'model', d.model_id),
           a.created_at)
  WHERE a.id IS NOT NULL
) handed_over ON true
CROSS JOIN LATERAL (
  SELECT plan_admission($2)
  WHERE (SELECT ok FROM checked) AND d.outcome IS NOT NULL AND (SELECT count(*) FROM fields) + (SELECT count(*) FROM instructions) >= 0
) admitted
