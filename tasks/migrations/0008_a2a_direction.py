# The A2A pull sync (issue #17.3): direction, counterpart and a truncated history on a task.
# Columns with a constant default: PostgreSQL adds them without rewriting the table.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0007_agent_id_trgm"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="a2a_counterpart",
            field=models.CharField(blank=True, max_length=256),
        ),
        migrations.AddField(
            model_name="task",
            name="a2a_direction",
            field=models.CharField(
                blank=True, choices=[("sent", "sent"), ("received", "received")], max_length=8
            ),
        ),
        migrations.AddField(
            model_name="task",
            name="history_truncated_to",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                condition=models.Q(("a2a_direction", ""), _negated=True),
                fields=["a2a_direction", "-created_at", "-id"],
                name="task_a2a_direction_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                condition=models.Q(("a2a_counterpart", ""), _negated=True),
                fields=["a2a_counterpart", "-created_at", "-id"],
                name="task_a2a_counterpart_idx",
            ),
        ),
    ]
