"""The projection audit: is every stored product status true to its raw state?

One sweep streams tasks, messages and runtime operations in primary-key
chunks (memory stays flat at millions of rows) and reports:

- **drift**: the stored projection differs from what ``states.project`` gives
  today (or was stamped by an older ``PROJECTION_VERSION``);
- **unmapped**: raw values no table knows, grouped by value;
- **broken invariants**: evidence that contradicts the projection;
- **missing evidence** and **producer notes**, reported apart: they do not fail
  the audit.

Each category keeps a count and up to ``EXAMPLES`` examples with what a page
needs to link to the object.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.utils import timezone

from operations import states as op_states
from operations.models import RuntimeOperation
from operations.services import project_operation
from tasks import states as task_states
from tasks.models import Message, Task

from .states import PROJECTION_VERSION, TERMINAL_PRODUCT_STATUSES

CHUNK = 2000
EXAMPLES = 50

# Categories and whether they fail the audit (exit 1 / red on the page).
FAILING = {
    "drift": "Stored projection differs from today's rules",
    "unmapped": "Raw values no table knows",
    "evidence_mismatch": "Terminal task whose deciding agent reply says otherwise",
    "no_terminal_reply": "Completed task whose messages hold no terminal agent reply",
    "user_request_as_completion": "Completed user request taken as task completion",
    "succeeded_not_synced": "Operation succeeded but its projection is not synced",
    "projection_pending_stale": "projection_pending for longer than the threshold",
    "terminal_flag_mismatch": "Upstream terminal flag disagrees with our table",
}
INFORMATIONAL = {
    "missing_evidence": "Terminal task with no mirrored messages yet",
    "producer_spelling": "Producer wrote the other protocol's cancel spelling",
    "outdated_version": "Stamped by an older projection table version",
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


def chunks(model: type[Model], fields: tuple[str, ...], size: int = CHUNK) -> Iterator[list]:
    """Rows as value tuples, by primary key, ``size`` at a time: flat memory."""
    last = 0
    while True:
        rows = list(model.objects.filter(pk__gt=last).order_by("pk").values_list(*fields)[:size])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _drift(stored: dict[str, Any], expected: Any) -> dict[str, list[Any]]:
    wanted = expected.as_fields()
    return {k: [stored[k], wanted[k]] for k in PROJECTION_KEYS if stored[k] != wanted[k]}


def sweep(
    progress: Callable[[str], None] | None = None,
    chunk: int = CHUNK,
    listener: Callable[[str, dict[str, Any]], None] | None = None,
) -> AuditReport:
    report = AuditReport(listener=listener)
    _sweep_tasks(report, progress, chunk)
    _sweep_messages(report, progress, chunk)
    _sweep_operations(report, progress, chunk)
    report.finished_at = timezone.now()
    return report


# --- tasks -----------------------------------------------------------------------


def _sweep_tasks(report: AuditReport, progress: Callable | None, chunk: int) -> None:
    for rows in chunks(Task, TASK_FIELDS, chunk):
        terminal_ids: dict[int, dict[str, Any]] = {}
        for row in rows:
            stored = dict(zip(TASK_FIELDS, row, strict=True))
            link = {
                "kind": "task",
                "id": stored["task_id"],
                "protocol": stored["protocol"],
                "raw": stored["raw_state"],
                "status": stored["status"],
            }
            expected = task_states.project(stored["protocol"], stored["raw_state"])
            _check_projection(report, "task", stored, expected, link)
            if task_states.is_foreign_cancel_spelling(stored["protocol"], stored["raw_state"]):
                report.add("producer_spelling", link)
            if expected.status in TERMINAL_PRODUCT_STATUSES:
                terminal_ids[stored["id"]] = {**link, "expected": expected.status}
        _check_task_evidence(report, terminal_ids)
        report.scanned["tasks"] += len(rows)
        if progress:
            progress(f"tasks: {report.scanned['tasks']:,} scanned")


def _check_projection(
    report: AuditReport, kind: str, stored: dict[str, Any], expected: Any, link: dict[str, Any]
) -> None:
    drift = _drift(stored, expected)
    if drift:
        report.add("drift", {**link, "drift": drift, "rule": expected.rule})
    elif stored["projection_version"] != PROJECTION_VERSION:
        report.add("outdated_version", {**link, "version": stored["projection_version"]})
    if expected.is_unmapped:
        report.add("unmapped", link)
        key = (kind, link.get("protocol", ""), str(link["raw"]))
        report.unmapped_groups[key].add(link)


def _check_task_evidence(report: AuditReport, terminal: dict[int, dict[str, Any]]) -> None:
    """The evidence rule (DESIGN.md): the terminal agent reply decides a task's result."""
    if not terminal:
        return
    messages: dict[int, list[tuple]] = defaultdict(list)
    history_only: set[int] = set()
    for task_pk, source, type_, state, stop, created, pk in (
        Message.objects.filter(task_id__in=list(terminal))
        .values_list("task_id", "source", "type", "state", "stop_reason", "created_at", "id")
        .iterator(chunk_size=5000)
    ):
        if source == Message.Source.ENVELOPE:
            messages[task_pk].append((type_, state, stop, created, pk))
        else:
            history_only.add(task_pk)
    for task_pk, link in terminal.items():
        rows = messages.get(task_pk)
        if not rows:
            # A2A history carries no envelope states: the evidence rule does not apply.
            if task_pk not in history_only:
                report.add("missing_evidence", link)
            continue
        replies = [
            r
            for r in rows
            if r[0] == task_states.AGENT_REPLY and r[1] in task_states.MESSAGE_TERMINAL_STATES
        ]
        if replies:
            deciding = max(replies, key=lambda r: (r[3] or timezone.now(), r[4]))
            says = task_states.project_message(deciding[1], stop_reason=deciding[2]).status
            if says != link["expected"]:
                report.add(
                    "evidence_mismatch",
                    {
                        **link,
                        "reply_state": deciding[1],
                        "reply_stop_reason": deciding[2],
                        "reply_says": says,
                    },
                )
            continue
        if link["expected"] != "completed":
            continue
        user_done = [r for r in rows if r[0] != task_states.AGENT_REPLY and r[1] == "completed"]
        if user_done:
            report.add("user_request_as_completion", {**link, "message_type": user_done[-1][0]})
        else:
            report.add("no_terminal_reply", link)


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
)


def _sweep_messages(report: AuditReport, progress: Callable | None, chunk: int) -> None:
    for rows in chunks(Message, MESSAGE_FIELDS, chunk):
        for row in rows:
            stored = dict(zip(MESSAGE_FIELDS, row, strict=True))
            if stored["source"] != Message.Source.ENVELOPE:
                continue  # A2A history carries no envelope state to project
            link = {
                "kind": "message",
                "id": stored["message_id"],
                "protocol": "message",
                "raw": stored["state"],
                "status": stored["status"],
            }
            expected = task_states.project_message(
                stored["state"], stop_reason=stored["stop_reason"]
            )
            _check_projection(report, "message", stored, expected, link)
            if task_states.is_foreign_cancel_spelling(task_states.MESSAGE, stored["state"]):
                report.add("producer_spelling", link)
        report.scanned["messages"] += len(rows)
        if progress:
            progress(f"messages: {report.scanned['messages']:,} scanned")


# --- runtime operations ------------------------------------------------------------------

OPERATION_FIELDS = (
    "id",
    "operation_id",
    "raw_status",
    "effect_state",
    "projection_state",
    "error_code",
    "error_retry_mode",
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
    pending_cutoff = timezone.now() - dt.timedelta(minutes=settings.CONSOLE_STUCK_AFTER_MINUTES)
    for rows in chunks(RuntimeOperation, OPERATION_FIELDS, chunk):
        for row in rows:
            stored = dict(zip(OPERATION_FIELDS, row, strict=True))
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
            # not_applicable: reads have nothing to project (ours).
            if raw == "succeeded" and stored["projection_state"] not in (
                "synced",
                "not_applicable",
            ):
                report.add(
                    "succeeded_not_synced", {**link, "projection_state": stored["projection_state"]}
                )
            if (
                raw == "projection_pending"
                and stored["updated_at"] is not None
                and stored["updated_at"] < pending_cutoff
            ):
                report.add(
                    "projection_pending_stale", {**link, "since": stored["updated_at"].isoformat()}
                )
            if op_states.is_known(raw) and stored["terminal"] != op_states.is_terminal(raw):
                report.add(
                    "terminal_flag_mismatch",
                    {
                        **link,
                        "upstream_terminal": stored["terminal"],
                        "our_terminal": op_states.is_terminal(raw),
                    },
                )
            if raw.strip() == "canceled":
                report.add("producer_spelling", link)
        report.scanned["operations"] += len(rows)
        if progress:
            progress(f"operations: {report.scanned['operations']:,} scanned")
