"""What every mirrored row shares (the stored projection) and the maintained status counters."""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.signals import post_init, pre_init

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


def _plain_load(cls: type[models.Model]) -> bool:
    """Whether loading a ``cls`` row is only setting its attnames: no init signal
    receivers, and no attname with a setter of its own (a foreign key's id setter only
    drops a cached object, which a new instance has none of)."""
    if pre_init.has_listeners(cls) or post_init.has_listeners(cls):
        return False
    found = _PLAIN.get(cls)
    if found is None:
        found = _PLAIN[cls] = not any(
            hasattr(attr, "__set__") and not isinstance(attr, ForeignKeyDeferredAttribute)
            for attr in (getattr(cls, field.attname, None) for field in cls._meta.concrete_fields)
        )
    return found


_PLAIN: dict[type, bool] = {}


class Projected(models.Model):
    """The product projection stored next to a mirrored row's raw values.

    Computed on write by the row's service from ``states.project`` and never
    edited by hand; ``projection_rule`` names the table row that decided it.
    """

    status = models.CharField(max_length=16)
    reason = models.CharField(max_length=64, blank=True)
    outcome_certainty = models.CharField(max_length=16)
    retry_policy = models.CharField(max_length=16)
    projection_rule = models.CharField(max_length=96)
    projection_version = models.PositiveSmallIntegerField()

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Any:
        """Django's, without its per-field loop when a list loads only some columns.

        The lists load a few columns of wide rows (``.only()``: 16 of an operation's
        41). Django's ``from_db`` spreads them over every field (``DEFERRED`` for the
        rest) and ``Model.__init__`` skips those again, one by one: ~8 µs a row. What
        it leaves is an instance whose ``__dict__`` holds the loaded attnames (a
        deferred field is an absent key, read on access) and a ``_state`` saying
        "from ``db``, not adding" — built here directly. Django's own path is taken
        when every column is loaded, when anyone listens to ``pre_init``/``post_init``
        for the model, or when a loaded attname has a setter of its own.
        """
        if len(values) == len(cls._meta.concrete_fields):
            return super().from_db(db, field_names, values)
        if not _plain_load(cls):
            # Django's, given the loaded names as a set (it tests each field against them).
            return super().from_db(db, frozenset(field_names), values)
        new = cls.__new__(cls)
        state = new._state = ModelState()
        state.adding, state.db = False, db
        new.__dict__.update(zip(field_names, values, strict=True))
        return new

    def projection_drift(self, expected: Any) -> dict[str, tuple[Any, Any]]:
        """Fields whose stored value differs from ``expected`` (a Projection): stored, expected."""
        drift = {}
        for name, value in expected.as_fields().items():
            if name != "projection_version" and getattr(self, name) != value:
                drift[name] = (getattr(self, name), value)
        return drift


class StatusCount(models.Model):
    """Maintained counters: rows per (kind, display status, hour created).

    Written by the services in the same transaction as the row they count, so
    the dashboard and status facets never scan a large table. ``manage.py
    rebuild_counters`` recomputes them from the tables if they ever drift.
    """

    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=32)
    hour = models.DateTimeField()
    count = models.BigIntegerField(default=0)

    class Meta:
        app_label = "console"
        constraints = [
            models.UniqueConstraint(fields=["kind", "status", "hour"], name="statuscount_uniq"),
        ]
        indexes = [models.Index(fields=["kind", "hour"], name="statuscount_kind_hour_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} @ {self.hour:%Y-%m-%d %H:00}: {self.count}"


class AgentCount(models.Model):
    """Maintained counters per agent: tasks per (agent, role, display status).

    ``role`` is how the agent appears on a task: ``agent`` (``Task.agent_id``),
    ``caller`` (``caller_agent_id``) or ``target`` (``target_agent_id``). One more
    row per agent, role and status empty, counts the tasks it appears on in any role
    and is the agents list's row (``last_activity``: its newest task change, upstream
    time). Written by the task services in the same transaction as the task
    (``mirror.agent_counters``); ``manage.py rebuild_counters`` recomputes them.
    """

    agent_id = models.CharField(max_length=256)
    role = models.CharField(max_length=8)
    status = models.CharField(max_length=32)
    count = models.BigIntegerField(default=0)
    last_activity = models.DateTimeField(null=True)

    class Meta:
        app_label = "console"
        constraints = [
            models.UniqueConstraint(fields=["agent_id", "role", "status"], name="agentcount_uniq"),
        ]
        indexes = [
            # The agents list: one row per agent, most recently active first, or by id.
            models.Index(
                fields=["-last_activity", "-id"],
                name="agentcount_active_idx",
                condition=models.Q(role=""),
            ),
            models.Index(
                fields=["agent_id", "id"], name="agentcount_agent_idx", condition=models.Q(role="")
            ),
            # "Id contains" on the list.
            GinIndex(
                fields=["agent_id"],
                name="agentcount_agent_trgm_idx",
                opclasses=["gin_trgm_ops"],
                condition=models.Q(role=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.role or 'any'} {self.status or 'all'}: {self.count}"
