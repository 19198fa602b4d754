-- Rides a lane (lib/lanes.ts): a read of a row or a few.
SELECT body FROM events WHERE id = $1 AND project_id = $2
