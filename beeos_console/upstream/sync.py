"""Pull sync from BeeOS through ``beeos-sdk``: tasks, their messages, runtime operations.

One pass:
1. page through the caller's tasks (listUserTasks, ``state=all``) from the
   stored cursor; for each, getTask (the status) and its messages;
2. re-read the tasks a webhook flagged and the mirrored tasks still open;
3. for each configured instance, page through its active runtime operations,
   getRuntimeOperation each and read its event stream; then re-read mirrored
   operations of that instance that are not terminal any more upstream.
Reads honour 429 ``Retry-After``; an error on one object is counted and the
pass goes on (a 401 or a refused connection stops it: every other read would
fail the same way).
Everything lands through the same services as every other write.

An object BeeOS answers 404 for is not an error: it is marked "not found
upstream" (``upstream_missing_at``, kept from the first 404), counted in the
summary, left out of the open-work re-reads, and re-read only once every
``MISSING_REREAD_EVERY`` in case it comes back; any successful read clears
the mark. Errors (transport, 401/403, 5xx) are what the exit status reports.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import beeos_sdk
import urllib3
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from beeos_console.auditlog.services import Actor
from beeos_console.mirror.edge import IngestError, IngestResult
from beeos_console.upstream import clients
from beeos_console.upstream.models import SyncCursor
from operations import states as op_states
from operations.models import RuntimeOperation
from operations.services.write import ingest_runtime_operation, ingest_runtime_operation_event
from tasks import states as task_states
from tasks.models import Task
from tasks.services.snapshots import parse_openapi_task
from tasks.services.write import ingest_message, write_task

ACTOR = Actor.feeder("sync_beeos")
TASK_PAGE = 100
MESSAGE_PAGE = 500
OPERATION_PAGE = 200
REREAD_LIMIT = 500
# Objects upstream answered 404 for are re-read this rarely (they may come back).
MISSING_REREAD_EVERY = dt.timedelta(hours=24)
MISSING_REREAD_CURSOR = "missing_reread"  # SyncCursor: when they were last re-read
NOT_FOUND = "not found upstream"
# What one failed read raises: an HTTP error answer, or a transport failure (urllib3
# reports a lost / refused connection as its own HTTPError, not as an OSError).
READ_ERRORS = (beeos_sdk.ApiException, OSError, urllib3.exceptions.HTTPError)


class PassStopped(Exception):
    """Every further read would fail the same way: the pass stops (and the run fails)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _cannot_connect(exc: BaseException) -> bool:
    """The connection itself failed (refused, connect timeout): nothing was sent."""
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError too


def is_vanished(exc: BaseException) -> bool:
    """BeeOS answered 404 *with its own error body*: the object is gone upstream.

    A 404 without BeeOS's error envelope (a wrong ``BEEOS_API_URL``, a proxy)
    is a configuration error and stays an error: it must never mark the whole
    mirror as missing.
    """
    if not isinstance(exc, beeos_sdk.ApiException) or exc.status != 404:
        return False
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return False
    if not isinstance(body, dict):
        return False
    error = body.get("error")
    # OpenAPI: {"success": false, "error": {"code": …}}; Cloud: {"code": …, "message": …}.
    return (isinstance(error, dict) and "code" in error) or "code" in body


@dataclass
class SyncReport:
    counts: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def add(self, result: IngestResult | None) -> None:
        if result is not None:
            self.counts[str(result.outcome)] += 1

    def error(self, what: str, exc: BaseException) -> None:
        self.counts["errors"] += 1
        detail = getattr(exc, "status", None) or type(exc).__name__
        self.errors.append(f"{what}: {detail}")

    def vanished(self) -> None:
        self.counts[NOT_FOUND] += 1

    @property
    def failed(self) -> bool:
        """Transport, auth or server errors happened (vanished objects are not errors)."""
        return bool(self.counts.get("errors"))

    def summary(self) -> str:
        keys = ("created", "updated", "unchanged", "stale", "rejected", NOT_FOUND, "errors")
        return ", ".join(f"{k} {self.counts.get(k, 0)}" for k in keys)


def message_envelope(
    dto: dict[str, Any], channel_id: str, *, created_at: str | None = None
) -> dict[str, Any]:
    """A MessageDTO (listTaskMessages) in MessageEnvelope shape for the mirror.

    The contract requires only ``message_id``, ``offset`` and ``type``; the
    envelope needs a ``created_at``. Without one on the wire, ``created_at``
    (the task's creation time) stands in: a message is never older than its
    task, and the value is stable from pass to pass, so the same message read
    twice stays "unchanged" (a read-time stamp would rewrite it every pass).
    """
    envelope = {
        "id": dto.get("message_id"),
        "conversation_id": channel_id,
        "type": dto.get("type"),
        "sender": dto.get("publisher_id") or "",
        "reply_to": dto.get("in_reply_to"),
        "body": dto.get("body") or "",
        "parts": dto.get("parts"),
        # "Pre-v3 rows omit this field; treat absent state as completed" (SDK doc).
        "state": dto.get("state") or "completed",
        "stop_reason": dto.get("stop_reason"),
        "content": dto.get("payload"),
        "created_at": dto.get("created_at") or dto.get("updated_at") or created_at,
        "updated_at": dto.get("updated_at"),
    }
    return {k: v for k, v in envelope.items() if v is not None}


def parse_sse(text: str) -> Iterator[dict[str, Any]]:
    """``data:`` frames of a text/event-stream body, each a JSON object."""
    for frame in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:")
        )
        if data:
            try:
                yield json.loads(data)
            except json.JSONDecodeError:
                continue


class Syncer:
    """One configured pull sync. ``progress`` receives one line per page."""

    def __init__(
        self,
        client: beeos_sdk.ApiClient,
        *,
        instances: list[str] | None = None,
        progress: Callable[[str], None] = lambda line: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tasks_api = beeos_sdk.TasksApi(client)
        self.ops_api = beeos_sdk.DefaultApi(client)
        self.instances = instances if instances is not None else list(settings.BEEOS_INSTANCES)
        self.progress = progress
        self.sleep = sleep
        self.report = SyncReport()
        self.tasks_read: set[str] = set()  # read in this pass: not re-read again
        self.reread_missing = False  # this pass also re-reads objects marked missing
        # Inside ``run`` a 401 or a refused connection stops the pass; a single
        # read (a gateway's re-read) just counts it, like any failed read.
        self.stop_on_systemic_errors = False

    def _read(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def attempt() -> Any:
            return clients.raw_json(call, *args, **kwargs)

        def waited(seconds: float) -> None:
            self.progress(f"rate limited: waiting {seconds:g} s (Retry-After)")

        try:
            return clients.honouring_rate_limits(attempt, sleep=self.sleep, on_wait=waited)
        except beeos_sdk.ApiException as exc:
            if exc.status == 401 and self.stop_on_systemic_errors:
                raise PassStopped("BeeOS refused the API key (check BEEOS_API_KEY)") from exc
            raise
        except urllib3.exceptions.HTTPError as exc:
            if _cannot_connect(exc) and self.stop_on_systemic_errors:
                raise PassStopped("BeeOS is unreachable (check BEEOS_API_URL)") from exc
            raise

    def _ingest(self, what: str, ingest: Callable[..., IngestResult], data: Any) -> None:
        try:
            with transaction.atomic():
                self.report.add(ingest(data, actor=ACTOR))
        except IngestError as exc:
            self.report.counts["rejected"] += 1
            self.report.errors.append(f"{what}: rejected ({exc})")

    # --- tasks ---------------------------------------------------------------

    def run(self) -> SyncReport:
        missing_cursor, _ = SyncCursor.objects.get_or_create(name=MISSING_REREAD_CURSOR)
        try:
            last = parse_datetime(missing_cursor.value)
        except ValueError:
            last = None
        now = timezone.now()
        # An unreadable stamp (edited by hand) just makes this pass a re-reading one.
        self.reread_missing = (
            last is None or last.tzinfo is None or now - last >= MISSING_REREAD_EVERY
        )
        self.stop_on_systemic_errors = True
        try:
            self.sync_task_pages()
            self.reread_tasks()
            for instance_id in self.instances:
                self.sync_operations(instance_id)
        except PassStopped as exc:
            self.report.error(f"{exc.why}; pass stopped", exc.__cause__ or exc)
            return self.report
        finally:
            self.stop_on_systemic_errors = False
        if self.reread_missing:
            missing_cursor.value = now.isoformat()
            missing_cursor.save(update_fields=["value", "updated_at"])
        return self.report

    def _not_missing(self, qs: QuerySet) -> QuerySet:
        """Open work to re-read: objects upstream no longer has are left out."""
        return qs.filter(upstream_missing_at__isnull=True)

    def _missing_due(self, qs: QuerySet) -> QuerySet:
        """Objects marked missing, when this pass is one that re-reads them (rarely)."""
        if not self.reread_missing:
            return qs.none()
        return qs.filter(upstream_missing_at__isnull=False).order_by("upstream_missing_at")

    def sync_task_pages(self) -> None:
        cursor, _ = SyncCursor.objects.get_or_create(name="tasks")
        page = 0
        while True:
            page += 1
            try:
                body = self._read(
                    self.tasks_api.list_user_tasks_without_preload_content,
                    state="all",
                    since=cursor.value or None,
                    limit=TASK_PAGE,
                )
            except READ_ERRORS as exc:
                self.report.error(f"listUserTasks page {page}", exc)
                return
            data = (body or {}).get("data") or {}
            summaries = data.get("tasks") or []
            before = Counter(self.report.counts)
            for summary in summaries:
                self.sync_task(summary.get("agent_id", ""), summary.get("task_id", ""))
            delta = self.report.counts - before
            self.progress(
                f"tasks page {page}: {len(summaries)} tasks "
                f"({', '.join(f'{k} {v}' for k, v in sorted(delta.items())) or 'nothing new'})"
            )
            next_since = data.get("next_since") or ""
            if next_since:
                # Saved per page: an interrupted run resumes here.
                cursor.value = next_since
                cursor.save(update_fields=["value", "updated_at"])
            if not next_since or not summaries:
                # The list is newest first: a finished pass starts the next one at the top.
                if cursor.value:
                    cursor.value = ""
                    cursor.save(update_fields=["value", "updated_at"])
                return

    def sync_task(self, agent_id: str, task_id: str) -> None:
        try:
            body = self._read(self.tasks_api.get_task_without_preload_content, agent_id, task_id)
        except READ_ERRORS as exc:
            if is_vanished(exc):
                self.task_vanished(task_id)
            else:
                self.report.error(f"getTask {task_id}", exc)
            return
        data = (body or {}).get("data")
        try:
            snapshot = parse_openapi_task(data)
        except IngestError as exc:
            self.report.counts["rejected"] += 1
            self.report.errors.append(f"task {task_id}: rejected ({exc})")
            return
        with transaction.atomic():
            result = write_task(snapshot, actor=ACTOR, authoritative=True)
            self.report.add(result)
            Task.objects.filter(protocol=task_states.OPENAPI, task_id=task_id).update(
                resync_requested_at=None, upstream_missing_at=None
            )
        self.tasks_read.add(task_id)
        task_created = result.obj.created_at if result.obj is not None else None
        self.sync_messages(
            agent_id or snapshot.fields["agent_id"],
            task_id,
            task_created.isoformat() if task_created else None,
        )

    def task_vanished(self, task_id: str) -> None:
        """getTask answered 404: mark the mirrored task (the first 404 is kept)."""
        self.report.vanished()
        self.tasks_read.add(task_id)
        # The 404 also answers a webhook's re-read request.
        Task.objects.filter(protocol=task_states.OPENAPI, task_id=task_id).update(
            upstream_missing_at=Coalesce("upstream_missing_at", Value(timezone.now())),
            resync_requested_at=None,
        )

    def sync_messages(self, agent_id: str, task_id: str, task_created_at: str | None) -> None:
        since: int | None = None
        while True:
            try:
                body = self._read(
                    self.tasks_api.list_task_messages_without_preload_content,
                    agent_id,
                    task_id,
                    since=since,
                    limit=MESSAGE_PAGE,
                )
            except READ_ERRORS as exc:
                self.report.error(f"listTaskMessages {task_id}", exc)
                return
            data = (body or {}).get("data") or {}
            for dto in data.get("messages") or []:
                self._ingest(
                    f"message {dto.get('message_id')}",
                    ingest_message,
                    message_envelope(dto, task_id, created_at=task_created_at),
                )
            next_since = data.get("next_since")
            if not data.get("has_more") or not next_since:
                return
            try:
                since = int(next_since)
            except ValueError:
                return

    def reread_tasks(self) -> None:
        """Webhook-flagged tasks first, then mirrored OpenAPI tasks still open.

        Open tasks upstream answered 404 for are left out, but for a pass that
        re-reads them (rarely); a webhook flag is re-read whatever the mark.
        """
        flagged = Task.objects.filter(
            protocol=task_states.OPENAPI, resync_requested_at__isnull=False
        ).order_by("resync_requested_at")
        open_tasks = Task.objects.filter(
            # Unmapped too: an unknown state may well be a live one.
            protocol=task_states.OPENAPI,
            status__in=("queued", "processing", "unmapped"),
        )
        seen: set[str] = set()
        missing_before = self.report.counts[NOT_FOUND]
        for qs in (
            flagged,
            self._not_missing(open_tasks).order_by("updated_at"),
            self._missing_due(open_tasks),
        ):
            for agent_id, task_id in qs.values_list("agent_id", "task_id")[:REREAD_LIMIT]:
                if task_id in seen or task_id in self.tasks_read or not agent_id:
                    continue
                seen.add(task_id)
                self.sync_task(agent_id, task_id)
        if seen:
            missing = self.report.counts[NOT_FOUND] - missing_before
            note = f" ({missing} {NOT_FOUND})" if missing else ""
            self.progress(f"re-read {len(seen)} flagged or open tasks{note}")

    # --- runtime operations ------------------------------------------------------

    def sync_operations(self, instance_id: str) -> None:
        cursor: str | None = None
        page = 0
        seen: set[str] = set()
        while True:
            page += 1
            try:
                body = self._read(
                    self.ops_api.list_runtime_operations_without_preload_content,
                    "active",
                    instance_id,
                    cursor=cursor,
                    limit=OPERATION_PAGE,
                )
            except READ_ERRORS as exc:
                self.report.error(f"listRuntimeOperations {instance_id}", exc)
                return
            operations = (body or {}).get("operations") or []
            for op in operations:
                if isinstance(op, dict) and op.get("id"):
                    seen.add(op["id"])
                    self.sync_operation(instance_id, op["id"])
            self.progress(f"operations of {instance_id} page {page}: {len(operations)}")
            cursor = (body or {}).get("nextCursor")
            if not cursor or not operations:
                break
        # Operations we mirror as open that left the active list: read their end
        # (those upstream answered 404 for only on a pass that re-reads them).
        open_ops = RuntimeOperation.objects.filter(instance_id=instance_id, terminal=False).exclude(
            raw_status__in=op_states.TERMINAL_STATUSES
        )
        for qs in (self._not_missing(open_ops), self._missing_due(open_ops)):
            for operation_id in qs.values_list("operation_id", flat=True)[:REREAD_LIMIT]:
                if operation_id not in seen:
                    seen.add(operation_id)
                    self.sync_operation(instance_id, operation_id)

    def sync_operation(self, instance_id: str, operation_id: str) -> None:
        try:
            snapshot = self._read(
                self.ops_api.get_runtime_operation_without_preload_content,
                instance_id,
                operation_id,
            )
        except READ_ERRORS as exc:
            if is_vanished(exc):
                self.operation_vanished(operation_id)
            else:
                self.report.error(f"getRuntimeOperation {operation_id}", exc)
            return
        self._ingest(f"operation {operation_id}", ingest_runtime_operation, snapshot)
        RuntimeOperation.objects.filter(
            operation_id=operation_id, upstream_missing_at__isnull=False
        ).update(upstream_missing_at=None)
        try:
            response = self.ops_api.stream_runtime_operation_events_without_preload_content(
                instance_id, operation_id, _request_timeout=clients.TIMEOUT
            )
            text = response.data.decode("utf-8", "replace")
            if response.status >= 400:
                raise beeos_sdk.ApiException(status=response.status, body=text)
        except READ_ERRORS as exc:
            self.report.error(f"operation events {operation_id}", exc)
            return
        for envelope in parse_sse(text):
            self._ingest(f"event {envelope.get('id')}", ingest_runtime_operation_event, envelope)

    def operation_vanished(self, operation_id: str) -> None:
        """getRuntimeOperation answered 404: mark the mirrored operation (first 404 kept)."""
        self.report.vanished()
        RuntimeOperation.objects.filter(
            operation_id=operation_id, upstream_missing_at__isnull=True
        ).update(upstream_missing_at=timezone.now())
