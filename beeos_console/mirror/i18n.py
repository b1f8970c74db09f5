"""The pure modules' sentences in the reader's language: the Django side of ``mirror.said``.

``words.py`` and the ``states.py`` modules stay pure and English; every page,
table, refusal and API answer reads their sentences through here, so a
sentence is translated at display time, in the active language, by one rule
(``translated``). Raw values, codes and rule ids inside a sentence are its
parameters and are never translated.
"""

from __future__ import annotations

from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy

from beeos_console.mirror import words
from beeos_console.mirror.said import Said
from beeos_console.mirror.states import (
    CANCELLED,
    COMPLETED,
    FAILED,
    PROCESSING,
    QUEUED,
    UNMAPPED,
)


def translated(value: Any) -> Any:
    """A ``Said`` in the active language (its parameters too); anything else as it is."""
    if isinstance(value, Said):
        if not value.msgid:
            return ""
        text = gettext(value.msgid)
        if value.params:
            text = text % {name: translated(v) for name, v in value.params.items()}
        return text
    if isinstance(value, Promise):
        return str(value)
    return value


# The product statuses as a label (badges, filter panels, charts). The stored value,
# the ``?status=`` filter and the API keep the English code.
STATUS_LABELS = {
    QUEUED: pgettext_lazy("product status", "queued"),
    PROCESSING: pgettext_lazy("product status", "processing"),
    COMPLETED: pgettext_lazy("product status", "completed"),
    FAILED: pgettext_lazy("product status", "failed"),
    CANCELLED: pgettext_lazy("product status", "cancelled"),
    UNMAPPED: pgettext_lazy("product status", "unmapped"),
}


def status_label(status: str | None) -> str:
    """A product status in the reader's language; any other value as it is."""
    label = STATUS_LABELS.get(status or "")
    return str(label) if label is not None else (status or "")


def status_choices(values: tuple[str, ...]) -> list[tuple[str, Any]]:
    """``(value, label)`` choices for product statuses (lazy: built at import time)."""
    return [(v, STATUS_LABELS.get(v, v)) for v in values]


def reason_words(reason: str | None) -> str:
    return translated(words.reason_words(reason))


def certainty_words(certainty: str | None) -> str:
    return translated(words.certainty_words(certainty))


def retry_words(policy: str | None) -> str:
    return translated(words.retry_words(policy))


def status_words(status: str | None) -> str:
    return translated(words.status_words(status))


def error_code_words(code: str | None) -> str:
    return translated(words.error_code_words(code))


def what_to_do(status: str | None, certainty: str | None, policy: str | None) -> str:
    return translated(words.what_to_do(status, certainty, policy))


def summary(
    status: str | None, reason: str | None, certainty: str | None, policy: str | None
) -> str:
    return translated(words.summary(status, reason, certainty, policy))


# Producer notes as the pure modules write them ("letter case", "status: foreign cancel
# spelling"): stored in the audit report as written, said in the reader's language
# here. A wire field name before the colon stays as it is.
NOTE_WORDS = {
    "surrounding blanks": gettext_lazy("surrounding blanks"),
    "letter case": gettext_lazy("letter case"),
    "foreign cancel spelling": gettext_lazy("foreign cancel spelling"),
}


def producer_note_words(note: str | None) -> str:
    """A producer note in the reader's language (unknown text comes back as it is)."""
    if not note:
        return ""
    return "; ".join(_one_note(part) for part in note.split("; "))


def _one_note(note: str) -> str:
    field, sep, rest = note.rpartition(": ")
    said = NOTE_WORDS.get(rest if sep else note)
    if said is None:
        return note
    return f"{field}: {said}" if sep else str(said)
