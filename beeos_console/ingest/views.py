"""``POST /api/v1/ingest/``: the body's caps and JSON parsing, then ``ingest.services``.

The caps (``INGEST_MAX_RECORDS`` records, ``INGEST_MAX_BYTES`` bytes: 413 above
either) are the view's; how records are validated and written is the service's.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beeos_console.auditlog.services import Actor
from beeos_console.core import jsonbody
from beeos_console.core.api import IsFeeder
from beeos_console.ingest.services import ingest_records, record_kinds
from beeos_console.mirror.edge import Outcome

logger = logging.getLogger(__name__)


class RawJSONParser(BaseParser):
    """Keeps the body as bytes: the view checks its size before parsing it."""

    media_type = "application/json"

    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        return stream.read() if stream is not None else b""


class PayloadTooLarge(Exception):
    pass


RESULT = inline_serializer(
    "IngestRecordResult",
    {
        "index": serializers.IntegerField(),
        "kind": serializers.CharField(allow_null=True),
        "id": serializers.CharField(required=False),
        "result": serializers.ChoiceField(choices=[o.value for o in Outcome]),
        "note": serializers.CharField(required=False),
        "errors": serializers.DictField(child=serializers.ListField(), required=False),
    },
)


class IngestView(APIView):
    permission_classes = [IsFeeder]
    parser_classes = [RawJSONParser]

    @extend_schema(
        request=inline_serializer(
            "IngestRequest",
            {
                "records": serializers.ListField(
                    child=inline_serializer(
                        "IngestRecord",
                        {
                            "kind": serializers.ChoiceField(choices=record_kinds()),
                            "data": serializers.DictField(),
                        },
                    ),
                    max_length=1000,
                )
            },
        ),
        responses={
            200: inline_serializer("IngestResponse", {"results": RESULT.__class__(many=True)}),
        },
        examples=[
            OpenApiExample(
                "One task snapshot",
                value={
                    "records": [
                        {
                            "kind": "openapi_task",
                            "data": {"task_id": "tsk_1", "agent_id": "agt_1", "status": "running"},
                        }
                    ]
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        """Store BeeOS snapshots; one result per record, in order."""
        max_bytes = settings.INGEST_MAX_BYTES
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > max_bytes:
            return _too_large(_body_too_large(length, max_bytes))
        body = request.data if isinstance(request.data, bytes) else b""
        if len(body) > max_bytes:
            return _too_large(_body_too_large(len(body), max_bytes))
        try:
            payload = jsonbody.loads(body or b"null")
        except jsonbody.BadJSON as exc:
            return Response(
                {"detail": gettext("Malformed JSON: %(error)s") % {"error": exc}},
                status=status.HTTP_400_BAD_REQUEST,
            )
        records = payload.get("records") if isinstance(payload, dict) else None
        if not isinstance(records, list):
            return Response(
                {"detail": gettext('Send {"records": [{"kind": ..., "data": {...}}, ...]}.')},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if len(records) > settings.INGEST_MAX_RECORDS:
            return _too_large(
                gettext("%(count)s records; at most %(max)s per call.")
                % {"count": len(records), "max": settings.INGEST_MAX_RECORDS}
            )
        actor = Actor.feeder(request.user.get_username())
        return Response({"results": ingest_records(records, actor)})


def _body_too_large(length: object, max_bytes: int) -> str:
    return gettext("The body is %(length)s bytes; at most %(max)s are accepted.") % {
        "length": length,
        "max": max_bytes,
    }


def _too_large(detail: str) -> Response:
    return Response({"detail": detail}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
