-- The key check on its own round trip: for an answer that no statement of the request carried it to.
SELECT key_check($1) AS key_check
