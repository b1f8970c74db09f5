"""The agents list and an agent's page: thin views over selectors, tables and templates."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from beeos_console.auditlog.selectors import audit_trail
from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from beeos_console.core.links import ObjectUrl, object_url, query_string
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin, deny, role_required
from beeos_console.core.redirects import safe_next
from beeos_console.mirror.attention import stuck_minutes
from beeos_console.mirror.columns import AGENT_URL
from beeos_console.upstream.clients import UpstreamNotConfigured

from . import graph, scorecard, selectors, services
from . import tasks as jobs
from .filtersets import AgentFilterSet, ScorecardFilterSet
from .forms import AgentFilterForm, ScorecardFilterForm
from .models import AgentCard
from .tables import AgentTable, ScorecardTable, capped, status_counts


class AgentListView(RoleRequiredMixin, KeysetListView):
    filterset_class = AgentFilterSet
    form_class = AgentFilterForm
    table_class = AgentTable
    title = _("Agents")
    sort_fields = {"active": "last_activity"}
    default_sort = "active"
    ascending_sorts = {"agent": "agent_id"}

    def get_queryset(self) -> QuerySet:
        return selectors.agents().only(*AgentTable.fields)

    def get_table(self, rows: list[Any]) -> AgentTable:
        # The page's counts and stuck work: two queries for the whole page.
        ids = [row.agent_id for row in rows]
        counts = selectors.counts_of(ids)
        stuck = selectors.stuck_of(ids, cap=selectors.LIST_STUCK_CAP)
        for row in rows:
            row.counts, row.stuck = counts.get(row.agent_id), stuck.get(row.agent_id)
        return AgentTable(rows)


def _window(request: HttpRequest) -> tuple[str, bool]:
    window = request.GET.get("window") or selectors.DEFAULT_WINDOW
    if window not in selectors.WINDOWS:
        return selectors.DEFAULT_WINDOW, False
    return window, True


def _pair_url(tasks_url: str, since_iso: str) -> Any:
    def url(edge: selectors.Edge) -> str:
        query = {
            "caller_agent_id": edge.caller,
            "target_agent_id": edge.target,
            "created_after": since_iso,
        }
        return tasks_url + query_string(query)

    return url


@role_required(roles.SUPPORT)
def agent_detail(request: HttpRequest, agent_id: str) -> HttpResponse:
    counts = selectors.counts_of([agent_id]).get(agent_id)
    card = selectors.card_of(agent_id)
    if counts is None and card is None:
        raise Http404("No task or agent card names this agent.")
    status = 200
    window, valid = _window(request)
    if not valid:
        messages.warning(request, gettext("Unknown time window; showing the last 24 h."))
        status = 400
    stuck = selectors.stuck_of([agent_id]).get(agent_id, {})
    card_score = selectors.scorecard_of(agent_id)
    delegation = selectors.delegation(agent_id, window)
    tasks_url = reverse("tasks:list")
    pair_url = _pair_url(tasks_url, delegation.since.isoformat())
    agent_url = ObjectUrl(AGENT_URL)
    context = {
        "agent_id": agent_id,
        "counts": counts or selectors.AgentCounts(),
        "count_rows": [
            {**row, "html": status_counts(None, row["counts"])}
            for row in (counts.rows() if counts else [])
        ],
        "stuck": [
            {"label": selectors.ROLE_LABELS[role], "count": capped(n), "role": role}
            for role, n in stuck.items()
        ],
        "card": card,
        "delegation": delegation,
        "windows": [(name, label) for name, (_span, label) in selectors.WINDOWS.items()],
        "graph": graph.draw(agent_id, delegation, agent_url=agent_url, pair_url=pair_url),
        "edges": [
            (edge, pair_url(edge), graph.edge_words(edge), graph.pattern(edge)[1])
            for edge in (*delegation.receives, *delegation.sends)
        ],
        "tasks_as": {
            role: tasks_url + query_string({column: agent_id})
            for role, column in (
                ("agent", "agent_id"),
                ("caller", "caller_agent_id"),
                ("target", "target_agent_id"),
            )
        },
        "stuck_minutes": stuck_minutes(),
        "can_refresh": roles.has_role(request.user, roles.OPERATOR),
        "scorecard": card_score,
        "score_lines": scorecard.shown_lines(card_score) if card_score else [],
        "trail": audit_trail(services.AUDIT_KIND, agent_id),
    }
    return render(request, "agents/detail.html", context, status=status)


class ScorecardListView(RoleRequiredMixin, KeysetListView):
    """Every agent's scorecard, worst line first (admins)."""

    required_role = roles.ADMIN
    filterset_class = ScorecardFilterSet
    form_class = ScorecardFilterForm
    table_class = ScorecardTable
    template_name = "agents/scorecards.html"
    title = _("Agent conformance scorecards")
    sort_fields = {"rank": "rank"}
    default_sort = "rank"
    ascending_sorts = {"agent": "agent_id"}

    def get_queryset(self) -> QuerySet:
        return selectors.scorecards().only(*ScorecardTable.fields)

    def get_context_data(self, **context: Any) -> dict[str, Any]:
        context["newest_scored"] = scorecard.newest_computed_at()
        return context


@require_http_methods(["POST"])
@role_required(roles.OPERATOR)
def score_now_view(request: HttpRequest) -> HttpResponse:
    """POST: have the worker score every agent now (operators; audited)."""
    queued = jobs.request_scoring()
    agent_id = request.POST.get("agent_id", "")[:256]
    services.record_scoring_request(Actor.of_user(request.user), queued=queued, agent_id=agent_id)
    if queued:
        messages.success(
            request, gettext("Scoring queued: the worker scores every agent in a moment.")
        )
    else:
        messages.info(request, gettext("Scoring is already queued: the worker will run it."))
    fallback = object_url("agents:detail", agent_id) if agent_id else reverse("agents:scorecards")
    return redirect(safe_next(request, request.POST.get("next"), fallback))


@require_http_methods(["GET", "POST"])
@role_required(roles.SUPPORT)
def refresh_card_view(request: HttpRequest, agent_id: str) -> HttpResponse:
    """POST: re-read the agent's card now (operators; audited). A GET is the page of the
    agent whose id ends in ``/card/refresh`` (ids may hold ``/``)."""
    if request.method == "GET":
        return agent_detail(request, f"{agent_id}/card/refresh")
    if not roles.has_role(request.user, roles.OPERATOR):
        raise deny(roles.OPERATOR)
    error = ""
    try:
        card: AgentCard | None = services.refresh_card(agent_id, actor=Actor.of_user(request.user))
    except UpstreamNotConfigured:
        card = selectors.card_of(agent_id)
        error = gettext("The BeeOS Cloud is not configured (BEEOS_CLOUD_URL): nothing was read.")
    if getattr(request, "htmx", None):
        context = {"agent_id": agent_id, "card": card, "can_refresh": True, "card_error": error}
        return render(request, "agents/_card.html", context, status=409 if error else 200)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, gettext("Agent card read again."))
    return redirect(object_url("agents:detail", agent_id))
