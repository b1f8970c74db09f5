"""Maintained per-agent counters (``AgentCount``), backfilled from the tasks, and the task
indexes the agent pages read by.

The task indexes are created here with SQL because the agents feature owns the reads
that need them (the agent page's stuck work and who-delegates-to-whom, bounded by a
time window); they are not declared on ``tasks.Task``.
"""

import django.contrib.postgres.indexes
from django.db import migrations, models

BACKFILL = """
INSERT INTO console_agentcount (agent_id, role, status, count, last_activity)
SELECT agent, role, status, count(*), max(activity) FROM (
    SELECT t.agent_id AS agent, 'agent' AS role, left(t.status, 32) AS status,
           coalesce(t.updated_at, t.created_at, t.first_seen_at) AS activity
    FROM tasks_task t WHERE t.agent_id <> ''
    UNION ALL
    SELECT t.caller_agent_id, 'caller', left(t.status, 32),
           coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM tasks_task t WHERE t.caller_agent_id <> ''
    UNION ALL
    SELECT t.target_agent_id, 'target', left(t.status, 32),
           coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM tasks_task t WHERE t.target_agent_id <> ''
    UNION ALL
    SELECT a.agent, '', '', coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM tasks_task t CROSS JOIN LATERAL (
        SELECT DISTINCT x FROM unnest(ARRAY[t.agent_id, t.caller_agent_id, t.target_agent_id]) x
        WHERE x <> ''
    ) a(agent)
) s
GROUP BY agent, role, status
"""

# Who delegates to whom, per time window (covering: the pair query reads the index only);
# stuck work per agent (non-terminal rows only).
TASK_INDEXES = [
    (
        "task_caller_agent_created_idx",
        "(caller_agent_id, created_at) INCLUDE (target_agent_id, status)",
        "caller_agent_id <> ''",
    ),
    (
        "task_target_agent_created_idx",
        "(target_agent_id, created_at) INCLUDE (caller_agent_id, status)",
        "target_agent_id <> ''",
    ),
    (
        "task_agent_active_idx",
        "(agent_id, updated_at)",
        "status IN ('queued', 'processing') AND agent_id <> ''",
    ),
    (
        "task_caller_active_idx",
        "(caller_agent_id, updated_at)",
        "status IN ('queued', 'processing') AND caller_agent_id <> ''",
    ),
    (
        "task_target_active_idx",
        "(target_agent_id, updated_at)",
        "status IN ('queued', 'processing') AND target_agent_id <> ''",
    ),
]


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0013_webhook_inbox"),
        ("tasks", "0008_a2a_direction"),
    ]

    operations = [
        migrations.CreateModel(
            name="AgentCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("agent_id", models.CharField(max_length=256)),
                ("role", models.CharField(max_length=8)),
                ("status", models.CharField(max_length=32)),
                ("count", models.BigIntegerField(default=0)),
                ("last_activity", models.DateTimeField(null=True)),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("role", "")),
                        fields=["-last_activity", "-id"],
                        name="agentcount_active_idx",
                    ),
                    models.Index(
                        condition=models.Q(("role", "")),
                        fields=["agent_id", "id"],
                        name="agentcount_agent_idx",
                    ),
                    django.contrib.postgres.indexes.GinIndex(
                        condition=models.Q(("role", "")),
                        fields=["agent_id"],
                        name="agentcount_agent_trgm_idx",
                        opclasses=["gin_trgm_ops"],
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("agent_id", "role", "status"), name="agentcount_uniq"
                    )
                ],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        *(
            migrations.RunSQL(
                f"CREATE INDEX IF NOT EXISTS {name} ON tasks_task {columns} WHERE {where}",
                f"DROP INDEX IF EXISTS {name}",
            )
            for name, columns, where in TASK_INDEXES
        ),
    ]
