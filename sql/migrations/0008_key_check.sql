-- The one definition of "this key authenticates": not revoked, its project and its consumer
-- active. An expired key is in it too (status 'expired'): it is refused with its own 401. The
-- lookup by the secret's hash (key_authenticate.sql) and the checks of a key a web process knows
-- from memory (key_caller.sql, key_check.sql, sql/templates/) all read it; a view, so that the
-- planner folds it into each statement.
CREATE VIEW api_key_usable AS
SELECT v.*, k.secret_hash
FROM api_keys k
JOIN api_key_view v ON v.id = k.id
JOIN projects p ON p.id = k.project_id AND p.status = 'active'
JOIN consumers c ON c.id = k.created_by AND c.status = 'active'
WHERE k.status <> 'revoked';
