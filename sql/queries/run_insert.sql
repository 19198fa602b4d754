-- Idempotent by run id: a redelivered report stores nothing new.
INSERT INTO runs (id, app_id, project_id, status, input_tokens, output_tokens)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO NOTHING
RETURNING id
