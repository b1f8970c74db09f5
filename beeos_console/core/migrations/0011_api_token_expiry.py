"""API tokens get an expiry and a last-used time.

Existing tokens expire CONSOLE_API_TOKEN_DAYS (default 90) after they were created.
"""

from datetime import timedelta

from django.conf import settings
from django.db import migrations, models


def set_expiry(apps, schema_editor):
    ApiToken = apps.get_model("console", "ApiToken")
    days = timedelta(days=getattr(settings, "CONSOLE_API_TOKEN_DAYS", 90))
    for token in ApiToken.objects.filter(expires_at__isnull=True).only("pk", "created_at"):
        ApiToken.objects.filter(pk=token.pk).update(expires_at=token.created_at + days)


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0010_audit_hash_chain"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(set_expiry, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(),
        ),
    ]
