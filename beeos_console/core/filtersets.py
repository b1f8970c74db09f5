"""Filter building blocks every list's FilterSet uses (HTML and REST): no domain model."""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.utils.functional import Promise
from django.utils.safestring import SafeData, SafeString, mark_safe

# Shown last in every filter panel, whatever the FilterSet declares first.
TRAILING_FIELDS = (
    "created_after",
    "created_before",
    "stuck",
    "upstream_missing",
    "sort",
    "refresh",
)


def _esc(value: Any) -> str:
    """``conditional_escape`` without its lazy-string wrapper (called per attribute)."""
    if isinstance(value, Promise):
        value = str(value)
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value))


def _attr_text(value: Any) -> str:
    """What ``{{ value|stringformat:'s' }}`` prints in Django's widget templates."""
    text = str(value)
    return text if isinstance(value, SafeData) else html.escape(text)


class CheckboxSelectMultiple(forms.CheckboxSelectMultiple):
    """Django's checkbox group, rendered in Python: the same HTML, byte for byte.

    Django renders each option through three nested widget templates (and
    builds a context dict per option first); a filter panel has about a
    hundred options, which cost 5-8 ms a page. This walks the choices the way
    ``ChoiceWidget.optgroups``/``create_option`` do and prints what the
    templates print. Same class name, so ``field.widget_type`` stays
    ``checkboxselectmultiple``; ``tests/test_widgets.py`` pins the output.
    """

    def render(
        self, name: str, value: Any, attrs: dict | None = None, renderer: Any = None
    ) -> SafeString:
        widget_attrs = self.build_attrs(self.attrs, attrs)
        selected_values = set(self.format_value(value))
        out = ["<div"]
        if widget_attrs.get("id"):
            out.append(f' id="{_esc(widget_attrs["id"])}"')
        if widget_attrs.get("class"):
            out.append(f' class="{_esc(widget_attrs["class"])}"')
        out.append(">")
        input_type, name_html = _esc(self.input_type), _esc(name)
        for index, (option_value, option_label) in enumerate(self.choices):
            if option_value is None:
                option_value = ""
            if isinstance(option_label, (list, tuple)):
                group, subindex, choices = option_value, 0, option_label
            else:
                group, subindex, choices = None, None, [(option_value, option_label)]
            if group:
                out.append(f"\n  <div><label>{_esc(group)}</label>")
            for subvalue, sublabel in choices:
                position = str(index) if subindex is None else f"{index}_{subindex}"
                option_attrs = dict(widget_attrs) if self.option_inherits_attrs else {}
                if str(subvalue) in selected_values:
                    option_attrs.update(self.checked_attribute)
                if "id" in option_attrs:
                    option_attrs["id"] = self.id_for_label(option_attrs["id"], position)
                out.append("<div>\n    ")
                option_id = option_attrs.get("id")
                out.append(f'<label for="{_esc(option_id)}">' if option_id else "<label>")
                value_attr = "" if subvalue is None else f' value="{_attr_text(subvalue)}"'
                extra = "".join(
                    f" {_esc(k)}" if v is True else f' {_esc(k)}="{_attr_text(v)}"'
                    for k, v in option_attrs.items()
                    if v is not False
                )
                out.append(f'<input type="{input_type}" name="{name_html}"{value_attr}{extra}>\n')
                out.append(f" {_esc(sublabel)}</label>\n\n</div>")
                if subindex is not None:
                    subindex += 1
            if group:
                out.append("\n  </div>")
        out.append("\n</div>")
        return mark_safe("".join(out))


class ConsoleFilterSet(django_filters.FilterSet):
    """Multiple-choice filters render as checkbox groups: readable, no JS needed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # django-filter's MultipleChoiceFilter adds DISTINCT by default. On a column
        # of the row itself it cannot remove a duplicate, but it makes PostgreSQL
        # de-duplicate whole rows (and sort on every column) before the keyset LIMIT.
        for f in self.filters.values():
            if isinstance(f, django_filters.MultipleChoiceFilter) and "__" not in f.field_name:
                f.distinct = False

    @property
    def form(self) -> forms.Form:
        form = super().form
        if not getattr(form, "_console_widgets", False):
            for field in form.fields.values():
                if isinstance(field, forms.MultipleChoiceField):
                    field.widget = CheckboxSelectMultiple(choices=field.choices)
            leading = [name for name in form.fields if name not in TRAILING_FIELDS]
            form.order_fields([*leading, *TRAILING_FIELDS])
            form._console_widgets = True
        return form


class AnyValueMultipleField(forms.MultipleChoiceField):
    """Several raw values (``?raw_state=a&raw_state=b``), none rejected.

    Raw states are open vocabularies: a value no table knows must still be
    searchable, so choices only suggest and never validate.
    """

    def valid_value(self, value: str) -> bool:
        return len(value) <= 256 and "\x00" not in value


class AnyValueMultipleFilter(django_filters.MultipleChoiceFilter):
    field_class = AnyValueMultipleField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("choices", ())
        kwargs.setdefault("widget", forms.SelectMultiple)
        super().__init__(*args, **kwargs)


def choice_pairs(values: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class PrefixSearchFilter(django_filters.CharFilter):
    """``?q=`` matches the start of any of ``fields`` (prefix: index-friendly)."""

    def __init__(self, *args: Any, fields: tuple[str, ...], **kwargs: Any) -> None:
        self.fields = fields
        kwargs.setdefault("max_length", 256)
        super().__init__(*args, **kwargs)

    def filter(self, qs: QuerySet, value: str) -> QuerySet:
        value = (value or "").strip()
        if not value:
            return qs
        query = Q()
        for name in self.fields:
            query |= Q(**{f"{name}__startswith": value})
        return qs.filter(query)


class IsSetFilter(django_filters.BooleanFilter):
    """``?name=true``: rows whose ``field_name`` (a nullable column) is set; ``false``: unset."""

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        if value is None:
            return qs
        return qs.filter(**{f"{self.field_name}__isnull": not value})


class NoopBooleanFilter(django_filters.BooleanFilter):
    """A URL flag that changes the page, not the rows (e.g. auto-refresh)."""

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        return qs


class SortFilter(django_filters.ChoiceFilter):
    """Which column the keyset page sorts on (newest first); read by the view."""

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        return qs


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """ISO 8601 input, normalised to UTC (PostgreSQL refuses some offsets Python accepts)."""

    def to_python(self, value: Any) -> dt.datetime | None:
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(dt.UTC)
        except OverflowError as exc:
            raise forms.ValidationError("This time is out of range.") from exc


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


def datetime_widget() -> forms.DateTimeInput:
    return forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
