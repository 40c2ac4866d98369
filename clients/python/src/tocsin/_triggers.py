"""Triggers, one per request, as UNNotificationTrigger's kinds: a date, a time interval, a calendar
expression, and reminders before an event. Each turns into the spec fields the daemon reads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from ._errors import client_error
from ._time import Duration, Instant, duration, instant
from ._validate import text

SpecValue = str | int | bool | list[str] | dict[str, str]
#: A calendar component: a value, several values, or a range of them; None leaves it out.
CalendarField = int | Sequence[int] | range | None
#: Weekday names ("Mon"), several, or a range written "Mon..Fri"; None: any day.
WeekdayField = str | Sequence[str] | None


@dataclass(frozen=True)
class At:
    """Once, at an instant (an aware datetime, or a string the daemon reads: `2026-12-24 18:00`
    in the notification's zone, RFC 3339, `@<unix seconds>`, `+5min`)."""

    when: Instant

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields of this trigger, checked, as the daemon reads them."""
        return {"at": instant("at", self.when)}


@dataclass(frozen=True)
class After:
    """Once, `interval` after it is scheduled; with `repeats`, every `interval`, at most `count`
    times, the first at `starting` (default: one interval from now), none after `until`."""

    interval: Duration
    repeats: bool = False
    count: int | None = None
    until: Instant | None = None
    starting: Instant | None = None

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields of this trigger, checked, as the daemon reads them."""
        if not self.repeats:
            if self.count is not None or self.until is not None or self.starting is not None:
                raise client_error("count", "'count', 'until' and 'starting' need repeats=True")
            return {"after": duration("after", self.interval)}
        out: dict[str, SpecValue] = {"every": duration("every", self.interval)}
        if self.count is not None:
            if isinstance(self.count, bool) or not isinstance(self.count, int):
                raise client_error("count", f"'count' must be an integer, got {type(self.count).__name__}")
            if not 1 <= self.count <= 4294967295:
                # The daemon's bounds (a larger number would not even fit the message's int64).
                raise client_error("count", f"'count' must be between 1 and 4294967295, found {self.count}")
            out["count"] = self.count
        if self.until is not None:
            out["until"] = instant("until", self.until)
        if self.starting is not None:
            out["starting"] = instant("starting", self.starting)
        return out


@dataclass(frozen=True)
class Calendar:
    """A systemd calendar expression (`Mon..Fri 07:30`), in `timezone` (IANA; default: the
    daemon's). `dst_gap` is `skip` or `shift`, `dst_fold` `first` or `both`. `Calendar.every(...)`
    builds the expression from components."""

    expression: str
    timezone: str | None = None
    dst_gap: str | None = None
    dst_fold: str | None = None

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields of this trigger, checked, as the daemon reads them."""
        out: dict[str, SpecValue] = {"on_calendar": text("on_calendar", self.expression)}
        if self.timezone is not None:
            out["timezone"] = text("timezone", self.timezone)
        if self.dst_gap is not None:
            out["dst_gap"] = text("dst_gap", self.dst_gap)
        if self.dst_fold is not None:
            out["dst_fold"] = text("dst_fold", self.dst_fold)
        return out

    @classmethod
    def every(cls, *, weekday: WeekdayField = None, year: CalendarField = None,
              month: CalendarField = None, day: CalendarField = None, hour: CalendarField = None,
              minute: CalendarField = None, second: CalendarField = None,
              timezone: str | None = None) -> Calendar:
        """The calendar trigger matching these components, as DateComponents match: a component
        left out is any value when it is larger than every given time component, and 0 when smaller
        (`hour=7` is 07:00:00 every day). Each component is a value, a sequence of values or a range
        (`range(1, 6)` for Monday to Friday is `weekday=["Mon", "Tue", ...]` or `"Mon..Fri"`)."""
        return cls(calendar_expression(weekday=weekday, year=year, month=month, day=day,
                                       hour=hour, minute=minute, second=second), timezone)


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _component(name: str, value: object, width: int, bounds: tuple[int, int]) -> str:
    if isinstance(value, range):
        if value.step != 1 or len(value) == 0:
            raise client_error("on_calendar", f"'{name}' must be a non-empty range with step 1")
        _check(name, value.start, bounds)
        _check(name, value[-1], bounds)
        return f"{value.start:0{width}d}..{value[-1]:0{width}d}"
    if isinstance(value, bool):
        raise client_error("on_calendar", f"'{name}' must be an integer, got a boolean")
    if isinstance(value, int):
        _check(name, value, bounds)
        return f"{value:0{width}d}"
    if isinstance(value, str):
        raise client_error("on_calendar", f"'{name}' must be an integer, a sequence or a range, got a string")
    if isinstance(value, Iterable):
        items = list(value)
        if not items:
            raise client_error("on_calendar", f"'{name}' must not be empty")
        return ",".join(_component(name, v, width, bounds) for v in items)
    raise client_error("on_calendar", f"'{name}' must be an integer, a sequence or a range, got {type(value).__name__}")


def _check(name: str, v: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= v <= bounds[1]:
        raise client_error("on_calendar", f"'{name}' must be between {bounds[0]} and {bounds[1]}, got {v}")


def _weekdays(value: object) -> str:
    if isinstance(value, str):
        parts = [value]
    elif isinstance(value, Iterable):
        parts = [text("on_calendar", v) for v in value]
    else:
        raise client_error("on_calendar", f"'weekday' must be a name or names, got {type(value).__name__}")
    if not parts:
        raise client_error("on_calendar", "'weekday' must not be empty")
    for p in parts:
        ends = p.split("..")
        for end in ends:
            if end[:3].capitalize() not in _WEEKDAYS or len(ends) > 2:
                raise client_error("on_calendar", f"'weekday' has '{p}'; expected names such as Mon or Mon..Fri")
        if _WEEKDAYS.index(ends[0][:3].capitalize()) > _WEEKDAYS.index(ends[-1][:3].capitalize()):
            # The daemon (as systemd) refuses a range that would wrap around the week.
            raise client_error("on_calendar", f"'weekday' has '{p}', a range that runs backwards; "
                                              "write it as two ranges (Fri..Sun,Mon)")
    return ",".join(parts)


def calendar_expression(*, weekday: object = None, year: object = None, month: object = None,
                        day: object = None, hour: object = None, minute: object = None,
                        second: object = None) -> str:
    """The systemd calendar expression for these components (see `Calendar.every`)."""
    given = [hour is not None, minute is not None, second is not None]
    largest = given.index(True) if any(given) else 0
    times = []
    for i, (name, value, upper) in enumerate((("hour", hour, 23), ("minute", minute, 59), ("second", second, 59))):
        if value is None:
            times.append("*" if i < largest else "00")  # nothing given: 00:00:00, as systemd's "daily"
        else:
            times.append(_component(name, value, 2, (0, upper)))
    date = "-".join([
        "*" if year is None else _component("year", year, 4, (1970, 2199)),
        "*" if month is None else _component("month", month, 2, (1, 12)),
        "*" if day is None else _component("day", day, 2, (1, 31)),
    ])
    expression = f"{date} {':'.join(times)}"
    return expression if weekday is None else f"{_weekdays(weekday)} {expression}"


@dataclass(frozen=True)
class RemindBefore:
    """One firing per offset before `event` (`[timedelta(hours=24), "3h", 0]`); offsets already
    past are skipped, the rest fire. Fired events carry the offset as `before`."""

    event: Instant
    offsets: Sequence[Duration] = field(default_factory=lambda: (0,))

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields of this trigger, checked, as the daemon reads them."""
        if isinstance(self.offsets, (str, bytes)):
            raise client_error("remind_before", "'remind_before' must be a sequence of durations")
        return {
            "at": instant("at", self.event),
            "remind_before": [duration(f"remind_before[{i}]", o) for i, o in enumerate(self.offsets)],
        }


Trigger = At | After | Calendar | RemindBefore

