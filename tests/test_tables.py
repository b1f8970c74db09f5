"""The table abstraction escapes every value; FilterSets hold data filters only."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from django.http import QueryDict
from django.utils import translation
from django.utils.html import format_html

from beeos_console.agents.filtersets import AgentFilterSet
from beeos_console.core.forms import CheckboxGroup
from beeos_console.core.tables import CodeColumn, Column, Table
from beeos_console.mirror.columns import FilterLinkColumn, RawColumn, StatusColumn
from beeos_console.mirror.models import AgentCount
from operations.filtersets import RuntimeOperationFilterSet
from tasks.filtersets import MessageFilterSet, TaskFilterSet
from tasks.forms import TaskFilterForm
from tasks.models import Task

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


def test_filtersets_share_declared_filters_but_not_their_state():
    """Each FilterSet gets its own filters (own parent, own method binding) and a form of
    a class built once; two requests' data never meet."""
    failed = TaskFilterSet(QueryDict("status=failed"), queryset=Task.objects.none())
    bogus = TaskFilterSet(QueryDict("status=bogus&protocol=x"), queryset=Task.objects.none())
    assert failed.is_valid() and not bogus.is_valid()
    assert set(bogus.errors) == {"status", "protocol"} and not failed.errors
    assert failed.form.cleaned_data["status"] == ["failed"]
    assert failed.filters["status"] is not bogus.filters["status"]
    assert failed.filters["status"].parent is failed and bogus.filters["status"].parent is bogus
    assert type(failed.form) is type(bogus.form)
    # A filter with a method runs it on its own FilterSet.
    agents = [AgentFilterSet(QueryDict(""), queryset=AgentCount.objects.none()) for _ in range(2)]
    for agent_filters in agents:
        assert agent_filters.filters["stuck"].filter.f is agent_filters.filters["stuck"]
        assert agent_filters.filters["stuck"].parent is agent_filters


def test_panel_fields_are_drawn_the_same_from_the_cache():
    """An empty panel field is drawn once and reused; a value or an error is drawn afresh."""

    def panel(query: str, errors: dict | None = None) -> dict[str, str]:
        form = TaskFilterForm(QueryDict(query))
        form.show_errors(errors or {})
        return {field.name: str(field.panel) for field in form.visible_fields()}

    first, again = panel(""), panel("")
    assert first == again
    assert '<input type="text" name="q" maxlength="256" id="id_q">' in first["q"]
    picked = panel("status=failed&q=%3Cb%3E")
    assert picked["q"] != first["q"] and 'value="&lt;b&gt;"' in picked["q"]
    assert (
        "checked" in picked["status"] and '<details class="filter-group" open>' in picked["status"]
    )
    assert picked["stuck"] == first["stuck"]
    wrong = panel("stuck=abc", {"stuck": ["Enter a number."]})
    assert 'aria-invalid="true"' in wrong["stuck"] and "Enter a number." in wrong["stuck"]
    # An error on an empty field (e.g. a FilterSet error) is shown, and not kept.
    empty_wrong = panel("", {"stuck": ["Enter a number."]})
    assert 'aria-invalid="true"' in empty_wrong["stuck"]
    assert panel("")["stuck"] == first["stuck"]
    with translation.override("zh-hans"):
        chinese = panel("")
    assert chinese["created_within"] != first["created_within"]
