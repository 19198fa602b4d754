EXECUTE pms_outbox_insert({{id}}, {{project}}, {{type}}, {{table}}, {{related}}, {{origin}}, {{actor}}, {{ip}}, {{details}}, {{at}})
