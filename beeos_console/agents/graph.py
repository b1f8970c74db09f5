"""Who delegates to whom, drawn on the server as a small inline SVG (no JavaScript).

The agent sits in the middle; the agents that send it tasks on the left, the
agents it sends tasks to on the right. Each edge is a link to the task list
filtered to that pair and window, labelled with its count and failure and cancel
rates; the line's pattern says the failure rate too (solid, dashed, dotted), so
nothing is told by colour alone. The page puts the same edges in a table.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from beeos_console.core.tables import middle

from .selectors import Delegation, Edge

WIDTH = 720
ROW = 44
NODE_W, NODE_H = 190, 28
LEFT_X, MID_X, RIGHT_X = 10, (WIDTH - NODE_W) // 2, WIDTH - NODE_W - 10
LABEL_CHARS = 24


def pattern(edge: Edge) -> tuple[str, str]:
    """The edge's line pattern by failure rate (SVG dash array, name)."""
    if edge.failure_rate >= 0.5:
        return "2 4", "dotted"
    if edge.failure_rate >= 0.1:
        return "8 4", "dashed"
    return "", "solid"


def percent(rate: float) -> str:
    return f"{round(rate * 100)}%"


def edge_words(edge: Edge) -> str:
    return gettext("%(count)s tasks, %(failed)s failed, %(cancelled)s cancelled") % {
        "count": edge.count,
        "failed": percent(edge.failure_rate),
        "cancelled": percent(edge.cancel_rate),
    }


def _node(x: int, y: int, agent_id: str, href: str, current: bool = False) -> SafeString:
    return format_html(
        '<a href="{}"><title>{}</title><rect x="{}" y="{}" width="{}" height="{}" rx="4" '
        'class="node{}" fill="Canvas" stroke="currentColor" stroke-width="{}"/>'
        '<text x="{}" y="{}" class="node-label" fill="currentColor" font-size="12">{}</text></a>',
        href,
        agent_id,
        x,
        y,
        NODE_W,
        NODE_H,
        " node-current" if current else "",
        3 if current else 1,
        x + 8,
        y + 18,
        middle(agent_id, LABEL_CHARS),
    )


def _edge(x1: int, y1: int, x2: int, y2: int, edge: Edge, href: str) -> SafeString:
    dash, _name = pattern(edge)
    width = 1 + min(5, math.log2(edge.count + 1))
    lx, ly = (x1 + x2) // 2, (y1 + y2) // 2 - 4
    return format_html(
        '<a href="{}" class="edge"><title>{} → {}: {}</title>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="currentColor" stroke-width="{}" '
        'stroke-dasharray="{}" marker-end="url(#arrow)"/>'
        '<text x="{}" y="{}" text-anchor="middle" class="edge-label" fill="currentColor" '
        'font-size="11">{} · {} ✗ · {} ⊘</text></a>',
        href,
        edge.caller,
        edge.target,
        edge_words(edge),
        x1,
        y1,
        x2,
        y2,
        f"{width:.1f}",
        dash or "none",
        lx,
        ly,
        edge.count,
        percent(edge.failure_rate),
        percent(edge.cancel_rate),
    )


def draw(
    agent_id: str,
    delegation: Delegation,
    *,
    agent_url: Callable[[str], str],
    pair_url: Callable[[Edge], str],
) -> SafeString:
    """The graph of one agent's delegation in the window, as ``<svg>`` markup."""
    left, right = delegation.receives, delegation.sends
    rows = max(len(left), len(right), 1)
    height = rows * ROW + 20
    mid_y = height // 2 - NODE_H // 2
    parts: list[SafeString] = []
    for i, edge in enumerate(left):
        y = 10 + i * ROW
        parts.append(
            _edge(
                LEFT_X + NODE_W, y + NODE_H // 2, MID_X, mid_y + NODE_H // 2, edge, pair_url(edge)
            )
        )
        parts.append(_node(LEFT_X, y, edge.caller, agent_url(edge.caller)))
    for i, edge in enumerate(right):
        y = 10 + i * ROW
        parts.append(
            _edge(
                MID_X + NODE_W, mid_y + NODE_H // 2, RIGHT_X, y + NODE_H // 2, edge, pair_url(edge)
            )
        )
        parts.append(_node(RIGHT_X, y, edge.target, agent_url(edge.target)))
    parts.append(_node(MID_X, mid_y, agent_id, agent_url(agent_id), current=True))
    title = gettext("Who delegates to whom: %(agent)s") % {"agent": agent_id}
    desc = gettext(
        "%(receives)s agents send tasks to it (left), it sends tasks to %(sends)s agents "
        "(right). Solid line: under 10%% failed; dashed: 10%% or more; dotted: half or more."
    ) % {"receives": len(left), "sends": len(right)}
    return format_html(
        '<svg class="delegation-graph" viewBox="0 0 {} {}" width="{}" height="{}" role="group" '
        'aria-labelledby="graph-title" aria-describedby="graph-desc">'
        '<title id="graph-title">{}</title><desc id="graph-desc">{}</desc>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/>'
        "</marker></defs>"
        "{}</svg>",
        WIDTH,
        height,
        WIDTH,
        height,
        title,
        desc,
        format_html_join("", "{}", ((p,) for p in parts)),
    )
