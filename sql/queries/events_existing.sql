-- Which of these event ids are written already (a redelivered job), read under the chain lock.
SELECT id FROM events WHERE id = ANY($1::text[])
