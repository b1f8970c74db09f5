"""REST answers for cancels: the same engine, JSON, an HTTP status per result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import (
    RESULTS,
    CancelOutcome,
    IdempotencyConflict,
    InvalidCancel,
)

HTTP_STATUS = {result: kind.http_status for result, kind in RESULTS.items()}

CANCEL_REQUEST = inline_serializer(
    "CancelRequestBody", {"reason": serializers.CharField(max_length=2000)}
)
CANCEL_RESPONSE = inline_serializer(
    "CancelResponse",
    {
        "result": serializers.ChoiceField(choices=list(HTTP_STATUS)),
        "message": serializers.CharField(),
        "replayed": serializers.BooleanField(),
        "idempotency_key": serializers.CharField(allow_null=True),
        "upstream_status": serializers.IntegerField(allow_null=True),
        # The A2A JSON-RPC error BeeOS answered: code (as ErrorInfo metadata carries
        # it, e.g. "-32010") and ErrorInfo reason; null when there was none.
        "upstream_error": inline_serializer(
            "CancelUpstreamError",
            {
                "a2a_code": serializers.CharField(),
                "reason": serializers.CharField(allow_blank=True),
                "message": serializers.CharField(allow_blank=True),
            },
            allow_null=True,
        ),
        "object": serializers.DictField(allow_null=True),
    },
)
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    description="Repeat the same key to retry safely: the first answer comes back, no second call.",
)
CANCEL_SCHEMA = extend_schema(
    request=CANCEL_REQUEST,
    parameters=[IDEMPOTENCY_HEADER],
    responses={code: CANCEL_RESPONSE for code in (200, 202, 409, 502, 503, 504)},
)


def run(request: Request, cancel: Callable[..., CancelOutcome], serializer: Any) -> Response:
    """Call a service's cancel with the body's reason and the Idempotency-Key header."""
    data = request.data if isinstance(request.data, dict) else {}
    try:
        outcome = cancel(
            actor=Actor.of_user(request.user),
            reason=data.get("reason"),
            idempotency_key=request.headers.get("Idempotency-Key"),
        )
    except IdempotencyConflict as exc:
        return Response(
            {"detail": str(exc), "code": "idempotency_key_reused"},
            status=status.HTTP_422_UNPROCESSABLE_ENTITY,
        )
    except InvalidCancel as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    return respond(outcome, serializer)


def respond(outcome: CancelOutcome, serializer: Any) -> Response:
    request_row = outcome.request
    body = {
        "result": outcome.result,
        "message": outcome.message,
        "replayed": outcome.replayed,
        "idempotency_key": request_row.idempotency_key if request_row else None,
        "upstream_status": request_row.upstream_status if request_row else None,
        "upstream_error": outcome.upstream_error,
        "object": serializer(outcome.obj).data if outcome.obj is not None else None,
    }
    headers = {}
    answer = outcome.answer
    if answer is not None and answer.retry_after:
        headers["Retry-After"] = str(int(answer.retry_after))
    return Response(body, status=HTTP_STATUS.get(outcome.result, 200), headers=headers)
