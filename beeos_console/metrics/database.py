"""The built-in database gauges: each a registered source, each a fixed number of queries.

What each costs:

- status counts (tasks by status and by protocol, operations): the maintained
  counters (``mirror.counters``), one SUM over them;
- stuck work, late projections, uncertain cancels, the
  worker's queue: indexed queries under a ``LIMIT`` of ``METRICS_COUNT_CAP`` rows
  (exact below the cap, the cap above it);
- sync: the handful of ``SyncCursor`` rows;
- projection audit: the counts inside the newest finished audit job's report
  (read in SQL; its examples never leave the database).
- webhook inbox: queued, applied and failed events (capped) and the oldest queued
  one's age, one statement (``upstream.selectors.webhook_backlog``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, F, Min, Q, QuerySet, Sum, When
from django.utils.dateparse import parse_datetime
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max
from prometheus_client.metrics_core import Metric

from beeos_console.agents.models import AgentScorecard
from beeos_console.agents.scorecard import LINES as SCORECARD_LINE_DEFS
from beeos_console.cancels.models import CancelRequest
from beeos_console.dashboard.selectors import ATTENTION_STATUSES
from beeos_console.metrics.sources import count_cap, epoch, gauge, source
from beeos_console.mirror import counters
from beeos_console.mirror.attention import stuck_cutoff, stuck_q
from beeos_console.mirror.models import StatusCount
from beeos_console.mirror.states import DISPLAY_STATUSES
from beeos_console.projection.audit import FAILING, INFORMATIONAL
from beeos_console.projection.models import ProjectionJob
from beeos_console.upstream.models import SyncCursor
from beeos_console.upstream.selectors import webhook_backlog
from operations.models import RuntimeOperation
from tasks.models import Task
from tasks.states import TASK_PROTOCOLS

# The dashboard's "operations needing attention" chart: these raw statuses.
ATTENTION_RAW_STATUSES = (*ATTENTION_STATUSES, "projection_pending")
# SyncCursor rows named "last_success:<kind>" hold when a sync pass of <kind> last
# finished without an error (ISO 8601 in ``value``). Written by the sync.
SYNC_SUCCESS_PREFIX = "last_success:"
SCORECARD_LINES = tuple(line.key for line in SCORECARD_LINE_DEFS)
AUDIT_CATEGORIES = {**dict.fromkeys(FAILING, "true"), **dict.fromkeys(INFORMATIONAL, "false")}


def capped_counts(querysets: Mapping[str, QuerySet]) -> dict[str, int]:
    """Each queryset's row count up to ``METRICS_COUNT_CAP``, all in one round trip.

    Every count runs over a ``LIMIT``-ed subquery: an index range scan that stops at
    the cap, whatever the table's size.
    """
    cap = count_cap()
    names = list(querysets)
    parts, params = [], []
    for i, name in enumerate(names):
        sql, part_params = querysets[name].order_by().values("pk")[:cap].query.sql_with_params()
        parts.append(f"SELECT {i}, COUNT(*) FROM ({sql}) AS capped_{i}")
        params.extend(part_params)
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        return {names[i]: n for i, n in cursor.fetchall()}


def stuck_tasks(now: dt.datetime) -> QuerySet:
    """The dashboard's "stuck work": queued or processing, no upstream change since the cutoff."""
    return Task.objects.filter(stuck_q(stuck_cutoff(now)))


def stuck_operations(now: dt.datetime) -> QuerySet:
    """The same rule for runtime operations (the lists' ``?stuck=`` and the detail banner)."""
    return RuntimeOperation.objects.filter(stuck_q(stuck_cutoff(now)))


def late_projections(now: dt.datetime) -> QuerySet:
    """The dashboard's "projection pending for too long" operations."""
    return RuntimeOperation.objects.filter(
        raw_status="projection_pending", updated_at__lt=stuck_cutoff(now)
    )


@source("status_counts")
def status_counts(now: dt.datetime) -> Iterator[Metric]:
    by_protocol = {f"{p}:{s}": 0 for p in TASK_PROTOCOLS for s in DISPLAY_STATUSES}
    totals: dict[str, dict[str, int]] = {
        counters.TASK: dict.fromkeys(DISPLAY_STATUSES, 0),
        counters.TASK_PROTOCOL: by_protocol,
        counters.OPERATION: dict.fromkeys(DISPLAY_STATUSES, 0),
        counters.OPERATION_RAW: dict.fromkeys(ATTENTION_RAW_STATUSES, 0),
    }
    grouped = (
        StatusCount.objects.filter(
            Q(kind__in=(counters.TASK, counters.TASK_PROTOCOL, counters.OPERATION))
            | Q(kind=counters.OPERATION_RAW, status__in=ATTENTION_RAW_STATUSES)
        )
        .values_list("kind", "status")
        .annotate(n=Sum("count"))
        .order_by()
    )
    for kind, status, n in grouped:
        totals[kind][status] = n or 0
    yield gauge(
        "beeos_console_tasks",
        "Mirrored tasks by product status (maintained counters, all time).",
        labels={(s,): n for s, n in totals[counters.TASK].items()},
        label_names=("status",),
    )
    yield gauge(
        "beeos_console_tasks_by_protocol",
        "Mirrored tasks by protocol and product status (maintained counters, all time).",
        labels={
            tuple(counters.split_value(value)): n
            for value, n in totals[counters.TASK_PROTOCOL].items()
        },
        label_names=("protocol", "status"),
    )
    yield gauge(
        "beeos_console_operations",
        "Mirrored runtime operations by product status (maintained counters, all time).",
        labels={(s,): n for s, n in totals[counters.OPERATION].items()},
        label_names=("status",),
    )
    yield gauge(
        "beeos_console_operations_needing_attention",
        "Runtime operations in the raw statuses the dashboard flags (maintained counters, "
        "all time).",
        labels={(s,): n for s, n in totals[counters.OPERATION_RAW].items()},
        label_names=("raw_status",),
    )


@source("open_work")
def open_work(now: dt.datetime) -> Iterator[Metric]:
    # Open tasks by protocol: ``beeos_console_tasks_by_protocol`` (the counters, uncapped).
    counts = capped_counts(
        {
            "stuck:task": stuck_tasks(now),
            "stuck:operation": stuck_operations(now),
            "late:projection_pending": late_projections(now),
        }
    )
    yield gauge(
        "beeos_console_stuck_work",
        "Work queued or processing with no upstream change for longer than "
        "CONSOLE_STUCK_AFTER_MINUTES, as the dashboard counts it (capped count).",
        labels={("task",): counts["stuck:task"], ("operation",): counts["stuck:operation"]},
        label_names=("kind",),
    )
    yield gauge(
        "beeos_console_stuck_after_seconds",
        "How long without an upstream change makes queued or processing work stuck.",
        float(60 * settings.CONSOLE_STUCK_AFTER_MINUTES),
    )
    yield gauge(
        "beeos_console_operations_projection_pending_late",
        "Runtime operations in projection_pending for longer than the stuck threshold "
        "(the dashboard's list; capped count).",
        counts["late:projection_pending"],
    )


@source("uncertain_cancels")
def uncertain_cancels(now: dt.datetime) -> Iterator[Metric]:
    # The oldest first under the cap: the partial index of open uncertain cancels.
    row = (
        CancelRequest.objects.filter(CancelRequest.OPEN_UNCERTAIN)
        .order_by("created_at")
        .values("created_at", "gave_up_at")[: count_cap()]
        .aggregate(n=Count("created_at"), gave_up=Count("gave_up_at"), oldest=Min("created_at"))
    )
    yield gauge(
        "beeos_console_uncertain_cancels_open",
        "Cancels whose outcome is uncertain and that no re-read has resolved yet (capped count).",
        row["n"],
    )
    yield gauge(
        "beeos_console_uncertain_cancels_gave_up",
        "Of those, the ones whose re-reads ran out: check them with BeeOS by hand.",
        row["gave_up"],
    )
    oldest = row["oldest"]
    yield gauge(
        "beeos_console_uncertain_cancel_oldest_age_seconds",
        "Age of the oldest open uncertain cancel (0 when there is none).",
        (now - oldest).total_seconds() if oldest else 0.0,
    )


@source("sync")
def sync(now: dt.datetime) -> Iterator[Metric]:
    cursors = list(SyncCursor.objects.order_by("name").values_list("name", "value", "updated_at"))
    successes: dict[tuple[str, ...], float] = {}
    for name, value, updated_at in cursors:
        if name.startswith(SYNC_SUCCESS_PREFIX):
            at = _parsed(value) or updated_at
            successes[(name.removeprefix(SYNC_SUCCESS_PREFIX),)] = at.timestamp()
    yield gauge(
        "beeos_console_sync_last_success_timestamp_seconds",
        "When a sync pass of this kind last finished without an error (Unix time).",
        labels=successes,
        label_names=("kind",),
    )
    yield gauge(
        "beeos_console_sync_lag_seconds",
        "Seconds since a sync pass of this kind last finished without an error.",
        labels={kind: max(now.timestamp() - at, 0.0) for kind, at in successes.items()},
        label_names=("kind",),
    )
    yield gauge(
        "beeos_console_sync_cursor_updated_timestamp_seconds",
        "When the pull sync last moved this cursor (Unix time).",
        labels={
            (name,): updated_at.timestamp()
            for name, _value, updated_at in cursors
            if not name.startswith(SYNC_SUCCESS_PREFIX)
        },
        label_names=("cursor",),
    )


def _parsed(value: str) -> dt.datetime | None:
    try:
        at = parse_datetime(value)
    except ValueError:
        return None
    return at if at is not None and at.tzinfo is not None else None


# The newest finished audit's category counts, read inside the database: the report's
# examples (up to 50 per category) are never sent over.
AUDIT_COUNTS_SQL = f"""
SELECT job.finished_at, (job.report ->> 'failing')::boolean, category.key,
       (category.value ->> 'count')::bigint
FROM (
    SELECT finished_at, report FROM {ProjectionJob._meta.db_table}
    WHERE kind = %s AND state = %s ORDER BY created_at DESC LIMIT 1
) AS job
LEFT JOIN LATERAL jsonb_each(
    CASE WHEN jsonb_typeof(job.report -> 'categories') = 'object'
         THEN job.report -> 'categories' ELSE '{{}}'::jsonb END
) AS category ON TRUE
"""


@source("projection_audit")
def projection_audit(now: dt.datetime) -> Iterator[Metric]:
    with connection.cursor() as cursor:
        cursor.execute(AUDIT_COUNTS_SQL, [ProjectionJob.Kind.AUDIT, ProjectionJob.State.FINISHED])
        rows = cursor.fetchall()
    latest_state = (
        ProjectionJob.objects.filter(kind=ProjectionJob.Kind.AUDIT)
        .order_by("-created_at")
        .values_list("state", flat=True)
        .first()
    )
    findings = {(name, failing): 0 for name, failing in AUDIT_CATEGORIES.items()}
    finished_at, failing = (rows[0][0], rows[0][1]) if rows else (None, None)
    for _finished, _failing, name, count in rows:
        if name in AUDIT_CATEGORIES:  # a known category: bounded label values
            findings[(name, AUDIT_CATEGORIES[name])] = count or 0
    if rows:  # findings only when an audit has finished: none is not "nothing found"
        yield gauge(
            "beeos_console_projection_audit_findings",
            "Findings of the newest finished projection audit, by category; failing=true "
            "categories fail the audit.",
            labels=findings,
            label_names=("category", "failing"),
        )
    yield gauge(
        "beeos_console_projection_audit_failing",
        "1 when the newest finished projection audit found drift, unmapped values or "
        "broken invariants (0 also when none has finished yet).",
        1.0 if failing else 0.0,
    )
    yield gauge(
        "beeos_console_projection_audit_finished_timestamp_seconds",
        "When the newest finished projection audit ended (Unix time; 0: never).",
        epoch(finished_at) or 0.0,
    )
    yield gauge(
        "beeos_console_projection_audit_last_job_failed",
        "1 when the newest projection audit job crashed (state failed) instead of finishing.",
        1.0 if latest_state == ProjectionJob.State.FAILED else 0.0,
    )


@source("worker_jobs")
def worker_jobs(now: dt.datetime) -> Iterator[Metric]:
    ready = DBTaskResult.objects.ready()  # due now: what a free worker would take
    # Its wait starts when it became due: enqueued, or its run_after when it had one.
    due_since = Case(When(run_after=get_date_max(), then=F("enqueued_at")), default=F("run_after"))
    row = (
        ready.order_by()
        .annotate(due_since=due_since)
        .values("due_since")[: count_cap()]
        .aggregate(n=Count("due_since"), oldest=Min("due_since"))
    )
    later = DBTaskResult.objects.filter(status=TaskResultStatus.READY, run_after__gt=now)
    scheduled = capped_counts({"scheduled": later.exclude(run_after=get_date_max())})["scheduled"]
    yield gauge(
        "beeos_console_worker_jobs",
        "Background jobs waiting in the database queue: ready (due now) or scheduled "
        "(a later run_after, e.g. the re-reads of uncertain cancels); capped counts.",
        labels={("ready",): row["n"], ("scheduled",): scheduled},
        label_names=("status",),
    )
    oldest = row["oldest"]
    yield gauge(
        "beeos_console_worker_oldest_ready_job_age_seconds",
        "How long the longest-waiting due job has waited for a worker (0 when none).",
        max((now - oldest).total_seconds(), 0.0) if oldest else 0.0,
    )


@source("webhook_inbox")
def webhook_inbox(now: dt.datetime) -> Iterator[Metric]:
    """The webhook inbox (``upstream.selectors.webhook_backlog``): one bounded query."""
    backlog = webhook_backlog(cap=count_cap())
    yield gauge(
        "beeos_console_webhook_backlog",
        "Webhook events stored and acknowledged, not yet applied (capped count).",
        min(backlog.queued, count_cap()),
    )
    yield gauge(
        "beeos_console_webhook_backlog_oldest_age_seconds",
        "How long the oldest queued webhook event has waited to be applied (0 when none).",
        backlog.oldest_age_seconds,
    )
    yield gauge(
        "beeos_console_webhook_failed",
        "Webhook events that could not be applied, kept with their error for an admin "
        "at /webhooks/ (capped count).",
        min(backlog.failed, count_cap()),
    )
    yield gauge(
        "beeos_console_webhook_inbox_events",
        "Webhook events in the inbox by status: queued, applied, failed (kept with their "
        "error for an admin at /webhooks/); capped counts.",
        labels={(status,): n for status, n in backlog.by_status.items()},
        label_names=("status",),
    )


# The agents' conformance scorecards, summed per line inside the database: one row per line
# (and one for the whole table), over at most METRICS_COUNT_CAP scorecards (one per agent).
SCORECARD_SQL = f"""
WITH s AS (
    SELECT lines, computed_at FROM {AgentScorecard._meta.db_table}
    ORDER BY rank DESC, id DESC LIMIT %(cap)s
)
SELECT line.key, sum((line.value ->> 'count')::bigint),
       count(*) FILTER (WHERE (line.value ->> 'level')::int > 0), NULL::timestamptz
FROM s CROSS JOIN LATERAL jsonb_each(
    CASE WHEN jsonb_typeof(s.lines) = 'object' THEN s.lines ELSE '{{}}'::jsonb END
) AS line
GROUP BY line.key
UNION ALL
SELECT '', 0, count(*), max(computed_at) FROM s
"""


@source("agent_scorecard")
def agent_scorecard(now: dt.datetime) -> Iterator[Metric]:
    """Per scorecard line: the tasks it counts over all agents, and the agents it does not
    pass for. Per-agent series are left out on purpose: one per agent and line would grow
    with every agent the platform adds (500 agents × 10 lines = 5,000 series)."""
    with connection.cursor() as cursor:
        cursor.execute(SCORECARD_SQL, {"cap": count_cap()})
        rows = cursor.fetchall()
    tasks = dict.fromkeys(SCORECARD_LINES, 0)
    failing = dict.fromkeys(SCORECARD_LINES, 0)
    agents, computed_at = 0, None
    for key, count, not_passing, newest in rows:
        if key == "":
            agents, computed_at = not_passing, newest
        elif key in tasks:  # a known line: bounded label values
            tasks[key], failing[key] = int(count or 0), int(not_passing or 0)
    yield gauge(
        "beeos_console_agent_scorecard_tasks",
        "Tasks each conformance scorecard line counts, summed over every agent (the newest "
        "scoring; the protocol_versions line counts versions seen).",
        labels={(key,): n for key, n in tasks.items()},
        label_names=("line",),
    )
    yield gauge(
        "beeos_console_agent_scorecard_agents_not_passing",
        "Agents for which this conformance scorecard line does not pass (a note, a warning "
        "or a failure).",
        labels={(key,): n for key, n in failing.items()},
        label_names=("line",),
    )
    yield gauge(
        "beeos_console_agent_scorecard_agents", "Agents with a scorecard (capped count).", agents
    )
    yield gauge(
        "beeos_console_agent_scorecard_computed_timestamp_seconds",
        "When the agents were last scored (Unix time; 0: never).",
        epoch(computed_at) or 0.0,
    )
