"""Selector matching for the cluster layer: the one implementation is
:mod:`nodewright.scheduling.selectors`; these names stay importable from here for the
store and the controllers."""

from __future__ import annotations

from nodewright.scheduling.selectors import (
    InvalidSelectorError,
    label_requirement_matches,
    label_selector_matches,
    node_selector_matches,
    node_selector_term_matches,
)

__all__ = [
    "InvalidSelectorError",
    "label_requirement_matches",
    "label_selector_matches",
    "node_selector_matches",
    "node_selector_term_matches",
]
