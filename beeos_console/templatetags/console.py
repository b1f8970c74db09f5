"""Template helpers every console page uses: status badges and times."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.timesince import timesince

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
    now = timezone.now()
    words = f"{timesince(value, now)} ago" if value <= now else f"in {timesince(now, value)}"
    return format_html('<time datetime="{}" title="{}">{}</time>', value.isoformat(), exact, words)
