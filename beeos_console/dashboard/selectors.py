"""The dashboard's numbers: maintained counters and small indexed reads only."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.translation import gettext

from beeos_console.cancels.selectors import open_uncertain_cancels
from beeos_console.mirror import counters
from beeos_console.mirror.attention import stuck_cutoff, stuck_minutes, stuck_q
from beeos_console.mirror.i18n import status_label
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
# Below the bars: the time axis (hour labels every CHART_TICK_HOURS hours).
CHART_AXIS_HEIGHT = 16
CHART_TICK_HOURS = 6
# Colour is never the only signal: each series also has its own fill pattern
# (drawn by console/_chart.html), numbered in legend order.
CHART_PATTERNS = ("solid", "stripes", "dots", "hlines", "vlines", "cross")


@dataclass
class Bar:
    x: float
    y: float
    height: float
    colour: str
    label: str
    pattern: str = "solid"
    series: int = 0


@dataclass(frozen=True)
class Series:
    """One legend entry: its colour, its pattern and its 24 h total."""

    key: str
    colour: str
    pattern: str
    total: int


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
    slug: str = "chart"
    axis_height: int = CHART_AXIS_HEIGHT
    ticks: list[tuple[float, str]] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    # The numbers as text, hour by hour: (hour label, counts in legend order, total).
    rows: list[tuple[str, list[int], int]] = field(default_factory=list)

    @property
    def full_height(self) -> int:
        return self.height + self.axis_height


@dataclass(frozen=True)
class Window:
    """The dashboard's "last 24 h": the 24 whole UTC hours the charts draw, this one included.

    Counters count a row under the hour of its ``created_at``, so the rows a
    number counts are exactly those created in ``[start, end)``: the lists the
    numbers link to filter on that very range (``created_after`` / ``created_before``).
    """

    start: dt.datetime
    end: dt.datetime

    @classmethod
    def last_day(cls, now: dt.datetime) -> Window:
        end = counters.hour_of(now) + dt.timedelta(hours=1)
        return cls(end - dt.timedelta(hours=CHART_HOURS), end)

    @property
    def hours(self) -> list[dt.datetime]:
        return [self.start + dt.timedelta(hours=i) for i in range(CHART_HOURS)]

    @property
    def query(self) -> str:
        """The list filter of this window (UTC, as the filter panel shows it)."""
        fmt = "%Y-%m-%dT%H:%M"
        return f"created_after={self.start:{fmt}}&created_before={self.end:{fmt}}"


def day_series(kind: str, window: Window) -> dict[dt.datetime, dict[str, int]]:
    """One kind's counters per hour and status, for the window's hours only (one query)."""
    series = counters.hourly(kind, window.start)
    return {hour: series[hour] for hour in window.hours if hour in series}


def series_totals(series: dict[dt.datetime, dict[str, int]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for by_status in series.values():
        for status, n in by_status.items():
            totals[status] = totals.get(status, 0) + n
    return {status: n for status, n in totals.items() if n}


def hourly_chart(
    title: str,
    series: dict[dt.datetime, dict[str, int]],
    keys: tuple[str, ...],
    colours: dict[str, str],
    window: Window,
    slug: str = "chart",
) -> HourlyChart:
    """The window's series as stacked bars; its legend sums are the card's "last 24 h" numbers."""
    hours = window.hours
    totals = [sum(series.get(h, {}).get(k, 0) for k in keys) for h in hours]
    peak = max(totals, default=0)
    chart = HourlyChart(title=title, peak=peak, first_hour=window.start, slug=slug)
    slot = CHART_WIDTH / CHART_HOURS
    chart.bar_width = slot - 2
    sums = dict.fromkeys(keys, 0)
    patterns = {key: (CHART_PATTERNS[i % len(CHART_PATTERNS)], i) for i, key in enumerate(keys)}
    for i, hour in enumerate(hours):
        if i % CHART_TICK_HOURS == 0 or i == len(hours) - 1:
            chart.ticks.append((i * slot + slot / 2, f"{hour:%H}:00"))
        counts = [series.get(hour, {}).get(key, 0) for key in keys]
        if any(counts):
            chart.rows.append((f"{hour:%Y-%m-%d %H}:00", counts, sum(counts)))
        y = float(CHART_HEIGHT)
        for key in keys:
            n = series.get(hour, {}).get(key, 0)
            sums[key] += n
            if not n or not peak:
                continue
            h = CHART_HEIGHT * n / peak
            y -= h
            label = gettext("%(hour)s UTC: %(count)s %(status)s") % {
                "hour": f"{hour:%H:00}",
                "count": n,
                "status": status_label(key),
            }
            chart.bars.append(
                Bar(i * slot + 1, y, h, colours.get(key, "grey"), label, *patterns[key])
            )
    chart.legend = [(key, colours.get(key, "grey"), sums[key]) for key in keys]
    chart.series = [Series(k, colour, patterns[k][0], total) for k, colour, total in chart.legend]
    return chart


def dashboard_context() -> dict:
    now = timezone.now()
    window = Window.last_day(now)
    task_day = day_series(counters.TASK, window)
    operation_day = day_series(counters.OPERATION, window)
    raw_day = day_series(counters.OPERATION_RAW, window)
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
        Task.objects.filter(stuck_q(cutoff))
        .order_by("updated_at", "pk")  # as the list's "longest stuck first"
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
        "stuck_minutes": stuck_minutes(),
        "window": window,
        "task_counts": _count_rows(series_totals(task_day), counters.totals(counters.TASK)),
        "operation_counts": _count_rows(
            series_totals(operation_day), counters.totals(counters.OPERATION)
        ),
        "attention_counts": series_totals(raw_day),
        "task_chart": hourly_chart(
            gettext("Tasks created per hour, by product status"),
            task_day,
            DISPLAY_STATUSES,
            task_colours,
            window,
            slug="tasks",
        ),
        "attention_chart": hourly_chart(
            gettext("Operations needing attention, per hour created"),
            raw_day,
            (*ATTENTION_STATUSES, "projection_pending"),
            ATTENTION_COLOURS,
            window,
            slug="attention",
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
