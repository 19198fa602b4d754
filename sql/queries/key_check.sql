-- The check of a known key on its own round trip, for an answer no statement of the request
-- carried it to: 'activated', 'expired', or null (refused).
SELECT (SELECT status FROM api_key_usable WHERE id = $1) AS key_check
