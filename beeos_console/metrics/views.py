"""``GET /metrics``: the Prometheus text format, for a scraper holding the token.

Who may read it (no login, no session; a GET, so no CSRF):

1. a request that arrived on ``METRICS_BIND`` (a separate TCP ``host:port`` that
   gunicorn also binds, reachable by Prometheus only): no token needed;
2. else ``Authorization: Bearer <METRICS_TOKEN>`` (compared in constant time):
   401 without it, 403 with another token;
3. no token configured and not on that bind: 404, as if there were no endpoint.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from beeos_console.metrics.checks import MIN_TOKEN_LENGTH
from beeos_console.metrics.sources import DatabaseCollector


def multiprocess_dir() -> str:
    """The folder every process writes its metrics to (gunicorn), or "" (one process)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


class _ThisProcess:
    """This process's own metrics (default registry: ours, plus process and GC figures)."""

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    """What one scrape reads: every process's metrics, and the database gauges once."""
    registry = CollectorRegistry()
    path = multiprocess_dir()
    if path:
        # Sums the files every process (gunicorn workers, the db_worker) wrote there.
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return registry


def on_metrics_bind(request: HttpRequest) -> bool:
    """The request came in on ``METRICS_BIND`` (gunicorn sets SERVER_NAME/PORT from the
    listening TCP socket itself, not from anything the client sends)."""
    bind = settings.METRICS_BIND.strip()
    if not bind:
        return False
    host, _sep, port = bind.rpartition(":")
    here = (request.META.get("SERVER_NAME", ""), str(request.META.get("SERVER_PORT", "")))
    return (host.strip("[]"), port) == here


def refusal(request: HttpRequest) -> HttpResponse | None:
    """Why this request may not read the metrics (a response to send), or None."""
    if on_metrics_bind(request):
        return None
    token = settings.METRICS_TOKEN
    if len(token) < MIN_TOKEN_LENGTH:  # none, or too short to use (manage.py check says so)
        raise Http404
    scheme, _sep, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        response = HttpResponse(
            _("Send the metrics token: Authorization: Bearer <METRICS_TOKEN>."),
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return HttpResponse(
            _("This is not the metrics token."),
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return None


@login_not_required
@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    refused = refusal(request)
    if refused is not None:
        return refused
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(scrape_registry()), content_type=content_type)
