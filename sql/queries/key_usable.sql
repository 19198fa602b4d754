-- Which of these keys still authenticate: activated, not past expires_at, project and consumer
-- active (owners_active, sql/migrations/0010). The event streams' once-a-second check
-- (gateway/event-streams.ts) ends the others.
SELECT id
FROM api_key_usable
WHERE id = ANY($1::text[]) AND status = 'activated'
