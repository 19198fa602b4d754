-- The project of a key whose secret is of an older shape, which names none (domain/secrets.ts),
-- by the SHA-256 of the secret; then key_authenticate.sql finds the key there (docs/citus.md).
SELECT project_id FROM api_key_routes WHERE secret_hash = $1
