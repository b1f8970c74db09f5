"""CSV exports that a spreadsheet cannot turn into formulas.

A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
read as a formula by spreadsheet programs (CSV injection). Every export writes
through ``csv_writer``, which prefixes such a cell with ``'``; the value stays
readable and is shown as text.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

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
