SELECT id, public_key, created_at FROM audit_signing_keys WHERE id = $1
