-- A handler's first statement with the key check riding in it (domain/key-check.ts): one row
-- with the check's outcome and no statement columns when the statement returns nothing, and the
-- statement is not run at all when the key is refused (null) or expired. pms_row keeps the
-- statement's own order.
SELECT c.pms_key_check, q.*
FROM (SELECT (SELECT status FROM api_key_usable WHERE id = {{key}}) AS pms_key_check) c
LEFT JOIN LATERAL (
  SELECT row_number() OVER () AS pms_row, s.*
  FROM (
{{statement}}
  ) s
  WHERE c.pms_key_check = 'activated'
) q ON true
ORDER BY q.pms_row
