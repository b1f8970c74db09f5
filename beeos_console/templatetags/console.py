"""Template helpers every console page uses: status badges and times."""

from __future__ import annotations

import datetime as dt
import json

from django import template
from django.utils import timezone
from django.utils.html import format_html

from beeos_console.states import STATUS_COLOURS

register = template.Library()


@register.simple_tag
def status_badge(status: str) -> str:
    """Text plus colour, never colour alone; unknown values still render."""
    colour = STATUS_COLOURS.get(status, "purple")
    return format_html('<span class="badge badge-{}">{}</span>', colour, status or "—")


@register.simple_tag
def raw_value(value: object) -> str:
    """A raw upstream value, verbatim in monospace (escaped)."""
    if value is None or value == "":
        return format_html('<code class="raw empty">{}</code>', "—")
    return format_html('<code class="raw">{}</code>', value)


@register.simple_tag
def reltime(value: dt.datetime | None) -> str:
    """ "3 hours ago", with the exact UTC time on hover."""
    if value is None:
        return format_html('<span class="muted">{}</span>', "—")
    exact = value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), exact, short_age(value)
    )


def short_age(value: dt.datetime, now: dt.datetime | None = None) -> str:
    """The largest unit only: "45 s ago", "3 h ago", "2 d ago", "in 5 min"."""
    now = now or timezone.now()
    seconds = int((now - value).total_seconds())
    future, seconds = seconds < 0, abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            words = f"{seconds // size} {unit}"
            break
    else:
        words = f"{seconds} s"
    return f"in {words}" if future else f"{words} ago"


@register.filter
def pretty_json(value: object) -> str:
    """Indented JSON for <pre> blocks (the template escapes it)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@register.simple_tag
def copy_button(value: str) -> str:
    """A button that copies an id (works with JS; the id stays selectable without)."""
    return format_html(
        '<button type="button" class="copy" data-copy="{}" title="Copy to clipboard">Copy</button>',
        value,
    )


@register.simple_tag
def exact_time(value: dt.datetime | None) -> str:
    """Exact UTC timestamp plus the relative time, for detail pages."""
    if value is None:
        return format_html('<span class="muted">{}</span>', "—")
    exact = value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return format_html(
        '<time datetime="{}">{}</time> <span class="muted">({})</span>',
        value.isoformat(),
        exact,
        reltime(value),
    )


@register.filter
def make_list_words(value: str) -> list[str]:
    return value.split()


@register.filter
def get_item(mapping: dict, key: str) -> object:
    return mapping.get(key) if isinstance(mapping, dict) else None
