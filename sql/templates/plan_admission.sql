-- The plan's admission of an app creation (sql/migrations/0011), sent as the last statement of the
-- creating transaction, in its COMMIT's message (simple query protocol, so the project id is a
-- quoted literal), or on its own when the creation wrote no app.
SELECT plan_admission({{project}})
