"""``beeos_sdk``, imported the first time the console uses it.

Importing the platform SDK builds every pydantic model of the BeeOS API: about half a
second of each process's start, more on a busy machine. Most processes never call BeeOS
(``manage.py`` commands, a web worker serving lists), so the modules that do name the SDK
through ``beeos_sdk`` here: the same module, loaded on its first attribute read.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _ImportedOnFirstUse:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module: ModuleType = importlib.import_module(self._name)  # sys.modules caches it
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<{self._name}, imported on first use>"


if TYPE_CHECKING:
    import beeos_sdk
else:
    beeos_sdk = _ImportedOnFirstUse("beeos_sdk")

__all__ = ["beeos_sdk"]
