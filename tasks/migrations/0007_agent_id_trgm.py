import django.contrib.postgres.indexes
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0006_search_indexes"),
    ]

    operations = [
        # The search box finds agents by any fragment of their id (pg_trgm, from 0006).
        migrations.AddIndex(
            model_name="task",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["agent_id"], name="task_agent_trgm_idx", opclasses=["gin_trgm_ops"]
            ),
        ),
    ]
