"""The maintained counter of tasks by protocol and display status (``task_protocol``),
backfilled from the tasks with one GROUP BY.

Its rows are ``StatusCount(kind="task_protocol", status="<protocol>:<status>", hour)``,
as ``mirror.counters.counted_value`` and ``counters.rebuild`` write them (the hour of
the upstream ``created_at`` in UTC; a task without one counts at the current hour).
"""

from django.db import migrations

BACKFILL = """
DELETE FROM console_statuscount WHERE kind = 'task_protocol';
INSERT INTO console_statuscount (kind, status, hour, count)
SELECT 'task_protocol', left(protocol || ':' || status, 32),
       date_trunc('hour', coalesce(created_at, now()) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       count(*)
FROM tasks_task
GROUP BY 2, 3;
"""

FORGET = "DELETE FROM console_statuscount WHERE kind = 'task_protocol';"


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0015_agent_counts"),
        ("tasks", "0008_a2a_direction"),
    ]

    operations = [migrations.RunSQL(BACKFILL, FORGET)]
