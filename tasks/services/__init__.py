"""Every write to tasks, messages and artifacts, one module per job.

- ``snapshots``: the validated snapshot types and the edge validation of wire
  payloads (``parse_openapi_task``, ``parse_product_task``, ``parse_a2a_task``,
  ``parse_message``).
- ``rules``: the storage rules, pure (no database): what a snapshot does to the
  stored row (``decide_*``), the rows it makes (``new_task``, child values) and
  the in-memory overwrite (``apply_task``).
- ``write``: the one-record write path (``write_task``, ``ingest_*``), one
  transaction per record.
- ``batch``: the set-based write path for many ingest records at once.
- ``cancel``: the task cancel target, its refusal rule, the local cancel and
  ``cancel_task``.

Callers import the module they need; this package exports nothing.
"""
