"""On PostgreSQL the database itself refuses UPDATE and DELETE of audit entries,
so not even raw SQL from the app can rewrite history."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION console_audit_append_only() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'audit entries are append-only (% refused)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS console_auditentry_append_only ON console_auditentry;
CREATE TRIGGER console_auditentry_append_only
  BEFORE UPDATE OR DELETE ON console_auditentry
  FOR EACH ROW EXECUTE FUNCTION console_audit_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS console_auditentry_append_only ON console_auditentry;
DROP FUNCTION IF EXISTS console_audit_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("console", "0002_roles")]
    operations = [migrations.RunPython(forwards, backwards)]
