"""Mirrors of BeeOS runtime operations and their event timeline.

Every internal value (status, effectState, terminal flag, projection state and
revision, error code / retryMode / context) is stored verbatim beside the
display projection. Rows are written only through ``operations.services``.
"""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils.translation import gettext_lazy as _

from beeos_console.mirror.i18n import translated
from beeos_console.mirror.models import Projected
from beeos_console.mirror.search import search_vector

from . import states

ID_MAX = 256


class RuntimeOperation(Projected):
    class Scope(models.TextChoices):
        INSTANCE = "instance", _("Instance")
        AGENT = "agent", _("Agent")
        CONVERSATION = "conversation", _("Conversation")

    operation_id = models.CharField(max_length=ID_MAX, unique=True)
    instance_id = models.CharField(max_length=ID_MAX)
    target_scope = models.CharField(max_length=16, blank=True)
    platform_agent_id = models.CharField(max_length=ID_MAX, blank=True)
    conversation_id = models.CharField(max_length=ID_MAX, blank=True)
    method = models.CharField(max_length=64)
    capability = models.CharField(max_length=64, blank=True)
    transport = models.CharField(max_length=32, blank=True)
    sequence = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    cursor = models.CharField(max_length=32, blank=True)

    # Raw lifecycle, verbatim.
    raw_status = models.CharField(max_length=32)
    effect_state = models.CharField(max_length=32, blank=True)
    terminal = models.BooleanField(default=False)
    progress = models.JSONField(null=True, blank=True)

    cancel_requested_by = models.CharField(max_length=ID_MAX, blank=True)
    cancel_reason = models.TextField(blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)

    projection_revision = models.DecimalField(
        max_digits=20, decimal_places=0, null=True, blank=True
    )
    projection_state = models.CharField(max_length=32, blank=True)
    projection_platform_agent_id = models.CharField(max_length=ID_MAX, blank=True)

    result = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    error_request_id = models.CharField(max_length=ID_MAX, blank=True)
    error_effect_state = models.CharField(max_length=32, blank=True)
    error_retry_mode = models.CharField(max_length=16, blank=True)
    error_context = models.JSONField(null=True, blank=True)

    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    raw_payload = models.JSONField(default=dict)
    payload_digest = models.CharField(max_length=64)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    mirrored_at = models.DateTimeField(auto_now=True)
    # Set when the sync's read of this operation answered 404, cleared when a read
    # finds it again: the row is kept, marked, and not re-read each pass.
    upstream_missing_at = models.DateTimeField("not found upstream since", null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="op_created_idx"),
            models.Index(fields=["-updated_at", "-id"], name="op_updated_idx"),
            models.Index(fields=["status", "-created_at", "-id"], name="op_status_created_idx"),
            models.Index(fields=["raw_status", "updated_at"], name="op_raw_status_idx"),
            models.Index(
                fields=["raw_status", "-created_at", "-id"], name="op_raw_status_created_idx"
            ),
            models.Index(fields=["effect_state", "-created_at"], name="op_effect_state_idx"),
            models.Index(
                fields=["projection_state", "-created_at"], name="op_projection_state_idx"
            ),
            models.Index(fields=["error_code", "-created_at"], name="op_error_code_idx"),
            models.Index(fields=["error_retry_mode", "-created_at"], name="op_retry_mode_idx"),
            models.Index(fields=["capability", "-created_at"], name="op_capability_idx"),
            models.Index(fields=["method", "-created_at"], name="op_method_idx"),
            models.Index(fields=["instance_id", "-created_at", "-id"], name="op_instance_idx"),
            models.Index(fields=["target_scope", "-created_at"], name="op_scope_idx"),
            models.Index(fields=["projection_version"], name="op_projection_version_idx"),
            # The search box: id fragments anywhere in the id, words of the error message.
            GinIndex(fields=["operation_id"], name="op_id_trgm_idx", opclasses=["gin_trgm_ops"]),
            GinIndex(search_vector("error_message"), name="op_error_fts_idx"),
            # The "not found upstream" filter: few rows, in list order.
            models.Index(
                fields=["-created_at", "-id"],
                name="op_upstream_missing_idx",
                condition=models.Q(upstream_missing_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"operation {self.operation_id} ({self.method})"

    @property
    def status_key(self) -> str | None:
        """The raw status as our table spells it (any case, both cancel spellings)."""
        return states.status_key(self.raw_status)

    @property
    def effect_unknown(self) -> bool:
        """Nobody can prove whether its effect happened (status, effectState or error code)."""
        return self.status_key == "outcome_unknown" or "+effect:outcome_unknown" in (
            self.projection_rule
        )

    @property
    def effect_committed(self) -> bool:
        """Ended failed / expired / cancelled, but its effect did happen: a replay repeats it."""
        return "+effect:committed" in self.projection_rule

    @property
    def is_cancellable(self) -> bool:
        return states.is_cancellable(self.raw_status)

    @property
    def cancel_refusal(self) -> str | None:
        """Why it may not be cancelled, in the reader's language; None when it may."""
        return translated(states.cancel_refusal(self.raw_status))

    @property
    def terminal_disagrees(self) -> bool:
        """The upstream ``terminal`` flag and our table disagree (the audit lists it)."""
        return self.terminal != states.is_terminal(self.raw_status)

    @property
    def has_cancel_request(self) -> bool:
        return bool(self.cancel_requested_at or self.cancel_requested_by)


class RuntimeOperationEvent(models.Model):
    """One entry of an operation's event timeline (RuntimeOperationEventEnvelope)."""

    operation = models.ForeignKey(
        RuntimeOperation, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    operation_id_raw = models.CharField("operation id", max_length=ID_MAX)
    event_id = models.DecimalField(max_digits=20, decimal_places=0)
    method = models.CharField(max_length=64, blank=True)
    type = models.CharField(max_length=64)
    sequence = models.DecimalField(max_digits=20, decimal_places=0)
    recorded_at = models.DateTimeField()
    outcome = models.CharField(max_length=32, blank=True)
    revision = models.DecimalField(max_digits=20, decimal_places=0, null=True, blank=True)
    payload = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    raw_payload = models.JSONField(default=dict)
    mirrored_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["operation_id_raw", "event_id"], name="op_event_uniq"),
        ]
        indexes = [
            models.Index(
                fields=["operation", "sequence", "event_id"], name="op_event_timeline_idx"
            ),
            models.Index(fields=["type", "-recorded_at"], name="op_event_type_idx"),
        ]

    def __str__(self) -> str:
        return f"event {self.event_id} {self.type}"
