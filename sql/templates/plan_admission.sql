-- The plan's admission alone, for an app creation whose body is at fault: the plan's answer comes
-- first, so it is asked on its own before the body's fault is answered.
SELECT plan_admission({{project}})
