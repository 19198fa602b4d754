-- A handler's first statement with the key check riding in it (domain/key-check.ts): one row
-- with the check's outcome and no statement columns when the statement returns nothing, and the
-- statement is not run at all when the key is refused (null) or expired. pms_row (true) marks the
-- statement's rows.
-- The check is a materialized CTE: as a subquery the planner would copy it into both places
-- that read its outcome, and run it twice.
-- The rows keep the statement's own order without a sort: the subquery reads c (a lateral
-- reference), so the only plan is a nested loop with c's one row outside, which passes the
-- statement's rows on as they come. (Numbering them and sorting by the number cost a 100-event
-- page a third more time in PostgreSQL.)
WITH c AS MATERIALIZED (SELECT (SELECT status FROM api_key_usable WHERE id = {{key}}) AS pms_key_check)
SELECT c.pms_key_check, q.*
FROM c
LEFT JOIN LATERAL (
  SELECT true AS pms_row, s.*
  -- OFFSET 0 keeps the statement planned on its own, as when it runs alone, so its rows come in
  -- the order it gives them; merged into this query, its joins could be planned otherwise.
  FROM (SELECT * FROM (
{{statement}}
  ) statement OFFSET 0) s
  WHERE c.pms_key_check = 'activated'
) q ON true
