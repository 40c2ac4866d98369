"""The daemon's refusals of a request's fields, for the fake center: the limits of docs/CONFIG.md
("Limits"), the values each enumerated field takes, and the latest instant Tocsin schedules.
Checks the client makes before sending (strings, types, `count`, aware datetimes) are not
repeated here: the fake reads a request through the same `fields()`."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import _errors as E
from .._time import parse_systemd_duration
from .._triggers import SpecValue

INVALID = "org.freedesktop.DBus.Error.InvalidArgs"
INVALID_TRIGGER = "io.github.tocsin.Error.InvalidTrigger"
#: The latest instant Tocsin schedules, and the longest duration it takes (from 1970 to it).
HORIZON = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
HORIZON_SECONDS = (HORIZON - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()
_PAST_HORIZON = "reaches past 9999-12-31T23:59:59Z, the latest instant Tocsin schedules"

_ENUMS = {
    "urgency": ("low", "normal", "critical"),
    "missed": ("skip", "fire-once", "fire-all"),
    "dst_gap": ("skip", "shift"),
    "dst_fold": ("first", "both"),
}
_TEXT_LIMITS = {"title": 4096, "body": 65536, "icon": 4096, "category": 4096, "sound": 4096}


def invalid(field: str, message: str) -> E.InvalidArgumentError:
    return E.InvalidArgumentError(INVALID, message, field)


def invalid_trigger(field: str, message: str) -> E.InvalidTriggerError:
    return E.InvalidTriggerError(INVALID_TRIGGER, message, field)


def _bytes(s: str) -> int:
    return len(s.encode())


def check_fields(fields: dict[str, SpecValue]) -> None:
    """What the daemon refuses in a spec's content and options, as it refuses it."""
    if fields.get("title") == "":
        raise invalid("title", "'title' must not be empty")
    for name, limit in _TEXT_LIMITS.items():
        value = fields.get(name)
        if isinstance(value, str) and _bytes(value) > limit:
            raise invalid(name, f"'{name}' is {_bytes(value)} bytes; the limit is {limit}")
    actions = fields.get("actions")
    if isinstance(actions, dict):
        if len(actions) > 16:
            raise invalid("actions", f"'actions' has {len(actions)} entries; the limit is 16")
        for action, label in actions.items():
            if action == "":
                raise invalid("actions", "an action id in 'actions' must not be empty")
            if _bytes(action) > 4096 or _bytes(label) > 4096:
                raise invalid("actions", f"action '{action[:64]}' in 'actions' has an id of {_bytes(action)} "
                                         f"and a label of {_bytes(label)} bytes; the limit is 4096 each")
    user_info = fields.get("user_info")
    if isinstance(user_info, dict):
        size = sum(_bytes(k) + _bytes(v) for k, v in user_info.items())
        if len(user_info) > 64 or size > 65536:
            raise invalid("user_info", f"'user_info' has {len(user_info)} entries and {size} bytes; "
                                       "the limits are 64 entries and 65536 bytes")
        if "" in user_info:
            raise invalid("user_info", "a key in 'user_info' must not be empty")
    backends = fields.get("backends")
    if isinstance(backends, list):
        if len(backends) > 64:
            raise invalid("backends", f"'backends' has {len(backends)} entries; the limit is 64")
        twice = next((b for i, b in enumerate(backends) if b in backends[:i]), None)
        if twice is not None:
            raise invalid("backends", f"'backends' names '{twice}' twice")
    for name, allowed in _ENUMS.items():
        value = fields.get(name)
        if value is not None and value not in allowed:
            raise invalid(name, f"'{name}' must be one of {', '.join(repr(a) for a in allowed)}, found {value!r}")
    if "max_late" in fields:
        positive_seconds("max_late", fields["max_late"])


def seconds(field: str, value: SpecValue, now: datetime | None = None) -> float:
    """A systemd duration in seconds, refused as the daemon refuses it: malformed, or longer than
    Tocsin schedules (or, from `now`, ending past the latest instant it schedules)."""
    try:
        s = parse_systemd_duration(str(value))
    except ValueError as e:
        raise invalid(field, f"invalid '{field}': {e}") from None
    if s > HORIZON_SECONDS or (now is not None and now.timestamp() + s > HORIZON.timestamp()):
        raise invalid(field, f"'{field}' {value} {_PAST_HORIZON}")
    return s


def positive_seconds(field: str, value: SpecValue, now: datetime | None = None) -> float:
    s = seconds(field, value, now)
    if s <= 0:
        raise invalid(field, f"invalid '{field}': the interval must be longer than zero")
    return s


def within_horizon(field: str, t: datetime, written: SpecValue) -> datetime:
    if t > HORIZON:
        raise invalid(field, f"'{field}' {written} {_PAST_HORIZON}")
    return t


def zone(name: str) -> tzinfo:
    """An IANA zone; an unknown one is the daemon's InvalidTrigger naming `timezone`."""
    if name == "UTC":
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise invalid_trigger("timezone", f"field 'timezone': unknown time zone '{name}'") from None
