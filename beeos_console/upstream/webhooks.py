"""The BeeOS webhook receiver: verify first, acknowledge fast, never trust blindly.

Follows the receiver checklist in ``contracts/webhooks-guide.mdx``: the
signature (``X-BeeOS-Signature``, or ``X-BeeOS-Webhook-Signature`` for developer
webhooks) is checked on the raw bytes with ``beeos_cloud_sdk.webhooks`` before
anything is parsed; duplicates are dropped on (task_id, status, timestamp);
unknown event types are acknowledged and ignored; and because "the API is
truth", every event also flags its task for a re-read by ``sync_beeos``.
"""

from __future__ import annotations

import logging
from typing import Any

from beeos_cloud_sdk.webhooks import (
    WebhookVerificationError,
    verify_task_push_signature,
    verify_webhook_signature,
)
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from beeos_console.auditlog.services import Actor
from beeos_console.core import jsonbody
from beeos_console.mirror.edge import IngestError, Reader, json_safe
from tasks import states
from tasks.models import Task, WebhookEvent
from tasks.services.snapshots import parse_openapi_task
from tasks.services.write import ingest_a2a_task, write_task

log = logging.getLogger(__name__)
ACTOR = Actor.feeder("beeos-webhook")
TASK_EVENT_TYPES = ("task_status",)


def _verify(request: HttpRequest, body: bytes) -> str:
    """Return the scheme that verified; raise WebhookVerificationError otherwise."""
    secret = settings.BEEOS_WEBHOOK_SECRET
    headers = {k: v for k, v in request.headers.items()}
    if any(k.lower() == "x-beeos-signature" for k in headers):
        verify_task_push_signature(body, headers, secret)
        return WebhookEvent.Scheme.TASK_PUSH
    if any(k.lower() == "x-beeos-webhook-signature" for k in headers):
        verify_webhook_signature(body, headers, secret)
        return WebhookEvent.Scheme.DEVELOPER
    raise WebhookVerificationError("missing_header", "X-BeeOS-Signature header is missing")


@csrf_exempt  # authenticated by HMAC signature, not by a session
@login_not_required
@require_POST
def beeos_webhook(request: HttpRequest) -> JsonResponse:
    if len(settings.BEEOS_WEBHOOK_SECRET.encode()) < 32:
        return JsonResponse(
            {"detail": "Webhooks are not configured (BEEOS_WEBHOOK_SECRET)."}, status=503
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
        return JsonResponse({"detail": f"Malformed JSON: {exc}"}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"detail": "Expected a JSON object."}, status=400)
    try:
        payload = json_safe(payload)
    except IngestError as exc:
        return JsonResponse({"detail": "Invalid event.", "errors": exc.errors}, status=400)
    if payload.get("type") in TASK_EVENT_TYPES:
        return _task_event(payload, scheme)
    if isinstance(payload.get("status"), dict) and "id" in payload:
        return _a2a_push(payload)
    # Additions are additive (ADR-0017): acknowledge, never crash, never store.
    return JsonResponse({"result": "ignored", "detail": "Unknown event type."})


def _task_event(payload: dict[str, Any], scheme: str) -> JsonResponse:
    r = Reader(payload)
    task_id = r.id("task_id")
    status = r.str("status", required=True, max_length=64)
    timestamp = r.datetime("timestamp", required=True)
    context_id = r.str("context_id")
    final = r.bool("final")
    if r.errors:
        return JsonResponse({"detail": "Invalid task event.", "errors": r.errors}, status=400)
    try:
        with transaction.atomic():
            WebhookEvent.objects.create(
                type=payload["type"],
                task_id=task_id,
                context_id=context_id,
                status=status,
                final=final,
                event_timestamp=timestamp,
                scheme=scheme,
                raw_payload=payload,
            )
            outcome = _apply_task_event(task_id, status, timestamp, context_id)
    except IntegrityError:
        return JsonResponse({"result": "duplicate"})
    return JsonResponse({"result": outcome})


def _apply_task_event(task_id: str, status: str, timestamp: Any, context_id: str) -> str:
    """Update the mirrored task from the event and flag it for a re-read."""
    task = Task.objects.filter(protocol=states.OPENAPI, task_id=task_id).first()
    base: dict[str, Any] = dict(task.raw_payload) if task else {"task_id": task_id}
    base.setdefault("agent_id", task.agent_id if task else "")
    base.update({"status": status, "updated_at": timestamp.isoformat()})
    if context_id:
        base["context_id"] = context_id
    if states.is_terminal(states.OPENAPI, status) and not base.get("completed_at"):
        base["completed_at"] = timestamp.isoformat()
    try:
        result = write_task(parse_openapi_task(base, agent_optional=True), actor=ACTOR)
    except IngestError as exc:
        log.warning("webhook event for %s not applied: %s", task_id, exc)
        return "rejected"
    Task.objects.filter(protocol=states.OPENAPI, task_id=task_id).update(
        resync_requested_at=timezone.now()
    )
    return str(result.outcome)


def _a2a_push(payload: dict[str, Any]) -> JsonResponse:
    try:
        with transaction.atomic():
            result = ingest_a2a_task(payload, actor=ACTOR)
            Task.objects.filter(protocol=states.A2A, task_id=result.object_id).update(
                resync_requested_at=timezone.now()
            )
    except IngestError as exc:
        return JsonResponse({"detail": "Invalid A2A task.", "errors": exc.errors}, status=400)
    return JsonResponse({"result": str(result.outcome)})
