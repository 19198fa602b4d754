-- Locks the project's plan row for the creating transaction, so two creations racing at the
-- limit cannot both pass. The app count is read by the next statement, whose snapshot is taken
-- after this lock is held, so it sees the apps of any creation that held it before.
SELECT custom_apps, app_limit FROM plans WHERE project_id = $1 FOR UPDATE
