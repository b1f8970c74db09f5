"""The BeeOS webhook receiver: verify, store, acknowledge; the worker applies later.

Follows the receiver checklist in ``contracts/webhooks-guide.mdx``: the
signature (``X-BeeOS-Signature``, or ``X-BeeOS-Webhook-Signature`` for developer
webhooks) is checked on the raw bytes with ``beeos_cloud_sdk.webhooks`` before
anything is parsed; the envelope is validated (a bad one is a 400 and nothing is
stored); the event is queued in the inbox with one ``INSERT`` deduplicated on
(task_id, status, timestamp), and BeeOS gets its 200 at once ("ACK within 1 s,
queue the payload, don't run business logic inline"). Unknown event types are
acknowledged and ignored. ``upstream.inbox`` applies queued events in batches,
writes the audit entries and flags each task for a re-read by ``sync_beeos``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from beeos_cloud_sdk.webhooks import (
    WebhookVerificationError,
    verify_task_push_signature,
    verify_webhook_signature,
)
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from beeos_console.core import jsonbody
from beeos_console.mirror.edge import IngestError
from beeos_console.upstream import inbox, tasks
from beeos_console.upstream.models import WebhookInboxEvent

log = logging.getLogger(__name__)
TASK_EVENT_TYPES = ("task_status",)
Scheme = WebhookInboxEvent.Scheme
# The headers the signature schemes read, by their WSGI names.
SIGNATURE_HEADERS = {
    "X-BeeOS-Signature": "HTTP_X_BEEOS_SIGNATURE",
    "X-BeeOS-Webhook-Signature": "HTTP_X_BEEOS_WEBHOOK_SIGNATURE",
    "X-BeeOS-Webhook-Timestamp": "HTTP_X_BEEOS_WEBHOOK_TIMESTAMP",
}


def signature_headers(meta: dict[str, Any]) -> dict[str, str]:
    """The signature headers the request carries. Read straight from the environ:
    ``request.headers`` (every header, each name rewritten) costs more than the MAC.
    A header sent twice arrives joined into one value (the WSGI server's doing), as
    it does in ``request.headers``."""
    return {name: meta[key] for name, key in SIGNATURE_HEADERS.items() if key in meta}


def _verify(request: HttpRequest, body: bytes) -> str:
    """Return the scheme that verified; raise WebhookVerificationError otherwise."""
    secret = settings.BEEOS_WEBHOOK_SECRET
    headers = signature_headers(request.META)
    if "X-BeeOS-Signature" in headers:
        verify_task_push_signature(body, headers, secret)
        return Scheme.TASK_PUSH
    if "X-BeeOS-Webhook-Signature" in headers:
        verify_webhook_signature(body, headers, secret)
        return Scheme.DEVELOPER
    raise WebhookVerificationError("missing_header", "X-BeeOS-Signature header is missing")


@csrf_exempt  # authenticated by HMAC signature, not by a session
@login_not_required
@require_POST
def beeos_webhook(request: HttpRequest) -> HttpResponse:
    if len(settings.BEEOS_WEBHOOK_SECRET.encode()) < 32:
        return JsonResponse(
            {"detail": gettext("Webhooks are not configured (BEEOS_WEBHOOK_SECRET).")}, status=503
        )
    body = request.body
    try:
        scheme = _verify(request, body)
    except WebhookVerificationError as exc:
        log.warning("webhook refused: %s", exc.reason)
        return JsonResponse({"detail": str(exc), "reason": exc.reason}, status=401)
    try:
        payload = jsonbody.loads(body)
    except jsonbody.BadJSON as exc:
        return JsonResponse(
            {"detail": gettext("Malformed JSON: %(error)s") % {"error": exc}}, status=400
        )
    if not isinstance(payload, dict):
        return JsonResponse({"detail": gettext("Expected a JSON object.")}, status=400)
    try:
        envelope = _envelope(payload, body)
    except IngestError as exc:
        return JsonResponse({"detail": gettext("Invalid event."), "errors": exc.errors}, status=400)
    if envelope is None:
        # Additions are additive (ADR-0017): acknowledge, never crash, never store.
        return JsonResponse({"result": "ignored", "detail": gettext("Unknown event type.")})
    event_id = inbox.store(envelope, scheme, _json_text(body, payload))
    if event_id is None:
        return _ack(b'{"result": "duplicate"}')
    tasks.nudge()
    return _ack(b'{"result": "queued", "event": %d}' % event_id)


def _ack(body: bytes) -> HttpResponse:
    """The 200 BeeOS waits for, as fixed bytes (JsonResponse's encoder costs more)."""
    return HttpResponse(body, content_type="application/json")


def _json_text(body: bytes, payload: dict[str, Any]) -> str:
    """The event as received, for ``jsonb``: every value in it is storable (checked
    above); a body in UTF-16/32 or with a byte-order mark is re-encoded."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return json.dumps(payload)
    return json.dumps(payload) if text.startswith("\ufeff") else text


def _envelope(payload: dict[str, Any], body: bytes) -> inbox.Envelope | None:
    """The event's envelope, None for a type the console does not handle."""
    if payload.get("type") in TASK_EVENT_TYPES:
        return inbox.task_status_envelope(payload)
    if isinstance(payload.get("status"), dict) and "id" in payload:
        return inbox.a2a_push_envelope(payload, body)
    return None
