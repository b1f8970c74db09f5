"""Filter panels: the form a list page draws above its results (NetBox's filter forms).

A list has two objects for its URL parameters. The app's FilterSet holds the
data filters only: it validates them and filters the rows, and the same class
serves the HTML list and the REST list. The app's ``FilterForm`` (``forms.py``)
draws the panel: one field per filter, named like it, with its widget, its
suggested values and its place in the panel, plus the view switches a
FilterSet never sees: ``sort`` (which column the keyset page orders on) and
``refresh`` (auto-refresh). It is bound to the same query string; it validates
only the view switches and shows the FilterSet's errors beside its fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from django.forms.boundfield import BoundField
from django.forms.utils import ErrorDict
from django.template.loader import get_template
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import CREATED_WITHIN_CHOICES, SharedFields
from beeos_console.core.tables import attrs_html

CHECKED = mark_safe(" checked")
# URL flags that change how the page looks, not which rows match.
VIEW_FIELDS = ("sort", "refresh")
# Shown last in every panel, in this order, whatever a form declares first.
TRAILING_FIELDS = (
    "created_within",
    "created_after",
    "created_before",
    "stuck",
    "upstream_missing",
    *VIEW_FIELDS,
)


class CheckboxGroup(forms.CheckboxSelectMultiple):
    """A checkbox per choice, each in a ``<div><label>``; readable and usable without JS.

    Built with ``format_html`` rather than Django's per-option widget templates
    (three nested templates per option; a panel has ~100 options: 5-8 ms a
    page). Each option's markup depends only on the field, the choice and
    whether it is ticked, so it is built once per process (the cache is
    bounded by the declared choices, never by user input). Flat choices only;
    every value and label is escaped.
    """

    _options: ClassVar[dict[tuple, SafeString]] = {}

    def render(
        self, name: str, value: Any, attrs: dict | None = None, renderer: Any = None
    ) -> SafeString:
        attrs = self.build_attrs(self.attrs, attrs)
        base_id = attrs.pop("id", "")
        extra = str(attrs_html(attrs))  # e.g. aria-invalid, on every box as Django's widget does
        picked = {str(v) for v in (value or ())}
        cache = self._options
        out = []
        for i, (v, label) in enumerate(self.choices):
            key = (name, base_id, extra, i, str(v), str(label), str(v) in picked)
            option = cache.get(key)
            if option is None:
                option = cache[key] = format_html(
                    '<div><label for="{}_{}"><input type="checkbox" name="{}" value="{}"'
                    ' id="{}_{}"{}{}> {}</label></div>',
                    base_id,
                    i,
                    name,
                    v,
                    base_id,
                    i,
                    SafeString(extra),
                    CHECKED if key[-1] else "",
                    label,
                )
            out.append(option)
        return format_html('<div id="{}">{}</div>', base_id, SafeString("".join(out)))


def checkbox_field(choices: Any, label: str) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=choices, label=label, required=False, widget=CheckboxGroup
    )


def text_field(label: str, max_length: int = 256) -> forms.CharField:
    return forms.CharField(label=label, max_length=max_length, required=False)


def datetime_field(label: str) -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )


def created_within_field() -> forms.ChoiceField:
    """The time presets (``CreatedWithinFilter``); "custom" is the created from / before fields."""
    return forms.ChoiceField(
        choices=[("", _("any time")), *CREATED_WITHIN_CHOICES],
        label=_("Created (UTC)"),
        required=False,
        widget=forms.RadioSelect,
    )


def sort_field(choices: list[tuple[str, str]]) -> forms.ChoiceField:
    return forms.ChoiceField(choices=choices, label=_("Sort"), required=False)


# A panel field's markup: label, widget, errors (``PanelField.panel``).
PANEL_FIELD_TEMPLATE = "console/_filter_field.html"


class PanelField(BoundField):
    """A field of a filter panel, drawn the way Django draws it, at less cost.

    Its value is read once (the panel template asks for it up to four times), and
    a field with no error is drawn once per value per process: its markup depends
    only on the field (shared by every request's form, never changed), its name
    and ``id`` (from code, never from the request), its value and the language of
    its labels. Empty fields are bounded by the declared fields; the values people
    filter on (a re-read or shared list, its auto-refresh) are kept up to
    ``PANEL_CACHE_SIZE`` panels, then the cache starts over. A field with an error
    is drawn afresh, as Django draws it.
    """

    _panels: ClassVar[dict[tuple, SafeString]] = {}
    PANEL_CACHE_SIZE: ClassVar[int] = 1024

    @property
    def panel(self) -> SafeString:
        """This field's part of the filter panel (``PANEL_FIELD_TEMPLATE``)."""
        if self.errors:
            return self._draw_panel()
        # ``repr``: None, "", [] and False may draw differently (``value=""``, unticked).
        key = (type(self.form), self.html_name, self.auto_id, repr(self.value()), get_language())
        html = self._panels.get(key)
        if html is None:
            html = self._draw_panel()
            if len(self._panels) >= self.PANEL_CACHE_SIZE:
                self._panels.clear()
            self._panels[key] = html
        return html

    def _draw_panel(self) -> SafeString:
        return get_template(PANEL_FIELD_TEMPLATE).render(
            {"field": self, "open_filters": self.form.open_fields}
        )

    def value(self) -> Any:
        try:
            return self._value
        except AttributeError:
            self._value: Any = super().value()
            return self._value

    @cached_property
    def widget_type(self) -> str:  # type: ignore[override]
        return super().widget_type


class FilterForm(forms.Form):
    """One list's filter panel; subclasses declare fields named like their FilterSet's filters.

    ``open_fields``: checkbox groups shown open (small vocabularies). Fields are
    shared by every request's form (read-only): do not change them per request.
    """

    open_fields: ClassVar[tuple[str, ...]] = ("status",)
    bound_field_class = PanelField
    refresh = forms.BooleanField(label=_("Auto-refresh"), required=False)

    def __init__(self, data: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        cls = type(self)
        if type(cls.__dict__.get("base_fields")) is not SharedFields:
            cls.base_fields = SharedFields(cls.base_fields)
        super().__init__(data, **kwargs)
        leading = [name for name in self.fields if name not in TRAILING_FIELDS]
        self.order_fields([*leading, *TRAILING_FIELDS])

    def view_state(self, default_sort: str) -> tuple[str, bool, dict[str, list[str]]]:
        """``(sort, refresh, errors)`` from the view switches (the only fields validated here)."""
        errors: dict[str, list[str]] = {}
        sort = default_sort
        if "sort" in self.fields:
            try:
                sort = self.fields["sort"].clean(self.data.get("sort") or default_sort)
            except forms.ValidationError as exc:
                errors["sort"] = list(exc.messages)
        refresh = self.data.get("refresh") in ("true", "on")
        return sort, refresh, errors

    def show_errors(self, errors: Mapping[str, Any]) -> None:
        """Show ``errors`` (the FilterSet's, the view switches') beside the panel's fields.

        The panel does not validate the data filters again: the FilterSet did.
        """
        self._errors = ErrorDict(
            (name, self.error_class(list(errs))) for name, errs in errors.items()
        )
        self.cleaned_data = {}
