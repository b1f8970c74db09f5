"""The registry of mirrored kinds: what the layers below the apps know about them.

Apps register their kinds when Django starts (``tasks.kinds``, ``operations.kinds``,
imported by each app's ``ready()``), the way ``admin.site.register`` works. The
cancel engine, bulk cancels, re-projection, the projection audit and the ingest
API look a kind up here instead of importing the apps or branching on its name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model, QuerySet

from beeos_console.mirror.counters import Counted, columns_of
from beeos_console.mirror.states import Projection


@dataclass(frozen=True)
class MirroredKind:
    """One kind of mirrored row (task, message, operation)."""

    name: str  # "task": the audit log's object_kind and the URL segment
    model: type[Model]
    id_field: str  # the BeeOS id column, e.g. "task_id"
    # Today's rules applied to a stored row (re-projection and the projection audit).
    expected_projection: Callable[[Any], Projection]
    # Which rows carry a projection at all (A2A history messages carry none).
    projected_rows: Callable[[QuerySet], QuerySet] = lambda qs: qs
    plural: str = ""
    list_url_name: str = ""
    filterset_class: type | None = None
    # A cancels.engine.CancelTarget subclass, when operators may cancel this kind.
    cancel_target: type | None = None
    # Columns bulk preview reads to decide (keep the preview a narrow read).
    cancel_fields: Sequence[str] = ()
    # Maintained status counters (``mirror.counters``): counter name -> counted column,
    # or a tuple of columns counted together (``counters.counted_value``).
    counters: Counted = field(default_factory=dict)
    # Counted per agent too (``mirror.agent_counters``: the row names agents, as tasks do).
    agent_counted: bool = False
    # How a list selection names one row: "protocol:id" for tasks, the id elsewhere.
    pick_key: Callable[[Any], str] = field(default=lambda obj: "")
    # "%(count)s tasks" in the reader's language: an ``ngettext_lazy(…, "count")``.
    counted: Any = None

    @property
    def counted_columns(self) -> tuple[str, ...]:
        """Every column the counters read (with ``created_at``: ``counters.keys_of``)."""
        names = [c for columns in self.counters.values() for c in columns_of(columns)]
        return (*dict.fromkeys(names), "created_at") if names else ()

    @property
    def noun(self) -> str:
        return self.plural or f"{self.name}s"

    def count_words(self, count: int) -> str:
        """``count`` rows of this kind in words, e.g. "3 tasks" (translated when declared)."""
        if self.counted is None:
            return f"{count} {self.name if count == 1 else self.noun}"
        return self.counted % {"count": count}

    def object_id(self, obj: Any) -> str:
        return getattr(obj, self.id_field)

    def picked(self, picks: Sequence[str]) -> QuerySet | list[Any]:
        """The rows an explicit pick list names (a checkbox value per row)."""
        wanted = set(picks)
        ids = {p.split(":", 1)[-1] for p in wanted}
        rows = self.model.objects.filter(**{f"{self.id_field}__in": ids})
        return [row for row in rows if self.pick_key(row) in wanted]


@dataclass(frozen=True)
class RecordKind:
    """One kind of wire record the ingest API takes (``{"kind": name, "data": …}``)."""

    name: str  # "openapi_task"
    parse: Callable[[Any], Any]  # edge validation: a snapshot, or IngestError
    write_one: Callable[..., Any]  # the one-record write path (parse + write)
    # The set-based writer for a call's snapshots of this group, and its order:
    # parents before children, so a child finds its parent within one call.
    group: str
    write_many: Callable[[Any, Sequence[tuple[int, Any]]], None]
    order: int


_KINDS: dict[str, MirroredKind] = {}
_RECORDS: dict[str, RecordKind] = {}


def register(kind: MirroredKind) -> MirroredKind:
    _KINDS[kind.name] = kind
    return kind


def register_record(record: RecordKind) -> RecordKind:
    _RECORDS[record.name] = record
    return record


def get(name: str) -> MirroredKind | None:
    return _KINDS.get(name)


def kinds() -> Iterator[MirroredKind]:
    return iter(_KINDS.values())


def cancellable_kinds() -> dict[str, MirroredKind]:
    return {name: kind for name, kind in _KINDS.items() if kind.cancel_target is not None}


def record_kinds() -> dict[str, RecordKind]:
    return dict(_RECORDS)
