"""Tasks and messages in the mirror's registry (imported by ``TasksConfig.ready``)."""

from __future__ import annotations

from django.utils.translation import ngettext_lazy

from beeos_console.mirror import registry

from . import states
from .filtersets import TaskFilterSet
from .models import Message, Task
from .services import batch, cancel, rules, snapshots, write

registry.register(
    registry.MirroredKind(
        name="task",
        model=Task,
        id_field="task_id",
        expected_projection=lambda task: task.expected_projection,
        counters=rules.COUNTERS,
        agent_counted=True,
        list_url_name="tasks:list",
        filterset_class=TaskFilterSet,
        cancel_target=cancel.TaskCancelTarget,
        cancel_fields=("protocol", "task_id", "raw_state"),
        # Two protocols may share an id: a pick names the protocol too.
        pick_key=lambda task: f"{task.protocol}:{task.task_id}",
        counted=ngettext_lazy("%(count)s task", "%(count)s tasks", "count"),
    )
)
registry.register(
    registry.MirroredKind(
        name="message",
        model=Message,
        id_field="message_id",
        expected_projection=lambda m: states.project_message(m.state, stop_reason=m.stop_reason),
        # A2A history messages carry no envelope state: nothing to project.
        projected_rows=lambda qs: qs.filter(source=Message.Source.ENVELOPE),
        counted=ngettext_lazy("%(count)s message", "%(count)s messages", "count"),
    )
)

TASK_WRITES = {"group": "task", "write_many": batch.write_tasks, "order": 0}
for name, parse, write_one in (
    ("openapi_task", snapshots.parse_openapi_task, write.ingest_openapi_task),
    # A product / legacy producer's task: the product vocabulary and its failure details.
    ("product_task", snapshots.parse_product_task, write.ingest_product_task),
    ("a2a_task", snapshots.parse_a2a_task, write.ingest_a2a_task),
):
    registry.register_record(registry.RecordKind(name, parse, write_one, **TASK_WRITES))
registry.register_record(
    registry.RecordKind(
        "message",
        snapshots.parse_message,
        write.ingest_message,
        group="message",
        write_many=batch.write_messages,
        order=1,
    )
)
