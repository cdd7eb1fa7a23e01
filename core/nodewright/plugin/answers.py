"""The last catalog answers of each provider, and what the host made of them.

A catalog is asked for again whenever its cache expires (every few minutes) or a reservation
fills, and a provider usually answers with what it answered last time: the same instance
types, the same offerings. Checking and merging an answer costs far more than getting it (on
KWOK's 144 types, most of an idle pass), and the same answer gives the same result, so an
answer equal to the last one gets the last result back: the same list object, which also
lets readers that compare catalogs from pass to pass stop at identity.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

from nodewright.scheduling.instancetype import InstanceType, Offering

#: What a provider answered for its offerings: by type name, the offerings (None: no change).
Priced = dict[str, tuple[object, ...]] | None


class CatalogAnswers:
    """Per (provider, NodeClass) key: its last instance types and offerings answers."""

    def __init__(self) -> None:
        self._types: dict[Hashable, tuple[tuple[object, ...], list[InstanceType]]] = {}
        self._priced: dict[
            Hashable, tuple[tuple[InstanceType, ...], Priced, list[InstanceType]]
        ] = {}

    def instance_types(
        self, key: Hashable, answer: object, check: Callable[[object], list[InstanceType]]
    ) -> list[InstanceType]:
        """``check(answer)``, or its last result when ``answer`` holds the same objects."""
        last = self._types.get(key)
        if last is not None and _same_items(answer, last[0]):
            return last[1]
        checked = check(answer)
        self._types[key] = (tuple(checked), checked)
        return checked

    def priced(
        self,
        key: Hashable,
        types: Sequence[InstanceType],
        answer: object,
        merge: Callable[[], list[InstanceType]],
    ) -> list[InstanceType]:
        """``merge()`` (which checks ``answer`` and merges it into ``types``), or its last
        result when ``types`` are the same objects and ``answer`` equals the last one."""
        last = self._priced.get(key)
        given = _snapshot(answer)
        if (
            last is not None
            and given is not _UNKNOWN
            and _same_items(types, last[0])
            and _same_offerings(given, last[1])
        ):
            return last[2]
        merged = merge()
        if given is not _UNKNOWN:
            self._priced[key] = (tuple(types), given, merged)
        else:
            self._priced.pop(key, None)
        return merged


_UNKNOWN: Priced = {"": ()}  # an answer that is not a mapping: never reused


def _snapshot(answer: object) -> Priced:
    """The answer as plain tuples (the provider may change its own containers later)."""
    if answer is None:
        return None
    if not isinstance(answer, Mapping):
        return _UNKNOWN
    snapshot: dict[str, tuple[object, ...]] = {}
    for name, offerings in answer.items():
        if not isinstance(offerings, list | tuple):
            return _UNKNOWN
        snapshot[name] = tuple(offerings)
    return snapshot


def _same_items(answer: object, last: tuple[object, ...]) -> bool:
    """Whether ``answer`` is a list or tuple of exactly the objects of ``last``."""
    return (
        isinstance(answer, list | tuple)
        and len(answer) == len(last)
        and all(a is b for a, b in zip(answer, last, strict=True))
    )


def _same_offerings(given: Priced, last: Priced) -> bool:
    if given is None or last is None:
        return given is last
    if given.keys() != last.keys():
        return False
    for name, offerings in given.items():
        before = last[name]
        if len(offerings) != len(before):
            return False
        for a, b in zip(offerings, before, strict=True):
            if a is not b and not (type(a) is Offering and type(b) is Offering and a == b):
                return False
    return True
