"""Console-wide pages: the landing dashboard and the load balancer probes."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from operations.models import RuntimeOperation
from tasks.models import Task

LANDING_ROWS = 25


def dashboard(request: HttpRequest) -> HttpResponse:
    """Landing page: the newest tasks and operations (the full dashboard is part 2)."""
    tasks = Task.objects.order_by("-created_at", "-id")[:LANDING_ROWS]
    operations = RuntimeOperation.objects.order_by("-created_at", "-id")[:LANDING_ROWS]
    return render(request, "console/dashboard.html", {"tasks": tasks, "operations": operations})


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
