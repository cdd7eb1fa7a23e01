"""Names shared by the hook specs and implementations (no imports, so anything may import it)."""

from __future__ import annotations

#: The pluggy project name; hook functions are prefixed ``nodewright_``.
NAME = "nodewright"
#: Entry-point group providers register under.
ENTRY_POINT_GROUP = "nodewright.providers"
