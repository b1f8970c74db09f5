"""CSV exports that a spreadsheet cannot turn into formulas.

A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
read as a formula by spreadsheet programs (CSV injection). Every export writes
through ``csv_writer``, which prefixes such a cell with ``'``; the value stays
readable and is shown as text.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import translation
from django.utils.translation import gettext, ngettext
from django.views import View

from beeos_console.core import roles
from beeos_console.core.permissions import deny

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV cell that cannot start a formula (None is empty)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeCSVWriter:
    """``csv.writer`` whose every cell goes through ``safe_cell``."""

    def __init__(self, stream: Any, **kwargs: Any) -> None:
        self._writer = csv.writer(stream, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([safe_cell(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream: Any, **kwargs: Any) -> SafeCSVWriter:
    return SafeCSVWriter(stream, **kwargs)


# --- the CSV export of a list ------------------------------------------------------------
#
# Every list page (tasks, messages, operations, audit log) exports its current filter
# through one view, ``ListCsvExport``: the list view's FilterSet, queryset, sort and role,
# plus the list's ``export_columns`` (header, accessor, optional formatter): raw values
# only, times in UTC ISO 8601. The rows stream from a server-side cursor
# (``.iterator()``), a chunk at a time: memory stays flat whatever the size.
#
# The file states how many rows it holds in its last line, a one-cell comment row:
# ``# 12,345 rows``. Above ``CONSOLE_EXPORT_MAX_ROWS`` (default 100,000) it stops there
# and says so in that line (``# cut at 100,000 rows: more match this filter; narrow it…``).
# A reader that wants data rows only drops a last row whose first cell starts with ``#``.
#
# Languages: the cells are raw values and never translated. The header row is: a list
# declares each column as ``ExportColumn(pgettext_lazy("CSV header", "task_id"))`` —
# the msgid *is* the machine name, so an English file keeps the names tools read, and a
# translation names the column for a person (the translators are asked to keep the
# machine name beside it, e.g. ``任务 ID (task_id)``). The count line is translated
# too; it starts with ``#`` in every language.

EXPORT_CHUNK = 2000
DEFAULT_EXPORT_MAX_ROWS = 100_000


def utc_iso(value: dt.datetime | None) -> str:
    """A time as UTC ISO 8601 (``2026-05-01T12:00:00+00:00``); empty when unset."""
    return "" if value is None else value.astimezone(dt.UTC).isoformat()


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class ExportColumn:
    """One CSV column: its header, the dotted attribute path it reads, how to write it.

    Datetimes are written as UTC ISO 8601 unless ``format`` says otherwise.
    ``header``: the column's machine name, as a ``pgettext_lazy("CSV header", name)``
    (or a plain name, never translated); the header row says ``label``.
    """

    header: Any
    accessor: str = ""
    format: Callable[[Any], Any] | None = None

    @cached_property
    def name(self) -> str:
        """The machine name: the header's msgid (its text with no translation active)."""
        with translation.override(None):
            return str(self.header)

    @property
    def label(self) -> str:
        """The header row's cell in the reader's language (English: the machine name)."""
        return str(self.header)

    def value(self, row: Any) -> Any:
        value = row
        for part in (self.accessor or self.name).split("."):
            if value is None:
                return None
            value = getattr(value, part)
        if self.format is not None:
            return self.format(value)
        if isinstance(value, dt.datetime):
            return utc_iso(value)
        return value


def export_max_rows() -> int:
    return int(getattr(settings, "CONSOLE_EXPORT_MAX_ROWS", DEFAULT_EXPORT_MAX_ROWS))


class _Echo:
    """A file-like object whose write returns the line: the CSV writer feeds a stream."""

    def write(self, value: str) -> str:
        return value


def count_line(written: int, cut: bool) -> str:
    rows = f"{written:,}"
    if cut:
        return "# " + gettext(
            "cut at %(rows)s rows (CONSOLE_EXPORT_MAX_ROWS): more rows match this filter;"
            " narrow it (a time range, a status, an id) and export each part"
        ) % {"rows": rows}
    return "# " + ngettext("%(rows)s row", "%(rows)s rows", written) % {"rows": rows}


def stream_csv(
    queryset: QuerySet,
    columns: tuple[ExportColumn, ...],
    *,
    max_rows: int,
    language: str | None = None,
) -> Iterator[str]:
    """The header, up to ``max_rows`` rows read through a server-side cursor, the count line.

    ``language``: the request's, for the header and count lines (the rows stream after
    the view has returned).
    """
    writer = csv_writer(_Echo())
    with translation.override(language):
        header = [c.label for c in columns]
    yield writer.writerow(header)
    written = 0
    cut = False
    # One row past the cap tells "exactly the cap" from "cut".
    for row in queryset[: max_rows + 1].iterator(chunk_size=EXPORT_CHUNK):
        if written == max_rows:
            cut = True
            break
        yield writer.writerow([c.value(row) for c in columns])
        written += 1
    with translation.override(language):
        last = count_line(written, cut)
    yield writer.writerow([last])


class ListCsvExport(View):
    """``<list>/export.csv?<filters>``: a list view's rows under its filter, as CSV, streamed.

    ``ListCsvExport.as_view(list_view=TaskListView)``: the list view supplies the
    FilterSet, the queryset, the sort, the required role and ``export_columns``.
    """

    list_view: Any = None

    def get(self, request: HttpRequest) -> HttpResponse:
        lv = self.list_view()
        lv.setup(request)
        required = getattr(lv, "required_role", roles.SUPPORT)
        if not roles.has_role(request.user, required):
            raise deny(required)
        filterset = lv.filterset_class(request.GET, queryset=lv.get_queryset(), request=request)
        form = lv.form_class(request.GET)
        sort, _refresh, view_errors = form.view_state(lv.default_sort)
        if not filterset.is_valid() or view_errors:
            errors = {**filterset.errors, **view_errors}
            return HttpResponse(
                gettext("These filters could not be applied: %(errors)s")
                % {"errors": dict(errors)},
                status=400,
                content_type="text/plain",
            )
        sort_field, ascending = lv.sort_order(sort)
        order = (sort_field, "pk") if ascending else (f"-{sort_field}", "-pk")
        queryset = filterset.qs.order_by(*order)
        response = StreamingHttpResponse(
            stream_csv(
                queryset,
                tuple(lv.export_columns),
                max_rows=export_max_rows(),
                language=translation.get_language(),
            ),
            content_type="text/csv; charset=utf-8",
        )
        name = lv.export_filename or "export"
        response["Content-Disposition"] = f'attachment; filename="beeos-console-{name}.csv"'
        return response
