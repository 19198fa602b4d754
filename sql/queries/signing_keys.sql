SELECT id, public_key, created_at FROM audit_signing_keys ORDER BY created_at, id
