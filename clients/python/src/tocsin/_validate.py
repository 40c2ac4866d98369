"""Checks on strings before they are marshalled: the bus refuses (and drops the connection of) a
message holding invalid UTF-8 or NUL, so such a string must become an error naming its field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._errors import client_error


def text(field: str, value: object) -> str:
    """`value` if it is a str that D-Bus can carry, else an InvalidArgumentError naming `field`."""
    if not isinstance(value, str):
        raise client_error(field, f"'{field}' must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise client_error(
            field, f"'{field}' is not valid UTF-8 (a lone surrogate at character {e.start + 1})"
        ) from None
    if "\0" in value:
        raise client_error(field, f"'{field}' contains a NUL character at character {value.index(chr(0)) + 1}")
    return value


def text_list(field: str, values: Iterable[object]) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise client_error(field, f"'{field}' must be a sequence of strings, not a single string")
    return [text(f"{field}[{i}]", v) for i, v in enumerate(values)]


def text_map(field: str, values: Mapping[Any, Any]) -> dict[str, str]:
    if not isinstance(values, Mapping):
        raise client_error(field, f"'{field}' must be a mapping of strings, got {type(values).__name__}")
    out: dict[str, str] = {}
    for k, v in values.items():
        key = text(field, k)
        out[key] = text(f"{field}.{key}", v)
    return out


def base_field(name: str) -> str:
    """`user_info.url` and `backends[2]` concern the fields `user_info` and `backends`."""
    return name.split(".", 1)[0].split("[", 1)[0]


def history_limit(limit: object) -> int:
    """`History`'s `limit`: 0 (the daemon's 100) to 10000, which the daemon refuses to exceed."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 10000:
        raise client_error("limit", f"'limit' must be an integer from 0 to 10000 (the most History returns per call), got {limit!r}")
    return limit


def page_size(value: object) -> int:
    """`pending`'s `page_size`: 0 (the daemon's 1000) to 10000 entries per `ListPage`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10000:
        raise client_error("page_size", f"'page_size' must be an integer from 0 to 10000, got {value!r}")
    return value

