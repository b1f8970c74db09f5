"""Reading an agent's A2A agent card through ``beeos-cloud-sdk`` and parsing both shapes.

Seed 003: ``GET /v1/a2a/{agentId}/.well-known/agent-card.json`` (``a2a.get_agent_card``),
the legacy path ``…/.well-known/agent.json`` (``a2a.get_agent_card_legacy``) for a
Cloud that does not know the first; ``403 a2a_disabled`` when A2A is switched off for
the agent; JSON-RPC error ``-32007`` when no agent card is configured. A card in the
0.3 shape carries ``url`` + ``protocolVersion``; the 1.0 shape lists
``supportedInterfaces`` (url, protocolBinding, protocolVersion).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import beeos_cloud_sdk

from beeos_console.upstream import clients

from .models import AgentCard

CARD_PATH = ".well-known/agent-card.json"
LEGACY_PATH = ".well-known/agent.json"
NO_CARD_CODE = -32007
A2A_DISABLED = "a2a_disabled"
DETAIL_MAX = 512


@dataclass
class CardRead:
    """One read of an agent card: the outcome and, when it went well, the card."""

    outcome: str
    detail: str = ""
    path: str = ""
    raw: dict[str, Any] | None = None
    fields: dict[str, Any] = field(default_factory=dict)


def _jsonrpc_code(body: Any) -> int | None:
    """The JSON-RPC error code of an answer body (a dict or JSON text), if it is one."""
    if isinstance(body, dict) and isinstance(body.get("body"), str):
        body = body["body"]  # the SDK's InvalidResponseBody keeps the text
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _error_code(exc: beeos_cloud_sdk.APIError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    code = body.get("code")
    return code if isinstance(code, str) else ""


def _failure(exc: beeos_cloud_sdk.APIError, path: str) -> CardRead:
    code = _error_code(exc)
    if exc.status == 403 and code == A2A_DISABLED:
        return CardRead(AgentCard.Outcome.A2A_DISABLED, f"HTTP 403 {code}", path)
    if _jsonrpc_code(exc.body) == NO_CARD_CODE:
        return CardRead(AgentCard.Outcome.NOT_CONFIGURED, f"HTTP {exc.status} {NO_CARD_CODE}", path)
    detail = f"HTTP {exc.status} {code}".strip()[:DETAIL_MAX]
    if exc.status >= 500:  # the Cloud or the agent's gateway is down: try again later
        return CardRead(AgentCard.Outcome.UNREACHABLE, detail, path)
    return CardRead(AgentCard.Outcome.ERROR, detail, path)


def read_card(agent_id: str) -> CardRead:
    """Ask the Cloud for the agent's card: the 1.0 path, then the legacy one on 404."""
    client = clients.cloud_client()
    attempts = (
        (CARD_PATH, client.a2a.get_agent_card),
        (LEGACY_PATH, client.a2a.get_agent_card_legacy),
    )
    read = CardRead(AgentCard.Outcome.ERROR)
    for path, get in attempts:
        try:
            raw: Any = get(agent_id)
        except beeos_cloud_sdk.APIError as exc:
            read = _failure(exc, path)
            if exc.status == 404 and read.outcome == AgentCard.Outcome.ERROR:
                continue  # an older Cloud: try the legacy path
            return read
        except (OSError, ValueError) as exc:  # refused, reset, timed out, not JSON
            detail = f"{type(exc).__name__}: {exc}"[:DETAIL_MAX]
            return CardRead(AgentCard.Outcome.UNREACHABLE, detail, path)
        return card_read(raw, path)
    return read


def card_read(raw: Any, path: str) -> CardRead:
    """A 200 answer: a card (either shape), a JSON-RPC error, or something else."""
    code = _jsonrpc_code(raw)
    if code == NO_CARD_CODE:
        return CardRead(AgentCard.Outcome.NOT_CONFIGURED, f"JSON-RPC {code}", path)
    if code is not None:
        return CardRead(AgentCard.Outcome.ERROR, f"JSON-RPC {code}", path)
    fields = parse_card(raw)
    if fields is None:
        return CardRead(AgentCard.Outcome.INVALID, "not an A2AAgentCard", path, raw=None)
    return CardRead(AgentCard.Outcome.OK, "", path, raw=raw, fields=fields)


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return value


def parse_card(raw: Any) -> dict[str, Any] | None:
    """The fields the agent page shows, from a card in the 0.3 or the 1.0 shape.

    None when ``raw`` lacks what the SDK's ``A2AAgentCard`` requires (name, description,
    version, default input and output modes).
    """
    if not isinstance(raw, dict):
        return None
    texts = [raw.get(k) for k in ("name", "description", "version")]
    inputs, outputs = (
        _strings(raw.get("defaultInputModes")),
        _strings(raw.get("defaultOutputModes")),
    )
    if not all(isinstance(t, str) for t in texts) or inputs is None or outputs is None:
        return None
    interfaces: list[dict[str, str]] = []
    listed = raw.get("supportedInterfaces")
    if isinstance(listed, list):
        for item in listed:
            if isinstance(item, dict):
                interfaces.append(
                    {k: str(item.get(k, "")) for k in ("url", "protocolBinding", "protocolVersion")}
                )
        shape = "1.0"
    else:
        shape = "0.3" if "url" in raw or "protocolVersion" in raw else "1.0"
    if isinstance(raw.get("url"), str):
        interfaces.insert(
            0,
            {
                "url": raw["url"],
                "protocolBinding": "",
                "protocolVersion": str(raw.get("protocolVersion") or ""),
            },
        )
    versions = sorted({i["protocolVersion"] for i in interfaces if i["protocolVersion"]})
    name, description, version = texts
    return {
        "name": name[:512],
        "description": description,
        "version": version[:128],
        "input_modes": inputs,
        "output_modes": outputs,
        "interfaces": interfaces,
        "protocol_versions": versions,
        "card_shape": shape,
    }
