"""Conversions between Python times and the daemon's: unix microseconds, RFC 3339, systemd durations."""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta, timezone

from ._errors import client_error
from ._validate import text

#: A duration as the API takes it: a timedelta, seconds, or a systemd duration string ("15min").
Duration = timedelta | float | int | str
#: An instant: an aware datetime, or a string the daemon reads ("2026-12-24 18:00", RFC 3339, "@<unix seconds>", "+5min").
Instant = datetime | str


def from_usec(usec: int) -> datetime:
    return datetime.fromtimestamp(0, timezone.utc) + timedelta(microseconds=usec)


def to_usec(when: datetime) -> int:
    delta = when - datetime.fromtimestamp(0, timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def duration(field: str, value: Duration) -> str:
    """A systemd duration string: whole seconds as `90s`, anything finer in microseconds."""
    if isinstance(value, str):
        return text(field, value)
    if isinstance(value, bool):
        raise client_error(field, f"'{field}' must be a duration, got a boolean")
    if isinstance(value, timedelta):
        usec = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    elif isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise client_error(field, f"'{field}' must be a finite duration, got {value}")
        usec = round(value * 1_000_000)
    else:
        raise client_error(field, f"'{field}' must be a duration (timedelta, seconds or a string), got {type(value).__name__}")
    if usec < 0:
        # Echoed as given (-5, not -5000000 µs): the caller recognises their own value.
        raise client_error(field, f"'{field}' must not be negative, got {value!r}")
    if usec % 1_000_000 == 0:
        return f"{usec // 1_000_000}s"
    return f"{usec}us"


def duration_seconds(value: Duration) -> float:
    """Seconds in a duration, for the fake center; strings in systemd's units."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)):
        return float(value)
    return parse_systemd_duration(value)


#: Microseconds per unit, as the daemon (systemd) counts them.
_UNITS = {
    "us": 1, "usec": 1, "µs": 1, "μs": 1, "ms": 1_000, "msec": 1_000,
    "s": 1_000_000, "sec": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
    "m": 60_000_000, "min": 60_000_000, "minute": 60_000_000, "minutes": 60_000_000,
    "h": 3_600_000_000, "hr": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
    "d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
    "w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
    "M": 2_629_800_000_000, "month": 2_629_800_000_000, "months": 2_629_800_000_000,
    "y": 31_557_600_000_000, "year": 31_557_600_000_000, "years": 31_557_600_000_000,
}
_PART = r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([A-Za-zµμ]*)"


def parse_systemd_duration(value: str) -> float:
    """systemd's duration syntax ("1h 30min", "90", "1.5h") in seconds; ValueError when malformed.
    Counted in whole microseconds as the daemon counts them: a fraction finer than that is
    dropped, so "0.5us" is zero, as the daemon reads it."""
    import re

    s = value.strip()
    if not s:
        raise ValueError("empty duration")
    total = 0
    for number, unit in re.findall(_PART, s):
        whole, _, fraction = number.partition(".")
        if unit not in _UNITS and unit != "":
            raise ValueError(f"unknown time unit '{unit}'")
        per = _UNITS[unit] if unit else 1_000_000
        total += int(whole or "0") * per
        k = per // 10
        for digit in fraction:
            if k == 0:
                break
            total += int(digit) * k
            k //= 10
    if re.sub(_PART, "", s).strip():
        raise ValueError(f"invalid duration '{value}'")
    return total / 1_000_000


def instant(field: str, value: Instant) -> str:
    """RFC 3339 for an aware datetime (a naive one is refused: its zone would be a guess)."""
    if isinstance(value, str):
        return text(field, value)
    if not isinstance(value, datetime):
        raise client_error(field, f"'{field}' must be a datetime or a string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise client_error(field, f"'{field}' must be an aware datetime (give it a tzinfo)")
    utc = value.astimezone(timezone.utc)
    if utc.microsecond:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def aware(field: str, value: object) -> datetime:
    """`value` if it is an aware datetime (a naive one's zone would be a guess)."""
    if not isinstance(value, datetime):
        raise client_error(field, f"'{field}' must be an aware datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise client_error(field, f"'{field}' must be an aware datetime (give it a tzinfo)")
    return value


def snooze_duration(duration: Duration | None, duration_: Duration | None) -> Duration | None:
    """`snooze`'s duration, given as `duration` or by its deprecated spelling `duration_`."""
    if duration_ is None:
        return duration
    if duration is not None:
        raise client_error("duration", "give 'duration' once ('duration_' is its former spelling)")
    warnings.warn("snooze(duration_=...) is deprecated; use snooze(duration=...)", DeprecationWarning, stacklevel=3)
    return duration_
