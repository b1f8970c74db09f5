"""Sentences a pure module says, kept translatable: pure Python, no Django imports.

The pure modules (``states.py``, ``words.py``, the apps' ``states.py``) hold
sentences support staff read but must not import Django. They write each one as
``gettext_noop("… %(name)s …", name=value)``: ``makemessages`` collects the
English msgid (``gettext_noop`` is one of its keywords; nothing is translated
here), and the result is a ``Said`` — a ``str`` that reads as the English
sentence everywhere (tests, logs, the audit log) and remembers its msgid and
parameters. The Django side says it in the reader's language at display time:
``beeos_console.mirror.i18n.translated`` (one rule, in one place).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Said(str):
    """An English sentence (``msgid % params``) that keeps its msgid and parameters."""

    msgid: str
    params: Mapping[str, Any]

    def __new__(cls, msgid: str, params: Mapping[str, Any] | None = None) -> Said:
        params = dict(params or {})
        said = super().__new__(cls, msgid % params if params else msgid)
        said.msgid = msgid
        said.params = params
        return said


def gettext_noop(msgid: str, /, **params: Any) -> Said:
    """Mark ``msgid`` for translation (no Django here): the English sentence, as a ``Said``.

    Parameters are named (``%(code)s``) so that a translation may reorder them;
    a parameter may itself be a ``Said`` (translated with the sentence).
    """
    return Said(msgid, params)


def verbatim(value: str) -> Said:
    """A raw value said as it is, never looked up in a catalogue (not a msgid)."""
    return Said("%(value)s", {"value": value})
