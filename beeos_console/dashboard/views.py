"""The landing dashboard."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from beeos_console.dashboard.selectors import dashboard_context
from beeos_console.dashboard.tables import dashboard_tables
from beeos_console.upstream.selectors import webhook_backlog


@role_required(roles.SUPPORT)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Counts, per-hour charts, stuck work, operations needing attention, recent cancels."""
    context = dashboard_context()
    context.update(dashboard_tables(context))
    if roles.has_role(request.user, roles.OPERATOR):
        context["webhook_backlog"] = webhook_backlog()
    return render(request, "console/dashboard.html", context)
