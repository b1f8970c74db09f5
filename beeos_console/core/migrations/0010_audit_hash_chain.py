"""Audit entries form a hash chain: each stores its sequence number, the previous
entry's digest and its own, so an edit, deletion or gap made past the app is found."""

from django.db import migrations, models


# --- the chain itself: computed by the database, so every write path (the
# one-record services, the set-based batch INSERT, raw SQL) links its entries.
CHAIN_LOCK_KEY = 727379969  # one advisory lock: appends are serialised per transaction

CREATE_CHAIN = f"""
CREATE OR REPLACE FUNCTION console_audit_digest(e console_auditentry) RETURNS text AS $$
  SELECT encode(sha256(convert_to(concat_ws(E'\\x1f',
    e.seq::text, e.prev_digest, e.id::text,
    to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'),
    e.actor, e.actor_kind, e.action, e.object_kind, e.object_id,
    e.before::text, e.after::text, e.reason, e.detail::text), 'UTF8')), 'hex')
$$ LANGUAGE sql STABLE;

CREATE OR REPLACE FUNCTION console_audit_chain() RETURNS trigger AS $$
DECLARE
  last_seq bigint;
  last_digest text;
BEGIN
  PERFORM pg_advisory_xact_lock({CHAIN_LOCK_KEY});
  SELECT seq, digest INTO last_seq, last_digest
    FROM console_auditentry WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT 1;
  NEW.seq := COALESCE(last_seq, 0) + 1;
  NEW.prev_digest := COALESCE(last_digest, '');
  NEW.digest := console_audit_digest(NEW);
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS console_auditentry_chain ON console_auditentry;
CREATE TRIGGER console_auditentry_chain
  BEFORE INSERT ON console_auditentry
  FOR EACH ROW EXECUTE FUNCTION console_audit_chain();

-- Link the entries written before the chain existed, in the order they were written.
ALTER TABLE console_auditentry DISABLE TRIGGER console_auditentry_append_only;
DO $$
DECLARE
  r record;
  prev text := '';
  n bigint := 0;
BEGIN
  FOR r IN SELECT id FROM console_auditentry ORDER BY id LOOP
    n := n + 1;
    UPDATE console_auditentry SET seq = n, prev_digest = prev WHERE id = r.id;
    UPDATE console_auditentry a SET digest = console_audit_digest(a) WHERE a.id = r.id
      RETURNING a.digest INTO prev;
  END LOOP;
END $$;
ALTER TABLE console_auditentry ENABLE TRIGGER console_auditentry_append_only;
"""

DROP_CHAIN = """
DROP TRIGGER IF EXISTS console_auditentry_chain ON console_auditentry;
DROP FUNCTION IF EXISTS console_audit_chain();
DROP FUNCTION IF EXISTS console_audit_digest(console_auditentry);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0009_cancel_request_rechecks'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditentry',
            name='digest',
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='prev_digest',
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='seq',
            field=models.BigIntegerField(blank=True, editable=False, null=True, unique=True),
        ),
        migrations.RunSQL(CREATE_CHAIN, DROP_CHAIN),
    ]
