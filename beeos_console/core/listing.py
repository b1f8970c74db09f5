"""The generic filtered, keyset-paginated list page (one per mirrored model).

The URL carries every filter, the sort and the page cursor, so a link can be
shared and the back button works. A full GET renders the page; an htmx GET
aimed at ``#results`` gets only the results fragment (rows, chips, pager).

Three declared parts per list: the FilterSet (data filters, shared with the
REST list), the ``FilterForm`` (the panel: widgets, order, sort, refresh) and
the ``Table`` (columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import django_filters
from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.vary import vary_on_headers

from beeos_console.core.forms import VIEW_FIELDS as VIEW_PARAMS
from beeos_console.core.forms import FilterForm
from beeos_console.core.pagination import BadCursor, paginate
from beeos_console.core.tables import Table

PAGE_PARAMS = ("after", "before")
REFRESH_SECONDS = 15


@dataclass(frozen=True)
class Chip:
    """One active filter value, with the URL that removes just it."""

    label: str
    value: str
    remove_url: str


def active_filter_chips(
    request: HttpRequest, filterset: django_filters.FilterSet, form: FilterForm
) -> list[Chip]:
    chips: list[Chip] = []
    for name in request.GET:
        if name in PAGE_PARAMS or name in VIEW_PARAMS or name not in filterset.filters:
            continue
        field = form.fields.get(name)
        label = str((field.label if field else filterset.filters[name].label) or name)
        for value in request.GET.getlist(name):
            if value == "":
                continue
            remaining: QueryDict = request.GET.copy()
            remaining.setlist(name, [v for v in request.GET.getlist(name) if v != value])
            for page in PAGE_PARAMS:
                remaining.pop(page, None)
            query = remaining.urlencode()
            chips.append(Chip(label, value, f"{request.path}?{query}" if query else request.path))
    return chips


@method_decorator(vary_on_headers("HX-Request"), name="dispatch")
class KeysetListView(View):
    """Override the class attributes (and ``get_queryset``) per model."""

    filterset_class: ClassVar[type[django_filters.FilterSet]]
    # The filter panel: fields named like the FilterSet's filters, plus sort and refresh.
    form_class: ClassVar[type[FilterForm]]
    table_class: ClassVar[type[Table]]
    template_name: ClassVar[str] = "console/list.html"
    title: ClassVar[str]
    sort_fields: ClassVar[dict[str, str]] = {"created": "created_at"}
    default_sort: ClassVar[str] = "created"
    # Sorts that page in ascending order (oldest first): ``?sort=`` value -> field.
    ascending_sorts: ClassVar[dict[str, str]] = {}
    # What a sort implies beyond order (e.g. "stuck": non-terminal work only), said above the rows.
    sort_notes: ClassVar[dict[str, str]] = {}
    # "task" / "operation": rows get checkboxes and a bulk-cancel bar (operators).
    bulk_kind: ClassVar[str] = ""
    # The CSV export (``core.exports.ListCsvExport``): its URL name, file name and columns.
    export_url_name: ClassVar[str] = ""
    export_filename: ClassVar[str] = ""
    export_columns: ClassVar[tuple[Any, ...]] = ()
    # The saved views' name of this list ("tasks", ...): the page offers "Save this view".
    saved_view_kind: ClassVar[str] = ""

    def get_queryset(self) -> QuerySet:
        raise NotImplementedError

    def get_context_data(self, **context: Any) -> dict[str, Any]:
        return context

    def get_table(self, rows: list[Any]) -> Table:
        """The results table for this viewer (override to pass viewer options)."""
        return self.table_class(rows)

    def sort_order(self, sort: str) -> tuple[str, bool]:
        """The column a sort orders by and whether it runs ascending: one rule for the
        page and its CSV export."""
        if sort in self.ascending_sorts:
            return self.ascending_sorts[sort], True
        return self.sort_fields.get(sort, self.sort_fields[self.default_sort]), False

    def get(self, request: HttpRequest) -> HttpResponse:
        filterset = self.filterset_class(request.GET, queryset=self.get_queryset(), request=request)
        form = self.form_class(request.GET)
        sort, refresh, view_errors = form.view_state(self.default_sort)
        status = 200
        if filterset.is_valid() and not view_errors:
            queryset = filterset.qs
            errors: dict[str, Any] = {}
        else:
            # Bad filter input: say which and why, show nothing rather than guess.
            queryset = filterset.queryset.none()
            status = 400
            errors = {**filterset.errors, **view_errors}
        form.show_errors(errors)
        sort_field, ascending = self.sort_order(sort)
        try:
            page = paginate(
                queryset,
                sort_field,
                after=request.GET.get("after") or None,
                before=request.GET.get("before") or None,
                ascending=ascending,
            )
        except BadCursor as exc:
            # A forged or stale cursor: say so (400), and show the first page.
            messages.warning(request, str(exc))
            page = paginate(queryset, sort_field, ascending=ascending)
            status = 400
        context = self.get_context_data(
            title=self.title,
            filterset=filterset,
            form=form,
            filter_errors=errors,
            page=page,
            rows=page.rows,
            chips=active_filter_chips(request, filterset, form),
            table=self.get_table(page.rows),
            next_url=self.page_url(after=page.next_cursor) if page.next_cursor else "",
            prev_url=self.page_url(before=page.prev_cursor) if page.prev_cursor else "",
            refresh_seconds=REFRESH_SECONDS if refresh else 0,
            sort_note=self.sort_notes.get(sort, ""),
            open_filters=form.open_fields,
            bulk_kind=self.bulk_kind,
            filter_query=self.filter_query(),
            export_url=self.export_url(),
            saved_view_kind=self.saved_view_kind,
            saved_view_query=self.view_query(),
        )
        fragment = getattr(request, "htmx", None) and request.htmx.target == "results"
        template = "console/_results.html" if fragment else self.template_name
        return render(request, template, context, status=status)

    def filter_query(self) -> str:
        """The current filters as a query string, without page or view parameters."""
        query = self.request.GET.copy()
        for name in (*PAGE_PARAMS, *VIEW_PARAMS):
            query.pop(name, None)
        return query.urlencode()

    def export_url(self) -> str:
        """The CSV export of the current filter and sort (no page): rendered in the results."""
        if not self.export_url_name:
            return ""
        encoded = self.view_query()
        return f"{reverse(self.export_url_name)}{'?' + encoded if encoded else ''}"

    def view_query(self) -> str:
        """The filters and the sort (what an export or a saved view keeps): no page, refresh."""
        query = self.request.GET.copy()
        for name in (*PAGE_PARAMS, "refresh", "view"):
            query.pop(name, None)
        return query.urlencode()

    def page_url(self, **cursor: str) -> str:
        query = self.request.GET.copy()
        for name in PAGE_PARAMS:
            query.pop(name, None)
        for name, value in cursor.items():
            query[name] = value
        return f"{self.request.path}?{query.urlencode()}"
