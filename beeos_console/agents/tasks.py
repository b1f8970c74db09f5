"""Agent cards on the task framework (django-tasks, ``manage.py db_worker``)."""

from __future__ import annotations

from django_tasks import task as background_task

from . import services


@background_task()
def refresh_agent_cards() -> dict[str, str]:
    """Re-read every scheduled agent's card (the sync enqueues it on its schedule)."""
    return services.refresh_cards()
