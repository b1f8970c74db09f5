"""Filter building blocks every list's FilterSet uses (HTML and REST): no domain model."""

from __future__ import annotations

import copy
import datetime as dt
from collections import OrderedDict
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _


class SharedFields(dict):
    """A form's declared fields, shared by its instances instead of deep-copied per form.

    Django deep-copies a form's fields (and their widgets and choices) for every
    instance, in case one is changed for that request; the filter panels and the
    FilterSets' forms never change their fields, and the copy of ~20 fields cost
    ~0.7 ms a page. Use only on forms whose fields are read-only.
    """

    def __deepcopy__(self, memo: dict) -> dict:
        return dict(self)


class _FilterCopies(OrderedDict):
    """A FilterSet's declared filters, copied per instance one level deep.

    django-filter deep-copies every filter (its choices, label, field kwargs)
    for each FilterSet, only to give each copy its own ``model`` and ``parent``.
    A shallow copy of each filter gives them that too; what it shares (choices,
    field kwargs) is never changed after the class is declared.
    """

    def __deepcopy__(self, memo: dict) -> OrderedDict:
        copies: OrderedDict = OrderedDict()
        for name, f in self.items():
            copied = copy.copy(f)
            if f.method is not None:
                copied.method = f.method  # its own FilterMethod, resolved on its own parent
            copies[name] = copied
        return copies


# Per FilterSet class and language: the form class validating its data (its fields shared).
_FORM_CLASSES: dict[tuple[type, str | None], type[forms.Form]] = {}


class ConsoleFilterSet(django_filters.FilterSet):
    """Data filters only: the filter panel (widgets, order, sort, refresh) is a ``FilterForm``.

    The filters and the validating form are the class's own, never changed per
    request: each instance gets shallow copies of the filters and a form of a
    class built once (per language: a label drawn from a model's verbose name
    is translated when the form class is built).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if type(cls.__dict__.get("base_filters")) is not _FilterCopies:
            # django-filter's MultipleChoiceFilter adds DISTINCT by default. On a column
            # of the row itself it cannot remove a duplicate, but it makes PostgreSQL
            # de-duplicate whole rows (and sort on every column) before the keyset LIMIT.
            for f in cls.base_filters.values():
                if isinstance(f, django_filters.MultipleChoiceFilter) and "__" not in f.field_name:
                    f.distinct = False
            cls.base_filters = _FilterCopies(cls.base_filters)
        super().__init__(*args, **kwargs)

    def get_form_class(self) -> type[forms.Form]:
        key = (type(self), get_language())
        form_class = _FORM_CLASSES.get(key)
        if form_class is None:
            form_class = super().get_form_class()
            form_class.base_fields = SharedFields(form_class.base_fields)
            _FORM_CLASSES[key] = form_class
        return form_class


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


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """ISO 8601 input, normalised to UTC (PostgreSQL refuses some offsets Python accepts)."""

    def to_python(self, value: Any) -> dt.datetime | None:
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(dt.UTC)
        except OverflowError as exc:
            raise forms.ValidationError(_("This time is out of range.")) from exc


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


# ``?created_within=``: the time presets of every list (UTC, relative to now).
CREATED_WITHIN = {
    "1h": dt.timedelta(hours=1),
    "24h": dt.timedelta(hours=24),
    "7d": dt.timedelta(days=7),
}
CREATED_WITHIN_CHOICES = [
    ("1h", _("last 1 h")),
    ("24h", _("last 24 h")),
    ("7d", _("last 7 d")),
]


class CreatedWithinFilter(django_filters.ChoiceFilter):
    """``?created_within=24h``: rows created in the last hour / day / week (up to now)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("choices", CREATED_WITHIN_CHOICES)
        kwargs.setdefault("field_name", "created_at")
        kwargs.setdefault("label", _("Created in the"))
        super().__init__(*args, **kwargs)

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        if value in (None, "") or value not in CREATED_WITHIN:
            return qs
        since = dt.datetime.now(dt.UTC) - CREATED_WITHIN[value]
        return qs.filter(**{f"{self.field_name}__gte": since})
