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
    """A panel field is drawn once per value and reused; an error is drawn afresh."""

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


def _fresh(table_class: type[Table]) -> type[Table]:
    """``table_class`` drawing every row afresh (no memo): the reference."""
    return type(f"Fresh{table_class.__name__}", (table_class,), {"memo_rows": False})


@pytest.mark.django_db
def test_memoised_rows_are_the_rows_drawn_afresh():
    """A row from the memo is byte for byte the row drawn afresh, for every viewer and
    language, and its ages are those of the table's own ``now``."""
    from operations.models import RuntimeOperation
    from operations.tables import OperationTable
    from tasks.tables import TaskTable
    from tests.factories import make_operation, make_task

    make_operation("running", id='op_<b id="x">')
    make_operation("outcome_unknown", errorCode="E_TIMEOUT")
    make_operation("succeeded")
    make_task("running")
    make_task("failed", agent_id="agt_<i>")
    ops = list(RuntimeOperation.objects.only(*OperationTable.fields))
    tasks = list(Task.objects.only(*TaskTable.fields))
    now = dt.datetime.now(dt.UTC)
    tables = [
        (OperationTable, ops, {"selectable": True}),
        (OperationTable, ops, {"selectable": False}),
        (TaskTable, tasks, {"operator": True}),
        (TaskTable, tasks, {"operator": False}),
    ]
    for language in ("en", "zh-hans"):
        with translation.override(language):
            for table_class, rows, options in tables:
                for later in (0, 3, 40):  # days; the second and third draws come from the memo
                    at = now + dt.timedelta(days=later)
                    memo, fresh = table_class(rows, **options), _fresh(table_class)(rows, **options)
                    memo.now = fresh.now = at
                    assert str(memo.render()) == str(fresh.render()), (table_class, options)
    assert "&lt;b id=&quot;x&quot;&gt;" in str(OperationTable(ops, selectable=True).render())


@pytest.mark.django_db
def test_a_memoised_row_follows_its_values_and_the_clock():
    from operations.models import RuntimeOperation
    from operations.tables import OperationTable
    from tests.factories import make_operation

    op = make_operation("running")

    def row(now: dt.datetime | None = None) -> str:
        table = OperationTable(selectable=True)
        table.now = now or table.now
        return str(table.row(RuntimeOperation.objects.only(*OperationTable.fields).get(pk=op.pk)))

    before = row()
    assert "badge-blue" in before or "processing" in before
    assert 'name="pick"' in before
    # The clock moves: the age is drawn again, the rest is the same.
    later = row(op.created_at + dt.timedelta(days=3))
    assert "3 d ago" in later and "3 d ago" not in before
    # The row changes upstream: its new values are drawn, not the kept ones.
    RuntimeOperation.objects.filter(pk=op.pk).update(
        raw_status="succeeded", status="completed", reason="completed"
    )
    after = row()
    assert "succeeded" in after and 'name="pick"' not in after
    with translation.override("zh-hans"):
        assert row() != after


def test_the_row_memo_is_bounded(monkeypatch):
    from operations.models import RuntimeOperation
    from operations.tables import OperationTable

    monkeypatch.setattr(OperationTable, "MEMO_SIZE", 5)
    monkeypatch.setattr(OperationTable, "_memo", {})
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    table = OperationTable(selectable=False)
    for n in range(12):
        op = RuntimeOperation(
            id=n + 1, operation_id=f"op_{n}", raw_status="running", created_at=at, updated_at=at
        )
        assert f"op_{n}" in str(table.row(op))
        assert len(OperationTable._memo) <= 5


@pytest.mark.parametrize(
    "query", ["", "status=failed", "status=failed&status=queued", "q=%3Cb%3E&stuck=5", "q=x"]
)
def test_a_kept_panel_is_the_panel_drawn_afresh(query):
    for _ in range(2):  # the second time from the cache
        form = TaskFilterForm(QueryDict(query))
        for field in form.visible_fields():
            assert str(field.panel) == str(field._draw_panel()), (query, field.name)


def test_the_panel_cache_is_bounded(monkeypatch):
    from beeos_console.core.forms import PanelField

    monkeypatch.setattr(PanelField, "PANEL_CACHE_SIZE", 10)
    monkeypatch.setattr(PanelField, "_panels", {})
    for n in range(30):
        form = TaskFilterForm(QueryDict(f"q=ticket+{n}"))
        assert f'value="ticket {n}"' in str(form["q"].panel)
        assert len(PanelField._panels) <= 10
