"""The table abstraction escapes every value; FilterSets hold data filters only."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from django.utils.html import format_html

from beeos_console.core.forms import CheckboxGroup
from beeos_console.core.tables import CodeColumn, Column, Table
from beeos_console.mirror.columns import FilterLinkColumn, RawColumn, StatusColumn
from operations.filtersets import RuntimeOperationFilterSet
from tasks.filtersets import MessageFilterSet, TaskFilterSet
from tasks.forms import TaskFilterForm

HOSTILE = "<b>\"x\" & 'y'</b>"


class Sample(Table):
    name = Column("Name <1>", css_class="c")
    code = CodeColumn("Code", length=5)
    raw = RawColumn("Raw")
    status = StatusColumn("Status")
    agent = FilterLinkColumn("Agent", param="agent_id", title="Only {value}", length=40)
    custom = Column("Custom", accessor="", render="render_custom")

    def render_custom(self, value, row):
        return format_html("<i>{}</i>", row.name)

    def row_attrs(self, row):
        return {"id": row.name, "data-flag": True}


def test_every_cell_is_escaped():
    row = SimpleNamespace(name=HOSTILE, code=HOSTILE, raw=HOSTILE, status=HOSTILE, agent=HOSTILE)
    html = str(Sample([row]).render())
    assert "<b>" not in html
    assert "&lt;b&gt;&quot;x&quot; &amp; &#x27;y&#x27;&lt;/b&gt;" in html
    assert "<th>Name &lt;1&gt;</th>" in html
    assert '<td class="c">' in html
    assert "<i>&lt;b&gt;" in html  # a render method's markup is kept, its values escaped
    assert 'badge badge-purple">&lt;b&gt;' in html  # unknown status still rendered


def test_row_attrs_are_escaped_and_empty_table_says_so():
    table = Sample([])
    row = SimpleNamespace(name='a" onclick="x', code="", raw="", status="", agent="a")
    tr = str(table.row(row, attrs={"hx-swap-oob": "outerHTML"}))
    assert tr.startswith('<tr id="a&quot; onclick=&quot;x" data-flag hx-swap-oob="outerHTML">')
    assert 'class="raw empty">—<' in tr
    assert 'colspan="6" class="muted">Nothing matches.<' in str(table.render())


def test_sort_keys_come_from_the_columns():
    from tasks.filtersets import TASK_SORTS
    from tasks.tables import TaskTable

    assert TaskTable.sort_fields() == TASK_SORTS


def test_checkbox_group_escapes_and_marks_picked():
    widget = CheckboxGroup(choices=[("a<b", "A & B"), ("c", "C")])
    html = str(widget.render("f", ["c"], attrs={"id": "id_f", "aria-invalid": "true"}))
    assert 'value="a&lt;b" id="id_f_0" aria-invalid="true"> A &amp; B</label>' in html
    assert 'value="c" id="id_f_1" aria-invalid="true" checked> C</label>' in html


@pytest.mark.parametrize("filterset", [TaskFilterSet, MessageFilterSet, RuntimeOperationFilterSet])
def test_filtersets_hold_data_filters_only(filterset):
    assert "refresh" not in filterset.base_filters
    assert "sort" not in filterset.base_filters


def test_panel_keeps_its_order_and_view_switches():
    form = TaskFilterForm({"sort": "updated", "refresh": "true"})
    names = list(form.fields)
    assert names[:2] == ["status", "outcome_certainty"]
    assert names[-6:] == [
        "created_after",
        "created_before",
        "stuck",
        "upstream_missing",
        "sort",
        "refresh",
    ]
    assert form.view_state("created") == ("updated", True, {})
    assert TaskFilterForm({"sort": "nope"}).view_state("created")[2] == {
        "sort": ["Select a valid choice. nope is not one of the available choices."]
    }


@pytest.mark.django_db
def test_schema_documents_cursors_not_ui_switches(client, django_user_model):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path in ("/api/v1/tasks/", "/api/v1/messages/", "/api/v1/operations/"):
        names = {p["name"] for p in schema["paths"][path]["get"]["parameters"]}
        assert {"after", "before", "page_size", "sort"} <= names, path
        assert "refresh" not in names


def test_age_uses_the_tables_now():
    class Ages(Table):
        at = Column("At")

    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert Ages([], now=now).now == now
