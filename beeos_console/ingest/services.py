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

import logging
from typing import Any

from django.db import DatabaseError, transaction
from django.utils.translation import gettext

from beeos_console.auditlog.services import Actor
from beeos_console.mirror import registry
from beeos_console.mirror.batch import write_batch
from beeos_console.mirror.edge import IngestError, IngestResult, Outcome

logger = logging.getLogger(__name__)


def record_kinds() -> list[str]:
    """The ``kind`` values a record may name (each app registers its own)."""
    return list(registry.record_kinds())


def read_envelope(record: Any) -> tuple[Any, dict[str, list[str]] | None]:
    """A record's ``kind`` and what is wrong with its ``kind``/``data`` wrapper, if anything."""
    if not isinstance(record, dict):
        return None, {"record": [gettext("must be an object with kind and data")]}
    kind = record.get("kind")
    if not isinstance(kind, str) or kind not in registry.record_kinds():
        kinds = ", ".join(record_kinds())
        return kind, {
            "kind": [
                gettext("unknown kind %(kind)s; expected one of %(kinds)s")
                % {"kind": repr(kind), "kinds": kinds}
            ]
        }
    if "data" not in record:
        return kind, {"data": [gettext("is required")]}
    return kind, None


def ingest_record(index: int, record: Any, actor: Actor) -> dict[str, Any]:
    """One record's result through the one-record services; never raises for bad input."""
    kind, errors = read_envelope(record)
    if errors:
        return _rejected(index, kind, errors)
    try:
        # Each service writes its record in one transaction of its own.
        result = registry.record_kinds()[kind].write_one(record["data"], actor=actor)
    except IngestError as exc:
        return _rejected(index, kind, exc.errors)
    return _answer(index, kind, result)


def ingest_records(records: list[Any], actor: Actor) -> list[dict[str, Any]]:
    """Every record's result, in order: validated one by one, written set-based."""
    answers: list[dict[str, Any] | None] = [None] * len(records)
    kinds = registry.record_kinds()
    valid: dict[str, list[tuple[int, Any]]] = {kind: [] for kind in kinds}
    for index, record in enumerate(records):
        kind, errors = read_envelope(record)
        if errors:
            answers[index] = _rejected(index, kind, errors)
            continue
        try:
            valid[kind].append((index, kinds[kind].parse(record["data"])))
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
