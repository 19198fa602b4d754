-- The plan's admission alone (sql/migrations/0011, 0018), for an app creation whose body is at fault:
-- the plan's answer comes first (decisions.md), so it is asked in a change of its own (simple
-- query protocol, so the project id is a quoted literal) before the body's fault is answered. A
-- creation with a valid body asks it inside its own statement (sql/queries/app_create.sql).
SELECT plan_admission({{project}})
