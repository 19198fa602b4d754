-- A category's model and image-reading model, each with its newest build.
SELECT c.name,
       c.model_id, b.id AS build_id,
       c.image_model_id, ib.id AS image_build_id
FROM categories c
LEFT JOIN LATERAL (
  SELECT id FROM model_builds WHERE model_id = c.model_id ORDER BY released_at DESC, id DESC LIMIT 1
) b ON true
LEFT JOIN LATERAL (
  SELECT id FROM model_builds WHERE model_id = c.image_model_id ORDER BY released_at DESC, id DESC LIMIT 1
) ib ON true
WHERE c.name = $1
