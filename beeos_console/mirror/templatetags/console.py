"""Template helpers every console page uses: status badges and times."""

from __future__ import annotations

import datetime as dt
import json

from django import template
from django.utils.html import format_html
from django.utils.translation import gettext

from beeos_console.core import links
from beeos_console.mirror import columns, i18n

register = template.Library()


@register.simple_tag
def status_badge(status: str) -> str:
    """Text plus colour, never colour alone; unknown values still render."""
    return columns.badge(status)


@register.simple_tag
def object_url(viewname: str, object_id: str, **query: object) -> str:
    """``{% object_url 'tasks:detail' task.task_id protocol=task.protocol %}``.

    The id is percent-encoded as one path segment (``/`` too), so it can never
    name another path, a query or a fragment; use it instead of ``{% url %}``
    for every URL built from an object id (links, form actions, htmx attributes).
    """
    return links.object_url(viewname, object_id, **query)


@register.simple_tag
def raw_value(value: object) -> str:
    """A raw upstream value, verbatim in monospace (escaped)."""
    return columns.raw(value)


@register.simple_tag
def reltime(value: dt.datetime | None) -> str:
    """ "3 hours ago", with the exact UTC time on hover."""
    return columns.age(value)


@register.filter
def pretty_json(value: object) -> str:
    """Indented JSON for <pre> blocks (the template escapes it)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@register.simple_tag
def copy_button(value: str) -> str:
    """A button that copies an id (works with JS; the id stays selectable without)."""
    return format_html(
        '<button type="button" class="copy" data-copy="{}" title="{}">{}</button>',
        value,
        gettext("Copy to clipboard"),
        gettext("Copy"),
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


# Plain words for every status (``beeos_console.mirror.words``), in the reader's
# language (``mirror.i18n``): detail pages, refusals.
register.filter("reason_words", i18n.reason_words)
register.filter("certainty_words", i18n.certainty_words)
register.filter("retry_words", i18n.retry_words)
register.filter("error_code_words", i18n.error_code_words)
# Any sentence a pure module said (``mirror.said.Said``), e.g. a refusal: translated.
register.filter("translated", i18n.translated)
# A product status's label (the value itself stays the English code).
register.filter("status_label", i18n.status_label)
# A projection audit producer note ("letter case", "status: foreign cancel spelling").
register.filter("producer_note_words", i18n.producer_note_words)


@register.simple_tag
def what_to_do(status: str, certainty: str, policy: str) -> str:
    return i18n.what_to_do(status, certainty, policy)


@register.simple_tag
def short_id(value: str, length: int = 24) -> str:
    """An id that never breaks mid-token: middle ellipsis, full id on hover, copy button."""
    return columns.short_id(value, length)


@register.simple_tag
def agent_link(agent_id: str, length: int = 24) -> str:
    """``{% agent_link task.caller_agent_id %}``: the agent id linked to its agent page."""
    return columns.agent_link(agent_id, length)
