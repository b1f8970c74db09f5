"""The ingest API: feeders push BeeOS snapshots, one result per record.

``POST /api/v1/ingest/`` with ``{"records": [{"kind": KIND, "data": {...}}]}``.
Each record is written whole or not at all; a rejected record never blocks
the valid ones. Caps: ``INGEST_MAX_RECORDS`` records and ``INGEST_MAX_BYTES``
bytes per call (413 above either).

Every record is validated first; the valid ones are then written set-based
(``beeos_console.mirror.batch``) in one transaction. Should that fail, it is rolled
back and the records replayed one by one through the services, each in its
own transaction, so the answers do not depend on which path wrote them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beeos_console.auditlog.services import Actor
from beeos_console.core.api import IsFeeder
from beeos_console.mirror.batch import Batch
from beeos_console.mirror.edge import IngestError, IngestResult, Outcome
from operations.batch import write_events, write_operations
from operations.services import (
    ingest_runtime_operation,
    ingest_runtime_operation_event,
    parse_event,
    parse_operation_snapshot,
)
from tasks.batch import write_messages, write_tasks
from tasks.services import (
    ingest_a2a_task,
    ingest_message,
    ingest_openapi_task,
    ingest_product_task,
    parse_a2a_task,
    parse_message,
    parse_openapi_task,
    parse_product_task,
)

logger = logging.getLogger(__name__)

INGESTERS: dict[str, Callable[..., IngestResult]] = {
    "openapi_task": ingest_openapi_task,
    # A product / legacy producer's task: the product vocabulary and its failure details.
    "product_task": ingest_product_task,
    "a2a_task": ingest_a2a_task,
    "message": ingest_message,
    "runtime_operation": ingest_runtime_operation,
    "runtime_operation_event": ingest_runtime_operation_event,
}
# The same kinds' edge validation alone, for the batch path.
PARSERS: dict[str, Callable[[Any], Any]] = {
    "openapi_task": parse_openapi_task,
    "product_task": parse_product_task,
    "a2a_task": parse_a2a_task,
    "message": parse_message,
    "runtime_operation": parse_operation_snapshot,
    "runtime_operation_event": parse_event,
}


class RawJSONParser(BaseParser):
    """Keeps the body as bytes: the view checks its size before parsing it."""

    media_type = "application/json"

    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        return stream.read() if stream is not None else b""


class PayloadTooLarge(Exception):
    pass


def read_envelope(record: Any) -> tuple[Any, dict[str, list[str]] | None]:
    """A record's ``kind`` and what is wrong with its ``kind``/``data`` wrapper, if anything."""
    if not isinstance(record, dict):
        return None, {"record": ["must be an object with kind and data"]}
    kind = record.get("kind")
    if not isinstance(kind, str) or kind not in INGESTERS:
        kinds = ", ".join(INGESTERS)
        return kind, {"kind": [f"unknown kind {kind!r}; expected one of {kinds}"]}
    if "data" not in record:
        return kind, {"data": ["is required"]}
    return kind, None


def ingest_record(index: int, record: Any, actor: Actor) -> dict[str, Any]:
    """One record's result through the one-record services; never raises for bad input."""
    kind, errors = read_envelope(record)
    if errors:
        return _rejected(index, kind, errors)
    try:
        # Each service writes its record in one transaction of its own.
        result = INGESTERS[kind](record["data"], actor=actor)
    except IngestError as exc:
        return _rejected(index, kind, exc.errors)
    return _answer(index, kind, result)


def ingest_records(records: list[Any], actor: Actor) -> list[dict[str, Any]]:
    """Every record's result, in order: validated one by one, written set-based."""
    answers: list[dict[str, Any] | None] = [None] * len(records)
    valid: dict[str, list[tuple[int, Any]]] = {kind: [] for kind in PARSERS}
    for index, record in enumerate(records):
        kind, errors = read_envelope(record)
        if errors:
            answers[index] = _rejected(index, kind, errors)
            continue
        try:
            valid[kind].append((index, PARSERS[kind](record["data"])))
        except IngestError as exc:
            answers[index] = _rejected(index, kind, exc.errors)
    try:
        with transaction.atomic():
            results = write_batch(valid, actor)
    except DatabaseError:
        # E.g. another feeder created one of these keys meanwhile: replay record
        # by record, each in its own transaction, as if there were no batch.
        logger.warning("ingest batch rolled back; replaying it record by record", exc_info=True)
        return [
            answer if answer is not None else ingest_record(index, records[index], actor)
            for index, answer in enumerate(answers)
        ]
    for index, result in results.items():
        answers[index] = _answer(index, records[index]["kind"], result)
    return answers  # type: ignore[return-value]  # every index is answered


def write_batch(valid: dict[str, list[tuple[int, Any]]], actor: Actor) -> dict[int, IngestResult]:
    """Write validated snapshots set-based; call inside a transaction.

    Tasks before messages and operations before events, so children find their
    parent whichever came first in the call (the one-record path re-files them
    when the parent arrives: the stored result is the same).
    """
    batch = Batch(actor)
    tasks = valid["openapi_task"] + valid["product_task"] + valid["a2a_task"]
    write_tasks(batch, sorted(tasks, key=lambda i: i[0]))
    write_messages(batch, valid["message"])
    write_operations(batch, valid["runtime_operation"])
    write_events(batch, valid["runtime_operation_event"])
    batch.flush()
    return batch.results


def _answer(index: int, kind: str, result: IngestResult) -> dict[str, Any]:
    answer = {"index": index, "kind": kind, "id": result.object_id, "result": str(result.outcome)}
    if result.note:
        answer["note"] = result.note
    return answer


def _rejected(index: int, kind: Any, errors: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "index": index,
        "kind": kind if isinstance(kind, str) else None,
        "result": str(Outcome.REJECTED),
        "errors": errors,
    }


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
                            "kind": serializers.ChoiceField(choices=list(INGESTERS)),
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
            return _too_large(f"The body is {length} bytes; at most {max_bytes} are accepted.")
        body = request.data if isinstance(request.data, bytes) else b""
        if len(body) > max_bytes:
            return _too_large(f"The body is {len(body)} bytes; at most {max_bytes} are accepted.")
        try:
            payload = json.loads(body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return Response(
                {"detail": f"Malformed JSON: {exc}"}, status=status.HTTP_400_BAD_REQUEST
            )
        records = payload.get("records") if isinstance(payload, dict) else None
        if not isinstance(records, list):
            return Response(
                {"detail": 'Send {"records": [{"kind": ..., "data": {...}}, ...]}.'},
                status=status.HTTP_400_BAD_REQUEST,
            )
        if len(records) > settings.INGEST_MAX_RECORDS:
            return _too_large(
                f"{len(records)} records; at most {settings.INGEST_MAX_RECORDS} per call."
            )
        actor = Actor.feeder(request.user.get_username())
        return Response({"results": ingest_records(records, actor)})


def _too_large(detail: str) -> Response:
    return Response({"detail": detail}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
