-- One definition of "this key still authenticates", for a key a web process recognised from
-- memory: 'activated', 'expired' (refused with 401), or 'refused' (unknown, revoked, or its
-- project or consumer disabled; refused with the unknown key's 403). key_authenticate.sql
-- applies the same rule to a secret's hash.
CREATE FUNCTION key_check(key_id text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$
    SELECT coalesce((
      SELECT key_status(k.status, k.expires_at)
      FROM api_keys k
      JOIN projects p ON p.id = k.project_id AND p.status = 'active'
      JOIN consumers c ON c.id = k.created_by AND c.status = 'active'
      WHERE k.id = key_id AND k.status <> 'revoked'
    ), 'refused')
  $$;
