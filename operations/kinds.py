"""Runtime operations and their events in the mirror's registry (``OperationsConfig.ready``)."""

from __future__ import annotations

from django.utils.translation import ngettext_lazy

from beeos_console.mirror import registry

from .filtersets import RuntimeOperationFilterSet
from .models import RuntimeOperation
from .services import batch, cancel, rules, snapshots, write

registry.register(
    registry.MirroredKind(
        name="operation",
        model=RuntimeOperation,
        id_field="operation_id",
        expected_projection=rules.project_operation_row,
        counters=rules.COUNTERS,
        list_url_name="operations:list",
        filterset_class=RuntimeOperationFilterSet,
        cancel_target=cancel.OperationCancelTarget,
        cancel_fields=("operation_id", "raw_status", "cancel_requested_at", "cancel_requested_by"),
        pick_key=lambda op: op.operation_id,
        counted=ngettext_lazy("%(count)s operation", "%(count)s operations", "count"),
    )
)
# Operations before their events, after tasks and messages (parents first).
registry.register_record(
    registry.RecordKind(
        "runtime_operation",
        snapshots.parse_operation_snapshot,
        write.ingest_runtime_operation,
        group="operation",
        write_many=batch.write_operations,
        order=2,
    )
)
registry.register_record(
    registry.RecordKind(
        "runtime_operation_event",
        snapshots.parse_event,
        write.ingest_runtime_operation_event,
        group="event",
        write_many=batch.write_events,
        order=3,
    )
)
