"""Writes of the agents feature: storing an agent card read (audited), and which cards
the sync's schedule reads again."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor

from .cards import CardRead, read_card
from .models import AgentCard

AUDIT_KIND = "agent"
AUDIT_ACTION = "agent.card_read"


def refresh_card(agent_id: str, *, actor: Actor, always_audit: bool = True) -> AgentCard:
    """Read the agent's card from the Cloud now and store the outcome.

    A failed read keeps the last good card and counts the failures in a row. An
    operator's read is always audited; a scheduled one (``always_audit=False``) only
    when the outcome changed or a new card was read, so the log records what happened,
    not every poll (a card re-read hourly that stays the same writes nothing).
    """
    read = read_card(agent_id)  # network first, outside the transaction
    return store_read(agent_id, read, actor=actor, always_audit=always_audit)


def store_read(
    agent_id: str, read: CardRead, *, actor: Actor, always_audit: bool = True
) -> AgentCard:
    now = timezone.now()
    with transaction.atomic():
        card = AgentCard.objects.select_for_update().filter(agent_id=agent_id).first()
        before = card.outcome if card is not None else ""
        if card is None:
            card = AgentCard(agent_id=agent_id)
        # A successful read whose card differs from the stored one (a new version, say).
        new_card = read.outcome == AgentCard.Outcome.OK and read.raw != card.raw_card
        old_version = card.version
        card.fetched_at, card.outcome = now, read.outcome
        card.failure_detail, card.path = read.detail, read.path
        if read.outcome == AgentCard.Outcome.OK:
            card.consecutive_failures = 0
            card.last_success_at = now
            card.raw_card = read.raw
            for name, value in read.fields.items():
                setattr(card, name, value)
        else:
            card.consecutive_failures += 1
        card.save()
        if always_audit or before != card.outcome or new_card:
            old, new = {"outcome": before}, {"outcome": card.outcome}
            if new_card:
                old["version"], new["version"] = old_version, card.version
            auditlog.record(
                actor,
                AUDIT_ACTION,
                AUDIT_KIND,
                agent_id,
                before=old if before else None,
                after=new,
                detail={"path": read.path, "failure": read.detail} if read.detail else None,
            )
        return card


def scheduled_agents() -> list[str]:
    """The agents whose cards the schedule re-reads: the configured A2A agents and every
    agent whose card was read before."""
    known = AgentCard.objects.order_by("agent_id").values_list("agent_id", flat=True)
    return sorted({*settings.BEEOS_A2A_AGENTS, *known})


def refresh_interval() -> dt.timedelta | None:
    """How old a card's last read may get before the schedule reads it again (None: never)."""
    seconds = settings.AGENT_CARD_REFRESH_SECONDS
    return dt.timedelta(seconds=seconds) if seconds > 0 else None


def due_agents(now: dt.datetime | None = None) -> list[str]:
    """The scheduled agents whose card is due, in the order the schedule reads them.

    First the configured A2A agents whose card was never read, then every card whose
    last read (``fetched_at``, whatever its outcome: an operator's read counts too) is
    older than ``AGENT_CARD_REFRESH_SECONDS``, oldest first. None when that is 0.
    """
    interval = refresh_interval()
    if interval is None:
        return []
    configured = list(dict.fromkeys(settings.BEEOS_A2A_AGENTS))
    read = set(AgentCard.objects.filter(agent_id__in=configured).values_list("agent_id", flat=True))
    cutoff = (now or timezone.now()) - interval
    stale = (
        AgentCard.objects.filter(fetched_at__lt=cutoff)
        .order_by("fetched_at", "agent_id")
        .values_list("agent_id", flat=True)
    )
    return [agent for agent in configured if agent not in read] + list(stale)


def refresh_cards(agent_ids: list[str] | None = None) -> dict[str, str]:
    """Re-read the cards of ``agent_ids`` (default: ``scheduled_agents``): agent -> outcome.

    Scheduled reads: audited only when something changed (``refresh_card``). The sync's
    schedule passes ``due_agents()`` (``beeos_console.agents.tasks``); ``manage.py
    refresh_agent_cards`` calls it too.
    """
    actor = Actor.system("agent-cards")
    outcomes = {}
    for agent_id in scheduled_agents() if agent_ids is None else agent_ids:
        outcomes[agent_id] = refresh_card(agent_id, actor=actor, always_audit=False).outcome
    return outcomes


SCORING_ACTION = "agent.scorecard_requested"


def record_scoring_request(actor: Actor, *, queued: bool, agent_id: str = "") -> None:
    """Audit an operator's "score the agents now" (``tasks.request_scoring`` queued the job,
    or found one waiting)."""
    auditlog.record(
        actor,
        SCORING_ACTION,
        AUDIT_KIND,
        agent_id or "*",
        detail={"queued": queued},
    )
