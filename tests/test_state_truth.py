"""State truth: effect-aware operation projections, product producers' failure
details, tolerant readers (issue: "State truth").

The tables are restated by hand from ``shared/DESIGN.md`` ("Runtime operation",
"Product / legacy producers", "Spelling tolerance", "Message envelope"); the
properties (``hypothesis``) range over every combination the readers accept.
Each projection is ``(status, reason, outcome_certainty, retry_policy)``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from beeos_console.core import tokens
from beeos_console.mirror.states import PRODUCT_STATUSES, UNMAPPED
from operations import states as op_states
from tasks import states as task_states
from tasks.models import Message, Task

from .factories import BASE, iso, make_message, make_task


def as_tuple(p) -> tuple[str, str, str, str]:
    return (p.status, p.reason, p.outcome_certainty, p.retry_policy)


UNCERTAIN_REVIEW = ("uncertain", "manual_review")

# --- Runtime operations: effectState decides certainty and retry (DESIGN.md) ---
EFFECT_CASES = [
    # (status, effectState, error code, retryMode) -> projection
    # Unknown effect: uncertain / manual_review whatever the status.
    ("failed", "outcome_unknown", "", "resubmit", ("failed", "outcome_unknown", *UNCERTAIN_REVIEW)),
    (
        "failed",
        "outcome_unknown",
        "INSTANCE_OFFLINE",
        "resume",
        ("failed", "INSTANCE_OFFLINE", *UNCERTAIN_REVIEW),
    ),
    ("expired", "outcome_unknown", "", "resubmit", ("failed", "expired", *UNCERTAIN_REVIEW)),
    ("cancelled", "outcome_unknown", "", None, ("cancelled", "", *UNCERTAIN_REVIEW)),
    ("succeeded", "outcome_unknown", "", None, ("completed", "", *UNCERTAIN_REVIEW)),
    ("running", "outcome_unknown", "", None, ("processing", "", *UNCERTAIN_REVIEW)),
    # The error code says the same.
    ("failed", "failed", "OUTCOME_UNKNOWN", "resubmit", ("failed", "OUTCOME_UNKNOWN", *UNCERTAIN_REVIEW)),
    ("expired", "", "OUTCOME_UNKNOWN", "resubmit", ("failed", "expired", *UNCERTAIN_REVIEW)),
    # Committed effect with failed / expired / cancelled: certain, never a replay.
    ("failed", "committed", "RUNTIME_EXECUTION_FAILED", "resubmit", ("failed", "RUNTIME_EXECUTION_FAILED", "certain", "manual_review")),
    ("expired", "committed", "", "resume", ("failed", "expired", "certain", "manual_review")),
    ("cancelled", "committed", "", None, ("cancelled", "effect_committed", "certain", "manual_review")),
    ("canceled", "committed", "", None, ("cancelled", "effect_committed", "certain", "manual_review")),
    # Clear effect: certain, retry follows retryMode.
    ("failed", "failed", "INSTANCE_OFFLINE", "resubmit", ("failed", "INSTANCE_OFFLINE", "certain", "safe_to_retry")),
    ("failed", "", "INSTANCE_OFFLINE", "resume", ("failed", "INSTANCE_OFFLINE", "certain", "safe_to_retry")),
    ("failed", "queued", "INSTANCE_OFFLINE", "none", ("failed", "INSTANCE_OFFLINE", "certain", "none")),
    ("expired", "expired", "COMMAND_EXPIRED", "resubmit", ("failed", "expired", "certain", "safe_to_retry")),
    ("cancelled", "cancelled", "", None, ("cancelled", "", "certain", "none")),
    # An effectState no table knows: uncertain / manual_review.
    ("failed", "half_done", "INSTANCE_OFFLINE", "resubmit", ("failed", "INSTANCE_OFFLINE", *UNCERTAIN_REVIEW)),
    ("succeeded", "exploded", "", None, ("completed", "", *UNCERTAIN_REVIEW)),
    # Readers ignore case (raw values stay verbatim on the row).
    ("FAILED", "Outcome_Unknown", "", "RESUBMIT", ("failed", "outcome_unknown", *UNCERTAIN_REVIEW)),
    ("Failed", "COMMITTED", "", "Resubmit", ("failed", "error", "certain", "manual_review")),
    ("failed", "Failed", "instance_offline", "Resume", ("failed", "INSTANCE_OFFLINE", "certain", "safe_to_retry")),
]  # fmt: skip


@pytest.mark.parametrize(("status", "effect", "code", "mode", "expected"), EFFECT_CASES)
def test_effect_state_decides_certainty_and_retry(status, effect, code, mode, expected):
    projection = op_states.project(status, effect_state=effect, error_code=code, retry_mode=mode)
    assert as_tuple(projection) == expected


def test_the_error_objects_own_effect_state_counts_too():
    projection = op_states.project(
        "failed",
        effect_state="failed",
        error_effect_state="outcome_unknown",
        error_code="INSTANCE_OFFLINE",
        retry_mode="resubmit",
    )
    assert as_tuple(projection) == ("failed", "INSTANCE_OFFLINE", *UNCERTAIN_REVIEW)


def test_an_unknown_effect_state_is_named_unmapped():
    assert op_states.unmapped_effect_states("half_done", "committed", "", None) == ["half_done"]
    assert "+effect:unmapped" in op_states.project("failed", effect_state="half_done").rule


# --- Product producers' failure details (seed example) ---
SEED_EXAMPLE = {
    "status": "failed",
    "reason": "timeout",
    "outcome_certainty": "uncertain",
    "retry_policy": "manual_review",
}
PRODUCT_DETAIL_CASES = [
    # (status, details) -> projection
    ("failed", {k: v for k, v in SEED_EXAMPLE.items() if k != "status"},
     ("failed", "timeout", "uncertain", "manual_review")),
    # The table fills only what is missing.
    ("failed", {"reason": "quota_exceeded"}, ("failed", "quota_exceeded", "certain", "manual_review")),
    ("failed", {"retry_policy": "safe_to_retry"}, ("failed", "error", "certain", "safe_to_retry")),
    ("timeout", {"reason": "deadline"}, ("failed", "deadline", "uncertain", "manual_review")),
    # Nothing makes an uncertain outcome certain.
    ("timeout", {"outcome_certainty": "certain", "retry_policy": "safe_to_retry"},
     ("failed", "timeout", "uncertain", "manual_review")),
    ("uncertain", {"outcome_certainty": "certain"}, ("failed", "outcome_unknown", "uncertain", "manual_review")),
    # uncertain always means manual_review.
    ("failed", {"outcome_certainty": "uncertain", "retry_policy": "safe_to_retry"},
     ("failed", "error", "uncertain", "manual_review")),
    # Case-insensitive values come out canonical.
    ("FAILED", {"outcome_certainty": "Uncertain", "retry_policy": "MANUAL_REVIEW"},
     ("failed", "error", "uncertain", "manual_review")),
    # An unmapped state stays unmapped, whatever was sent beside it.
    ("exploded", {"reason": "timeout", "outcome_certainty": "certain"},
     ("unmapped", "unmapped_state", "uncertain", "manual_review")),
]  # fmt: skip


@pytest.mark.parametrize(("status", "details", "expected"), PRODUCT_DETAIL_CASES)
def test_product_failure_details_are_kept(status, details, expected):
    assert as_tuple(task_states.project("product", status, **details)) == expected


def test_other_protocols_ignore_product_details():
    projection = task_states.project("openapi", "failed", outcome_certainty="uncertain")
    assert as_tuple(projection) == ("failed", "error", "certain", "manual_review")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("outcome_certainty", "maybe"),
        ("outcome_certainty", 1),
        ("retry_policy", "retry_forever"),
        ("retry_policy", ["manual_review"]),
        ("reason", "x" * 65),
        ("reason", {"code": "timeout"}),
    ],
)
def test_invalid_details_are_named(name, value):
    assert task_states.producer_detail_error(name, value)


# --- Tolerant readers: case-insensitive, both cancel spellings, raw kept ---
TOLERANT_CASES = [
    ("openapi", "Completed", "completed"),
    ("openapi", "INPUT_REQUIRED", "processing"),
    ("openapi", " cancelled ", "cancelled"),
    ("a2a", "task_state_working", "processing"),
    ("a2a", "Input-Required", "processing"),
    ("a2a", "CANCELLED", "cancelled"),
    ("a2a", "task_state_cancelled", "cancelled"),
    ("product", "SUCCEEDED", "completed"),
    ("product", "Canceled", "cancelled"),
    ("message", "CANCELED", "cancelled"),
    ("message", "Streaming", "processing"),
]


@pytest.mark.parametrize(("protocol", "raw", "status"), TOLERANT_CASES)
def test_readers_ignore_case_and_take_both_cancel_spellings(protocol, raw, status):
    assert task_states.project(protocol, raw).status == status
    # ...and say so: a producer note, never drift.
    assert task_states.producer_note(protocol, raw)


@pytest.mark.parametrize(
    ("protocol", "raw"),
    [("openapi", "completed"), ("a2a", "TASK_STATE_WORKING"), ("message", "cancelled")],
)
def test_canonical_spellings_carry_no_note(protocol, raw):
    assert task_states.producer_note(protocol, raw) is None


def test_stop_reason_and_operation_vocabularies_ignore_case():
    assert as_tuple(task_states.project_message("FAILED", stop_reason="Agent_Lost")) == (
        "failed",
        "agent_lost",
        "uncertain",
        "manual_review",
    )
    assert task_states.project_message("Cancelled", stop_reason="USER_STOP").reason == "user_stop"
    assert op_states.is_cancellable("RUNNING") and not op_states.is_cancellable("Canceled")
    assert op_states.is_terminal("Outcome_Unknown")
    assert op_states.producer_notes("Canceled", "COMMITTED", "Resubmit") == [
        "status: foreign cancel spelling",
        "effectState: letter case",
        "retryMode: letter case",
    ]


def test_envelope_canceled_is_terminal_like_cancelled():
    assert task_states.is_message_terminal("canceled")
    assert task_states.is_message_terminal("CANCELLED")
    assert not task_states.is_message_terminal("streaming")


# --- Properties over every combination ---
def variants(values):
    """Each value as sent, upper-cased, capitalised, or padded with blanks."""
    return st.sampled_from(list(values)).flatmap(
        lambda v: st.sampled_from([v, v.upper(), v.capitalize(), f" {v} "])
    )


op_status = st.one_of(variants(op_states.STATUSES), variants(["canceled"]), st.text(max_size=12))
effect_state = st.one_of(
    st.none(),
    st.just(""),
    variants(op_states.EFFECT_STATES),
    variants(["canceled"]),
    st.text(max_size=12),
)
error_code = st.one_of(
    st.none(), st.just(""), variants(op_states.ERROR_CODES), st.text(max_size=12)
)
retry_mode = st.one_of(st.none(), st.just(""), variants(op_states.RETRY_MODES), st.text(max_size=8))
any_value = st.one_of(st.none(), st.integers(), st.text(max_size=12), st.binary(max_size=4))


@settings(max_examples=2000, deadline=None)
@given(op_status, effect_state, effect_state, error_code, retry_mode)
def test_operation_projection_never_overclaims(status, effect, error_effect, code, mode):
    projection = op_states.project(
        status,
        effect_state=effect,
        error_effect_state=error_effect,
        error_code=code,
        retry_mode=mode,
    )
    assert projection.status in (*PRODUCT_STATUSES, UNMAPPED)
    if projection.outcome_certainty == "uncertain":
        assert projection.retry_policy == "manual_review"
    if op_states.may_have_happened(status, effect, error_effect, code):
        assert projection.retry_policy != "safe_to_retry"
    key = op_states.EFFECT_STATE_VOCABULARY.lookup
    if "outcome_unknown" in (key(effect), key(error_effect)) or (
        op_states.ERROR_CODE_VOCABULARY.key(code) == "OUTCOME_UNKNOWN"
    ):
        assert (projection.outcome_certainty, projection.retry_policy) == UNCERTAIN_REVIEW
    # Case never changes the answer.
    if isinstance(status, str):
        lowered = op_states.project(
            status.lower(),
            effect_state=effect.lower() if effect else effect,
            error_effect_state=error_effect.lower() if error_effect else error_effect,
            # An unknown code is kept as sent (it becomes the reason verbatim).
            error_code=code.upper() if op_states.ERROR_CODE_VOCABULARY.key(code) else code,
            retry_mode=mode.lower() if mode else mode,
        )
        assert as_tuple(lowered) == as_tuple(projection)


task_protocol = st.sampled_from(["openapi", "a2a", "product", "message"])


@st.composite
def task_state(draw):
    protocol = draw(task_protocol)
    known = list(task_states.known_values(protocol))
    raw = draw(st.one_of(variants(known), any_value))
    return protocol, raw


details = st.fixed_dictionaries(
    {},
    optional={
        "reason": st.one_of(st.text(max_size=70), any_value),
        "outcome_certainty": st.one_of(variants(["certain", "uncertain"]), any_value),
        "retry_policy": st.one_of(variants(["none", "safe_to_retry", "manual_review"]), any_value),
        "stop_reason": st.one_of(variants(task_states.STOP_REASONS), any_value),
    },
)


@settings(max_examples=2000, deadline=None)
@given(task_state(), details)
def test_task_projection_is_total_and_never_overclaims(state, evidence):
    protocol, raw = state
    projection = task_states.project(protocol, raw, **evidence)
    assert projection.status in (*PRODUCT_STATUSES, UNMAPPED)
    if projection.outcome_certainty == "uncertain":
        assert projection.retry_policy == "manual_review"
    bare = task_states.project(protocol, raw)
    # Evidence never turns an uncertain outcome certain, nor changes a task's status
    # (a message's stop_reason may: cancelled + timeout is an uncertain failure).
    if protocol != "message":
        assert projection.status == bare.status
    if bare.outcome_certainty == "uncertain":
        assert projection.outcome_certainty == "uncertain"
    if isinstance(raw, str):
        assert as_tuple(task_states.project(protocol, raw.swapcase(), **evidence)) == as_tuple(
            projection
        )


# --- Through the ingest API, the detail page and the REST API ---


@pytest.fixture
def feeder_api(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("truth-feeder")
    user.groups.add(Group.objects.get_or_create(name="feeder")[0])
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def product_task(task_id: str, **extra):
    return {
        "task_id": task_id,
        "agent_id": "agt_billing",
        "created_at": iso(BASE),
        "updated_at": iso(BASE),
        **extra,
    }


def ingest(api, records):
    response = api.post(
        "/api/v1/ingest/", data=json.dumps({"records": records}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.mark.django_db
def test_producer_details_come_out_exactly_so(feeder_api, support_user, client):
    answers = ingest(
        feeder_api, [{"kind": "product_task", "data": product_task("prd_1", **SEED_EXAMPLE)}]
    )
    assert answers[0]["result"] == "created"
    task = Task.objects.get(task_id="prd_1")
    assert (task.status, task.reason, task.outcome_certainty, task.retry_policy) == (
        "failed",
        "timeout",
        "uncertain",
        "manual_review",
    )
    _, key = tokens.issue(support_user, "read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    row = api.get("/api/v1/tasks/?protocol=product").json()["results"][0]
    assert {k: row[k] for k in SEED_EXAMPLE} == SEED_EXAMPLE
    client.force_login(support_user)
    html = client.get(f"/tasks/{task.task_id}/").content.decode()
    for value in ("timeout", "uncertain", "manual review"):
        assert value in html.lower()


@pytest.mark.django_db
def test_invalid_details_are_a_field_error_and_the_rest_is_written(feeder_api):
    answers = ingest(
        feeder_api,
        [
            {"kind": "product_task", "data": product_task("prd_bad", status="failed", outcome_certainty="maybe")},
            {"kind": "product_task", "data": product_task("prd_ok", status="failed", reason="quota")},
        ],
    )  # fmt: skip
    assert answers[0]["result"] == "rejected"
    assert "outcome_certainty" in answers[0]["errors"]
    assert answers[1]["result"] == "created"
    assert not Task.objects.filter(task_id="prd_bad").exists()
    assert Task.objects.get(task_id="prd_ok").reason == "quota"


@pytest.mark.django_db
def test_a_certain_claim_never_overwrites_an_uncertain_table_row(feeder_api):
    data = product_task(
        "prd_t", status="timeout", outcome_certainty="certain", retry_policy="safe_to_retry"
    )
    ingest(feeder_api, [{"kind": "product_task", "data": data}])
    task = Task.objects.get(task_id="prd_t")
    assert (task.outcome_certainty, task.retry_policy) == UNCERTAIN_REVIEW
    assert task.raw_payload["outcome_certainty"] == "certain"  # the raw value stays verbatim


@pytest.mark.django_db
def test_a_case_variant_state_is_stored_verbatim_and_projected(feeder_api):
    ingest(
        feeder_api, [{"kind": "openapi_task", "data": product_task("tsk_case", status="Completed")}]
    )
    task = Task.objects.get(task_id="tsk_case")
    assert task.raw_state == "Completed" and task.status == "completed"


@pytest.mark.django_db
def test_a_canceled_envelope_never_changes():
    task = make_task("running")
    message = make_message(task, state="canceled", stop_reason="user_stop")
    assert message.status == "cancelled" and message.is_terminal
    again = make_message(
        task,
        id=message.message_id,
        state="completed",
        created_at=iso(message.created_at),
        updated_at=iso(message.created_at.replace(year=2027)),
    )
    assert Message.objects.get(pk=message.pk).state == "canceled"
    assert again is None or again.state == "canceled"


@pytest.mark.django_db
def test_a_future_stamped_snapshot_does_not_freeze_the_task():
    import datetime as dt

    from tasks.services.write import ingest_openapi_task

    from .factories import FEEDER, openapi_task

    skewed = openapi_task("running", updated_at="2099-01-01T00:00:00Z")
    ingest_openapi_task(skewed, actor=FEEDER)
    now = dt.datetime.now(dt.UTC).isoformat()
    later = {**skewed, "status": "completed", "updated_at": now, "completed_at": now}
    result = ingest_openapi_task(later, actor=FEEDER)
    assert str(result.outcome) == "updated"
    assert Task.objects.get(task_id=skewed["task_id"]).status == "completed"
    # A plainly older snapshot is still refused.
    older = {**skewed, "status": "running", "updated_at": "2020-01-01T00:00:00Z"}
    assert str(ingest_openapi_task(older, actor=FEEDER).outcome) == "stale"
