"""Pull sync from BeeOS: tasks and their messages and runtime operations (``beeos-sdk``),
and the A2A tasks of the configured agents (``beeos-cloud-sdk``).

A pass costs what changed, not what is open. No list in the contract filters by
update time or is ordered by it (``listUserTasks`` is newest *created* first and
its rows carry no update time; the active-operations list and ``a2a.listTasks``
take only a cursor), so a pass finds change in four bounded ways:

1. **The top of each list.** ``listUserTasks`` (``state=all``) and, per configured
   agent, ``a2a.listTasks`` (``sent`` and ``received``) are walked newest first and
   the walk stops after the first page whose rows were all mirrored already. That
   page is the safety overlap: rows created in the same second as the newest known
   one, or while the pass ran, are on it. On the pages walked, a row is read when it
   is new, when it disagrees with the mirror (a task listed ``closed`` that the
   mirror holds open; an A2A task whose state or status time moved) or when a
   webhook flagged it. A walk that fails or is interrupted leaves a cursor
   (``SyncCursor``): the next pass walks from there too, so nothing it skipped is lost.
2. **Webhook flags.** The inbox flags (``Task.resync_requested_at``) every task an
   event reached: a ``task_status`` TaskEvent carries only a status and a time, never
   the result, error or messages ("the webhook is fast notification; the API is
   truth", webhooks guide §5), and an A2A push's history is whatever it carried.
   Each flagged task is read once (its messages too) and the flag cleared.
3. **The sweep**, the guide's "poll periodically": ``BEEOS_SYNC_SWEEP`` open tasks,
   and as many open operations per instance, re-read per pass in turn (keyset
   cursor), so a lost webhook is caught within ``open / sweep`` passes.
4. Objects BeeOS answered 404 for: marked, and re-read only every
   ``MISSING_REREAD_EVERY``.

Runtime operations: the active list carries whole snapshots, so it is listed from
the cursor of its last page (listed again: the overlap) to its end; only a snapshot
that changed the mirror costs a read (its event stream), and a mirrored open
operation the list no longer carries (newer than that page's start) is read to
learn how it ended.

Calls per pass with nothing changed: 1 (``listUserTasks``) + min(sweep, open tasks)
+ per instance 1 (the active list) + min(sweep, its open operations) + per A2A agent
2 (sent, received), whatever the number of open objects. One changed task: +2 (its
snapshot and one page of its messages); an A2A task: +1 (``a2a.getTask`` with its
history); a new one: the same, and +1 list page (the overlap); an operation on the
newest page: +1 (its event stream), +2 when it has left the active list.

Reads honour 429 ``Retry-After``; an error on one object is counted and the pass
goes on (a 401 or a refused connection stops it: every other read would fail the
same way; for the Cloud only the A2A reads stop). Everything lands through the same
services as every other write.

An object BeeOS answers 404 for is not an error: it is marked "not found upstream"
(``upstream_missing_at``, kept from the first 404), counted in the summary, left out
of the sweep, and re-read only once every ``MISSING_REREAD_EVERY`` in case it comes
back; any successful read clears the mark. Errors (transport, 401/403, 5xx) are what
the exit status reports.

After each pass the callables named in ``BEEOS_SYNC_AFTER_PASS`` run: work other
features schedule on the sync's clock without this package importing them (the agent
cards' re-read, ``beeos_console.agents.tasks.schedule_card_reads``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.client
import json
import time
import urllib.error
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import beeos_cloud_sdk
import urllib3
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F, QuerySet, Value
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from beeos_console.auditlog.services import Actor
from beeos_console.mirror.batch import Batch
from beeos_console.mirror.edge import IngestError, IngestResult, Outcome
from beeos_console.upstream import clients
from beeos_console.upstream.models import SyncCursor
from beeos_console.upstream.sdk import beeos_sdk
from operations import states as op_states
from operations.models import RuntimeOperation
from operations.services.batch import write_operations
from operations.services.snapshots import parse_operation_snapshot
from operations.services.write import ingest_runtime_operation, ingest_runtime_operation_event
from tasks import states as task_states
from tasks.models import Task
from tasks.services.snapshots import parse_a2a_task, parse_openapi_task
from tasks.services.write import ingest_message, write_task

ACTOR = Actor.feeder("sync_beeos")
TASK_PAGE = 100
A2A_PAGE = 100  # a2a.listTasks: 1 to 100
MESSAGE_PAGE = 500
OPERATION_PAGE = 200
REREAD_LIMIT = 500
A2A_HISTORY_MAX = 200  # a2a.getTask history_length: 0 to 200 (default 50)
# Objects upstream answered 404 for are re-read this rarely (they may come back).
MISSING_REREAD_EVERY = dt.timedelta(hours=24)
MISSING_REREAD_CURSOR = "missing_reread"  # SyncCursor: when they were last re-read
TASKS_CURSOR = "tasks"  # SyncCursor: where an unfinished walk of listUserTasks resumes
# SyncCursor "last_success:<kind>" (tasks, a2a, operations): when that part of a pass last
# ended without an error; /metrics exports it (beeos_console_sync_lag_seconds).
SUCCESS_PREFIX = "last_success:"
# A walk cursor too long for SyncCursor.value: the next pass walks the list to its end.
FULL_WALK = "*"
NOT_FOUND = "not found upstream"
OPEN_STATUSES = ("queued", "processing", "unmapped")  # unmapped: an unknown state may be live
CHANGED = (Outcome.CREATED, Outcome.UPDATED)
# The Cloud SDK: APIError for answers, URLError / timeouts (OSError) and cut or garbled
# bodies (HTTPException, ValueError) for the rest.
CLOUD_READ_ERRORS = (beeos_cloud_sdk.APIError, OSError, http.client.HTTPException, ValueError)


def read_errors() -> tuple[type[BaseException], ...]:
    """What one failed platform read raises: an HTTP error answer, or a transport failure.

    A function, not a constant: naming the SDK's exception imports the SDK (``sdk.py``).
    """
    return (beeos_sdk.ApiException, *clients.TRANSPORT_ERRORS)


class PassStopped(Exception):
    """Every further read would fail the same way: the pass stops (and the run fails)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class CloudStopped(Exception):
    """Every further Cloud read would fail the same way: the A2A reads stop (counted once)."""


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
    if isinstance(exc, beeos_cloud_sdk.APIError):
        # The Cloud SDK hands over a body only when it is the documented ErrorResponse;
        # anything else arrives as InvalidResponseBody (which keeps the raw bytes).
        return exc.status == 404 and isinstance(exc.body, dict) and "raw_body" not in exc.body
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


# --- where passes resume (SyncCursor rows) ----------------------------------------------

_NAME_MAX = SyncCursor._meta.get_field("name").max_length
_VALUE_MAX = SyncCursor._meta.get_field("value").max_length


def cursor_name(*parts: str) -> str:
    """A SyncCursor name for a stream; ids too long for the column are hashed."""
    name = ":".join(parts)
    if len(name) <= _NAME_MAX:
        return name
    return f"{parts[0]}:sha256:{hashlib.sha256(name.encode()).hexdigest()}"


def _cursor(name: str) -> SyncCursor:
    return SyncCursor.objects.get_or_create(name=name)[0]


def _save(cursor: SyncCursor, value: str) -> None:
    if cursor.value != value:
        cursor.value = value
        cursor.save(update_fields=["value", "updated_at"])


def _aware(value: Any) -> dt.datetime | None:
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return parsed if parsed is not None and parsed.tzinfo is not None else None


def _keyset(value: str) -> tuple[dt.datetime, int] | None:
    """A sweep cursor, ``<created_at>|<pk>``; None (start over) when unreadable."""
    stamp, _, pk = value.rpartition("|")
    created = _aware(stamp)
    return (created, int(pk)) if created is not None and pk.isdigit() else None


@dataclass
class Tail:
    """Where the active-operations list is listed from: the cursor of its last page, and
    the creation time of the operation just before that page (None: the list's start)."""

    cursor: str | None = None
    after: dt.datetime | None = None

    @classmethod
    def load(cls, value: str) -> Tail:
        try:
            data = json.loads(value) if value else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict) or not isinstance(data.get("cursor"), str):
            return cls()
        return cls(data["cursor"] or None, _aware(data.get("after")))

    def dump(self) -> str:
        if self.cursor is None:
            return ""
        after = self.after.isoformat() if self.after else None
        value = json.dumps({"cursor": self.cursor, "after": after})
        return value if len(value) <= _VALUE_MAX else ""  # too long: list from the start


class Syncer:
    """One configured pull sync. ``progress`` receives one line per page."""

    def __init__(
        self,
        client: beeos_sdk.ApiClient,
        *,
        instances: list[str] | None = None,
        cloud: beeos_cloud_sdk.BeeOSClient | None = None,
        a2a_agents: list[str] | None = None,
        a2a_counterpart: str = "",
        sweep: int | None = None,
        progress: Callable[[str], None] = lambda line: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tasks_api = beeos_sdk.TasksApi(client)
        self.ops_api = beeos_sdk.DefaultApi(client)
        self.instances = instances if instances is not None else list(settings.BEEOS_INSTANCES)
        if cloud is None and clients.cloud_configured():
            cloud = clients.cloud_client()
        self.cloud = cloud
        agents = a2a_agents if a2a_agents is not None else settings.BEEOS_A2A_AGENTS
        self.a2a_agents = list(dict.fromkeys(agents))
        self.a2a_counterpart = a2a_counterpart
        self.history_length = max(1, min(settings.BEEOS_A2A_HISTORY_LENGTH, A2A_HISTORY_MAX))
        self.sweep = max(0, settings.BEEOS_SYNC_SWEEP if sweep is None else sweep)
        self.progress = progress
        self.sleep = sleep
        self.report = SyncReport()
        # (protocol, task_id) read in this pass (or tried): never read twice in one pass.
        self.read: set[tuple[str, str]] = set()
        self.reread_missing = False  # this pass also re-reads objects marked missing
        # Inside ``run`` a 401 or a refused connection stops the pass; a single
        # read (a gateway's re-read) just counts it, like any failed read.
        self.stop_on_systemic_errors = False

    # --- reading -----------------------------------------------------------------------

    def _read(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def attempt() -> Any:
            return clients.raw_json(call, *args, **kwargs)

        try:
            return clients.honouring_rate_limits(attempt, sleep=self.sleep, on_wait=self._waited)
        except beeos_sdk.ApiException as exc:
            if exc.status == 401 and self.stop_on_systemic_errors:
                raise PassStopped("BeeOS refused the API key (check BEEOS_API_KEY)") from exc
            raise
        except urllib3.exceptions.HTTPError as exc:
            if _cannot_connect(exc) and self.stop_on_systemic_errors:
                raise PassStopped("BeeOS is unreachable (check BEEOS_API_URL)") from exc
            raise

    def _read_cloud(self, call: Callable[..., Any], *args: Any) -> Any:
        """A Cloud read through beeos-cloud-sdk; ``CloudStopped`` when no Cloud read can work."""
        try:
            return clients.honouring_rate_limits(
                lambda: call(*args), sleep=self.sleep, on_wait=self._waited
            )
        except beeos_cloud_sdk.APIError as exc:
            if exc.status == 401 and self.stop_on_systemic_errors:
                self._stop_cloud("BeeOS Cloud refused the API key (check BEEOS_CLOUD_API_KEY)", exc)
            raise
        except urllib.error.URLError as exc:
            refused = isinstance(exc.reason, ConnectionRefusedError | TimeoutError)
            if refused and self.stop_on_systemic_errors:
                self._stop_cloud("BeeOS Cloud is unreachable (check BEEOS_CLOUD_URL)", exc)
            raise

    def _stop_cloud(self, why: str, exc: BaseException) -> None:
        self.report.error(f"{why}; A2A reads stopped", exc)
        self.cloud = None
        raise CloudStopped(why) from exc

    def _waited(self, seconds: float) -> None:
        self.progress(f"rate limited: waiting {seconds:g} s (Retry-After)")

    def _ingest(
        self, what: str, ingest: Callable[..., IngestResult], data: Any
    ) -> IngestResult | None:
        try:
            with transaction.atomic():
                result = ingest(data, actor=ACTOR)
        except IngestError as exc:
            self.report.counts["rejected"] += 1
            self.report.errors.append(f"{what}: rejected ({exc})")
            return None
        self.report.add(result)
        return result

    # --- one pass ----------------------------------------------------------------------

    def run(self) -> SyncReport:
        missing_cursor = _cursor(MISSING_REREAD_CURSOR)
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
        parts: set[str] = set()
        failed: set[str] = set()  # parts of the pass with an error (for /metrics)

        def part(kind: str, *steps: Callable[[], None]) -> None:
            errors = self.report.counts["errors"]
            for step in steps:
                step()
            parts.add(kind)
            if self.report.counts["errors"] != errors:
                failed.add(kind)

        try:
            part("tasks", self.sync_task_pages)
            if self.a2a_agents and self.cloud is not None:
                part("a2a", self.sync_a2a_pages)
            part("tasks", self.reread_flagged, self.sweep_open_tasks, self.reread_missing_tasks)
            if self.instances:
                part("operations", *(partial(self.sync_operations, i) for i in self.instances))
        except PassStopped as exc:
            self.report.error(f"{exc.why}; pass stopped", exc.__cause__ or exc)
            self.after_pass()
            return self.report
        finally:
            self.stop_on_systemic_errors = False
        for kind in parts - failed:
            _save(_cursor(f"{SUCCESS_PREFIX}{kind}"), timezone.now().isoformat())
        if self.reread_missing:
            _save(missing_cursor, now.isoformat())
        self.after_pass()
        return self.report

    def after_pass(self) -> None:
        """Run the callables named in ``BEEOS_SYNC_AFTER_PASS`` (e.g. the agent cards'
        schedule): other features hook into the pass without this package importing
        them. Each takes no argument and returns a line for the output, or None; one
        that fails (or cannot be imported) is counted as an error and the rest still run.
        """
        for path in settings.BEEOS_SYNC_AFTER_PASS:
            try:
                line = import_string(path)()
            except Exception as exc:  # a hook's failure must not end an --every loop
                self.report.error(f"after the pass, {path}", exc)
                continue
            if line:
                self.progress(line)

    def _walk(
        self,
        name: str,
        label: str,
        what: str,
        fetch: Callable[[str | None], tuple[list[Any], str]],
        handle: Callable[[list[Any]], bool],
    ) -> None:
        """Walk a newest-first list page by page (see the module docstring, point 1).

        ``fetch(cursor)`` answers (rows, next cursor or ""); ``handle(rows)`` reads what
        is new, moved or flagged and answers whether every row was mirrored already.
        A cursor left by an earlier pass is walked first, then the top of the list.
        """
        stored = _cursor(name)
        pending = stored.value
        if pending == FULL_WALK:
            plan = [(None, True)]
        elif pending:
            plan = [(pending, False), (None, False)]
        else:
            plan = [(None, False)]
        retry = ""  # where the next pass must walk from: the first page something failed on
        number = 0
        for start, to_the_end in plan:
            cursor = start
            while True:
                number += 1
                try:
                    rows, next_cursor = fetch(cursor)
                except CloudStopped:
                    return
                except (*read_errors(), *CLOUD_READ_ERRORS) as exc:
                    self.report.error(f"{what} page {number}", exc)
                    retry = retry or cursor or ""
                    break
                before = Counter(self.report.counts)
                known = handle(rows)
                if self.report.counts["errors"] > before["errors"] and cursor:
                    retry = retry or cursor
                delta = self.report.counts - before
                self.progress(
                    f"{label} page {number}: {len(rows)} tasks "
                    f"({', '.join(f'{k} {v}' for k, v in sorted(delta.items())) or 'nothing new'})"
                )
                if not next_cursor or not rows or (known and not to_the_end):
                    break
                # Saved per page: an interrupted pass resumes after this page.
                self._save_walk(stored, retry or next_cursor)
                cursor = next_cursor
            self._save_walk(stored, retry)
        # Stamped each walk, changed or not: /metrics shows when the list was last walked.
        stored.save(update_fields=["updated_at"])

    @staticmethod
    def _save_walk(stored: SyncCursor, value: str) -> None:
        _save(stored, value if len(value) <= _VALUE_MAX else FULL_WALK)

    def _sweep_rows(
        self,
        qs: QuerySet,
        name: str,
        fields: Iterable[str],
        skip: Callable[[Any], bool],
        skipped: int,
    ) -> list[Any]:
        """The next ``self.sweep`` rows of ``qs`` in (created_at, id) order after the stored
        keyset cursor, wrapping around to the start; rows ``skip`` names (at most
        ``skipped`` of them: read already in this pass) are passed over."""
        if self.sweep <= 0:
            return []
        stored = _cursor(name)
        after = _keyset(stored.value)
        fields = ("pk", "created_at", *fields)
        picked: dict[int, Any] = {}
        extra = min(skipped, 5000)
        for key in [after, None] if after else [None]:
            if len(picked) == self.sweep:
                break
            rows = (
                qs
                if key is None
                else qs.filter(TupleGreaterThan(Tuple(F("created_at"), F("id")), key))
            )
            for row in rows.order_by("created_at", "id").values_list(*fields, named=True)[
                : self.sweep + extra
            ]:
                if len(picked) == self.sweep:
                    break
                if row.pk not in picked and not skip(row):
                    picked[row.pk] = row
        chosen = list(picked.values())
        if chosen:
            _save(stored, f"{chosen[-1].created_at.isoformat()}|{chosen[-1].pk}")
        return chosen

    # --- OpenAPI tasks -------------------------------------------------------------------

    def sync_task_pages(self) -> None:
        def fetch(since: str | None) -> tuple[list[Any], str]:
            body = self._read(
                self.tasks_api.list_user_tasks_without_preload_content,
                state="all",
                since=since,
                limit=TASK_PAGE,
            )
            data = (body or {}).get("data") or {}
            return data.get("tasks") or [], data.get("next_since") or ""

        self._walk(TASKS_CURSOR, "tasks", "listUserTasks", fetch, self._task_page)

    def _task_page(self, summaries: list[Any]) -> bool:
        """Read the new, moved or flagged tasks of one list page; True when none was new."""
        rows = [s for s in summaries if isinstance(s, dict) and isinstance(s.get("task_id"), str)]
        stored = {
            task_id: (agent_id, raw_state, flagged)
            for task_id, agent_id, raw_state, flagged in Task.objects.filter(
                protocol=task_states.OPENAPI, task_id__in=[s["task_id"] for s in rows]
            ).values_list("task_id", "agent_id", "raw_state", "resync_requested_at")
        }
        for summary in rows:
            task_id = summary["task_id"]
            known = stored.get(task_id)
            if known is not None and not _summary_moved(summary, *known):
                continue
            if (task_states.OPENAPI, task_id) not in self.read:
                self.sync_task(summary.get("agent_id") or (known[0] if known else ""), task_id)
        return all(s["task_id"] in stored for s in rows)

    def sync_task(self, agent_id: str, task_id: str, *, messages: bool = True) -> Outcome | None:
        """Read one task (getTask) into the mirror, then its messages: always, or only when
        the snapshot changed the mirror (``messages=False``). The outcome, None on failure."""
        self.read.add((task_states.OPENAPI, task_id))
        try:
            body = self._read(self.tasks_api.get_task_without_preload_content, agent_id, task_id)
        except read_errors() as exc:
            if is_vanished(exc):
                self.task_vanished(task_id)
            else:
                self.report.error(f"getTask {task_id}", exc)
            return None
        data = (body or {}).get("data")
        try:
            snapshot = parse_openapi_task(data)
        except IngestError as exc:
            self.report.counts["rejected"] += 1
            self.report.errors.append(f"task {task_id}: rejected ({exc})")
            return None
        with transaction.atomic():
            result = write_task(snapshot, actor=ACTOR, authoritative=True)
            self.report.add(result)
            Task.objects.filter(protocol=task_states.OPENAPI, task_id=task_id).update(
                resync_requested_at=None, upstream_missing_at=None
            )
        if messages or result.outcome in CHANGED:
            task_created = result.obj.created_at if result.obj is not None else None
            self.sync_messages(
                agent_id or snapshot.fields["agent_id"],
                task_id,
                task_created.isoformat() if task_created else None,
            )
        return result.outcome

    def task_vanished(self, task_id: str, protocol: str = task_states.OPENAPI) -> None:
        """The read answered 404: mark the mirrored task (the first 404 is kept)."""
        self.report.vanished()
        self.read.add((protocol, task_id))
        # The 404 also answers a webhook's re-read request.
        Task.objects.filter(protocol=protocol, task_id=task_id).update(
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
            except read_errors() as exc:
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

    # --- A2A tasks (beeos-cloud-sdk) -----------------------------------------------------

    def sync_a2a_pages(self) -> None:
        """Each configured agent's A2A tasks, sent and received, from the top (point 1)."""
        for agent_id in self.a2a_agents:
            for direction in ("sent", "received"):
                if self.cloud is None:
                    return
                self._walk_a2a(agent_id, direction)

    def _walk_a2a(self, agent_id: str, direction: str) -> None:
        options: dict[str, Any] = {"direction": direction, "limit": A2A_PAGE}
        parts = ["a2a", agent_id, direction]
        if self.a2a_counterpart:
            options["agent_id"] = self.a2a_counterpart
            parts.append(self.a2a_counterpart)

        def fetch(cursor: str | None) -> tuple[list[Any], str]:
            assert self.cloud is not None
            page = {**options, "cursor": cursor} if cursor else options
            body = self._read_cloud(self.cloud.a2a.list_tasks, agent_id, page)
            if not isinstance(body, dict):
                raise ValueError("a2a.listTasks answered no object")
            more = body.get("has_more") and body.get("next_cursor")
            return body.get("tasks") or [], str(more) if more else ""

        self._walk(
            cursor_name(*parts),
            f"A2A tasks of {agent_id} ({direction})",
            f"a2a.listTasks {agent_id} {direction}",
            fetch,
            lambda views: self._a2a_page(agent_id, views),
        )

    def _a2a_page(self, agent_id: str, views: list[Any]) -> bool:
        rows = [v for v in views if isinstance(v, dict) and isinstance(v.get("id"), str)]
        stored = {
            row[0]: row[1:]
            for row in Task.objects.filter(
                protocol=task_states.A2A, task_id__in=[v["id"] for v in rows]
            ).values_list(
                "task_id",
                "raw_state",
                "updated_at",
                "resync_requested_at",
                "a2a_direction",
                "a2a_counterpart",
            )
        }
        for view in rows:
            known = stored.get(view["id"])
            if known is not None and not self._a2a_moved(view, *known):
                continue
            if (task_states.A2A, view["id"]) not in self.read:
                self.sync_a2a_task(agent_id, view["id"])
        return all(v["id"] in stored for v in rows)

    def _a2a_moved(
        self,
        view: dict[str, Any],
        raw_state: str,
        updated_at: dt.datetime | None,
        flagged: dt.datetime | None,
        direction: str,
        counterpart: str,
    ) -> bool:
        """A listed A2A task differs from its mirror (or was flagged): read it again."""
        status = view.get("status") if isinstance(view.get("status"), dict) else {}
        stamp = _aware(status.get("timestamp"))
        side = self.a2a_side(view.get("caller_agent_id"), view.get("target_agent_id"))
        return (
            flagged is not None
            or status.get("state") != raw_state
            or (stamp is not None and stamp != updated_at)
            or (bool(side[0]) and side != (direction, counterpart))
        )

    def a2a_side(self, caller: Any, target: Any) -> tuple[str, str]:
        """(direction, counterpart) from the configured agents' side; ("", "") if neither.

        A task between two configured agents counts as sent, by its caller.
        """
        if caller and caller in self.a2a_agents:
            return Task.A2ADirection.SENT, str(target or "")
        if target and target in self.a2a_agents:
            return Task.A2ADirection.RECEIVED, str(caller or "")
        return "", ""

    def sync_a2a_task(self, agent_id: str, task_id: str) -> Outcome | None:
        """Read one A2A task (a2a.getTask, with the history the detail page needs) into the
        mirror; a history as long as asked for is recorded as possibly truncated."""
        if self.cloud is None:
            return None
        self.read.add((task_states.A2A, task_id))
        try:
            view = self._read_cloud(
                self.cloud.a2a.get_task, agent_id, task_id, {"history_length": self.history_length}
            )
        except CloudStopped:
            return None
        except CLOUD_READ_ERRORS as exc:
            if is_vanished(exc):
                self.task_vanished(task_id, task_states.A2A)
            else:
                self.report.error(f"a2a.getTask {task_id}", exc)
            return None
        try:
            snapshot = parse_a2a_task(view)
        except IngestError as exc:
            self.report.counts["rejected"] += 1
            self.report.errors.append(f"A2A task {task_id}: rejected ({exc})")
            return None
        history = view.get("history")
        full = isinstance(history, list) and len(history) >= self.history_length
        marks: dict[str, Any] = {
            "resync_requested_at": None,
            "upstream_missing_at": None,
            "history_truncated_to": self.history_length if full else None,
        }
        direction, counterpart = self.a2a_side(
            snapshot.fields["caller_agent_id"], snapshot.fields["target_agent_id"]
        )
        if direction:
            marks.update(a2a_direction=direction, a2a_counterpart=counterpart)
        with transaction.atomic():
            result = write_task(snapshot, actor=ACTOR, authoritative=True)
            self.report.add(result)
            Task.objects.filter(protocol=task_states.A2A, task_id=snapshot.task_id).update(**marks)
        return result.outcome

    # --- flagged, swept and missing tasks ------------------------------------------------

    def _readable(self) -> list[str]:
        """Task protocols this pass can read back: A2A only with a Cloud client."""
        return [task_states.OPENAPI] + ([task_states.A2A] if self.cloud is not None else [])

    def _reread(
        self, rows: Iterable[Any], *, messages: bool, limit: int = REREAD_LIMIT
    ) -> tuple[int, int]:
        """Read each row's task not yet read in this pass, at most ``limit``:
        (how many, how many changed)."""
        read = changed = 0
        for row in rows:
            if read == limit:
                break
            if (row.protocol, row.task_id) in self.read:
                continue
            read += 1
            if row.protocol == task_states.A2A:
                reader = self._a2a_reader(row.caller_agent_id, row.target_agent_id, row.agent_id)
                outcome = self.sync_a2a_task(reader, row.task_id)
            else:
                outcome = self.sync_task(row.agent_id, row.task_id, messages=messages)
            changed += outcome in CHANGED
        return read, changed

    def _a2a_reader(self, caller: str, target: str, agent: str) -> str:
        """The agent to read an A2A task through: a configured one when either side is."""
        for candidate in (caller, target):
            if candidate and candidate in self.a2a_agents:
                return candidate
        return agent

    _TASK_ROW = ("protocol", "task_id", "agent_id", "caller_agent_id", "target_agent_id")

    def reread_flagged(self) -> None:
        """Tasks a webhook flagged (the event could not carry the whole state), oldest first."""
        flagged = (
            Task.objects.filter(resync_requested_at__isnull=False, protocol__in=self._readable())
            .exclude(agent_id="")
            .order_by("resync_requested_at")
            .values_list(*self._TASK_ROW, named=True)
        )
        read, _ = self._reread(flagged[: REREAD_LIMIT + len(self.read)], messages=True)
        if read:
            self.progress(f"re-read {read} webhook-flagged tasks")

    def _open_tasks(self) -> QuerySet:
        return Task.objects.filter(
            protocol__in=self._readable(), status__in=OPEN_STATUSES, created_at__isnull=False
        ).exclude(agent_id="")

    def sweep_open_tasks(self) -> None:
        """The next ``sweep`` open tasks in turn (the webhooks guide's periodic poll)."""
        rows = self._sweep_rows(
            self._open_tasks().filter(upstream_missing_at__isnull=True),
            "tasks_sweep",
            self._TASK_ROW,
            skip=lambda row: (row.protocol, row.task_id) in self.read,
            skipped=len(self.read),
        )
        missing = self.report.counts[NOT_FOUND]
        read, changed = self._reread(rows, messages=False)
        if read:
            gone = self.report.counts[NOT_FOUND] - missing
            note = f", {gone} {NOT_FOUND}" if gone else ""
            self.progress(f"swept {read} open tasks ({changed} changed{note})")

    def reread_missing_tasks(self) -> None:
        """Open tasks marked missing, on a pass that re-reads them (rarely)."""
        if not self.reread_missing:
            return
        rows = (
            self._open_tasks()
            .filter(upstream_missing_at__isnull=False)
            .order_by("upstream_missing_at")
            .values_list(*self._TASK_ROW, named=True)
        )
        read, _ = self._reread(rows[: REREAD_LIMIT + len(self.read)], messages=True)
        if read:
            self.progress(f"re-read {read} tasks {NOT_FOUND}")

    # --- runtime operations ------------------------------------------------------

    def sync_operations(self, instance_id: str) -> None:
        seen: set[str] = set()
        self._list_operations(instance_id, seen)
        open_ops = RuntimeOperation.objects.filter(
            instance_id=instance_id, terminal=False, created_at__isnull=False
        ).exclude(raw_status__in=op_states.TERMINAL_STATUSES)
        rows = self._sweep_rows(
            open_ops.filter(upstream_missing_at__isnull=True),
            cursor_name("operations_sweep", instance_id),
            ("operation_id",),
            skip=lambda row: row.operation_id in seen,
            skipped=len(seen),
        )
        changed = 0
        for row in rows:
            seen.add(row.operation_id)
            changed += self.sync_operation(instance_id, row.operation_id, events=False) in CHANGED
        if rows:
            self.progress(f"swept {len(rows)} open operations of {instance_id} ({changed} changed)")
        if self.reread_missing:
            missing = open_ops.filter(upstream_missing_at__isnull=False).order_by(
                "upstream_missing_at"
            )
            for operation_id in missing.values_list("operation_id", flat=True)[:REREAD_LIMIT]:
                if operation_id not in seen:
                    seen.add(operation_id)
                    self.sync_operation(instance_id, operation_id)

    def _list_operations(self, instance_id: str, seen: set[str]) -> None:
        """The active list from the cursor of its last page to its end (module docstring)."""
        stored = _cursor(cursor_name("operations", instance_id))
        tail = Tail.load(stored.value)
        cursor, after = tail.cursor, tail.after
        start_after = after  # operations newer than this were all listed, if the walk ends
        listed: set[str] = set()
        page = 0
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
            except read_errors() as exc:
                if cursor and cursor == tail.cursor and clients.status_of(exc) == 400:
                    # BeeOS no longer takes the stored cursor: list from the start.
                    self.progress(f"operations of {instance_id}: cursor refused, from the start")
                    cursor = after = start_after = None
                    tail = Tail()
                    continue
                self.report.error(f"listRuntimeOperations {instance_id}", exc)
                _save(stored, tail.dump())
                return
            operations = [op for op in (body or {}).get("operations") or [] if isinstance(op, dict)]
            ids = [str(op.get("id") or "") for op in operations]
            seen.update(ids)
            listed.update(ids)
            for operation_id in self._write_operation_page(operations):
                self.sync_operation_events(instance_id, operation_id)
            self.progress(f"operations of {instance_id} page {page}: {len(operations)}")
            if operations:
                tail = Tail(cursor, after)
                after = _aware(operations[-1].get("createdAt"))
            cursor = (body or {}).get("nextCursor")
            if not cursor or not operations:
                break
        _save(stored, tail.dump())
        # Mirrored as open, newer than where this listing started, yet not listed: left the
        # active list. Read how they ended (ties with that start are the sweep's).
        open_ops = RuntimeOperation.objects.filter(
            instance_id=instance_id, terminal=False, upstream_missing_at__isnull=True
        ).exclude(raw_status__in=op_states.TERMINAL_STATUSES)
        if start_after is not None:
            open_ops = open_ops.filter(created_at__gt=start_after)
        left = [
            operation_id
            for operation_id in open_ops.order_by("created_at").values_list(
                "operation_id", flat=True
            )
            if operation_id not in listed
        ]
        for operation_id in left[:REREAD_LIMIT]:
            seen.add(operation_id)
            self.sync_operation(instance_id, operation_id)

    def _write_operation_page(self, operations: list[dict[str, Any]]) -> list[str]:
        """A list page's snapshots, written set-based (one locked read, one or two writes,
        whatever the page size): the ids of those that changed the mirror."""
        items = []
        for index, op in enumerate(operations):
            try:
                items.append((index, parse_operation_snapshot(op)))
            except IngestError as exc:
                self.report.counts["rejected"] += 1
                self.report.errors.append(f"operation {op.get('id')}: rejected ({exc})")
        batch = Batch(ACTOR)
        try:
            with transaction.atomic():
                write_operations(batch, items)
                batch.flush()
        except DatabaseError:
            # A row another writer inserted meanwhile fails the statement: one by one.
            results = [
                self._ingest(f"operation {s.operation_id}", ingest_runtime_operation, s.payload)
                for _, s in items
            ]
        else:
            results = [batch.results[index] for index, _ in items]
            for result in results:
                self.report.add(result)
        return [r.object_id for r in results if r is not None and r.outcome in CHANGED]

    def sync_operation(
        self, instance_id: str, operation_id: str, *, events: bool = True
    ) -> Outcome | None:
        """Read one operation into the mirror, then its event stream: always, or only when
        the snapshot changed the mirror (``events=False``). The outcome, None on failure."""
        try:
            snapshot = self._read(
                self.ops_api.get_runtime_operation_without_preload_content,
                instance_id,
                operation_id,
            )
        except read_errors() as exc:
            if is_vanished(exc):
                self.operation_vanished(operation_id)
            else:
                self.report.error(f"getRuntimeOperation {operation_id}", exc)
            return None
        result = self._ingest(f"operation {operation_id}", ingest_runtime_operation, snapshot)
        RuntimeOperation.objects.filter(
            operation_id=operation_id, upstream_missing_at__isnull=False
        ).update(upstream_missing_at=None)
        outcome = result.outcome if result is not None else None
        if events or outcome in CHANGED:
            self.sync_operation_events(instance_id, operation_id)
        return outcome

    def sync_operation_events(self, instance_id: str, operation_id: str) -> None:
        try:
            response = self.ops_api.stream_runtime_operation_events_without_preload_content(
                instance_id, operation_id, _request_timeout=clients.TIMEOUT
            )
            text = response.data.decode("utf-8", "replace")
            if response.status >= 400:
                raise beeos_sdk.ApiException(status=response.status, body=text)
        except read_errors() as exc:
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


def _summary_moved(
    summary: dict[str, Any], agent_id: str, raw_state: str, flagged: dt.datetime | None
) -> bool:
    """A listed task differs from its mirror (or was flagged): read it again.

    A TaskSummary carries only the channel state (``active`` / ``closed``), so that is
    what is compared: a task listed closed that the mirror holds open ended upstream.
    """
    closed = summary.get("state") == "closed"
    return (
        flagged is not None
        or not agent_id
        or closed != task_states.is_terminal(task_states.OPENAPI, raw_state)
    )
