"""Our state vocabularies must agree with the official BeeOS SDK and the contracts.

If BeeOS adds, renames or drops a wire value, one of these tests fails, so the
tables in ``tasks/states.py`` and ``operations/states.py`` are updated on
purpose rather than found out in production as ``unmapped``.

Sources compared:

* ``beeos_sdk.models`` enums (``TaskStatus``, ``MessageState``, ``StopReason``,
  ``ServiceRuntimeMethod``): iterated directly.
* ``beeos_sdk`` pydantic models whose string fields carry an enum only in a
  ``field_validator``: the allowed set is read from the validator's source (the
  ``set([...])`` literal, parsed with ``ast``), and cross-checked by validating
  real payloads: every one of our values must be accepted, a bogus one rejected.
* ``operations/contracts/runtime-error-codes-v4.json`` (the contract's table, kept in the
  project) for runtime error codes.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import textwrap
from enum import Enum
from pathlib import Path

import pytest
from beeos_sdk.models import (
    MessageState,
    RuntimeOperationError,
    RuntimeOperationEventEnvelopeEvent,
    RuntimeOperationSnapshot,
    RuntimeOperationSnapshotProjection,
    RuntimeOperationTargetOneOf,
    RuntimeOperationTargetOneOf1,
    RuntimeOperationTargetOneOf2,
    ServiceRuntimeMethod,
    StopReason,
    TaskStatus,
)
from pydantic import BaseModel, ValidationError

from operations import states as operation_states
from tasks import states as task_states

# The contract's runtime error code table, kept in the project (the tests read
# nothing outside the repository); checked against the SDK below.
ERROR_CODES_CONTRACT = (
    Path(__file__).resolve().parents[1] / "operations" / "contracts" / "runtime-error-codes-v4.json"
)

BOGUS = "definitely_not_a_beeos_value"


def enum_values(enum: type[Enum]) -> set[str]:
    return {member.value for member in enum}


def enum_tuple(enum: type[Enum]) -> tuple[str, ...]:
    return tuple(member.value for member in enum)


def validator_enum(model: type[BaseModel], field: str) -> frozenset[str]:
    """The allowed values of ``field``, read from its ``field_validator``'s source.

    The generated validators read ``if value not in set([...]): raise ...``;
    the literal list is parsed with ``ast`` (no regular expressions, no eval).
    """
    found = []
    for decorator in model.__pydantic_decorators__.field_validators.values():
        if field not in decorator.info.fields:
            continue
        source = textwrap.dedent(inspect.getsource(decorator.func))
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "set"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.List | ast.Tuple | ast.Set)
            ):
                found.append(frozenset(ast.literal_eval(node.args[0])))
    if len(found) != 1:
        pytest.fail(
            f"cannot read the allowed values of {model.__name__}.{field} from its "
            f"validator (found {len(found)} set literals): the SDK's generator changed; "
            "update validator_enum()"
        )
    return found[0]


# --- Enums: iterate them ---
def test_openapi_task_status_matches_sdk():
    # Written out in tasks/states.py (importing the SDK at start costs every process):
    # value for value, in the SDK's order.
    assert enum_tuple(TaskStatus) == task_states.OPENAPI_WIRE_VALUES
    # Every OpenAPI wire value is one our reader projects.
    for value in TaskStatus:
        assert task_states.is_known("openapi", value.value), value


def test_message_state_matches_sdk():
    assert enum_tuple(MessageState) == task_states.MESSAGE_STATES
    # "streaming is the sole non-terminal state" (SDK docstring).
    assert set(task_states.MESSAGE_TERMINAL_STATES) == enum_values(MessageState) - {"streaming"}
    for value in MessageState:
        assert task_states.is_known("message", value.value), value


def test_stop_reason_matches_sdk():
    assert enum_tuple(StopReason) == task_states.STOP_REASONS


def test_service_runtime_methods_match_sdk():
    assert enum_tuple(ServiceRuntimeMethod) == operation_states.METHODS
    # Every SDK method has a capability in our table, and no stale extras.
    assert set(operation_states.METHOD_CAPABILITIES) == enum_values(ServiceRuntimeMethod)
    # Every method belongs to a capability the SDK knows.
    assert set(operation_states.METHOD_CAPABILITIES.values()) <= set(operation_states.CAPABILITIES)


STARTS_WITHOUT_THE_SDK = """
import sys
import django
django.setup()
import beeos_console.urls
from beeos_console.upstream import clients, gateway, sync
assert "beeos_sdk" not in sys.modules, "the console imported beeos_sdk at start"
from beeos_console.upstream.sdk import beeos_sdk
api_exception = beeos_sdk.ApiException
import beeos_sdk as real
assert api_exception is real.ApiException
assert isinstance(clients.platform_client("http://127.0.0.1:9"), real.ApiClient)
assert real.ApiException in sync.read_errors()
"""


def test_a_console_process_imports_the_sdk_only_when_it_calls_beeos():
    """Start-up (settings, apps, every URL) without ``beeos_sdk``; its first use loads it.

    The vocabularies above are written out in the project for this: importing the SDK
    builds every model it has, about half a second of each process's start.
    """
    result = subprocess.run(
        [sys.executable, "-c", STARTS_WITHOUT_THE_SDK],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


# --- Pydantic validators: parse the allowed set, then probe real payloads ---
NOW = "2026-01-02T15:04:05Z"
SNAPSHOT = {
    "id": "op_1",
    "instanceId": "inst_1",
    "target": {"scope": "instance"},
    "method": "models/list",
    "capability": "models",
    "transport": "service",
    "sequence": "1",
    "createdAt": NOW,
    "updatedAt": NOW,
    "status": "queued",
    "effectState": "queued",
    "terminal": False,
}
ERROR = {
    "code": "INSTANCE_OFFLINE",
    "message": "instance is offline",
    "operationId": "op_1",
    "effectState": "failed",
    "retryMode": "resubmit",
}
PROJECTION = {"revision": "1", "state": "pending"}
EVENT = {"type": "runtime_operation_started", "sequence": "1", "recordedAt": NOW}
AGENT = "agent_1"

# (model, field, wire key, known-good payload, our values)
VALIDATED_FIELDS = [
    (
        RuntimeOperationSnapshot,
        "status",
        "status",
        SNAPSHOT,
        operation_states.STATUSES,
    ),
    (
        RuntimeOperationSnapshot,
        "effect_state",
        "effectState",
        SNAPSHOT,
        operation_states.EFFECT_STATES,
    ),
    (
        RuntimeOperationSnapshot,
        "capability",
        "capability",
        SNAPSHOT,
        operation_states.CAPABILITIES,
    ),
    (
        RuntimeOperationSnapshot,
        "transport",
        "transport",
        SNAPSHOT,
        operation_states.TRANSPORTS,
    ),
    (RuntimeOperationError, "code", "code", ERROR, operation_states.ERROR_CODES),
    (
        RuntimeOperationError,
        "effect_state",
        "effectState",
        ERROR,
        operation_states.ERROR_EFFECT_STATES,
    ),
    (
        RuntimeOperationError,
        "retry_mode",
        "retryMode",
        ERROR,
        operation_states.RETRY_MODES,
    ),
    (
        RuntimeOperationSnapshotProjection,
        "state",
        "state",
        PROJECTION,
        operation_states.PROJECTION_STATES,
    ),
    (
        RuntimeOperationEventEnvelopeEvent,
        "type",
        "type",
        EVENT,
        operation_states.EVENT_TYPES,
    ),
    (
        RuntimeOperationEventEnvelopeEvent,
        "outcome",
        "outcome",
        EVENT,
        operation_states.EVENT_OUTCOMES,
    ),
]
VALIDATED_IDS = [f"{model.__name__}.{field}" for model, field, *_ in VALIDATED_FIELDS]


@pytest.mark.parametrize(
    ("model", "field", "key", "payload", "ours"), VALIDATED_FIELDS, ids=VALIDATED_IDS
)
def test_validator_enum_matches_ours(model, field, key, payload, ours):
    assert validator_enum(model, field) == set(ours)


@pytest.mark.parametrize(
    ("model", "field", "key", "payload", "ours"), VALIDATED_FIELDS, ids=VALIDATED_IDS
)
def test_sdk_accepts_our_values_and_rejects_a_bogus_one(model, field, key, payload, ours):
    # The known-good payload really is good (else the probe below proves nothing).
    model.from_dict(payload)
    rejected = []
    for value in ours:
        try:
            model.from_dict({**payload, key: value})
        except ValidationError:
            rejected.append(value)
    assert rejected == [], f"the SDK rejects our {field} values"
    with pytest.raises(ValidationError):
        model.from_dict({**payload, key: BOGUS})


def test_target_scopes_match_sdk():
    scopes = (
        validator_enum(RuntimeOperationTargetOneOf, "scope")
        | validator_enum(RuntimeOperationTargetOneOf1, "scope")
        | validator_enum(RuntimeOperationTargetOneOf2, "scope")
    )
    assert scopes == set(operation_states.TARGET_SCOPES)
    # And a snapshot accepts a target of each scope.
    targets = [
        {"scope": "instance"},
        {"scope": "agent", "platformAgentId": AGENT},
        {"scope": "conversation", "platformAgentId": AGENT, "conversationId": "conv_1"},
    ]
    assert {target["scope"] for target in targets} == set(operation_states.TARGET_SCOPES)
    for target in targets:
        RuntimeOperationSnapshot.from_dict({**SNAPSHOT, "target": target})


def test_snapshot_accepts_every_method_with_its_capability():
    for method, capability in operation_states.METHOD_CAPABILITIES.items():
        snapshot = RuntimeOperationSnapshot.from_dict(
            {**SNAPSHOT, "method": method, "capability": capability}
        )
        assert snapshot.method.value == method


# --- Contract file: runtime error codes ---
def test_error_codes_match_the_contract():
    assert ERROR_CODES_CONTRACT.is_file(), f"{ERROR_CODES_CONTRACT} is missing"
    contract = json.loads(ERROR_CODES_CONTRACT.read_text(encoding="utf-8"))
    assert contract.get("title") == "RuntimeErrorCode"
    assert set(contract["enum"]) == set(operation_states.ERROR_CODES)
    assert len(operation_states.ERROR_CODES) == len(set(operation_states.ERROR_CODES))


def test_error_codes_contract_and_sdk_agree():
    contract = json.loads(ERROR_CODES_CONTRACT.read_text(encoding="utf-8"))
    assert validator_enum(RuntimeOperationError, "code") == set(contract["enum"])


# --- A2A: every JSON spelling has a v1 enum name, and vice versa ---
def test_a2a_json_and_enum_spellings_pair_up():
    assert set(task_states.A2A_ENUM_TO_JSON.values()) == set(task_states.A2A_JSON_VALUES)
    assert len(task_states.A2A_ENUM_TO_JSON) == len(task_states.A2A_JSON_VALUES)
    # The v1 enum name is the JSON spelling, upper-cased, with TASK_STATE_ in front.
    for enum_name, json_value in task_states.A2A_ENUM_TO_JSON.items():
        assert enum_name == "TASK_STATE_" + json_value.upper().replace("-", "_")


def test_a2a_spellings_are_all_read():
    for value in (*task_states.A2A_JSON_VALUES, *task_states.A2A_ENUM_TO_JSON):
        assert task_states.is_known("a2a", value), value
    for value in task_states.A2A_INTERNAL_VALUES:
        assert task_states.is_known("a2a", value), value
    for value in task_states.A2A_UNSPECIFIED_VALUES:
        assert not task_states.is_known("a2a", value), value
