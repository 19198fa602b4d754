INSERT INTO audit_signing_keys (id, public_key, created_at) VALUES ($1, $2, $3)
ON CONFLICT (id) DO NOTHING
