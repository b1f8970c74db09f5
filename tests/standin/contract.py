"""Contract checks for the stand-in: every payload goes through the official SDKs' types.

OpenAPI payloads are built and re-validated with ``beeos_sdk`` pydantic models; Cloud
payloads are checked against the ``beeos_cloud_sdk`` TypedDicts. On top of what the SDK
models enforce, ``strict`` adds the contract rules the generated models let through:
``additionalProperties: false`` on the runtime-operation schemas (the models keep unknown
keys in ``additional_properties``), ``format: uuid`` (the models type it as a plain str)
and the ``const`` values of the cancel / cursor conflict bodies (typed ``Optional[Any]``).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import types
import typing
import uuid
from typing import Any

from pydantic import BaseModel

UTC = dt.UTC


class ContractError(ValueError):
    """A payload the stand-in was asked to serve does not match the contract."""


# --- JSON helpers ---------------------------------------------------------------


def iso(value: dt.datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` suffix (what the platform emits)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def iso_millis(value: dt.datetime) -> str:
    """The Cloud's timestamp format, e.g. ``2026-01-02T15:04:05.000Z``."""
    value = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return wire(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    return json.dumps(value, default=_json_default, separators=(",", ":")).encode()


def jsonable(value: Any) -> Any:
    """Plain JSON types only (datetimes as RFC 3339 strings)."""
    return json.loads(dumps(value))


def wire(model: BaseModel) -> dict[str, Any]:
    """The wire dict of an SDK model, exactly as its own ``to_dict()`` renders it."""
    return jsonable(model.to_dict())  # type: ignore[attr-defined]


# --- beeos_sdk models -------------------------------------------------------------


def _extra_keys(model: Any, path: str = "$") -> list[str]:
    """Paths of unknown keys kept in ``additional_properties`` anywhere in the model."""
    found: list[str] = []
    if isinstance(model, BaseModel):
        extra = getattr(model, "additional_properties", None)
        if extra:
            found += [f"{path}.{key}" for key in extra]
        for name in type(model).model_fields:
            if name == "additional_properties":
                continue
            found += _extra_keys(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            found += _extra_keys(item, f"{path}[{i}]")
    return found


def check_uuid(value: Any, where: str) -> None:
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise ContractError(f"{where} must be a uuid (format: uuid), got {value!r}") from None


_UUID_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "RuntimeOperationSnapshot": (
        ("id",),
        ("target", "platformAgentId"),
        ("target", "conversationId"),
        ("projection", "platformAgentId"),
        ("error", "operationId"),
    ),
    "RuntimeOperationEventEnvelope": (("operationId",), ("event", "error", "operationId")),
    "ServiceOperationCancelAccepted": (("operationId",),),
    "ServiceOperationCancelConflict": (("operationId",),),
    "ServiceOperationCursorConflict": (("operationId",),),
    "MessageEnvelope": (("id",), ("conversation_id",)),
}
_CONSTS: dict[str, dict[str, Any]] = {
    "ServiceOperationCancelConflict": {"code": "OPERATION_NOT_CANCELLABLE", "httpStatus": 409},
    "ServiceOperationCursorConflict": {"code": "OPERATION_CURSOR_AHEAD", "httpStatus": 409},
    "ServiceOperationCancelAccepted": {"status": "cancel_requested"},
}
# Schemas declared ``additionalProperties: false`` whose SDK model keeps extras instead.
_CLOSED = {
    "RuntimeOperationSnapshot",
    "RuntimeOperationEventEnvelope",
    "ServiceOperationsListResponse",
    "ServiceOperationCancelAccepted",
    "ServiceOperationCancelConflict",
    "ServiceOperationCursorConflict",
}


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _forget_absent(model: Any, data: Any) -> None:
    """Undo a ``from_dict`` quirk: it passes ``obj.get(key)`` for every property, so a
    nullable field (``result``, the conflict ``code``) that was *absent* counts as
    explicitly set and ``to_dict()`` would then emit ``"result": null``."""
    if isinstance(model, list) and isinstance(data, list):
        for item, raw in zip(model, data, strict=False):
            _forget_absent(item, raw)
        return
    if not isinstance(model, BaseModel) or not isinstance(data, dict):
        return
    if "actual_instance" in type(model).model_fields:  # oneOf wrapper: same JSON object
        _forget_absent(model.actual_instance, data)
        return
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        if key not in data:
            model.__pydantic_fields_set__.discard(name)
        else:
            _forget_absent(getattr(model, name), data[key])


def sdk_model(cls: type[BaseModel], data: Any, *, strict: bool = True) -> Any:
    """Validate ``data`` with the SDK model ``cls`` (its own ``from_dict``) and return it.

    Raises pydantic's ``ValidationError`` for what the model rejects and ``ContractError``
    for the contract rules the model does not enforce (when ``strict``).
    """
    if isinstance(data, cls):
        data = wire(data)
    data = jsonable(data)
    model = cls.from_dict(data)  # type: ignore[attr-defined]
    if model is None:
        raise ContractError(f"{cls.__name__}: no payload")
    _forget_absent(model, data)
    if strict:
        name = cls.__name__
        if name in _CLOSED:
            extra = _extra_keys(model)
            if extra:
                raise ContractError(f"{name}: unknown properties {extra}")
        for path in _UUID_PATHS.get(name, ()):
            value = _dig(data, path)
            if value is not None:
                check_uuid(value, f"{name}.{'.'.join(path)}")
        for key, const in _CONSTS.get(name, {}).items():
            if data.get(key) != const:
                raise ContractError(f"{name}.{key} must be {const!r}, got {data.get(key)!r}")
    return model


def roundtrip(cls: type[BaseModel], model: BaseModel, *, strict: bool = True) -> dict[str, Any]:
    """Render ``model`` the SDK's way and prove the SDK reads the same body back."""
    body = wire(model)
    sdk_model(cls, body, strict=strict)
    return body


# --- beeos_cloud_sdk TypedDicts -------------------------------------------------------


def _hints(td: type) -> dict[str, Any]:
    # The cloud SDK writes every field as a string ("Required[str]"), so typing's own
    # __required_keys__ says *every* key is required; resolving the hints gets it right.
    return typing.get_type_hints(td, include_extras=True)


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def check_typed(value: Any, tp: Any, path: str = "$", *, extra_ok: bool = False) -> None:
    """Check ``value`` against a cloud SDK type (TypedDicts are closed unless ``extra_ok``)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or isinstance(tp, typing.ForwardRef):  # JSONValue recursion: any JSON
        return
    if origin in (typing.Required, typing.NotRequired):
        check_typed(value, args[0], path, extra_ok=extra_ok)
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in args:
            try:
                check_typed(value, option, path, extra_ok=extra_ok)
                return
            except ContractError as exc:
                errors.append(str(exc))
        raise ContractError(f"{path}: matches no option of {tp}: {errors}")
    if origin is typing.Literal:
        if value not in args:
            raise ContractError(f"{path}: {value!r} not one of {args}")
        return
    if origin is list:
        if not isinstance(value, list):
            raise ContractError(f"{path}: expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check_typed(item, args[0], f"{path}[{i}]", extra_ok=extra_ok)
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise ContractError(f"{path}: expected an object, got {type(value).__name__}")
        for key, item in value.items():
            check_typed(item, args[1], f"{path}.{key}", extra_ok=extra_ok)
        return
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            raise ContractError(f"{path}: expected {tp.__name__} object")
        hints = _hints(tp)
        for key, hint in hints.items():
            required = typing.get_origin(hint) is typing.Required
            if key not in value:
                if required:
                    raise ContractError(f"{path}: {tp.__name__} requires {key!r}")
                continue
            check_typed(value[key], hint, f"{path}.{key}", extra_ok=extra_ok)
        unknown = set(value) - set(hints)
        if unknown and not extra_ok:
            raise ContractError(f"{path}: {tp.__name__} has no {sorted(unknown)}")
        return
    if tp is type(None) or tp is None:
        if value is not None:
            raise ContractError(f"{path}: expected null")
        return
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    else:  # anything the SDK types more loosely
        ok = True
    if not ok:
        raise ContractError(f"{path}: expected {getattr(tp, '__name__', tp)}, got {value!r}")


def cloud_typed(td: type, value: Any, *, extra_ok: bool = False) -> Any:
    value = jsonable(value)
    check_typed(value, td, td.__name__, extra_ok=extra_ok)
    return value
