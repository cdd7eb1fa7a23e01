"""Mappings and lists read from YAML that remember where they were written, so a problem can
name its line."""

from __future__ import annotations

from typing import Any


class MarkedDict(dict[str, object]):
    """A mapping that remembers the line of itself and of each key (1-based), and how many
    characters it spans in the file."""

    __slots__ = ("key_lines", "line", "span")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = 0
        self.span = 0
        self.key_lines: dict[object, int] = {}


class MarkedList(list[object]):
    """A list that remembers the line of itself and of each item."""

    __slots__ = ("item_lines", "line")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.line = 0
        self.item_lines: list[int] = []
