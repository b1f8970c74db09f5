"""Issue #15, point 4: the Python side of English and Simplified Chinese.

The pure modules stay Django-free and English; their sentences are said in the
reader's language at display time by one rule (``mirror.i18n.translated``);
codes, raw values and CSV column names stay as they are in every language.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import translation

from beeos_console.core.exports import ExportColumn
from beeos_console.mirror import i18n, words
from beeos_console.mirror.said import Said, gettext_noop
from operations import states as op_states
from tasks import states as task_states
from tasks.tables import TASK_EXPORT

from .factories import make_task

ROOT = Path(__file__).resolve().parent.parent
PURE = (
    "beeos_console.mirror.said",
    "beeos_console.mirror.states",
    "beeos_console.mirror.words",
    "tasks.states",
    "operations.states",
)


def test_the_pure_modules_import_no_django():
    code = (
        f"import sys, {', '.join(PURE)}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_said_sentence_reads_as_english_and_keeps_its_msgid():
    said = gettext_noop("error %(code)s: %(meaning)s", code="OUTCOME_UNKNOWN", meaning="x")
    assert said == "error OUTCOME_UNKNOWN: x"
    assert isinstance(said, str) and isinstance(said, Said)
    assert said.msgid == "error %(code)s: %(meaning)s"
    assert said.params == {"code": "OUTCOME_UNKNOWN", "meaning": "x"}


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_codes_and_raw_values_in_a_sentence_are_never_translated(language):
    with translation.override(language):
        said = i18n.reason_words("OUTCOME_UNKNOWN")  # a runtime error code as a reason
        assert "OUTCOME_UNKNOWN" in said
        assert isinstance(said, str) and not isinstance(said, Said)
        refusal = i18n.translated(op_states.cancel_refusal("Weird_Status "))
        assert "'Weird_Status'" in refusal
        rule = i18n.translated(
            task_states.explain("openapi", "timeout", task_states.project("openapi", "timeout"))
        )
        assert "`timeout`" in rule and "openapi:timeout" in rule


def test_in_english_the_translated_sentence_is_the_pure_modules_sentence():
    with translation.override("en"):
        for reason, sentence in words.REASON_WORDS.items():
            assert i18n.reason_words(reason) == sentence
        assert i18n.what_to_do("failed", "uncertain", "manual_review") == words.what_to_do(
            "failed", "uncertain", "manual_review"
        )
        assert i18n.translated(op_states.cancel_refusal("expired")) == (
            "The operation has already ended (expired)."
        )


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_csv_column_keeps_its_machine_name_in_every_language(language):
    with translation.override(language):
        assert [c.name for c in TASK_EXPORT][:3] == ["task_id", "protocol", "status"]
        assert ExportColumn("plain").label == "plain"


@pytest.mark.django_db
def test_a_chinese_export_has_the_same_rows_and_a_count_line(client, support_user):
    task = make_task("failed")
    client.force_login(support_user)
    english = client.get("/tasks/export.csv", HTTP_ACCEPT_LANGUAGE="en")
    chinese = client.get("/tasks/export.csv", HTTP_ACCEPT_LANGUAGE="zh-hans")
    rows = {}
    for name, response in (("en", english), ("zh", chinese)):
        assert response.status_code == 200
        text = b"".join(response.streaming_content).decode()
        rows[name] = list(csv.reader(io.StringIO(text)))
    assert rows["en"][0][0] == "task_id"
    # The data rows are raw values: the same bytes in both languages.
    assert rows["en"][1:-1] == rows["zh"][1:-1] == [rows["en"][1]]
    assert rows["en"][1][0] == task.task_id and rows["en"][1][2] == "failed"
    assert rows["en"][-1] == ["# 1 row"]
    assert rows["zh"][-1][0].startswith("#")
