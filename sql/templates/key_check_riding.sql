-- A handler's first statement with the key check riding in it: the statement runs only for an
-- activated key; pms_row marks its rows, and an empty result is one row with the outcome alone.
-- MATERIALIZED: inlined, the check would run twice. The lateral reference to c forces a nested
-- loop with c outside, so the statement's rows keep their order without a sort.
WITH c AS MATERIALIZED (SELECT (SELECT status FROM api_key_usable WHERE id = {{key}} AND project_id = {{project}}) AS pms_key_check)
SELECT c.pms_key_check, q.*
FROM c
LEFT JOIN LATERAL (
  SELECT true AS pms_row, s.*
  -- OFFSET 0 keeps the statement planned as when it runs alone, so its row order is its own.
  FROM (SELECT * FROM (
{{statement}}
  ) statement OFFSET 0) s
  WHERE c.pms_key_check = 'activated'
) q ON true
