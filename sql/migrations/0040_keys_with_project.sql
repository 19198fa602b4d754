-- Every tenant table's primary and unique keys hold project_id, so that the schema can be
-- distributed by project (docs/citus.md): Citus needs the distribution column in each of them.
-- id leads, so a lookup by id alone still reads one index. apps keeps a unique id here, which the
-- runs and totals of other projects reference; release drops it on Citus (sql/citus/).

ALTER TABLE app_data_fields ADD COLUMN project_id text;
ALTER TABLE app_instructions ADD COLUMN project_id text;
UPDATE app_data_fields f SET project_id = a.project_id FROM apps a WHERE a.id = f.app_id;
UPDATE app_instructions i SET project_id = a.project_id FROM apps a WHERE a.id = i.app_id;
ALTER TABLE app_data_fields ALTER COLUMN project_id SET NOT NULL;
ALTER TABLE app_instructions ALTER COLUMN project_id SET NOT NULL;

ALTER TABLE app_data_fields DROP CONSTRAINT app_data_fields_app_id_fkey;
ALTER TABLE app_instructions DROP CONSTRAINT app_instructions_app_id_fkey;
ALTER TABLE apps DROP CONSTRAINT apps_logo_file_id_fkey;
ALTER TABLE runs DROP CONSTRAINT runs_app_id_fkey;
ALTER TABLE app_totals DROP CONSTRAINT app_totals_app_id_fkey;

ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, ADD PRIMARY KEY (id, project_id);
-- Leading with the hash: the lookup of a key made before secrets carried their project reads it.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_secret_hash_key, ADD CONSTRAINT api_keys_secret_hash_key UNIQUE (secret_hash, project_id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id, project_id);
ALTER TABLE files DROP CONSTRAINT files_pkey, ADD PRIMARY KEY (id, project_id);
ALTER TABLE runs DROP CONSTRAINT runs_pkey, ADD PRIMARY KEY (id, project_id);
ALTER TABLE apps DROP CONSTRAINT apps_pkey, ADD PRIMARY KEY (id, project_id), ADD CONSTRAINT apps_id_key UNIQUE (id);
ALTER TABLE app_data_fields DROP CONSTRAINT app_data_fields_pkey, ADD PRIMARY KEY (id, project_id);
ALTER TABLE app_instructions DROP CONSTRAINT app_instructions_pkey, ADD PRIMARY KEY (id, project_id);

ALTER TABLE app_data_fields DROP CONSTRAINT app_data_fields_app_id_position_key,
  ADD CONSTRAINT app_data_fields_app_id_position_key UNIQUE (app_id, position, project_id);
DROP INDEX app_data_fields_app_id_name_digest;
CREATE UNIQUE INDEX app_data_fields_app_id_name_digest ON app_data_fields (app_id, md5(name), project_id);
ALTER TABLE app_instructions DROP CONSTRAINT app_instructions_app_id_position_key,
  ADD CONSTRAINT app_instructions_app_id_position_key UNIQUE (app_id, position, project_id);

ALTER TABLE app_data_fields ADD CONSTRAINT app_data_fields_app_id_fkey FOREIGN KEY (app_id, project_id) REFERENCES apps (id, project_id);
ALTER TABLE app_instructions ADD CONSTRAINT app_instructions_app_id_fkey FOREIGN KEY (app_id, project_id) REFERENCES apps (id, project_id);
-- A logo is a file of the app's own project (domain/apps.ts).
ALTER TABLE apps ADD CONSTRAINT apps_logo_file_id_fkey FOREIGN KEY (logo_file_id, project_id) REFERENCES files (id, project_id);
ALTER TABLE runs ADD CONSTRAINT runs_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id);
ALTER TABLE app_totals ADD CONSTRAINT app_totals_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps (id);
