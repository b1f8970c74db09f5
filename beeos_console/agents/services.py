"""Writes of the agents feature: storing an agent card read (audited)."""

from __future__ import annotations

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
    when the outcome changed, so the log records what happened, not every poll.
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
        if always_audit or before != card.outcome:
            auditlog.record(
                actor,
                AUDIT_ACTION,
                AUDIT_KIND,
                agent_id,
                before={"outcome": before} if before else None,
                after={"outcome": card.outcome},
                detail={"path": read.path, "failure": read.detail} if read.detail else None,
            )
        return card


def scheduled_agents() -> list[str]:
    """The agents whose cards the schedule re-reads: the configured A2A agents and every
    agent whose card was read before."""
    known = AgentCard.objects.order_by("agent_id").values_list("agent_id", flat=True)
    return sorted({*settings.BEEOS_A2A_AGENTS, *known})


def refresh_cards(agent_ids: list[str] | None = None) -> dict[str, str]:
    """Re-read the cards of ``agent_ids`` (default: ``scheduled_agents``): agent -> outcome.

    What the sync calls on its schedule (``beeos_console.agents.tasks`` and
    ``manage.py refresh_agent_cards`` call it too).
    """
    actor = Actor.system("agent-cards")
    outcomes = {}
    for agent_id in scheduled_agents() if agent_ids is None else agent_ids:
        outcomes[agent_id] = refresh_card(agent_id, actor=actor, always_audit=False).outcome
    return outcomes
