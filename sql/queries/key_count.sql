SELECT count(*) AS total FROM api_keys WHERE project_id = $1 AND status <> 'revoked'
