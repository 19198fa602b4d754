-- Which of these keys still authenticate: activated, not past expires_at, project and consumer
-- active. The event streams' once-a-second check (gateway/event-streams.ts) ends the others.
SELECT k.id
FROM api_keys k
JOIN projects p ON p.id = k.project_id AND p.status = 'active'
JOIN consumers c ON c.id = k.created_by AND c.status = 'active'
WHERE k.id = ANY($1::text[]) AND k.status = 'activated' AND (k.expires_at IS NULL OR k.expires_at > now())
