"""A read-only dict that hashes by value, for the mappings the frozen values hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


class FrozenMap(dict[str, str]):
    """`user_info` and the like as a frozen value holds them: still a `dict` (so `json.dumps`,
    `isinstance(m, dict)` and `==` with a dict work as before), but read-only and hashable by its
    items, so the value that holds it is hashable. `dict(m)` is a copy to change."""

    __slots__ = ("_hash",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        super().__init__(items if items is not None else {})
        self._hash: int | None = None

    def __hash__(self) -> int:  # type: ignore[override]
        if self._hash is None:
            self._hash = hash(frozenset(self.items()))
        return self._hash

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("this mapping is part of a frozen value and cannot change; copy it with dict() to change it")

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (dict(self),))

    def __copy__(self) -> FrozenMap:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenMap:
        return self


def frozen(obj: object, name: str) -> None:
    """In a frozen dataclass's __post_init__: holds the mapping attribute `name` as a FrozenMap."""
    value = getattr(obj, name)
    if not isinstance(value, FrozenMap):
        object.__setattr__(obj, name, FrozenMap(value))
