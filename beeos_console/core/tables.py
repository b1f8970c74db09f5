"""One table abstraction for every list: declared columns, escaped by default.

Modelled on NetBox's ``netbox.tables`` (django-tables2), in a few dozen lines
and rendered in Python, the way ``contrib.admin`` builds its changelist rows:

    class TaskTable(Table):
        task_id = Column("Task", render="render_task_id")
        status = StatusColumn("Status")
        created_at = AgeColumn("Age", sort_key="created")

A ``Column`` has a header, an accessor (the attribute path it reads, by
default its name), an optional render method (a column subclass's ``render``
or a ``render_<name>``/named method on the table), a CSS class for its cells
and a sort key (the ``?sort=`` value that orders a list on it). Every cell is
built with ``format_html`` / ``conditional_escape``:
a value is escaped unless it is already ``SafeData`` that one of those built,
and no parameter anywhere takes raw markup (row attributes are a dict, escaped).

Why Python and not one table template: fifty rows of ten cells through the
template engine cost 6-10 ms a page (see ``bench/README.md``); this costs
about one. Cells of small vocabularies (badges, raw states) are built once
per value per table (``Column.cache``), and a table that opts in
(``memo_rows``) keeps each row's markup per process, keyed by the row's
values: a list re-read by its auto-refresh, or open for several operators,
draws only its ``live`` cells (ages) again.
"""

from __future__ import annotations

import datetime as dt
import html
import itertools
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any, ClassVar

from django.urls import get_script_prefix
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.translation import get_language, gettext, gettext_lazy, gettext_noop

_counter = itertools.count()
EMPTY = "—"
# Cells a higher layer knows how to draw (e.g. "status": the product's badge, registered
# by ``beeos_console.mirror``), for tables of a lower layer such as the audit log.
_NAMED_CELLS: dict[str, Callable[[Any], SafeString]] = {}


def register_cell(name: str, render: Callable[[Any], SafeString]) -> None:
    """Let lower layers draw a ``name`` cell the way the layer that knows it does."""
    _NAMED_CELLS[name] = render


def named_cell(name: str, value: Any) -> SafeString:
    """The registered ``name`` cell for ``value``; the escaped value if none is registered."""
    render = _NAMED_CELLS.get(name)
    return render(value) if render else conditional_escape(value)


def truncate(text: str, length: int) -> str:
    """What ``|truncatechars:length`` prints (unescaped), without its cost on plain ids."""
    if len(text) <= length and text.isascii():
        return text
    if text.isascii():
        return text[: length - 1] + "…"
    return str(Truncator(text).chars(length))


def middle(text: str, length: int) -> str:
    """An id shortened in its middle, ``tsk_abc…xyz``: both ends stay readable (unescaped).

    Ids are told apart by their prefix and their tail; cutting the tail off (or
    letting a cell wrap mid-token) hides exactly what people compare.
    """
    if len(text) <= length:
        return text
    head = (length - 1) // 2 + (length - 1) % 2
    tail = length - 1 - head
    return f"{text[:head]}…{text[len(text) - tail :]}" if tail else text[:head] + "…"


def id_parts(
    text: str, length: int, href: str | None = None, tr: Callable[[str], str] = gettext
) -> tuple[str, ...]:
    """An id cell as ``format_html`` parts: middle ellipsis, full id on hover, copy button.

    ``tr``: the ``gettext`` to use (a table's ``Table.gettext`` in its rows).
    """
    short = middle(text, length)
    copy_title, copy = tr(gettext_noop("Copy to clipboard")), tr(gettext_noop("Copy"))
    if href is None:
        return (
            '<code class="id" title="{}">{}</code>'
            ' <button type="button" class="copy" data-copy="{}" title="{}">{}</button>',
            text,
            short,
            text,
            copy_title,
            copy,
        )
    return (
        '<a href="{}" title="{}"><code class="id">{}</code></a>'
        ' <button type="button" class="copy" data-copy="{}" title="{}">{}</button>',
        href,
        text,
        short,
        text,
        copy_title,
        copy,
    )


def escaped(value: Any) -> SafeString | str:
    """``conditional_escape(value)``: the same result, faster on a plain ``str``.

    Django's ``escape`` is ``html.escape(str(text))`` behind a ``keep_lazy`` wrapper
    that looks for lazy arguments on every call; a ``str`` (not ``SafeString``,
    not lazy) needs none of that, and a ``SafeString`` is kept as it is.
    """
    kind = type(value)
    if kind is str:
        return html.escape(value)
    if kind is SafeString:
        return value
    return conditional_escape(value)


def attrs_html(attrs: Mapping[str, Any] | None) -> SafeString:
    """`` name="value"`` pairs, every name and value escaped; ``True`` prints the bare name."""
    if not attrs:
        return SafeString("")
    esc = conditional_escape
    return SafeString(
        "".join(
            f" {esc(k)}" if v is True else f' {esc(k)}="{esc(v)}"'
            for k, v in attrs.items()
            if v is not None and v is not False
        )
    )


class Column:
    """One column: ``header``, ``accessor`` (dotted attribute path), ``render``, ``css_class``.

    ``accessor`` may be a tuple of attribute names: the value is their tuple, so
    a cell drawn from several fields of a small vocabulary can be cached.

    ``render`` names a method of the table (``render_<name>`` is found without
    it), called as ``method(value, row)`` and returning markup built with
    ``format_html``; without one, the column's own ``render`` escapes the value.
    ``cache``: the cell depends on the value only, so it is built once per value per table.
    """

    cache: ClassVar[bool] = False
    # Drawn from the table's clock (``Table.now``), not from the row alone: the row memo
    # keeps its ``kept_parts`` and draws its ``live_parts`` (not a render method) each time.
    live: ClassVar[bool] = False

    def __init__(
        self,
        header: str = "",
        accessor: str | tuple[str, ...] | None = None,
        *,
        render: str | None = None,
        css_class: str = "",
        sort_key: str | None = None,
        empty: str = EMPTY,
        cache: bool | None = None,
    ) -> None:
        if cache is not None:
            self.cache = cache
        self.header = header
        self.accessor = accessor
        self.render_method = render
        self.css_class = css_class
        self.sort_key = sort_key
        self.empty = empty
        self.name = ""
        self.order = next(_counter)

    def bind(self, name: str) -> None:
        self.name = name
        if self.accessor is None:
            self.accessor = name
        # A tuple of attribute names reads them all: the value is their tuple (a cache key).
        self.fields = self.accessor if isinstance(self.accessor, tuple) else None
        parts = self.accessor.split(".") if isinstance(self.accessor, str) and self.accessor else ()
        # A number indexes a tuple row (e.g. ``"0"``); anything else is an attribute.
        self.path = tuple(int(p) if p.isdigit() else p for p in parts)
        # The common accessors (one attribute, or several: their tuple) as one C call.
        self._getter: Callable[[Any], Any] | None = None
        if self.fields is not None and len(self.fields) > 1:
            self._getter = attrgetter(*self.fields)
        elif len(self.path) == 1 and type(self.path[0]) is str:
            self._getter = attrgetter(self.path[0])

    def value(self, row: Any) -> Any:
        if self._getter is not None:
            return self._getter(row)
        if self.fields is not None:
            return tuple(getattr(row, f) for f in self.fields)
        for part in self.path:
            if row is None:
                return None
            row = row[part] if type(part) is int else getattr(row, part)
        return row

    def render(self, value: Any, row: Any, table: Table) -> SafeString:
        """The cell's content; the default escapes the value (``empty`` when blank)."""
        return format_html(*self.parts(value, row, table))

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        """The cell as ``format_html`` arguments: a format string (code, never data), values.

        The table joins the parts of a row's cells into one ``format_html`` call,
        so every value is still escaped once, at a fraction of a call per cell.
        """
        if value is None or value == "":
            return ("{}", self.empty)
        return ("{}", value)

    def kept_parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        """A ``live`` cell's leading part that depends on the row only (the row memo keeps it)."""
        return ("",)

    def live_parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        """A ``live`` cell's part drawn on every render, after ``kept_parts``."""
        return self.parts(value, row, table)

    def header_html(self) -> SafeString:
        return format_html("<th>{}</th>", self.header)


def short_age(
    value: dt.datetime, now: dt.datetime | None = None, tr: Callable[[str], str] = gettext
) -> str:
    """The largest unit only: "45 s ago", "3 h ago", "2 d ago", "in 5 min" (translated)."""
    now = now or timezone.now()
    seconds = int((now - value).total_seconds())
    future, seconds = seconds < 0, abs(seconds)
    span = short_span(seconds, tr)
    return (
        tr(gettext_noop("in %(span)s")) % {"span": span}
        if future
        else tr(gettext_noop("%(span)s ago")) % {"span": span}
    )


def short_span(seconds: int, tr: Callable[[str], str] = gettext) -> str:
    """A duration in its largest unit only: "45 s", "5 min", "3 h", "2 d" (translated)."""
    if seconds >= 86400:
        return tr(gettext_noop("%(n)d d")) % {"n": seconds // 86400}
    if seconds >= 3600:
        return tr(gettext_noop("%(n)d h")) % {"n": seconds // 3600}
    if seconds >= 60:
        return tr(gettext_noop("%(n)d min")) % {"n": seconds // 60}
    return tr(gettext_noop("%(n)d s")) % {"n": seconds}


def age(value: dt.datetime | None, now: dt.datetime | None = None) -> SafeString:
    """ "3 h ago", with the exact UTC time on hover."""
    return format_html(*_age_parts(value, now))


def _age_parts(
    value: dt.datetime | None, now: dt.datetime | None, tr: Callable[[str], str] = gettext
) -> tuple[str, ...]:
    if value is None:
        return ('<span class="muted">{}</span>', EMPTY)
    # The age is translated words: escaped by whoever formats the parts.
    return (_TIME_OPEN + "{}</time>", *_stamps(value), short_age(value, now, tr))


_TIME_OPEN = '<time datetime="{}" title="{}">'


def _stamps(value: dt.datetime) -> tuple[SafeString, SafeString]:
    """ISO 8601 and UTC. Digits, letters and ":-+. " only, made here from a datetime: safe
    without escaping (saves escapes per time cell, the bulk of a list's escaping cost)."""
    return (
        SafeString(value.isoformat()),
        SafeString(value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
    )


class AgeColumn(Column):
    """A time relative to the table's ``now``, the exact UTC time on hover.

    Live: the stamps are kept with the row (``kept_parts``), the relative words drawn
    on every render (``live_parts``).
    """

    live = True

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        kept, live = self.kept_parts(value, row, table), self.live_parts(value, row, table)
        return (kept[0] + live[0], *kept[1:], *live[1:])

    def kept_parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        return ("",) if value is None else (_TIME_OPEN, *_stamps(value))

    def live_parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        if value is None:
            return _age_parts(None, None)
        return ("{}</time>", short_age(value, table.now, table.gettext))


class CodeColumn(Column):
    """The value verbatim in monospace, shortened to ``length`` characters if given."""

    def __init__(self, *args: Any, length: int | None = None, **kwargs: Any) -> None:
        self.length = length
        super().__init__(*args, **kwargs)

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        text = "" if value is None else str(value)
        if self.length:
            text = truncate(text, self.length)
        return ("<code>{}</code>", text)


class SelectColumn(Column):
    """A checkbox per row for bulk actions; ``value``, ``enabled``, ``label`` name table methods."""

    def __init__(self, *, value: str, enabled: str, label: str, form: str = "bulk-form") -> None:
        self.value_method, self.enabled_method, self.label_method = value, enabled, label
        self.form = form
        super().__init__(gettext_lazy("Select"), accessor="")

    def header_html(self) -> SafeString:
        return format_html('<th><span class="visually-hidden">{}</span></th>', self.header)

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        if not getattr(table, self.enabled_method)(row):
            return ("",)
        return (
            '<input type="checkbox" name="pick" value="{}" form="{}" aria-label="{}">',
            getattr(table, self.value_method)(row),
            self.form,
            getattr(table, self.label_method)(row),
        )

    def render(self, value: Any, row: Any, table: Table) -> SafeString:
        parts = self.parts(value, row, table)
        return format_html(*parts) if len(parts) > 1 else SafeString("")


class _Declared(type):
    """Collects the ``Column`` attributes of a table class (and its bases) in order."""

    def __new__(mcs, name: str, bases: tuple, attrs: dict[str, Any]) -> type:
        cls = super().__new__(mcs, name, bases, attrs)
        columns: dict[str, Column] = {}
        for base in reversed(cls.__mro__[1:]):
            columns.update(getattr(base, "base_columns", {}))
        own = sorted(
            ((k, v) for k, v in attrs.items() if isinstance(v, Column)), key=lambda kv: kv[1].order
        )
        for key, column in own:
            column.bind(key)
            columns[key] = column
        cls.base_columns = columns
        if getattr(cls, "memo_rows", False):
            # Per class (subclasses included): rows another table class drew are not its own.
            cls._memo = {}
            cls._memo_key = attrgetter("pk", *cls.fields)
        return cls


class Table(metaclass=_Declared):
    """A list's ``<table>``: declared columns, rows built once per row.

    ``Table(rows, exclude=(...))`` drops columns for this viewer (a column a
    role may not use); ``now`` is the instant relative times are counted from.
    """

    base_columns: ClassVar[dict[str, Column]]
    css_class: ClassVar[str] = "list"
    empty_text: ClassVar[str] = gettext_lazy("Nothing matches.")
    # The model fields the table reads: lists load only these (``.only()``).
    fields: ClassVar[tuple[str, ...]] = ()
    # Keep each row's markup (per process, at most ``MEMO_SIZE`` rows, then it starts
    # over), keyed by its pk and ``fields`` values, the columns shown, the language and
    # the URL prefix: only its ``live`` cells are drawn again. Opt in only when every
    # other cell reads nothing but the row's ``fields`` (no table option, no clock).
    memo_rows: ClassVar[bool] = False
    MEMO_SIZE: ClassVar[int] = 4096
    _memo: ClassVar[dict[Any, tuple[str, ...]]]
    _memo_key: ClassVar[Callable[[Any], Any]]

    def __init__(
        self,
        rows: Iterable[Any] = (),
        *,
        exclude: Iterable[str] = (),
        now: dt.datetime | None = None,
    ) -> None:
        self.rows = rows
        skip = set(exclude)
        self.columns = [c for name, c in self.base_columns.items() if name not in skip]
        self.now = now or timezone.now()
        # ``gettext`` results of this render (see ``gettext``).
        self._words: dict[Any, str] = {}
        # Per column: (column, render method or None, per-value cache or None, "<td…>{}</td>").
        self._cells: list[tuple[Column, Callable[..., Any] | None, dict | None, str]] = []
        for column in self.columns:
            method = column.render_method or f"render_{column.name}"
            bound = getattr(self, method, None)
            if bound is None and column.render_method:
                raise AttributeError(f"{type(self).__name__} has no method {method!r}")
            # A column type that overrides ``render`` only (not ``parts``) renders itself.
            own_render = type(column).render is not Column.render
            if bound is None and (
                column.cache or (own_render and type(column).parts is Column.parts)
            ):

                def bound(value: Any, row: Any, _c: Column = column) -> SafeString:
                    return _c.render(value, row, self)

            td = format_html('<td class="{}">', column.css_class) if column.css_class else "<td>"
            td = td.replace("{", "{{").replace("}", "}}")
            self._cells.append((column, bound, {} if column.cache else None, td))
        self._memo_scope: tuple | None = None
        if self.memo_rows:
            self._memo_scope = (
                tuple(c.name for c in self.columns),
                get_language(),
                get_script_prefix(),
            )
            # The runs of cells between live ones (one more run than live cells); a run
            # ends with its live cell's kept part.
            self._live = [cell for cell in self._cells if cell[0].live]
            self._runs: list[list[Any]] = [[]]
            for cell in self._cells:
                if cell[0].live:
                    self._runs.append([])
                else:
                    self._runs[-1].append(cell)

    def gettext(self, message: str) -> str:
        """``gettext(message)``, translated once per table: a render never changes
        language, and fifty rows would otherwise translate the same words fifty times
        (a copy button's title, "%(span)s ago")."""
        found = self._words.get(message)
        if found is None:
            found = self._words[message] = gettext(message)
        return found

    def text(self, label: str | Promise) -> str:
        """A label a column was given: a lazy translation in the active language (once per
        table), a plain string as it is."""
        if type(label) is str:
            return label
        # Keyed by identity: the column holding the lazy string outlives the render.
        found = self._words.get(id(label))
        if found is None:
            found = self._words[id(label)] = str(label)
        return found

    @classmethod
    def sort_fields(cls) -> dict[str, str]:
        """``?sort=`` value -> the field it orders on, from the columns' sort keys."""
        return {c.sort_key: c.accessor for c in cls.base_columns.values() if c.sort_key}

    def row_attrs(self, row: Any) -> dict[str, Any]:
        """Attributes of the row's ``<tr>`` (escaped); override per table."""
        return {}

    def row(self, row: Any, *, attrs: Mapping[str, Any] | None = None) -> SafeString:
        """One ``<tr>``; ``attrs`` (e.g. an htmx out-of-band swap) are added, escaped.

        One ``format_html`` call per row: the cells' format strings (code) are
        joined and every value is escaped by it (markup from a render method or
        the cache is ``SafeData`` and kept).
        """
        if not attrs and self._memo_scope is not None:
            return self._memo_row(row)
        merged = self.row_attrs(row)
        if attrs:
            merged = {**merged, **attrs}
        return mark_safe(self._draw(row, self._cells, ["<tr{}>"], [attrs_html(merged)], "</tr>"))

    def _head(self) -> str:
        """The header cells; with the memo, kept per columns shown and language."""
        if self._memo_scope is None:
            return "".join(c.header_html() for c in self.columns)
        key = ("<thead>", self._memo_scope)
        head = self._memo.get(key)
        if head is None:
            head = self._memo[key] = ("".join(c.header_html() for c in self.columns),)
        return head[0]

    def _memo_row(self, row: Any) -> SafeString:
        """``row(row)`` from the memo: its runs of cells kept, its live cells drawn now."""
        memo = self._memo
        key = (self._memo_scope, self._memo_key(row))
        runs = memo.get(key)
        if runs is None:
            runs = self._memo_runs(row)
            if len(memo) >= self.MEMO_SIZE:
                memo.clear()
            memo[key] = runs
        if not self._live:
            return mark_safe(runs[0])
        out = [runs[0]]
        for (column, _render, _cache, _td), run in zip(self._live, runs[1:], strict=True):
            fmt, *args = column.live_parts(column.value(row), row, self)
            out.append((fmt + "</td>").format(*map(escaped, args)))
            out.append(run)
        return mark_safe("".join(out))

    def _memo_runs(self, row: Any) -> tuple[str, ...]:
        """The markup of ``row`` the memo keeps: each run of cells up to a live cell's kept
        part (its ``<td>`` open), then the rest after the last live cell."""
        runs = []
        fmt, args = ["<tr{}>"], [attrs_html(self.row_attrs(row))]
        for i, run in enumerate(self._runs):
            if i < len(self._live):
                column, _render, _cache, td = self._live[i]
                kept_fmt, *kept_args = column.kept_parts(column.value(row), row, self)
                runs.append(self._draw(row, run, fmt, args, td + kept_fmt, kept_args))
                fmt, args = [], []
                continue
            runs.append(self._draw(row, run, fmt, args, "</tr>"))
        return tuple(runs)

    def _draw(
        self,
        row: Any,
        cells: Iterable[Any],
        fmt: list[str],
        args: list[Any],
        tail: str,
        tail_args: Iterable[Any] = (),
    ) -> str:
        """``cells`` of ``row`` as markup, between ``fmt``/``args`` and ``tail``/``tail_args``
        (format strings and their values)."""
        for column, render, cache, td in cells:
            value = column.value(row) if column.path or column.fields else row
            if render is None:
                parts = column.parts(value, row, self)
                fmt.append(f"{td}{parts[0]}</td>")
                args.extend(parts[1:])
                continue
            if cache is not None:
                cell = cache.get(value)
                if cell is None:
                    cell = cache[value] = render(value, row)
            else:
                cell = render(value, row)
            fmt.append(td + "{}</td>")
            args.append(cell)
        fmt.append(tail)
        args.extend(tail_args)
        # ``format_html``, with its escaping of plain strings done without the lazy-string
        # wrapper around ``escape`` (a row escapes ~20 values).
        return "".join(fmt).format(*map(escaped, args))

    def render(self) -> SafeString:
        head = self._head()
        body = [self.row(r) for r in self.rows] or [
            format_html(
                '<tr><td colspan="{}" class="muted">{}</td></tr>',
                len(self.columns),
                self.empty_text,
            )
        ]
        return mark_safe(
            f'<table class="{conditional_escape(self.css_class)}">\n'
            f"  <thead><tr>{head}</tr></thead>\n  <tbody>\n    "
            + "\n    ".join(body)
            + "\n  </tbody>\n</table>\n"
        )

    def __html__(self) -> str:
        return self.render()

    __str__ = __html__
