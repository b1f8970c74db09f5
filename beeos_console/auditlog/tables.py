"""The audit log list table (``beeos_console.core.tables``): declared columns, escaped."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core.links import ObjectUrl
from beeos_console.core.tables import AgeColumn, CodeColumn, Column, Table, id_parts, named_cell

# The pages of the objects entries name (URL names: the apps sit above this layer).
_DETAIL_URLS = {"task": "tasks:detail", "operation": "operations:detail"}


class AuditEntryTable(Table):
    at = AgeColumn(_("When"))
    actor = Column(_("Who"), render="render_actor")
    action = CodeColumn(_("Action"))
    object = Column(_("Object"), accessor="", render="render_object")
    before = Column(_("Before"), accessor="", render="render_before")
    after = Column(_("After"), accessor="", render="render_after")
    # What the operator typed: their words, never run through the catalogue.
    reason = Column(_("Reason"), css_class="user-text")

    empty_text = _("No audit entries match these filters.")

    def render_actor(self, value: str, e: AuditEntry) -> SafeString:
        return format_html('{} <span class="muted small">({})</span>', value, e.actor_kind)

    def render_object(self, value: Any, e: AuditEntry) -> SafeString:
        name = _DETAIL_URLS.get(e.object_kind)
        if not e.object_id:
            return format_html("{} <code>{}</code>", e.object_kind, "—")
        if not name:
            fmt, *args = id_parts(e.object_id, 30, tr=self.gettext)
            return format_html("{} " + fmt, e.object_kind, *args)
        urls = self.__dict__.setdefault("_urls", {})  # one reverse per render, not per row
        url = urls.get(name) or urls.setdefault(name, ObjectUrl(name))
        protocol = e.detail.get("protocol") if isinstance(e.detail, dict) else None
        fmt, *args = id_parts(
            e.object_id, 30, url(e.object_id, protocol=protocol or None), self.gettext
        )
        return format_html("{} " + fmt, e.object_kind, *args)

    def _state(self, raw_value: str, snapshot: Any) -> SafeString:
        status = snapshot.get("status") if isinstance(snapshot, dict) else None
        code = format_html('<code class="small">{}</code>', raw_value or "—")
        if status:
            return format_html("{} {}", code, named_cell("status", status))
        return format_html("{} ", code)

    def render_before(self, value: Any, e: AuditEntry) -> SafeString:
        return self._state(e.before_raw, e.before)

    def render_after(self, value: Any, e: AuditEntry) -> SafeString:
        return self._state(e.after_raw, e.after)
