-- The hashes and JSON of events written before the chain existed, or before events kept their
-- JSON (release's backfill).
UPDATE events e SET hash = v.hash, body = v.body
FROM unnest($1::text[], $2::text[], $3::text[]) AS v(id, hash, body)
WHERE e.id = v.id
