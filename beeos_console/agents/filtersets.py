"""The agents list's data filters (the same class would serve a REST list)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import ConsoleFilterSet
from beeos_console.mirror.models import AgentCount

from . import scorecard, selectors
from .models import AgentScorecard

ACTIVE_WITHIN = {name: span for name, (span, _label) in selectors.WINDOWS.items()}


class AgentIdContainsFilter(django_filters.CharFilter):
    """``?q=`` anywhere in the agent id (trigram index ``agentcount_agent_trgm_idx``)."""

    def filter(self, qs: QuerySet, value: str) -> QuerySet:
        value = (value or "").strip()
        return qs.filter(agent_id__icontains=value) if value else qs


class AgentFilterSet(ConsoleFilterSet):
    q = AgentIdContainsFilter(label=_("Agent id contains"), max_length=256)
    stuck = django_filters.BooleanFilter(label=_("Has stuck work"), method="filter_stuck")
    active_within = django_filters.ChoiceFilter(
        label=_("Active in the"),
        choices=[(name, label) for name, (_span, label) in selectors.WINDOWS.items()],
        method="filter_active_within",
    )

    class Meta:
        model = AgentCount
        fields: list[str] = []

    def filter_stuck(self, qs: QuerySet, name: str, value: Any) -> QuerySet:
        if value is None:
            return qs
        with_stuck = selectors.with_stuck_work(qs)
        return with_stuck if value else qs.exclude(pk__in=with_stuck.values("pk"))

    def filter_active_within(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        span: dt.timedelta | None = ACTIVE_WITHIN.get(value)
        return qs.filter(last_activity__gte=timezone.now() - span) if span else qs


class ScorecardFilterSet(ConsoleFilterSet):
    """The admins' scorecard ranking: agent id, worst line, only agents not passing."""

    q = AgentIdContainsFilter(label=_("Agent id contains"), max_length=256)
    worst_line = django_filters.ChoiceFilter(
        choices=scorecard.line_choices(), label=_("Worst line")
    )
    failing = django_filters.BooleanFilter(label=_("A line does not pass"), method="filter_failing")

    class Meta:
        model = AgentScorecard
        fields: list[str] = []

    def filter_failing(self, qs: QuerySet, name: str, value: Any) -> QuerySet:
        if value is None:
            return qs
        return qs.filter(scorecard.failing_q()) if value else qs.exclude(scorecard.failing_q())
