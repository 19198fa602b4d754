-- A web process says it is alive ($1 its id), forgets the processes silent for a minute and the
-- windows past, and counts the processes seen within $2 seconds, itself included.
WITH beat AS (
  INSERT INTO web_processes (id, seen_at) VALUES ($1, now())
  ON CONFLICT (id) DO UPDATE SET seen_at = now()
), gone AS (
  DELETE FROM web_processes WHERE seen_at < now() - interval '1 minute' AND id <> $1
), past AS (
  DELETE FROM request_windows WHERE ends_at < now() - interval '1 minute'
)
SELECT 1 + count(*)::int AS processes
FROM web_processes
WHERE seen_at > now() - make_interval(secs => $2) AND id <> $1
