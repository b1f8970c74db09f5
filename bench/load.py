"""Fill the benchmark database fast: server-side INSERT ... SELECT FROM generate_series.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.load --tasks 1000000

Steps (each timed): recreate the database (its name must contain "bench"),
migrate, drop the secondary indexes and constraints of the four big tables,
load tasks, messages (one task with exactly 1,000), runtime operations and
their events in a handful of statements, recreate the indexes and constraints
under their migration names, ``rebuild_counters``, ``VACUUM ANALYZE``, and
create the benchmark users.

Every projected column is taken from ``tasks.states.project`` /
``project_message`` / ``operations.states.project`` through small lookup
tables built here in Python and joined in SQL, so ``audit_projections`` finds
no drift. The messages follow the evidence rule (the last terminal agent reply
agrees with its task). What the audit does report by design: the few unmapped
raw values (the mix includes them on purpose), the producers' foreign cancel
spellings (a note), and — once they are older than
``CONSOLE_STUCK_AFTER_MINUTES`` — the recent ``projection_pending`` operations.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from beeos_console.mirror.states import PROJECTION_VERSION
from operations import states as op_states  # noqa: E402
from tasks import states as task_states  # noqa: E402

SLOTS = 10_000  # resolution of the state mixes: one slot = 0.01 %
DAYS = 30
AGENTS = 500
INSTANCES = 200
DETAIL_TASK_ID = "tsk_bench_detail_1000"
DETAIL_MESSAGES = 1000
ADMIN_USER = "bench-admin"
FEEDER_USER = "bench-feeder"
BIG_TABLES = (
    "tasks_task",
    "tasks_message",
    "operations_runtimeoperation",
    "operations_runtimeoperationevent",
)

# --- state mixes --------------------------------------------------------------------
# Relative weights per protocol. "old" tasks (older than RECENT_HOURS) are nearly
# all terminal, with a few stuck leftovers; "recent" ones are still largely in flight.
RECENT_HOURS = 6
TASK_MIX: dict[str, dict[str, float]] = {
    task_states.OPENAPI: {
        "completed": 800,
        "failed": 55,
        "timeout": 20,
        "rejected": 10,
        "canceled": 30,
        "cancelled": 2,  # a producer's British spelling (a note in the audit)
        "running": 45,
        "input_required": 8,
        "auth_required": 2,
        "queued": 25,
        "paused": 1.5,  # unmapped on purpose
        "retrying": 0.5,  # unmapped on purpose
    },
    task_states.A2A: {
        "completed": 520,
        "TASK_STATE_COMPLETED": 250,
        "failed": 40,
        "TASK_STATE_FAILED": 15,
        "timeout": 15,
        "rejected": 10,
        "canceled": 25,
        "TASK_STATE_CANCELED": 5,
        "cancelled": 1,
        "working": 50,
        "TASK_STATE_WORKING": 20,
        "input-required": 10,
        "auth-required": 3,
        "submitted": 30,
        "delivered": 15,
        "TASK_STATE_UNSPECIFIED": 1,  # unmapped by design
        "unknown": 1,  # unmapped by design
    },
    task_states.PRODUCT: {
        "completed": 600,
        "succeeded": 180,
        "failed": 50,
        "timeout": 15,
        "uncertain": 5,
        "cancelled": 25,
        "canceled": 5,
        "processing": 40,
        "running": 20,
        "queued": 40,
        "pending": 15,
        "archived": 2,  # unmapped on purpose
    },
}
PROTOCOL_SHARE = ((task_states.OPENAPI, 0.60), (task_states.A2A, 0.30), (task_states.PRODUCT, 0.10))
# Non-terminal weight multipliers by age.
OLD_ACTIVE = 0.06
RECENT_ACTIVE = 6.0

# Message templates per task outcome class: (type, role/sender, state, stop_reason).
CHAT = ("chat_message", "user", "completed", "end_turn")
TOOL = ("agent_reply", "assistant", "completed", "tool_use")
MESSAGE_PLAN: dict[str, list[tuple[str, str, str, str]]] = {
    "queued": [CHAT],
    "processing": [CHAT, ("agent_reply", "assistant", "streaming", "")],
    "unmapped": [CHAT, ("agent_reply", "assistant", "streaming", "")],
    "completed": [CHAT, TOOL, ("agent_reply", "assistant", "completed", "end_turn")],
    "failed": [CHAT, TOOL, ("agent_reply", "assistant", "failed", "error")],
    "timeout": [CHAT, TOOL, ("agent_reply", "assistant", "failed", "timeout")],
    "rejected": [CHAT, ("agent_reply", "assistant", "refused", "refused")],
    "cancelled": [CHAT, TOOL, ("agent_reply", "assistant", "cancelled", "user_stop")],
}

# Runtime operations: (raw status, effectState, projection state, error code,
# retryMode, error effectState, upstream terminal flag, old weight, recent weight).
OP_COMBOS: list[tuple[str, str, str, str, str, str, bool, float, float]] = [
    ("succeeded", "committed", "synced", "", "", "", True, 600, 450),
    ("succeeded", "committed", "not_applicable", "", "", "", True, 90, 70),
    ("failed", "failed", "", "RUNTIME_EXECUTION_FAILED", "resubmit", "failed", True, 30, 30),
    ("failed", "failed", "", "INSTANCE_OFFLINE", "resume", "failed", True, 15, 15),
    ("failed", "failed", "", "INVALID_INVOCATION", "none", "failed", True, 10, 10),
    ("failed", "failed", "", "AGENT_DEFAULT_MODEL_NOT_CONFIGURED", "none", "failed", True, 5, 5),
    ("failed", "failed", "", "UNAUTHORIZED_TARGET", "none", "failed", True, 3, 3),
    ("expired", "expired", "", "COMMAND_EXPIRED", "resubmit", "expired", True, 20, 10),
    (
        "outcome_unknown",
        "outcome_unknown",
        "",
        "OUTCOME_UNKNOWN",
        "none",
        "outcome_unknown",
        True,
        20,
        20,
    ),
    ("cancelled", "cancelled", "", "", "", "", True, 30, 30),
    (
        "projection_blocked",
        "committed",
        "blocked",
        "PROJECTION_BLOCKED",
        "none",
        "committed",
        True,
        10,
        10,
    ),
    ("running", "running", "", "", "", "", False, 2, 150),
    ("queued", "queued", "", "", "", "", False, 1, 100),
    ("runtime_committed", "committed", "pending", "", "", "", False, 0, 50),
    ("projection_pending", "committed", "pending", "", "", "", False, 0, 60),
    ("paused", "running", "", "", "", "", False, 1, 1),  # unmapped on purpose
]
OP_RECENT_MINUTES = 20


def log(msg: str) -> None:
    print(msg, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    started = time.perf_counter()
    log(f"-> {name} …")
    yield
    log(f"   {name}: {time.perf_counter() - started:.1f} s")


def execute(sql: str, params: list | tuple | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


# --- lookup tables ----------------------------------------------------------------------


def allocate(weights: dict, slots: int = SLOTS) -> list:
    """Spread ``slots`` over the keys in proportion to their weights (largest remainder)."""
    total = sum(weights.values())
    exact = {k: slots * w / total for k, w in weights.items() if w > 0}
    counts = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - counts[k], reverse=True)[
        : slots - sum(counts.values())
    ]:
        counts[k] += 1
    out: list = []
    for k, n in counts.items():
        out.extend([k] * n)
    return out


def task_class(projection) -> str:
    if projection.status == "failed":
        if projection.reason in ("timeout", "outcome_unknown"):
            return "timeout"
        if projection.reason == "rejected":
            return "rejected"
        return "failed"
    return projection.status


def copy_rows(table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    buf = io.StringIO()
    for row in rows:
        buf.write("\t".join("\\N" if v is None else str(v) for v in row) + "\n")
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.copy(sql) as copy:
        copy.write(buf.getvalue())


def build_lookup_tables() -> None:
    """bench_task_slots, bench_msg_plan, bench_op_slots: TEMP tables for the joins."""
    execute(
        """CREATE TEMP TABLE bench_task_slots (
            recent boolean, proto smallint, slot integer, protocol text, raw_state text,
            status text, reason text, outcome_certainty text, retry_policy text,
            projection_rule text, cls text, terminal boolean)"""
    )
    rows = []
    for recent in (False, True):
        for p, (protocol, _) in enumerate(PROTOCOL_SHARE):
            weights = {}
            for raw, w in TASK_MIX[protocol].items():
                proj = task_states.project(protocol, raw)
                if proj.status in ("queued", "processing"):
                    w *= RECENT_ACTIVE if recent else OLD_ACTIVE
                weights[raw] = w
            for slot, raw in enumerate(allocate(weights)):
                proj = task_states.project(protocol, raw)
                rows.append(
                    (
                        "t" if recent else "f",
                        p,
                        slot,
                        protocol,
                        raw,
                        proj.status,
                        proj.reason,
                        proj.outcome_certainty,
                        proj.retry_policy,
                        proj.rule,
                        task_class(proj),
                        "t" if proj.is_terminal else "f",
                    )
                )
    copy_rows(
        "bench_task_slots",
        (
            "recent",
            "proto",
            "slot",
            "protocol",
            "raw_state",
            "status",
            "reason",
            "outcome_certainty",
            "retry_policy",
            "projection_rule",
            "cls",
            "terminal",
        ),
        rows,
    )
    execute("CREATE INDEX ON bench_task_slots (recent, proto, slot)")

    execute(
        """CREATE TEMP TABLE bench_msg_plan (
            a2a boolean, cls text, k integer, type text, role text, state text,
            stop_reason text, status text, reason text, outcome_certainty text,
            retry_policy text, projection_rule text)"""
    )
    rows = []
    history = task_states.project_message("completed")  # as _write_a2a_children stamps
    for cls, plan in MESSAGE_PLAN.items():
        for k, (type_, role, state, stop) in enumerate(plan):
            proj = task_states.project_message(state, stop_reason=stop)
            rows.append(
                (
                    "f",
                    cls,
                    k,
                    type_,
                    role,
                    state,
                    stop,
                    proj.status,
                    proj.reason,
                    proj.outcome_certainty,
                    proj.retry_policy,
                    proj.rule,
                )
            )
            rows.append(
                (
                    "t",
                    cls,
                    k,
                    "a2a_message",
                    "user" if role == "user" else "agent",
                    "",
                    "",
                    history.status,
                    history.reason,
                    history.outcome_certainty,
                    history.retry_policy,
                    history.rule,
                )
            )
    copy_rows(
        "bench_msg_plan",
        (
            "a2a",
            "cls",
            "k",
            "type",
            "role",
            "state",
            "stop_reason",
            "status",
            "reason",
            "outcome_certainty",
            "retry_policy",
            "projection_rule",
        ),
        rows,
    )

    execute(
        """CREATE TEMP TABLE bench_op_slots (
            recent boolean, slot integer, raw_status text, effect_state text,
            projection_state text, error_code text, error_retry_mode text,
            error_effect_state text, terminal boolean, status text, reason text,
            outcome_certainty text, retry_policy text, projection_rule text)"""
    )
    rows = []
    for recent in (False, True):
        weights = {combo: combo[8 if recent else 7] for combo in OP_COMBOS}
        for slot, combo in enumerate(allocate(weights)):
            raw, effect, pstate, code, mode, err_effect, terminal = combo[:7]
            proj = op_states.project(
                raw, error_code=code, retry_mode=mode, effect_state=effect, projection_state=pstate
            )
            rows.append(
                (
                    "t" if recent else "f",
                    slot,
                    raw,
                    effect,
                    pstate,
                    code,
                    mode,
                    err_effect,
                    "t" if terminal else "f",
                    proj.status,
                    proj.reason,
                    proj.outcome_certainty,
                    proj.retry_policy,
                    proj.rule,
                )
            )
    copy_rows(
        "bench_op_slots",
        (
            "recent",
            "slot",
            "raw_status",
            "effect_state",
            "projection_state",
            "error_code",
            "error_retry_mode",
            "error_effect_state",
            "terminal",
            "status",
            "reason",
            "outcome_certainty",
            "retry_policy",
            "projection_rule",
        ),
        rows,
    )
    execute("CREATE INDEX ON bench_op_slots (recent, slot)")
    for table in ("bench_task_slots", "bench_msg_plan", "bench_op_slots"):
        execute(f"ANALYZE {table}")


# --- indexes and constraints ------------------------------------------------------------


def drop_secondary_indexes() -> list[str]:
    """Drop every index and constraint but the primary keys; return the SQL that restores them."""
    restore: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype
               FROM pg_constraint
               WHERE conrelid::regclass::text = ANY(%s) AND contype IN ('u', 'f')""",
            [list(BIG_TABLES)],
        )
        constraints = cursor.fetchall()
        cursor.execute(
            """SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
               FROM pg_index i
               WHERE i.indrelid::regclass::text = ANY(%s) AND NOT i.indisprimary
                 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)""",
            [list(BIG_TABLES)],
        )
        indexes = cursor.fetchall()
    # Unique constraints first (foreign keys come last: they need the target's key).
    for table, name, definition, _kind in sorted(constraints, key=lambda c: c[3] == "f"):
        restore.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for table, name, _, kind in constraints:
        if kind == "f":
            execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for table, name, _, kind in constraints:
        if kind == "u":
            execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, definition in indexes:
        execute(f"DROP INDEX {name}")
        restore.insert(0, definition)
    return restore


# --- the data ----------------------------------------------------------------------------

TASK_SQL = """
INSERT INTO tasks_task (
    id, task_id, protocol, agent_id, caller_id, caller_principal_id, caller_agent_id,
    caller_owner_id, target_principal_id, target_agent_id, target_owner_id, context_id,
    channel_id, raw_state, error, result, metadata, created_at, started_at, updated_at,
    completed_at, deadline_at, raw_payload, payload_digest, first_seen_at, mirrored_at,
    resync_requested_at, status, reason, outcome_certainty, retry_policy, projection_rule,
    projection_version, error_code, a2a_direction, a2a_counterpart)
SELECT id, task_id, protocol, agent_id, caller_id, '', caller_agent_id, '', '', target_agent_id,
    '', context_id, channel_id, raw_state, error, result, '{}'::jsonb, created_at, started_at,
    updated_at, completed_at, NULL, raw_payload,
    encode(sha256(convert_to(raw_payload::text, 'UTF8')), 'hex'),
    created_at + interval '2 seconds', updated_at + interval '2 seconds', NULL,
    status, reason, outcome_certainty, retry_policy, projection_rule, %(version)s, '', '', ''
FROM (
    SELECT x.*,
        CASE WHEN x.protocol = 'a2a' THEN jsonb_build_object(
                'id', x.task_id, 'contextId', x.context_id,
                'status', jsonb_build_object('state', x.raw_state, 'timestamp', x.updated_at),
                'target_agent_id', x.agent_id, 'caller_agent_id', x.caller_agent_id)
            ELSE jsonb_strip_nulls(jsonb_build_object(
                'task_id', x.task_id, 'agent_id', x.agent_id, 'caller_id', x.caller_id,
                'context_id', NULLIF(x.context_id, ''), 'status', x.raw_state,
                'created_at', x.created_at, 'started_at', x.started_at,
                'updated_at', x.updated_at, 'completed_at', x.completed_at,
                'result', x.result, 'error', NULLIF(x.error, '')))
        END AS raw_payload
    FROM (
        SELECT s.g AS id, sl.protocol, sl.raw_state, sl.status, sl.reason,
            sl.outcome_certainty, sl.retry_policy, sl.projection_rule,
            CASE sl.protocol
                WHEN 'openapi' THEN 'tsk_' || lpad(s.g::text, 8, '0') || substr(s.h, 1, 8)
                WHEN 'a2a' THEN substr(s.h, 1, 8) || '-' || substr(s.h, 9, 4) || '-4'
                    || substr(s.h, 14, 3) || '-a' || substr(s.h, 18, 3) || '-'
                    || substr(s.h, 21, 12)
                ELSE 'prd_' || lpad(s.g::text, 8, '0')
            END AS task_id,
            s.agent_id,
            CASE WHEN sl.protocol = 'a2a' THEN '' ELSE 'usr_' || lpad(s.caller::text, 5, '0')
            END AS caller_id,
            CASE WHEN sl.protocol = 'a2a' THEN 'agt_caller_' || lpad(s.caller::text, 3, '0')
                ELSE '' END AS caller_agent_id,
            CASE WHEN sl.protocol = 'a2a' THEN s.agent_id ELSE '' END AS target_agent_id,
            CASE WHEN sl.protocol = 'a2a' THEN 'ctx_' || substr(s.h, 17, 16)
                WHEN s.r_ctx < 0.3 THEN 'ctx_' || substr(s.h, 17, 12)
                ELSE '' END AS context_id,
            CASE WHEN sl.protocol = 'a2a' THEN ''
                WHEN sl.protocol = 'openapi'
                    THEN 'tsk_' || lpad(s.g::text, 8, '0') || substr(s.h, 1, 8)
                ELSE 'prd_' || lpad(s.g::text, 8, '0') END AS channel_id,
            CASE WHEN sl.status = 'failed' THEN 'agent error: ' || sl.reason ELSE '' END AS error,
            CASE WHEN sl.status = 'completed'
                THEN jsonb_build_object('text', 'Done: ticket ' || s.g || ' resolved.')
            END AS result,
            s.created_at,
            CASE WHEN sl.status = 'queued' THEN NULL ELSE s.created_at + interval '1 second'
            END AS started_at,
            CASE WHEN sl.terminal OR sl.status = 'unmapped' THEN s.created_at + s.duration
                WHEN sl.status = 'processing' THEN s.created_at + s.duration / 10
                ELSE s.created_at END AS updated_at,
            CASE WHEN sl.terminal THEN s.created_at + s.duration END AS completed_at
        FROM (
            SELECT g, h, recent, created_at, r_ctx, caller,
                'agt_' || lpad(floor(%(agents)s * power(r_agent, 2))::text, 4, '0') AS agent_id,
                CASE WHEN r_proto < 0.6 THEN 0 WHEN r_proto < 0.9 THEN 1 ELSE 2 END AS proto,
                floor(r_state * %(slots)s)::int AS slot,
                make_interval(secs => 20 + floor(600 * power(r_dur, 3))) AS duration
            FROM (
                SELECT g, md5('task' || g) AS h, random() AS r_proto, random() AS r_state,
                    random() AS r_agent, random() AS r_dur, random() AS r_ctx,
                    floor(random() * 20000)::int AS caller,
                    %(start)s::timestamptz + %(span)s::interval * (g::float8 / %(n)s)
                        - make_interval(secs => floor(random() * 600)) AS created_at
                FROM generate_series(1, %(n)s) AS g
            ) r0
            CROSS JOIN LATERAL (
                SELECT r0.created_at > %(end)s::timestamptz
                    - make_interval(hours => %(recent_hours)s) AS recent
            ) rr
        ) s
        JOIN bench_task_slots sl
            ON sl.recent = s.recent AND sl.proto = s.proto AND sl.slot = s.slot
    ) x
) y
"""

# The task's outcome class (from its stored projection, as the audit sees it) picks
# its message plan: 1 to 3 messages, 3 on average.
MESSAGE_SQL = """
INSERT INTO tasks_message (
    status, reason, outcome_certainty, retry_policy, projection_rule, projection_version,
    message_id, source, conversation_id, type, sender, role, reply_to, state, stop_reason,
    body, parts, content, metadata, created_at, updated_at, raw_payload, payload_digest,
    position, mirrored_at, task_id)
SELECT status, reason, outcome_certainty, retry_policy, projection_rule, %(version)s,
    message_id, source, conversation_id, type, sender, role, '', state, stop_reason,
    body, parts, NULL, '{}'::jsonb, created_at, created_at, raw_payload,
    encode(sha256(convert_to(raw_payload::text, 'UTF8')), 'hex'),
    position, created_at + interval '3 seconds', task_pk
FROM (
    SELECT z.*,
        CASE WHEN z.source = 'a2a'
            THEN jsonb_build_object('messageId', z.message_id, 'role', z.role,
                'contextId', z.conversation_id, 'parts', z.parts)
            ELSE jsonb_strip_nulls(jsonb_build_object('id', z.message_id,
                'conversation_id', z.conversation_id, 'type', z.type, 'sender', z.sender,
                'role', z.role, 'body', z.body, 'state', z.state,
                'stop_reason', NULLIF(z.stop_reason, ''), 'created_at', z.created_at))
        END AS raw_payload
    FROM (
        SELECT t.id AS task_pk, m.status, m.reason, m.outcome_certainty, m.retry_policy,
            m.projection_rule, m.type, m.role, m.state, m.stop_reason,
            CASE WHEN m.a2a THEN 'a2a' ELSE 'envelope' END AS source,
            CASE WHEN m.a2a THEN 'hist_' || t.task_id || '_' || m.k
                ELSE 'msg_' || lpad(t.id::text, 8, '0') || '_' || m.k END AS message_id,
            CASE WHEN m.a2a THEN t.context_id ELSE t.channel_id END AS conversation_id,
            CASE WHEN m.role = 'user' THEN COALESCE(NULLIF(t.caller_id, ''), t.caller_agent_id)
                ELSE t.agent_id END AS sender,
            CASE WHEN m.role = 'user' THEN 'Please handle ticket ' || t.id || ' for me.'
                WHEN m.stop_reason = 'tool_use' THEN 'Looking up the order history (tool call).'
                ELSE 'Reply ' || m.k || ' on ticket ' || t.id || ': ' || m.state || '.'
            END AS body,
            CASE WHEN m.a2a THEN jsonb_build_array(jsonb_build_object('kind', 'text',
                'text', 'Ticket ' || t.id)) ELSE '[]'::jsonb END AS parts,
            CASE WHEN m.a2a THEN t.created_at
                ELSE t.created_at + make_interval(secs => 1 + 5 * m.k) END AS created_at,
            CASE WHEN m.a2a THEN m.k ELSE 0 END AS position
        FROM tasks_task t
        JOIN bench_msg_plan m ON m.a2a = (t.protocol = 'a2a') AND m.cls = (CASE
            WHEN t.status = 'failed' AND t.reason IN ('timeout', 'outcome_unknown')
                THEN 'timeout'
            WHEN t.status = 'failed' AND t.reason = 'rejected' THEN 'rejected'
            ELSE t.status END)
        WHERE t.task_id <> %(detail)s
    ) z
) w
"""


DETAIL_TASK_SQL = """
INSERT INTO tasks_task (
    id, task_id, protocol, agent_id, caller_id, caller_principal_id, caller_agent_id,
    caller_owner_id, target_principal_id, target_agent_id, target_owner_id, context_id,
    channel_id, raw_state, error, result, metadata, created_at, started_at, updated_at,
    completed_at, deadline_at, raw_payload, payload_digest, first_seen_at, mirrored_at,
    status, reason, outcome_certainty, retry_policy, projection_rule, projection_version,
    error_code, a2a_direction, a2a_counterpart)
SELECT %(id)s, %(task_id)s, 'openapi', 'agt_0007', 'usr_00042', '', '', '', '', '', '', '',
    %(task_id)s, 'completed', '', '{"text": "A long conversation, resolved."}'::jsonb,
    '{}'::jsonb, c, c + interval '1 second', c + interval '2 hours',
    c + interval '2 hours', NULL, p, encode(sha256(convert_to(p::text, 'UTF8')), 'hex'), c,
    c + interval '2 hours', %(status)s, %(reason)s, %(certainty)s, %(retry)s, %(rule)s,
    %(version)s, '', '', ''
FROM (SELECT %(end)s::timestamptz - interval '3 hours' AS c) AS t0
CROSS JOIN LATERAL (SELECT jsonb_build_object('task_id', %(task_id)s, 'agent_id', 'agt_0007',
    'status', 'completed', 'created_at', c, 'updated_at', c + interval '2 hours') AS p) AS t1
"""

DETAIL_MESSAGES_SQL = """
INSERT INTO tasks_message (
    status, reason, outcome_certainty, retry_policy, projection_rule, projection_version,
    message_id, source, conversation_id, type, sender, role, reply_to, state, stop_reason,
    body, parts, content, metadata, created_at, updated_at, raw_payload, payload_digest,
    position, mirrored_at, task_id)
SELECT m.status, m.reason, m.outcome_certainty, m.retry_policy, m.projection_rule, %(version)s,
    x.message_id, 'envelope', %(task_id)s, m.type,
    CASE WHEN m.role = 'user' THEN 'usr_00042' ELSE 'agt_0007' END, m.role, '', m.state,
    m.stop_reason,
    CASE WHEN m.role = 'user' THEN 'Question ' || x.i || ': and what about the next order?'
        ELSE 'Answer ' || x.i || ': here is what I found in the order history.' END,
    '[]'::jsonb, NULL, '{}'::jsonb, x.at, x.at, x.payload,
    encode(sha256(convert_to(x.payload::text, 'UTF8')), 'hex'), 0,
    x.at + interval '1 second', %(id)s
FROM (
    SELECT i, %(task_id)s || '_m' || lpad(i::text, 4, '0') AS message_id,
        t.c + make_interval(secs => 7 * i) AS at,
        CASE WHEN i = %(count)s THEN 2 WHEN i %% 2 = 1 THEN 0 ELSE 1 END AS step,
        jsonb_build_object('id', %(task_id)s || '_m' || lpad(i::text, 4, '0'),
            'conversation_id', %(task_id)s, 'seq', i) AS payload
    FROM generate_series(1, %(count)s) AS i
    CROSS JOIN (SELECT created_at AS c FROM tasks_task WHERE id = %(id)s) AS t
) x
JOIN bench_msg_plan m ON NOT m.a2a AND m.cls = 'completed' AND m.k = x.step
"""

OPERATION_SQL = """
INSERT INTO operations_runtimeoperation (
    id, status, reason, outcome_certainty, retry_policy, projection_rule, projection_version,
    operation_id, instance_id, target_scope, platform_agent_id, conversation_id, method,
    capability, transport, sequence, cursor, raw_status, effect_state, terminal, progress,
    cancel_requested_by, cancel_reason, cancel_requested_at, projection_revision,
    projection_state, projection_platform_agent_id, result, error_code, error_message,
    error_request_id, error_effect_state, error_retry_mode, error_context, created_at,
    updated_at, raw_payload, payload_digest, first_seen_at, mirrored_at)
SELECT id, status, reason, outcome_certainty, retry_policy, projection_rule, %(version)s,
    operation_id, instance_id, target_scope, platform_agent_id, conversation_id, method,
    capability, 'service', 3, '', raw_status, effect_state, terminal, NULL,
    cancel_requested_by, cancel_reason, cancel_requested_at, projection_revision,
    projection_state, projection_platform_agent_id, NULL, error_code, error_message,
    error_request_id, error_effect_state, error_retry_mode, NULL, created_at, updated_at,
    raw_payload, encode(sha256(convert_to(raw_payload::text, 'UTF8')), 'hex'),
    created_at + interval '1 second', updated_at + interval '1 second'
FROM (
    SELECT x.*, jsonb_strip_nulls(jsonb_build_object(
        'id', x.operation_id, 'instanceId', x.instance_id,
        'target', jsonb_strip_nulls(jsonb_build_object('scope', x.target_scope,
            'platformAgentId', NULLIF(x.platform_agent_id, ''),
            'conversationId', NULLIF(x.conversation_id, ''))),
        'method', x.method, 'capability', x.capability, 'transport', 'service',
        'sequence', '3', 'createdAt', x.created_at, 'updatedAt', x.updated_at,
        'status', x.raw_status, 'effectState', x.effect_state, 'terminal', x.terminal,
        'cancelRequest', CASE WHEN x.cancel_requested_by <> '' THEN jsonb_build_object(
            'requestedBy', x.cancel_requested_by, 'reason', x.cancel_reason,
            'requestedAt', x.cancel_requested_at) END,
        'projection', CASE WHEN x.projection_state <> '' THEN jsonb_build_object(
            'revision', x.projection_revision::text, 'state', x.projection_state,
            'platformAgentId', NULLIF(x.projection_platform_agent_id, '')) END,
        'error', CASE WHEN x.error_code <> '' THEN jsonb_strip_nulls(jsonb_build_object(
            'code', x.error_code, 'message', x.error_message,
            'requestId', x.error_request_id,
            'effectState', NULLIF(x.error_effect_state, ''),
            'retryMode', NULLIF(x.error_retry_mode, ''))) END
    )) AS raw_payload
    FROM (
        SELECT s.g AS id, sl.status, sl.reason, sl.outcome_certainty, sl.retry_policy,
            sl.projection_rule, 'op_' || lpad(s.g::text, 8, '0') || substr(s.h, 1, 6)
                AS operation_id,
            'ins_' || lpad(s.instance::text, 4, '0') AS instance_id,
            s.scope AS target_scope,
            CASE WHEN s.scope = 'instance' THEN '' ELSE s.agent_id END AS platform_agent_id,
            CASE WHEN s.scope = 'conversation' THEN 'conv_' || substr(s.h, 7, 12) ELSE '' END
                AS conversation_id,
            s.method, s.capability, sl.raw_status, sl.effect_state, sl.terminal,
            CASE WHEN sl.raw_status = 'cancelled' THEN 'usr_oncall' ELSE '' END
                AS cancel_requested_by,
            CASE WHEN sl.raw_status = 'cancelled' THEN 'stuck in queue' ELSE '' END
                AS cancel_reason,
            CASE WHEN sl.raw_status = 'cancelled' THEN s.created_at + interval '5 seconds' END
                AS cancel_requested_at,
            CASE WHEN sl.projection_state IN ('synced', 'pending', 'blocked') THEN 1 + s.g %% 7
            END AS projection_revision,
            sl.projection_state,
            CASE WHEN sl.projection_state IN ('synced', 'pending', 'blocked') THEN s.agent_id
                ELSE '' END AS projection_platform_agent_id,
            sl.error_code,
            CASE WHEN sl.error_code <> '' THEN 'runtime said ' || lower(sl.error_code)
                ELSE '' END AS error_message,
            CASE WHEN sl.error_code <> '' THEN 'req_' || substr(s.h, 1, 12) ELSE '' END
                AS error_request_id,
            sl.error_effect_state, sl.error_retry_mode, s.created_at,
            CASE WHEN sl.terminal THEN s.created_at + make_interval(secs => 3 + s.g %% 40)
                ELSE s.created_at + interval '2 seconds' END AS updated_at
        FROM (
            SELECT g, h, instance, agent_id, scope, meth.method, meth.capability,
                floor(r_state * %(slots)s)::int AS slot, created_at,
                created_at > %(end)s::timestamptz - make_interval(mins => %(recent_minutes)s)
                    AS recent
            FROM (
                SELECT g, md5('op' || g) AS h, random() AS r_state,
                    floor(random() * %(instances)s)::int AS instance,
                    'agt_' || lpad(floor(%(agents)s * power(random(), 2))::text, 4, '0')
                        AS agent_id,
                    (ARRAY['agent', 'agent', 'conversation', 'instance'])[1 + g %% 4] AS scope,
                    1 + floor(random() * %(methods)s)::int AS method_no,
                    %(start)s::timestamptz + %(span)s::interval * (g::float8 / %(n)s)
                        - make_interval(secs => floor(random() * 120)) AS created_at
                FROM generate_series(1, %(n)s) AS g
            ) r0
            JOIN (SELECT * FROM unnest(%(method_names)s::text[], %(method_caps)s::text[])
                    WITH ORDINALITY AS mm(method, capability, no)) meth
                ON meth.no = r0.method_no
        ) s
        JOIN bench_op_slots sl ON sl.recent = s.recent AND sl.slot = s.slot
    ) x
) y
"""

EVENT_SQL = """
INSERT INTO operations_runtimeoperationevent (
    operation_id_raw, event_id, method, type, sequence, recorded_at, outcome, revision,
    payload, result, error, raw_payload, mirrored_at, operation_id)
SELECT o.operation_id, o.id * 10 + k, o.method, ev.type, k,
    o.created_at + make_interval(secs => k), ev.outcome, NULL,
    CASE WHEN k = 2 THEN jsonb_build_object('phase', 'applying') END, NULL,
    CASE WHEN ev.outcome IN ('failed', 'expired', 'outcome_unknown')
        THEN jsonb_build_object('code', o.error_code) END,
    jsonb_build_object('id', (o.id * 10 + k)::text, 'operationId', o.operation_id,
        'method', o.method, 'event', jsonb_build_object('type', ev.type,
        'sequence', k::text, 'recordedAt', o.created_at + make_interval(secs => k))),
    o.updated_at + interval '1 second', o.id
FROM operations_runtimeoperation o
CROSS JOIN generate_series(1, 3) AS k
CROSS JOIN LATERAL (SELECT
    CASE k WHEN 1 THEN 'runtime_operation_started'
        WHEN 2 THEN CASE WHEN o.effect_state = 'committed' THEN 'runtime_effect_committed'
            ELSE 'runtime_operation_progress' END
        ELSE CASE o.raw_status
            WHEN 'succeeded' THEN CASE WHEN o.projection_state = 'synced'
                THEN 'runtime_projection_synced' ELSE 'runtime_rpc_response' END
            WHEN 'projection_blocked' THEN 'runtime_projection_blocked'
            WHEN 'projection_pending' THEN 'runtime_projection_pending'
            WHEN 'runtime_committed' THEN 'runtime_effect_committed'
            WHEN 'cancelled' THEN 'runtime_operation_cancel_requested'
            ELSE 'runtime_rpc_response' END
    END AS type,
    CASE WHEN k = 3 AND o.terminal AND o.raw_status = ANY(%(outcomes)s) THEN o.raw_status
        ELSE '' END AS outcome
) AS ev
"""


def recreate_database() -> None:
    db = settings.DATABASES["default"]
    name = db["NAME"]
    if "bench" not in name:
        sys.exit(f"refusing to recreate {name!r}: the benchmark database name must contain 'bench'")
    connection.close()
    with psycopg.connect(
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--operations", type=int, default=200_000)
    parser.add_argument("--seed", type=float, default=0.42)
    parser.add_argument(
        "--keep", action="store_true", help="do not drop and recreate the database first"
    )
    args = parser.parse_args()
    n, n_ops = args.tasks, args.operations
    overall = time.perf_counter()
    log(f"database {settings.DATABASES['default']['NAME']}: {n:,} tasks, {n_ops:,} operations")

    if not args.keep:
        with step("recreate database"):
            recreate_database()
    with step("migrate"):
        call_command("migrate", verbosity=0)

    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        end = cursor.fetchone()[0]
    start = end - __import__("datetime").timedelta(days=DAYS)
    execute("SET synchronous_commit = off")
    execute("SET maintenance_work_mem = '1GB'")
    execute("SET work_mem = '256MB'")
    # One worker keeps generate_series order = physical order = created order.
    execute("SET max_parallel_workers_per_gather = 0")
    execute("SELECT setseed(%s)", [args.seed])
    params = {
        "n": n,
        "start": start,
        "end": end,
        "span": f"{DAYS} days",
        "slots": SLOTS,
        "agents": AGENTS,
        "recent_hours": RECENT_HOURS,
        "version": PROJECTION_VERSION,
        "detail": DETAIL_TASK_ID,
    }

    with step("lookup tables (projections computed in Python)"):
        build_lookup_tables()
    with step("drop secondary indexes and constraints"):
        restore = drop_secondary_indexes()

    with step(f"insert {n:,} tasks"):
        rows = execute(TASK_SQL, params)
        log(f"   {rows:,} tasks")
    with step("insert the 1,000-message task"):
        detail = task_states.project(task_states.OPENAPI, "completed")
        execute(
            DETAIL_TASK_SQL,
            {
                **params,
                "id": n + 1,
                "task_id": DETAIL_TASK_ID,
                "status": detail.status,
                "reason": detail.reason,
                "certainty": detail.outcome_certainty,
                "retry": detail.retry_policy,
                "rule": detail.rule,
            },
        )
    with step("insert messages (~3 per task)"):
        rows = execute(MESSAGE_SQL, params)
        log(f"   {rows:,} messages")
    with step(f"insert {DETAIL_MESSAGES:,} messages of {DETAIL_TASK_ID}"):
        execute(
            DETAIL_MESSAGES_SQL,
            {**params, "id": n + 1, "task_id": DETAIL_TASK_ID, "count": DETAIL_MESSAGES},
        )

    methods = list(op_states.METHOD_CAPABILITIES)
    with step(f"insert {n_ops:,} runtime operations"):
        rows = execute(
            OPERATION_SQL,
            {
                **params,
                "n": n_ops,
                "instances": INSTANCES,
                "methods": len(methods),
                "method_names": methods,
                "method_caps": [op_states.METHOD_CAPABILITIES[m] for m in methods],
                "recent_minutes": OP_RECENT_MINUTES,
            },
        )
        log(f"   {rows:,} operations")
    with step("insert runtime operation events (3 per operation)"):
        rows = execute(EVENT_SQL, {"outcomes": list(op_states.EVENT_OUTCOMES)})
        log(f"   {rows:,} events")

    with step(f"recreate {len(restore)} indexes and constraints"):
        execute("SET max_parallel_maintenance_workers = 2")
        for sql in restore:
            t0 = time.perf_counter()
            execute(sql)
            log(f"     {time.perf_counter() - t0:5.1f} s  {sql[:110]}")
    with step("reset id sequences"):
        for table in BIG_TABLES:
            execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT COALESCE(max(id), 0) + 1 FROM {table}), false)"
            )
    execute("RESET max_parallel_workers_per_gather")
    with step("rebuild_counters"):
        call_command("rebuild_counters")
    with step("VACUUM ANALYZE"):
        execute("VACUUM (ANALYZE)")
    with step("benchmark users"):
        make_users()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class "
            "WHERE relname = ANY(%s) ORDER BY relname",
            [list(BIG_TABLES)],
        )
        for name, size in cursor.fetchall():
            log(f"   {name}: {size} (with indexes)")
    log(f"load finished in {time.perf_counter() - overall:.1f} s")


def make_users() -> None:
    from django.contrib.auth.models import Group, User

    admin, _ = User.objects.get_or_create(
        username=ADMIN_USER, defaults={"is_staff": True, "is_superuser": True}
    )
    admin.set_password("bench")
    admin.save()
    feeder, _ = User.objects.get_or_create(username=FEEDER_USER)
    feeder.groups.add(Group.objects.get(name="feeder"))


if __name__ == "__main__":
    main()
