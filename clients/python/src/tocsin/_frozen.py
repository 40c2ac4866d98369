"""A read-only mapping that hashes by value, for the mappings the frozen values hold."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class FrozenMap(Mapping[str, str]):
    """`user_info` and the like as a frozen value holds them: read-only, equal to any mapping
    with the same items (a dict too), and hashable, so the value that holds it is. `dict(m)` is
    a dict of it."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = dict(items) if items is not None else {}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __repr__(self) -> str:
        return repr(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._items,))


def frozen(obj: object, name: str) -> None:
    """In a frozen dataclass's __post_init__: holds the mapping attribute `name` as a FrozenMap."""
    value = getattr(obj, name)
    if not isinstance(value, FrozenMap):
        object.__setattr__(obj, name, FrozenMap(value))
