-- Idempotent by run id: a redelivered report stores nothing new.
INSERT INTO runs (id, app_id, project_id, status, input_tokens, output_tokens)
VALUES (:id, :app_id, :project_id, :status, :input_tokens, :output_tokens)
ON CONFLICT (id, project_id) DO NOTHING
RETURNING id
