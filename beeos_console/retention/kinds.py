"""What ``prune`` may remove of each mirrored kind, and what it must keep.

Each prunable kind names the registry's mirrored kind it removes (its model,
id column and maintained counters come from there), the rule that says a row is
terminal, why a terminal row must stay for now, and the child rows that go with
it. ``services.prune`` iterates these; it never branches on a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.translation import gettext_lazy as _

from beeos_console.mirror import agent_counters, registry
from beeos_console.mirror.registry import MirroredKind
from operations import states as op_states
from operations.models import RuntimeOperationEvent
from tasks import states as task_states
from tasks.models import Artifact, Message

# Why a terminal row old enough is kept (report and audit keys -> words).
DRIFTED = "drifted"
TERMINAL_FLAG = "terminal_flag"
RESYNC_PENDING = "resync_pending"
OPEN_CANCEL = "open_cancel"
BULK_JOB = "bulk_job"
CHANGED = "changed"
KEEP_REASONS = {
    DRIFTED: _("stored status is terminal but the raw state is not (the projection audit's)"),
    TERMINAL_FLAG: _("the upstream's terminal flag disagrees with our table"),
    RESYNC_PENDING: _("a webhook asked for a re-read that has not run yet"),
    OPEN_CANCEL: _("an open or unresolved cancel request refers to it"),
    BULK_JOB: _("a queued or running bulk cancel lists it"),
    CHANGED: _("changed or locked by a writer while pruning: left for the next run"),
}


@dataclass(frozen=True)
class Child:
    """Rows that belong to a pruned row and go in the same transaction."""

    label: str  # plural noun in the report, e.g. "messages"
    rows: Callable[[Sequence[int], Sequence[str]], QuerySet]  # (parent pks, parent ids)


@dataclass(frozen=True)
class PrunableKind:
    name: str  # the registry's kind, also a cancel request's ``object_kind``
    label: str  # plural noun in the report, e.g. "tasks"
    # The columns the rules below read (besides id, the id column and the counters').
    fields: tuple[str, ...]
    # Why a candidate row must stay although it is old and its stored status terminal.
    keep_reason: Callable[[dict[str, Any]], str | None]
    children: tuple[Child, ...]
    protocol_field: str | None = None  # tasks: two protocols may share an id

    @property
    def mirrored(self) -> MirroredKind:
        found = registry.get(self.name)
        assert found is not None, f"{self.name} is not a registered mirrored kind"
        return found

    def reference(self, row: dict[str, Any]) -> tuple[str, str]:
        """(protocol, id) as cancel requests and bulk jobs name the row."""
        protocol = row[self.protocol_field] if self.protocol_field else ""
        return protocol, row[self.mirrored.id_field]

    def read_fields(self) -> tuple[str, ...]:
        counted = self.mirrored.counted_columns
        if self.mirrored.agent_counted:
            counted += ("status", *agent_counters.ROLE_COLUMNS.values())
        names = ("id", self.mirrored.id_field, "created_at", *self.fields, *counted)
        return tuple(dict.fromkeys(names))  # once each, in order


def _task_keep(row: dict[str, Any]) -> str | None:
    if not task_states.is_terminal(row["protocol"], row["raw_state"]):
        return DRIFTED
    if row["resync_requested_at"] is not None:
        return RESYNC_PENDING
    return None


def _operation_keep(row: dict[str, Any]) -> str | None:
    if not op_states.is_terminal(row["raw_status"]):
        return DRIFTED
    if not row["terminal"]:
        return TERMINAL_FLAG
    return None


TASKS = PrunableKind(
    name="task",
    label="tasks",
    fields=("protocol", "raw_state", "status", "resync_requested_at"),
    keep_reason=_task_keep,
    children=(
        Child("messages", lambda pks, ids: Message.objects.filter(task_id__in=pks)),
        Child("artifacts", lambda pks, ids: Artifact.objects.filter(task_id__in=pks)),
    ),
    protocol_field="protocol",
)
OPERATIONS = PrunableKind(
    name="operation",
    label="operations",
    fields=("raw_status", "status", "terminal"),
    keep_reason=_operation_keep,
    children=(
        # Events stored before their operation was mirrored carry only its raw id.
        Child(
            "events",
            lambda pks, ids: RuntimeOperationEvent.objects.filter(
                Q(operation_id__in=pks) | Q(operation__isnull=True, operation_id_raw__in=ids)
            ),
        ),
    ),
)
KINDS = (TASKS, OPERATIONS)
# Every kind of row a run removes, in the order reports list them.
REMOVED_LABELS = (
    *(kind.label for kind in KINDS),
    *(child.label for kind in KINDS for child in kind.children),
)
