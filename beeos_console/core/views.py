"""The load balancer probes."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache


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
