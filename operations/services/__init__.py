"""Every write to runtime operations and their events, one module per job.

- ``snapshots``: the validated snapshot types, the edge validation of wire
  payloads (``parse_operation_snapshot``, ``parse_event``) and the projection
  of validated fields (``project_operation``).
- ``rules``: the storage rules, pure (no database): ``decide_*``, the rows a
  snapshot makes (``new_*``), the in-memory overwrite (``apply_operation``)
  and the projection today's rules give a stored row.
- ``write``: the one-record write path (``ingest_*``), one transaction per record.
- ``batch``: the set-based write path for many ingest records at once.
- ``cancel``: the operation cancel target, its refusal rule, the local cancel
  and ``cancel_operation``.

Callers import the module they need; this package exports nothing.
"""
