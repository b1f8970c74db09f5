"""The projection audit: is every stored product status true to its raw state?

One sweep reads tasks, messages and runtime operations in primary-key chunks
(memory stays flat at millions of rows) and reports:

- **drift**: the stored projection differs from what today's rules give (a
  task's includes its product producer's failure details); a row stamped by an
  older ``PROJECTION_VERSION`` whose values agree is listed as outdated instead;
- **unmapped**: raw values no table knows (an operation's effectState too),
  grouped by value;
- **broken invariants**: evidence that contradicts the projection;
- **missing evidence**, **producer notes** (accepted values not spelled as the
  tables write them: letter case, blanks, the other cancel spelling),
  **outdated versions** and rows **stamped in the future** (upstream clock
  skew: ``updated_at`` beyond now + ``CONSOLE_MAX_CLOCK_SKEW``, one indexed
  query per kind), reported apart: they do not fail the audit.

``sweep`` is set-based (``sweep.py`` does the SQL): each distinct raw tuple is
projected once, and only the rows that may hold a finding reach the per-row
checks below, read by ``WORKERS`` database sessions side by side.
``sweep_per_row`` runs every row through the same checks; it is the reference
the set-based sweep is tested against (same findings, same order, for the same
chunk size). Expensive evidence (the audit log's state history and recorded
cancels) is read only for the few tasks whose deciding reply contradicts them.

Each category keeps a count and up to ``EXAMPLES`` examples with what a page
needs to link to the object.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Case, JSONField, Model, Value, When
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog import chain
from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels import engine as cancel_engine
from beeos_console.mirror.attention import stuck_cutoff
from beeos_console.mirror.edge import future_bound
from beeos_console.mirror.states import (
    CANCELLED,
    COMPLETED,
    PROJECTION_VERSION,
    TERMINAL_PRODUCT_STATUSES,
    Projection,
)
from beeos_console.projection import sweep as set_based
from operations import states as op_states
from operations.models import RuntimeOperation
from operations.services.snapshots import project_operation
from tasks import states as task_states
from tasks.models import Message, Task

# Rows per chunk: the per-row reference streams 2,000 at a time; the set-based
# sweep reads a primary-key range of 50,000 per query (only its finding rows come back).
CHUNK = 2000
SET_CHUNK = 50_000
# Database sessions the set-based sweep reads with side by side (this machine's cores).
WORKERS = 2
EXAMPLES = 50

# Categories and whether they fail the audit (exit 1 / red on the page).
FAILING = {
    "drift": _("Stored projection differs from today's rules"),
    "unmapped": _("Raw values no table knows"),
    "evidence_mismatch": _("Terminal task whose deciding agent reply says otherwise"),
    "no_terminal_reply": _("Completed task whose messages hold no terminal agent reply"),
    "user_request_as_completion": _("Completed user request taken as task completion"),
    "succeeded_not_synced": _("Operation succeeded but its projection is not synced"),
    "projection_pending_stale": _("projection_pending for longer than the threshold"),
    "terminal_flag_mismatch": _("Upstream terminal flag disagrees with our table"),
    "audit_chain_broken": _(
        "The audit log's hash chain is broken (an entry changed, deleted or written past the app)"
    ),
}
INFORMATIONAL = {
    "missing_evidence": _("Terminal task with no mirrored messages yet"),
    "producer_note": _(
        "Producer notes: accepted values not spelled as the tables write them "
        "(letter case, blanks, the other cancel spelling)"
    ),
    "outdated_version": _("Stamped by an older projection table version"),
    "future_stamp": _(
        "Stamped in the future (clock skew): updatedAt beyond now + "
        "CONSOLE_MAX_CLOCK_SKEW; stored, ordered as now + skew (the next real snapshot applies)"
    ),
}
TASK_FIELDS = (
    "id",
    "task_id",
    "protocol",
    "raw_state",
    "status",
    "reason",
    "outcome_certainty",
    "retry_policy",
    "projection_rule",
    "projection_version",
    "updated_at",
    "first_seen_at",
    # A product producer's failure details (PRODUCER_DETAIL_ANNOTATIONS).
    *(f"producer_{name}" for name in task_states.PRODUCER_DETAILS),
)
PROJECTION_KEYS = ("status", "reason", "outcome_certainty", "retry_policy", "projection_rule")


@dataclass
class Category:
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, example: dict[str, Any]) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)


@dataclass
class AuditReport:
    categories: dict[str, Category] = field(
        default_factory=lambda: {name: Category() for name in (*FAILING, *INFORMATIONAL)}
    )
    # (kind, protocol, raw value) -> count, examples
    unmapped_groups: dict[tuple[str, str, str], Category] = field(
        default_factory=lambda: defaultdict(Category)
    )
    scanned: Counter[str] = field(default_factory=Counter)
    started_at: dt.datetime = field(default_factory=timezone.now)
    finished_at: dt.datetime | None = None
    # Called with every finding as it is found (the CSV export streams these).
    listener: Callable[[str, dict[str, Any]], None] | None = None

    def add(self, category: str, example: dict[str, Any]) -> None:
        self.categories[category].add(example)
        if self.listener is not None:
            self.listener(category, example)

    @property
    def failing(self) -> bool:
        return any(self.categories[name].count for name in FAILING)

    def summary_rows(self) -> list[tuple[str, str, int, bool]]:
        rows = [(k, v, self.categories[k].count, True) for k, v in FAILING.items()]
        rows += [(k, v, self.categories[k].count, False) for k, v in INFORMATIONAL.items()]
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "projection_version": PROJECTION_VERSION,
            "scanned": dict(self.scanned),
            "failing": self.failing,
            "categories": {
                name: {"count": c.count, "examples": c.examples}
                for name, c in self.categories.items()
            },
            "unmapped_groups": [
                {
                    "kind": kind,
                    "protocol": protocol,
                    "raw_value": raw,
                    "count": c.count,
                    "examples": c.examples,
                }
                for (kind, protocol, raw), c in sorted(
                    self.unmapped_groups.items(), key=lambda item: -item[1].count
                )
            ],
        }


def chunks(
    model: type[Model],
    fields: tuple[str, ...],
    size: int = CHUNK,
    annotations: dict[str, Any] | None = None,
) -> Iterator[list]:
    """Rows as value tuples, by primary key, ``size`` at a time: flat memory."""
    last = 0
    base = model.objects.annotate(**annotations) if annotations else model.objects.all()
    while True:
        rows = list(base.filter(pk__gt=last).order_by("pk").values_list(*fields)[:size])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _drift(stored: dict[str, Any], expected: Any) -> dict[str, list[Any]]:
    wanted = expected.as_fields()
    return {k: [stored[k], wanted[k]] for k in PROJECTION_KEYS if stored[k] != wanted[k]}


def sweep(
    progress: Callable[[str], None] | None = None,
    chunk: int = SET_CHUNK,
    listener: Callable[[str, dict[str, Any]], None] | None = None,
    check_audit_chain: bool = False,
    workers: int = WORKERS,
) -> AuditReport:
    """The audit, set-based (``sweep.py``): what ``audit_projections`` and the page run.

    Its findings are those of ``sweep_per_row`` with the same ``chunk``, in the
    same order (tests/test_audit_sweep_equivalence.py). ``workers`` database
    sessions read the ranges side by side (one inside a transaction).
    """
    report = AuditReport(listener=listener)
    with set_based.key_tables():
        _fill_key_tables(progress)
        with set_based.Sessions(workers) as sessions:
            _set_tasks(report, progress, chunk, sessions)
            _set_messages(report, progress, chunk, sessions)
            _set_operations(report, progress, chunk, sessions)
    _check_future_stamps(report)
    if check_audit_chain:
        # The command and the audit page's job walk the audit log's hash chain too.
        _check_audit_chain(report, progress)
    report.finished_at = timezone.now()
    return report


def sweep_per_row(
    progress: Callable[[str], None] | None = None,
    chunk: int = CHUNK,
    listener: Callable[[str, dict[str, Any]], None] | None = None,
    check_audit_chain: bool = False,
) -> AuditReport:
    """The audit row by row: every row of every kind through Python (the reference).

    Kept as the definition the set-based ``sweep`` is tested against; about
    three times slower at a million tasks.
    """
    report = AuditReport(listener=listener)
    _sweep_tasks(report, progress, chunk)
    _sweep_messages(report, progress, chunk)
    _sweep_operations(report, progress, chunk)
    _check_future_stamps(report)
    if check_audit_chain:
        _check_audit_chain(report, progress)
    report.finished_at = timezone.now()
    return report


def _check_future_stamps(report: AuditReport) -> None:
    """Rows stamped beyond now + ``CONSOLE_MAX_CLOCK_SKEW`` (upstream clock skew).

    ``mirror.edge.is_older`` orders such a stamp as now + skew, so they freeze
    nothing; they are listed so someone fixes the producer's clock. One query
    per kind on its ``updated_at`` index (tasks, operations), latest stamps
    first; messages (no such index) are checked as the sweep streams them.
    """
    bound = future_bound(timezone.now())
    # kind, model, (id, protocol, raw value) fields; an operation has no protocol.
    kinds: tuple[tuple[str, type[Model], tuple[str, str, str]], ...] = (
        ("task", Task, ("task_id", "protocol", "raw_state")),
        ("operation", RuntimeOperation, ("operation_id", "method", "raw_status")),
    )
    for kind, model, (id_field, protocol_field, raw_field) in kinds:
        rows = (
            model.objects.filter(updated_at__gt=bound)
            .order_by("-updated_at", "-id")
            .values_list(id_field, protocol_field, raw_field, "status", "updated_at")
        )
        for object_id, protocol, raw, status, updated_at in rows.iterator(chunk_size=CHUNK):
            link = {
                "kind": kind,
                "id": object_id,
                "protocol": protocol if kind == "task" else kind,
                "raw": raw,
                "status": status,
            }
            report.add("future_stamp", {**link, "note": _future_note(updated_at, bound)})


def _future_note(stamp: dt.datetime, bound: dt.datetime) -> str:
    ahead = stamp - (bound - settings.CONSOLE_MAX_CLOCK_SKEW)
    return f"updatedAt {stamp.isoformat()}, {_span(ahead)} ahead of the console's clock"


def _span(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _check_audit_chain(report: AuditReport, progress: Callable | None) -> None:
    """The audit log the console's answers rest on must itself be intact."""
    check = chain.verify()
    report.scanned["audit entries"] = check.entries
    if not check.ok:
        report.add(
            "audit_chain_broken",
            {
                "kind": "audit entry",
                "id": str(check.broken_seq or check.broken_id),
                "raw": check.problem,
                "status": "broken",
            },
        )
    if progress:
        progress(check.describe())


# --- tasks -----------------------------------------------------------------------

# Only product rows carry failure details beside ``status`` (DESIGN.md, Product /
# legacy producers): read just those keys, and only for product rows, so other
# rows' payloads are never read (never detoasted) by the sweep.
PRODUCER_DETAIL_ANNOTATIONS = {
    f"producer_{name}": Case(
        When(protocol=task_states.PRODUCT, then=KeyTransform(name, "raw_payload")),
        default=Value(None),
        output_field=JSONField(),
    )
    for name in task_states.PRODUCER_DETAILS
}


def _sweep_tasks(report: AuditReport, progress: Callable | None, chunk: int) -> None:
    for rows in chunks(Task, TASK_FIELDS, chunk, PRODUCER_DETAIL_ANNOTATIONS):
        terminal_ids: dict[int, dict[str, Any]] = {}
        for row in rows:
            stored = dict(zip(TASK_FIELDS, row, strict=True))
            link, expected = _check_task_row(report, stored)
            if expected.status in TERMINAL_PRODUCT_STATUSES:
                terminal_ids[stored["id"]] = _evidence_link(link, expected.status, stored)
        _check_task_evidence(report, terminal_ids)
        report.scanned["tasks"] += len(rows)
        if progress:
            progress(f"tasks: {report.scanned['tasks']:,} scanned")


def _task_link(stored: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "task",
        "id": stored["task_id"],
        "protocol": stored["protocol"],
        "raw": stored["raw_state"],
        "status": stored["status"],
    }


def _check_task_row(report: AuditReport, stored: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """One task's projection and spelling; returns its link and expected projection."""
    protocol, raw = stored["protocol"], stored["raw_state"]
    link = _task_link(stored)
    details = {name: stored[f"producer_{name}"] for name in task_states.PRODUCER_DETAILS}
    expected = task_states.project_stored(protocol, raw, details)
    _check_projection(report, "task", stored, expected, link)
    if note := task_states.producer_note(protocol, raw):
        report.add("producer_note", {**link, "note": note})
    return link, expected


def _evidence_link(
    link: dict[str, Any], expected_status: str, stored: dict[str, Any]
) -> dict[str, Any]:
    """What the evidence rule needs of a terminal task (``_`` keys stay out of findings)."""
    return {
        **link,
        "expected": expected_status,
        "_updated_at": stored["updated_at"],
        "_first_seen_at": stored["first_seen_at"],
    }


def _check_projection(
    report: AuditReport, kind: str, stored: dict[str, Any], expected: Any, link: dict[str, Any]
) -> None:
    drift = _drift(stored, expected)
    if drift:
        report.add("drift", {**link, "drift": drift, "rule": expected.rule})
    elif stored["projection_version"] != PROJECTION_VERSION:
        report.add("outdated_version", {**link, "version": stored["projection_version"]})
    if expected.is_unmapped:
        _unmapped(report, (kind, link.get("protocol", ""), str(link["raw"])), link)


def _unmapped(report: AuditReport, key: tuple[str, str, str], example: dict[str, Any]) -> None:
    report.add("unmapped", example)
    report.unmapped_groups[key].add(example)


@dataclass(frozen=True, slots=True)
class _Reply:
    """One terminal agent reply of a task, as the evidence rule reads it."""

    state: str
    stop_reason: str
    created_at: dt.datetime | None
    written_at: dt.datetime | None  # when it reached its terminal state
    pk: int

    @property
    def says(self) -> str:
        return task_states.project_message(self.state, stop_reason=self.stop_reason).status


def _deciding(replies: list[_Reply]) -> _Reply | None:
    """The latest terminal agent reply (DESIGN.md: it is the evidence for the result)."""
    if not replies:
        return None
    return max(replies, key=lambda r: (r.created_at or timezone.now(), r.pk))


def _check_task_evidence(report: AuditReport, terminal: dict[int, dict[str, Any]]) -> None:
    """The evidence rule (DESIGN.md): the terminal agent reply decides a task's result.

    Cheap first: the latest terminal agent reply is compared with the task. Only
    a task it contradicts has its history read (``_exceptions``): a reply that
    paused the task decides nothing, and a recorded cancel outranks the replies
    written before it.
    """
    if not terminal:
        return
    replies: dict[int, list[_Reply]] = defaultdict(list)
    others: dict[int, list[str]] = defaultdict(list)  # completed non-reply message types
    has_envelopes: set[int] = set()
    history_only: set[int] = set()
    for task_pk, source, type_, state, stop, created, updated, pk in (
        Message.objects.filter(task_id__in=list(terminal))
        .order_by("created_at", "id")
        .values_list(
            "task_id", "source", "type", "state", "stop_reason", "created_at", "updated_at", "id"
        )
        .iterator(chunk_size=5000)
    ):
        if source != Message.Source.ENVELOPE:
            history_only.add(task_pk)
            continue
        has_envelopes.add(task_pk)
        if type_ == task_states.AGENT_REPLY:
            if task_states.is_message_terminal(state):
                replies[task_pk].append(_Reply(state, stop, created, updated or created, pk))
        elif task_states.project_message(state).status == COMPLETED:
            others[task_pk].append(type_)
    suspects: dict[int, list[_Reply]] = {}
    for task_pk, link in terminal.items():
        deciding = _deciding(replies.get(task_pk, []))
        if deciding is not None and deciding.says != link["expected"]:
            suspects[task_pk] = replies[task_pk]
            continue
        _judge(report, task_pk, link, deciding, has_envelopes, history_only, others)
    if not suspects:
        return
    history = _exceptions({pk: terminal[pk] for pk in suspects})
    for task_pk, task_replies in suspects.items():
        link = terminal[task_pk]
        kept = _not_outranked(link, task_replies, history.get(task_pk, []))
        _judge(report, task_pk, link, _deciding(kept), has_envelopes, history_only, others)


def _judge(
    report: AuditReport,
    task_pk: int,
    link: dict[str, Any],
    deciding: _Reply | None,
    has_envelopes: set[int],
    history_only: set[int],
    others: dict[int, list[str]],
) -> None:
    """One terminal task against its deciding reply (None: no reply decides it)."""
    public = {k: v for k, v in link.items() if not k.startswith("_")}
    if deciding is not None:
        if deciding.says != link["expected"]:
            report.add(
                "evidence_mismatch",
                {
                    **public,
                    "reply_state": deciding.state,
                    "reply_stop_reason": deciding.stop_reason,
                    "reply_says": deciding.says,
                },
            )
        return
    if task_pk not in has_envelopes:
        # A2A history carries no envelope states: the evidence rule does not apply.
        if task_pk not in history_only:
            report.add("missing_evidence", public)
        return
    if link["expected"] != COMPLETED:
        return
    if others.get(task_pk):
        report.add("user_request_as_completion", {**public, "message_type": others[task_pk][-1]})
    else:
        report.add("no_terminal_reply", public)


# (when, action, before, after, detail) of one audit entry about a task.
_Event = tuple[dt.datetime, str, dict[str, Any], dict[str, Any], dict[str, Any]]
# A console cancel that took effect or was accepted upstream (``CancelOutcome.ok``).
_CANCEL_TOOK = frozenset({cancel_engine.CANCELLED, cancel_engine.CANCEL_REQUESTED})


def _exceptions(suspects: dict[int, dict[str, Any]]) -> dict[int, list[_Event]]:
    """The audited state changes and cancels of the suspect tasks: one indexed query."""
    by_key = {(link["protocol"], link["id"]): pk for pk, link in suspects.items()}
    found: dict[int, list[_Event]] = defaultdict(list)
    for object_id, action, at, before, after, detail in (
        AuditEntry.objects.filter(
            object_kind="task",
            object_id__in=sorted({link["id"] for link in suspects.values()}),
            action__in=("task.state_changed", "task.cancel"),
        )
        .order_by("at", "id")
        .values_list("object_id", "action", "at", "before", "after", "detail")
    ):
        detail = detail if isinstance(detail, dict) else {}
        pk = by_key.get((detail.get("protocol", ""), object_id))
        if pk is not None:
            found[pk].append((at, action, before or {}, after or {}, detail))
    return found


def _not_outranked(
    link: dict[str, Any], replies: list[_Reply], history: list[_Event]
) -> list[_Reply]:
    """The replies that may decide a task once its history is known (DESIGN.md, evidence).

    A reply that paused the task (it was then input_required / auth_required)
    is not a deciding reply; a recorded cancel (the console's own, or an
    upstream cancel state) outranks the replies written before it.
    """
    pausing = {r.pk for start in _pause_starts(link, history) if (r := _latest_by(replies, start))}
    kept = [r for r in replies if r.pk not in pausing]
    cancelled_at = _recorded_cancel(link, history)
    if cancelled_at is not None:
        kept = [r for r in kept if r.written_at is None or r.written_at > cancelled_at]
    return kept


def _latest_by(replies: list[_Reply], moment: dt.datetime | None) -> _Reply | None:
    """The reply written last at or before ``moment``."""
    if moment is None:
        return None
    before = [r for r in replies if r.written_at is not None and r.written_at <= moment]
    return max(before, key=lambda r: (r.written_at, r.pk)) if before else None


def _is_paused(protocol: str, summary: dict[str, Any]) -> bool:
    """Was the task paused (waiting on its caller) in this audited state summary?"""
    if "raw_state" in summary:
        return task_states.is_paused(protocol, summary["raw_state"])
    return summary.get("reason") in task_states.PAUSED_REASONS


def _pause_starts(link: dict[str, Any], history: list[_Event]) -> list[dt.datetime | None]:
    """When the task became paused, from its audited state history.

    Every state change is audited, so a change *out of* a pause with no change
    *into* it before means the task was paused since the previous change (or
    since its first snapshot).
    """
    starts: list[dt.datetime | None] = []
    previous, paused = link["_first_seen_at"], False
    for at, action, before, after, _detail in history:
        if action != "task.state_changed":
            continue
        if _is_paused(link["protocol"], before) and not paused:
            starts.append(previous)
        paused = _is_paused(link["protocol"], after)
        if paused:
            starts.append(at)
        previous = at
    return starts


def _recorded_cancel(link: dict[str, Any], history: list[_Event]) -> dt.datetime | None:
    """When a recorded cancel decided this (cancelled) task; None when none did."""
    if link["expected"] != CANCELLED:
        return None  # a cancel that did not take decides nothing
    # The upstream snapshot that says cancelled, stamped by the upstream's clock ...
    moments = [link["_updated_at"]]
    # ... and the console's own cancels that took effect or were accepted, by ours.
    moments += [
        at
        for at, action, _before, _after, detail in history
        if action == "task.cancel" and detail.get("result") in _CANCEL_TOOK
    ]
    known = [m for m in moments if m is not None]
    return max(known) if known else None


# --- messages ----------------------------------------------------------------------

MESSAGE_FIELDS = (
    "id",
    "message_id",
    "source",
    "state",
    "stop_reason",
    "status",
    "reason",
    "outcome_certainty",
    "retry_policy",
    "projection_rule",
    "projection_version",
    "updated_at",
)


def _sweep_messages(report: AuditReport, progress: Callable | None, chunk: int) -> None:
    bound = future_bound(timezone.now())
    for rows in chunks(Message, MESSAGE_FIELDS, chunk):
        for row in rows:
            stored = dict(zip(MESSAGE_FIELDS, row, strict=True))
            if stored["source"] != Message.Source.ENVELOPE:
                continue  # A2A history carries no envelope state to project
            _check_message_row(report, stored, bound)
        report.scanned["messages"] += len(rows)
        if progress:
            progress(f"messages: {report.scanned['messages']:,} scanned")


def _check_message_row(report: AuditReport, stored: dict[str, Any], bound: dt.datetime) -> None:
    """One message envelope's projection, spelling and clock."""
    link = {
        "kind": "message",
        "id": stored["message_id"],
        "protocol": "message",
        "raw": stored["state"],
        "status": stored["status"],
    }
    expected = task_states.project_message(stored["state"], stop_reason=stored["stop_reason"])
    _check_projection(report, "message", stored, expected, link)
    if note := task_states.producer_note(task_states.MESSAGE, stored["state"]):
        report.add("producer_note", {**link, "note": note})
    if stored["updated_at"] is not None and stored["updated_at"] > bound:
        report.add("future_stamp", {**link, "note": _future_note(stored["updated_at"], bound)})


# --- runtime operations ------------------------------------------------------------------

OPERATION_FIELDS = (
    "id",
    "operation_id",
    "raw_status",
    "effect_state",
    "projection_state",
    "error_code",
    "error_retry_mode",
    "error_effect_state",
    "terminal",
    "updated_at",
    "status",
    "reason",
    "outcome_certainty",
    "retry_policy",
    "projection_rule",
    "projection_version",
)


def _sweep_operations(report: AuditReport, progress: Callable | None, chunk: int) -> None:
    pending_cutoff = stuck_cutoff(timezone.now())
    for rows in chunks(RuntimeOperation, OPERATION_FIELDS, chunk):
        for row in rows:
            _check_operation_row(
                report, dict(zip(OPERATION_FIELDS, row, strict=True)), pending_cutoff
            )
        report.scanned["operations"] += len(rows)
        if progress:
            progress(f"operations: {report.scanned['operations']:,} scanned")


def _is_unsynced_success(raw_status: str, projection_state: str) -> bool:
    """Succeeded, but its projection is neither synced nor not_applicable (reads: ours)."""
    state = op_states.PROJECTION_STATE_VOCABULARY.key(projection_state)
    return op_states.status_key(raw_status) == "succeeded" and state not in (
        "synced",
        "not_applicable",
    )


def _check_operation_row(
    report: AuditReport, stored: dict[str, Any], pending_cutoff: dt.datetime
) -> None:
    """One operation's projection, values and invariants."""
    raw = stored["raw_status"]
    link = {
        "kind": "operation",
        "id": stored["operation_id"],
        "protocol": "operation",
        "raw": raw,
        "status": stored["status"],
    }
    expected = project_operation(stored)
    _check_projection(report, "operation", stored, expected, link)
    _check_operation_values(report, stored, link)
    if _is_unsynced_success(raw, stored["projection_state"]):
        report.add("succeeded_not_synced", {**link, "projection_state": stored["projection_state"]})
    if (
        op_states.status_key(raw) == "projection_pending"
        and stored["updated_at"] is not None
        and stored["updated_at"] < pending_cutoff
    ):
        report.add("projection_pending_stale", {**link, "since": stored["updated_at"].isoformat()})
    if op_states.is_known(raw) and stored["terminal"] != op_states.is_terminal(raw):
        report.add(
            "terminal_flag_mismatch",
            {
                **link,
                "upstream_terminal": stored["terminal"],
                "our_terminal": op_states.is_terminal(raw),
            },
        )


# The operation fields whose effectState a table must know, as the wire names them.
EFFECT_FIELDS = (("effect_state", "effectState"), ("error_effect_state", "error.effectState"))


def _check_operation_values(
    report: AuditReport, stored: dict[str, Any], link: dict[str, Any]
) -> None:
    """Beside status: unmapped effectStates, and producer notes on every spelling."""
    for name, wire in EFFECT_FIELDS:
        for value in op_states.unmapped_effect_states(stored[name]):
            _unmapped(report, ("operation", wire, value), {**link, "field": wire, "value": value})
    notes = op_states.producer_notes(
        stored["raw_status"], stored["effect_state"], stored["error_retry_mode"]
    )
    # The error object's effectState is read as tolerantly as the top-level one.
    notes += [
        f"error.{note}" for note in op_states.producer_notes(None, stored["error_effect_state"])
    ]
    if notes:
        report.add("producer_note", {**link, "note": "; ".join(notes)})


# --- the set-based sweep (sweep.py does the SQL) ---------------------------------------------


def _fill_key_tables(progress: Callable | None) -> None:
    """Every distinct raw tuple, projected once by the rules above."""
    tuples = {
        "tasks": set_based.TASK_KEYS.fill(_project_task_key),
        "messages": set_based.MESSAGE_KEYS.fill(_project_message_key),
        "operations": set_based.OPERATION_KEYS.fill(_project_operation_key),
    }
    if progress:
        counted = ", ".join(f"{kind} {n:,}" for kind, n in tuples.items())
        progress(f"distinct raw tuples, projected once: {counted}")


def _projected(expected: Projection) -> tuple[str, ...]:
    """The key tables' projection columns (``set_based.PROJECTION_COLUMNS``)."""
    return (
        expected.status,
        expected.reason,
        expected.outcome_certainty,
        expected.retry_policy,
        expected.rule,
    )


def _details(texts: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A product producer's failure details from their JSON text ('' when absent)."""
    return {
        name: json.loads(text) if text else None
        for name, text in zip(task_states.PRODUCER_DETAILS, texts, strict=True)
    }


def _project_task_key(key: tuple[str, ...]) -> tuple[Any, ...]:
    """A (protocol, raw state): its projection without producer details.

    The status never depends on them (``with_producer_details`` keeps it), so
    the evidence rule reads it from here; rows with details are projected one
    by one (``set_based.task_rows`` returns them).
    """
    protocol, raw = key
    expected = task_states.project_stored(protocol, raw, {})
    flagged = expected.is_unmapped or task_states.producer_note(protocol, raw) is not None
    return (*_projected(expected), flagged, expected.status in TERMINAL_PRODUCT_STATUSES)


def _project_message_key(key: tuple[str, ...]) -> tuple[Any, ...]:
    state, stop_reason = key
    expected = task_states.project_message(state, stop_reason=stop_reason)
    note = task_states.producer_note(task_states.MESSAGE, state)
    return (
        *_projected(expected),
        expected.is_unmapped or note is not None,
        task_states.is_message_terminal(state),
        # What makes a request "completed" in the evidence rule (no stop reason).
        task_states.project_message(state).status == COMPLETED,
    )


def _project_operation_key(key: tuple[str, ...]) -> tuple[Any, ...]:
    fields = dict(zip(set_based.OPERATION_KEY_COLUMNS, key, strict=True))
    raw = fields["raw_status"]
    expected = project_operation(fields)
    effects = [fields[name] for name, _wire in EFFECT_FIELDS]
    notes = op_states.producer_notes(raw, fields["effect_state"], fields["error_retry_mode"])
    notes += op_states.producer_notes(None, fields["error_effect_state"])
    flagged = (
        expected.is_unmapped
        or bool(op_states.unmapped_effect_states(*effects))
        or bool(notes)
        or _is_unsynced_success(raw, fields["projection_state"])
    )
    return (
        *_projected(expected),
        flagged,
        op_states.status_key(raw) == "projection_pending",
        op_states.is_known(raw),
        op_states.is_terminal(raw),
    )


def _ranges(model: type[Model], chunk: int) -> Iterator[tuple[int, int, int]]:
    """(after, last pk, rows) of each primary-key range of ``chunk`` rows."""
    last = 0
    while found := set_based.next_range(model, last, chunk):
        count, hi = found
        yield last, hi, count
        last = hi


Range = tuple[int, int, int]
TaskReads = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, str]]


def _read_tasks(bounds: Range) -> TaskReads:
    """What one range of tasks needs from the database (runs in a reading session)."""
    lo, hi, _count = bounds
    rows = set_based.task_rows(lo, hi, PROJECTION_VERSION)
    evidence = set_based.evidence_rows(lo, hi, timezone.now())
    asking = [row["id"] for row in evidence if _needs_last_request(row)]
    return rows, evidence, set_based.last_completed_requests(asking)


def _set_tasks(
    report: AuditReport, progress: Callable | None, chunk: int, sessions: set_based.Sessions
) -> None:
    for (_lo, _hi, count), (rows, evidence, requests) in sessions.ordered(
        _read_tasks, _ranges(Task, chunk)
    ):
        for row in rows:
            texts = [row[key] for key in set_based.TASK_DETAIL_KEYS]
            row.update({f"producer_{name}": value for name, value in _details(texts).items()})
            _check_task_row(report, row)
        _set_task_evidence(report, evidence, requests)
        report.scanned["tasks"] += count
        if progress:
            progress(f"tasks: {report.scanned['tasks']:,} scanned")


def _is_quiet(row: dict[str, Any]) -> bool:
    """Judged from the aggregate alone: no deciding reply, nothing unknown."""
    return not (row["unknown_task"] or row["unknown_message"] or row["decided"])


def _needs_last_request(row: dict[str, Any]) -> bool:
    """A completed task whose envelopes hold no deciding reply: was a request taken for it?"""
    return _is_quiet(row) and row["envelopes"] and row["expected"] == COMPLETED


def _set_task_evidence(
    report: AuditReport, evidence: list[dict[str, Any]], requests: dict[int, str]
) -> None:
    """The evidence rule for the terminal tasks of one range, as ``_check_task_evidence``.

    SQL leaves out the tasks it clears; the rest are judged here in primary-key
    order, and the ones a deciding reply contradicts (suspects: their history
    decides) go through ``_check_task_evidence`` afterwards, as they do there.
    """
    doubted: dict[int, dict[str, Any]] = {}
    for row in evidence:
        pk, link = row["id"], _evidence_link(_task_link(row), row["expected"], row)
        if row["unknown_task"]:
            # Written after the key tables were filled: judged the per-row way.
            expected = task_states.project(row["protocol"], row["raw_state"]).status
            if expected in TERMINAL_PRODUCT_STATUSES:
                doubted[pk] = {**link, "expected": expected}
        elif not _is_quiet(row):
            doubted[pk] = link
        else:
            _judge(
                report,
                pk,
                link,
                None,
                {pk} if row["envelopes"] else set(),
                {pk} if row["history"] else set(),
                {pk: [requests[pk]]} if pk in requests else {},
            )
    _check_task_evidence(report, doubted)


def _set_messages(
    report: AuditReport, progress: Callable | None, chunk: int, sessions: set_based.Sessions
) -> None:
    bound = future_bound(timezone.now())

    def read(bounds: Range) -> list[dict[str, Any]]:
        return set_based.message_rows(bounds[0], bounds[1], PROJECTION_VERSION, bound)

    for (_lo, _hi, count), rows in sessions.ordered(read, _ranges(Message, chunk)):
        for row in rows:
            _check_message_row(report, row, bound)
        report.scanned["messages"] += count
        if progress:
            progress(f"messages: {report.scanned['messages']:,} scanned")


def _set_operations(
    report: AuditReport, progress: Callable | None, chunk: int, sessions: set_based.Sessions
) -> None:
    cutoff = stuck_cutoff(timezone.now())

    def read(bounds: Range) -> list[dict[str, Any]]:
        return set_based.operation_rows(bounds[0], bounds[1], PROJECTION_VERSION, cutoff)

    for (_lo, _hi, count), rows in sessions.ordered(read, _ranges(RuntimeOperation, chunk)):
        for row in rows:
            _check_operation_row(report, row, cutoff)
        report.scanned["operations"] += count
        if progress:
            progress(f"operations: {report.scanned['operations']:,} scanned")
