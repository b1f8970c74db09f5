"""Mirrors of BeeOS tasks (OpenAPI, A2A, product), message envelopes and A2A artifacts.

Raw values are stored verbatim (any spelling); the product projection sits
beside them. Rows are written only through ``tasks.services``.
"""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils.translation import gettext_lazy as _

from beeos_console.mirror.i18n import translated
from beeos_console.mirror.models import Projected
from beeos_console.mirror.search import search_vector

from . import states

ID_MAX = 256  # the A2A limit on ids


class Task(Projected):
    class Protocol(models.TextChoices):
        OPENAPI = states.OPENAPI, "OpenAPI"
        A2A = states.A2A, "A2A"
        PRODUCT = states.PRODUCT, _("Product")

    class A2ADirection(models.TextChoices):
        SENT = "sent", _("sent")
        RECEIVED = "received", _("received")

    task_id = models.CharField(max_length=ID_MAX)
    protocol = models.CharField(max_length=16, choices=Protocol.choices)
    agent_id = models.CharField(max_length=ID_MAX, blank=True)
    caller_id = models.CharField(max_length=ID_MAX, blank=True)
    caller_principal_id = models.CharField(max_length=ID_MAX, blank=True)
    caller_agent_id = models.CharField(max_length=ID_MAX, blank=True)
    caller_owner_id = models.CharField(max_length=ID_MAX, blank=True)
    target_principal_id = models.CharField(max_length=ID_MAX, blank=True)
    target_agent_id = models.CharField(max_length=ID_MAX, blank=True)
    target_owner_id = models.CharField(max_length=ID_MAX, blank=True)
    context_id = models.CharField(max_length=ID_MAX, blank=True)
    channel_id = models.CharField(max_length=ID_MAX, blank=True)

    # The wire state exactly as received, whatever its spelling.
    raw_state = models.CharField(max_length=64)

    error = models.TextField(blank=True)
    # The machine-readable failure code, verbatim, when the wire gives one: the
    # OpenAPI ``error.code`` / ``error_code``, or an A2A status message's ErrorInfo ``reason``.
    error_code = models.CharField(max_length=128, blank=True)
    result = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    # Upstream timestamps (BeeOS's clock, not ours).
    created_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)

    raw_payload = models.JSONField(default=dict)
    payload_digest = models.CharField(max_length=64)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    mirrored_at = models.DateTimeField(auto_now=True)
    # Set by a webhook: the sync re-reads this task from the API ("the API is truth").
    resync_requested_at = models.DateTimeField(null=True, blank=True)
    # Set when the sync's read of this task answered 404 (BeeOS no longer has it),
    # cleared when a read finds it again: the row is kept, marked, and not re-read each pass.
    upstream_missing_at = models.DateTimeField("not found upstream since", null=True, blank=True)
    # A2A tasks the sync lists for a configured agent (BEEOS_A2A_AGENTS): whether that agent
    # sent or received it, and the agent at the other end. A task between two configured
    # agents counts as sent (by its caller).
    a2a_direction = models.CharField(max_length=8, blank=True, choices=A2ADirection.choices)
    a2a_counterpart = models.CharField(max_length=ID_MAX, blank=True)
    # Set when the sync's last A2A read came back with as many history messages as it asked
    # for (the Cloud's cap per read): older messages may exist that the mirror lacks.
    history_truncated_to = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["protocol", "task_id"], name="task_protocol_id_uniq"),
        ]
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="task_created_idx"),
            models.Index(fields=["-updated_at", "-id"], name="task_updated_idx"),
            models.Index(fields=["status", "-created_at", "-id"], name="task_status_created_idx"),
            models.Index(fields=["status", "updated_at"], name="task_status_updated_idx"),
            models.Index(fields=["agent_id", "-created_at", "-id"], name="task_agent_created_idx"),
            models.Index(fields=["raw_state", "-created_at"], name="task_raw_state_idx"),
            models.Index(fields=["protocol", "status"], name="task_protocol_status_idx"),
            models.Index(fields=["reason", "-created_at"], name="task_reason_idx"),
            models.Index(fields=["error_code", "-created_at"], name="task_error_code_idx"),
            models.Index(fields=["outcome_certainty", "-created_at"], name="task_certainty_idx"),
            models.Index(fields=["retry_policy", "-created_at"], name="task_retry_idx"),
            models.Index(fields=["projection_version"], name="task_projection_version_idx"),
            # Prefix search (?q=) on ids: pattern ops so LIKE 'abc%' uses the index.
            models.Index(
                fields=["task_id"], name="task_id_prefix_idx", opclasses=["varchar_pattern_ops"]
            ),
            models.Index(
                fields=["context_id"], name="task_context_idx", opclasses=["varchar_pattern_ops"]
            ),
            models.Index(fields=["channel_id"], name="task_channel_idx"),
            # The search box: id fragments anywhere in the id (ILIKE '%…%'), error text.
            GinIndex(fields=["task_id"], name="task_id_trgm_idx", opclasses=["gin_trgm_ops"]),
            GinIndex(
                fields=["context_id"], name="task_context_trgm_idx", opclasses=["gin_trgm_ops"]
            ),
            # Agent ids by fragment, when there are too many agents to walk (search selectors).
            GinIndex(fields=["agent_id"], name="task_agent_trgm_idx", opclasses=["gin_trgm_ops"]),
            GinIndex(search_vector("error"), name="task_error_fts_idx"),
            models.Index(
                fields=["resync_requested_at"],
                name="task_resync_idx",
                condition=models.Q(resync_requested_at__isnull=False),
            ),
            # The "not found upstream" filter: few rows, in list order.
            models.Index(
                fields=["-created_at", "-id"],
                name="task_upstream_missing_idx",
                condition=models.Q(upstream_missing_at__isnull=False),
            ),
            # The A2A direction and counterpart filters: only synced A2A tasks, in list order.
            models.Index(
                fields=["a2a_direction", "-created_at", "-id"],
                name="task_a2a_direction_idx",
                condition=~models.Q(a2a_direction=""),
            ),
            models.Index(
                fields=["a2a_counterpart", "-created_at", "-id"],
                name="task_a2a_counterpart_idx",
                condition=~models.Q(a2a_counterpart=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_protocol_display()} task {self.task_id}"

    @property
    def is_terminal(self) -> bool:
        return states.is_terminal(self.protocol, self.raw_state)

    @property
    def is_cancellable(self) -> bool:
        return states.is_cancellable(self.protocol, self.raw_state)

    @property
    def wire_state(self) -> str:
        return states.wire_spelling(self.protocol, self.raw_state)

    @property
    def expected_projection(self):  # -> Projection
        """Today's rules applied to this row's raw state (and a producer's failure details)."""
        return states.project_stored(self.protocol, self.raw_state, self.raw_payload)

    @property
    def rule_text(self) -> str:
        """Today's rule for this raw state, in words (pages show it beside the stored rule)."""
        return translated(states.explain(self.protocol, self.raw_state, self.expected_projection))

    @property
    def a2a_status_message_id(self) -> str:
        """The A2A task's ``status.message`` id: the message that carries its outcome."""
        if self.protocol != states.A2A or not isinstance(self.raw_payload, dict):
            return ""
        status = self.raw_payload.get("status")
        message = status.get("message") if isinstance(status, dict) else None
        found = message.get("messageId") if isinstance(message, dict) else None
        return found if isinstance(found, str) else ""

    @property
    def has_foreign_cancel_spelling(self) -> bool:
        return states.is_foreign_cancel_spelling(self.protocol, self.raw_state)

    @property
    def conversation_key(self) -> str:
        """The channel / conversation id its messages are filed under."""
        return self.channel_id or self.context_id or self.task_id


class Message(Projected):
    """One message envelope (a streamed reply or a request), or an A2A history message."""

    class Source(models.TextChoices):
        ENVELOPE = "envelope", _("Message envelope")
        A2A = "a2a", _("A2A history")

    message_id = models.CharField(max_length=ID_MAX)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ENVELOPE)
    # No single-column index: message_task_timeline_idx (task, created_at, id)
    # serves every lookup by task, and the planner then walks it for the timeline.
    task = models.ForeignKey(
        Task,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        db_index=False,
    )
    conversation_id = models.CharField(max_length=ID_MAX, blank=True)
    type = models.CharField(max_length=64, blank=True)
    sender = models.CharField(max_length=ID_MAX, blank=True)
    role = models.CharField(max_length=32, blank=True)
    reply_to = models.CharField(max_length=ID_MAX, blank=True)
    # Raw envelope state and stop reason, verbatim.
    state = models.CharField(max_length=32, blank=True)
    stop_reason = models.CharField(max_length=32, blank=True)
    body = models.TextField(blank=True)
    parts = models.JSONField(default=list, blank=True)
    content = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    raw_payload = models.JSONField(default=dict)
    payload_digest = models.CharField(max_length=64)
    position = models.PositiveIntegerField(default=0)  # order within an A2A history
    mirrored_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "message_id"], name="message_source_id_uniq"),
        ]
        indexes = [
            # The timeline pages backwards on (created_at, id) within one task.
            models.Index(fields=["task", "created_at", "id"], name="message_task_timeline_idx"),
            models.Index(fields=["conversation_id", "created_at"], name="message_conversation_idx"),
            models.Index(fields=["-created_at", "-id"], name="message_created_idx"),
            models.Index(fields=["state", "-created_at"], name="message_state_idx"),
            models.Index(fields=["stop_reason", "-created_at"], name="message_stop_reason_idx"),
            models.Index(fields=["type", "-created_at"], name="message_type_idx"),
            # The search box: id fragments anywhere in the id, words of the body.
            GinIndex(fields=["message_id"], name="message_id_trgm_idx", opclasses=["gin_trgm_ops"]),
            GinIndex(search_vector("body"), name="message_body_fts_idx"),
        ]

    def __str__(self) -> str:
        return f"message {self.message_id}"

    @property
    def is_agent_reply(self) -> bool:
        return self.type == states.AGENT_REPLY

    @property
    def is_terminal(self) -> bool:
        return states.is_message_terminal(self.state)


class Artifact(models.Model):
    """An A2A task artifact, as the last snapshot carried it."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="artifacts")
    artifact_id = models.CharField(max_length=ID_MAX)
    name = models.CharField(max_length=ID_MAX, blank=True)
    description = models.TextField(blank=True)
    parts = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    extensions = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "artifact_id"], name="artifact_task_id_uniq"),
        ]

    def __str__(self) -> str:
        return f"artifact {self.artifact_id}"


class WebhookEvent(models.Model):
    """One received BeeOS task event, kept for idempotency and for the record.

    Deliveries are at-least-once: (task_id, status, event timestamp) is the
    dedupe key the BeeOS receiver checklist prescribes.
    """

    class Scheme(models.TextChoices):
        TASK_PUSH = "task_push", _("X-BeeOS-Signature (task push)")
        DEVELOPER = "developer", _("X-BeeOS-Webhook-Signature (developer webhook)")

    type = models.CharField(max_length=64)
    task_id = models.CharField(max_length=ID_MAX)
    context_id = models.CharField(max_length=ID_MAX, blank=True)
    status = models.CharField(max_length=64)
    final = models.BooleanField(default=False)
    event_timestamp = models.DateTimeField()
    scheme = models.CharField(max_length=16, choices=Scheme.choices)
    received_at = models.DateTimeField(auto_now_add=True)
    raw_payload = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task_id", "status", "event_timestamp"], name="webhook_event_dedupe"
            ),
        ]
        indexes = [models.Index(fields=["-received_at"], name="webhook_received_idx")]

    def __str__(self) -> str:
        return f"{self.type} {self.task_id} {self.status}"
