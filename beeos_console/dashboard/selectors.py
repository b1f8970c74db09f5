"""The dashboard's numbers: maintained counters and small indexed reads only."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from beeos_console.cancels.selectors import open_uncertain_cancels
from beeos_console.mirror import counters
from beeos_console.mirror.states import DISPLAY_STATUSES, STATUS_COLOURS
from operations.models import RuntimeOperation
from tasks.models import Task

ATTENTION_STATUSES = ("outcome_unknown", "projection_blocked", "expired")
ATTENTION_COLOURS = {
    "outcome_unknown": "red",
    "projection_blocked": "purple",
    "expired": "amber",
    "projection_pending": "blue",
}
LIST_ROWS = 10
CHART_HOURS = 24
CHART_WIDTH = 480
CHART_HEIGHT = 96


@dataclass
class Bar:
    x: float
    y: float
    height: float
    colour: str
    label: str


@dataclass
class HourlyChart:
    """24 per-hour stacked bars, drawn as inline SVG by the template."""

    title: str
    bars: list[Bar] = field(default_factory=list)
    peak: int = 0
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    bar_width: float = 0.0
    legend: list[tuple[str, str, int]] = field(default_factory=list)
    first_hour: dt.datetime | None = None


def hourly_chart(
    title: str, kind: str, keys: tuple[str, ...], colours: dict[str, str], now: dt.datetime
) -> HourlyChart:
    start = counters.hour_of(now) - dt.timedelta(hours=CHART_HOURS - 1)
    series = counters.hourly(kind, start)
    hours = [start + dt.timedelta(hours=i) for i in range(CHART_HOURS)]
    totals = [sum(series.get(h, {}).get(k, 0) for k in keys) for h in hours]
    peak = max(totals, default=0)
    chart = HourlyChart(title=title, peak=peak, first_hour=start)
    slot = CHART_WIDTH / CHART_HOURS
    chart.bar_width = slot - 2
    sums = dict.fromkeys(keys, 0)
    for i, hour in enumerate(hours):
        y = float(CHART_HEIGHT)
        for key in keys:
            n = series.get(hour, {}).get(key, 0)
            sums[key] += n
            if not n or not peak:
                continue
            h = CHART_HEIGHT * n / peak
            y -= h
            label = f"{hour:%H:00} UTC: {n} {key}"
            chart.bars.append(Bar(i * slot + 1, y, h, colours.get(key, "grey"), label))
    chart.legend = [(key, colours.get(key, "grey"), sums[key]) for key in keys]
    return chart


def stuck_cutoff(now: dt.datetime) -> dt.datetime:
    return now - dt.timedelta(minutes=settings.CONSOLE_STUCK_AFTER_MINUTES)


def dashboard_context() -> dict:
    now = timezone.now()
    since = now - dt.timedelta(hours=24)
    cutoff = stuck_cutoff(now)
    task_fields = (
        "id",
        "task_id",
        "protocol",
        "status",
        "raw_state",
        "reason",
        "agent_id",
        "created_at",
        "updated_at",
    )
    stuck = list(
        Task.objects.filter(status__in=("queued", "processing"), updated_at__lt=cutoff)
        .order_by("updated_at")
        .only(*task_fields)[: LIST_ROWS + 1]
    )
    op_fields = (
        "id",
        "operation_id",
        "method",
        "status",
        "raw_status",
        "effect_state",
        "projection_state",
        "error_code",
        "reason",
        "created_at",
        "updated_at",
    )
    attention = list(
        RuntimeOperation.objects.filter(raw_status__in=ATTENTION_STATUSES)
        .order_by("-updated_at")
        .only(*op_fields)[:LIST_ROWS]
    )
    pending_late = list(
        RuntimeOperation.objects.filter(raw_status="projection_pending", updated_at__lt=cutoff)
        .order_by("updated_at")
        .only(*op_fields)[:LIST_ROWS]
    )
    cancelled = list(
        Task.objects.filter(status="cancelled")
        .order_by("-updated_at")
        .only(*task_fields)[:LIST_ROWS]
    )
    task_colours = dict(STATUS_COLOURS)
    uncertain = open_uncertain_cancels(LIST_ROWS + 1)
    return {
        "now": now,
        "stuck_minutes": settings.CONSOLE_STUCK_AFTER_MINUTES,
        "task_counts": _count_rows(
            counters.totals(counters.TASK, since), counters.totals(counters.TASK)
        ),
        "operation_counts": _count_rows(
            counters.totals(counters.OPERATION, since), counters.totals(counters.OPERATION)
        ),
        "attention_counts": counters.totals(counters.OPERATION_RAW, since),
        "task_chart": hourly_chart(
            "Tasks created per hour, by product status",
            counters.TASK,
            DISPLAY_STATUSES,
            task_colours,
            now,
        ),
        "attention_chart": hourly_chart(
            "Operations needing attention, per hour created",
            counters.OPERATION_RAW,
            (*ATTENTION_STATUSES, "projection_pending"),
            ATTENTION_COLOURS,
            now,
        ),
        "stuck": stuck[:LIST_ROWS],
        "stuck_more": len(stuck) > LIST_ROWS,
        "attention": attention,
        "pending_late": pending_late,
        "cancelled": cancelled,
        "uncertain_cancels": uncertain[:LIST_ROWS],
        "uncertain_more": len(uncertain) > LIST_ROWS,
    }


def _count_rows(last_day: dict[str, int], all_time: dict[str, int]) -> list[tuple[str, int, int]]:
    keys = [s for s in DISPLAY_STATUSES if s in all_time or s in last_day]
    return [(s, last_day.get(s, 0), all_time.get(s, 0)) for s in keys]
