"""Console-wide pages: the landing dashboard and the load balancer probes."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from . import roles
from .dashboard import dashboard_context
from .permissions import role_required


@role_required(roles.SUPPORT)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Counts, per-hour charts, stuck work, operations needing attention, recent cancels."""
    return render(request, "console/dashboard.html", dashboard_context())


@login_not_required
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """The process is up."""
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
def readyz(request: HttpRequest) -> HttpResponse:
    """The database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any database failure means not ready
        return JsonResponse({"status": "unavailable", "error": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok"})
