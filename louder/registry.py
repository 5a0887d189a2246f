"""The one small registry type louder's registries are made of: backends (``louder.llm.registry``),
kinds of run (``louder.kinds``), experiment dimensions (``louder.dimensions``) and measures
(``louder.analysis.engine.registry``). Each keeps its own capabilities (a backend's lazy module, the
measures' order); what they share is here — register (replacing one of the same name), unregister,
get (an unknown name is one line with "did you mean"), the names in registration order, and the
entry points of other packages that add to one."""

from __future__ import annotations

import importlib.metadata
from typing import Callable, Generic, TypeVar

from louder.errors import LouderError, did_you_mean, load_entry_point

T = TypeVar("T")


class Registry(Generic[T]):
    """Named things of one kind (``kind``: their type), in registration order. ``noun`` names one in
    messages ("kind of run"); ``key`` gives an item's name (default: its ``name``); ``group`` is the
    entry-point group other packages add to it through (None: none); an unknown name reads "``unknown``
    ``noun`` 'x' (did you mean 'y'?); ``hint``" (default hint: the names it knows)."""

    def __init__(self, noun: str, kind: type, key: Callable[[T], str] = lambda item: item.name,
                 group: str | None = None, unknown: str = "unknown", hint: str | None = None):
        self.noun, self.kind, self.key, self.group, self.unknown, self.hint = noun, kind, key, group, unknown, hint
        self.items: dict[str, T] = {}  # name → item
        self._entry_points: dict[str, importlib.metadata.EntryPoint] | None = None

    def register(self, item: T) -> T:
        """Make ``item`` known under its name (replacing one of the same name)."""
        self.items[self.key(item)] = item
        return item

    def unregister(self, name: str) -> None:
        self.items.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self.items

    def names(self) -> list[str]:
        return list(self.items)

    def values(self) -> list[T]:
        return list(self.items.values())

    def find(self, name: str) -> T | None:
        return self.items.get(name)

    def get(self, name: str, where: str = "") -> T:
        """The item named ``name``; an unknown one is one line (``where``: what the message starts with)."""
        item = self.items.get(name)
        if item is None:
            hint = self.hint if self.hint is not None else f"one of {', '.join(self.items) or 'none'}"
            raise LouderError(f"{where + ': ' if where else ''}{self.unknown} {self.noun} {name!r}"
                              f"{did_you_mean(name, self.items)}; {hint}")
        return item

    def entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        """name → entry point of ``group`` (the installed packages', read once)."""
        if self._entry_points is None:
            found = importlib.metadata.entry_points(group=self.group) if self.group else ()
            self._entry_points = {ep.name: ep for ep in found}
        return self._entry_points

    def forget_entry_points(self) -> None:
        """Read the installed packages' entry points again when next asked (after one was installed)."""
        self._entry_points = None

    def load(self, ep: importlib.metadata.EntryPoint):
        """What an entry point names, its module imported (its import may register it); registered here
        when it names an item itself. A package that fails to import is one line."""
        obj = load_entry_point(ep, self.noun)
        if isinstance(obj, self.kind):
            self.register(obj)
        return obj
