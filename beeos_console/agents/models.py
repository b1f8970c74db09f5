"""The last A2A agent card read for an agent, with when and how the read went."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

ID_MAX = 256


class AgentCard(models.Model):
    """One row per agent: the last read (ok or not) and the last card read successfully.

    A failed read keeps the last good card (``raw_card``) and says why it failed, when,
    and how many reads in a row have failed since the last success.
    """

    class Outcome(models.TextChoices):
        OK = "ok", _("read")
        A2A_DISABLED = "a2a_disabled", _("A2A switched off for this agent")
        NOT_CONFIGURED = "not_configured", _("no agent card configured")
        UNREACHABLE = "unreachable", _("unreachable")
        ERROR = "error", _("refused")
        INVALID = "invalid", _("not an agent card")

    agent_id = models.CharField(max_length=ID_MAX, unique=True)
    fetched_at = models.DateTimeField()  # the last read, whatever its outcome
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    # What the failure was, verbatim: HTTP status and error code, JSON-RPC code, or the
    # transport error.
    failure_detail = models.CharField(max_length=512, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(null=True, blank=True)
    # Which path answered: the A2A 1.0 path or the legacy one.
    path = models.CharField(max_length=64, blank=True)
    raw_card = models.JSONField(null=True, blank=True)
    # Parsed from raw_card (0.3 and 1.0 shapes).
    name = models.CharField(max_length=512, blank=True)
    description = models.TextField(blank=True)
    version = models.CharField(max_length=128, blank=True)
    input_modes = models.JSONField(default=list, blank=True)
    output_modes = models.JSONField(default=list, blank=True)
    interfaces = models.JSONField(default=list, blank=True)  # [{url, protocolBinding, ...}]
    protocol_versions = models.JSONField(default=list, blank=True)
    card_shape = models.CharField(max_length=8, blank=True)  # "0.3" or "1.0"

    class Meta:
        indexes = [models.Index(fields=["fetched_at"], name="agentcard_fetched_idx")]

    def __str__(self) -> str:
        return f"agent card of {self.agent_id} ({self.outcome})"

    @property
    def ok(self) -> bool:
        return self.outcome == self.Outcome.OK


class AgentScorecard(models.Model):
    """How well one agent follows the protocol: one row per agent, computed by a background
    job (``scorecard.score_agents``) from what the mirror holds.

    ``lines`` holds each line's figures by its key (``scorecard.LINES``): ``count`` (the
    tasks the line's evidence link lists), ``level`` (0 passes, 1 note, 2 warning, 3
    failing) and, where a line measures time, ``total_seconds`` / ``median_seconds`` /
    ``p90_seconds`` / ``max_seconds``. The worst line is kept apart for ranking:
    ``rank`` = level × 10¹² + that line's count, highest first.
    """

    agent_id = models.CharField(max_length=ID_MAX, unique=True)
    computed_at = models.DateTimeField()
    tasks = models.BigIntegerField(default=0)  # tasks naming it as their agent
    lines = models.JSONField(default=dict, blank=True)
    protocol_versions = models.JSONField(default=list, blank=True)
    worst_line = models.CharField(max_length=32, blank=True)
    worst_level = models.PositiveSmallIntegerField(default=0)
    worst_count = models.BigIntegerField(default=0)
    rank = models.BigIntegerField(default=0)

    class Meta:
        indexes = [
            # The admins' ranking: worst first, keyset pages on (rank, id).
            models.Index(fields=["-rank", "-id"], name="scorecard_rank_idx"),
        ]

    def __str__(self) -> str:
        return f"scorecard of {self.agent_id} (worst: {self.worst_line or 'none'})"
