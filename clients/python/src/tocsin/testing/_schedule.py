"""When a request's trigger fires, for the fake center, with the daemon's refusals."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo

from .. import _errors as E
from .._time import parse_systemd_duration
from .._triggers import SpecValue
from ._calendar import CalendarRule, normalized
from ._checks import INVALID as _INVALID
from ._checks import invalid_trigger, positive_seconds, seconds, within_horizon, zone


def _invalid(name: str, message: str) -> E.InvalidArgumentError:
    return E.InvalidArgumentError(_INVALID, f"invalid '{name}': {message}", name)


def _seconds(name: str, value: SpecValue, now: datetime | None = None) -> float:
    return seconds(name, value, now)


_DAYS = {"today": 0, "tomorrow": 1, "yesterday": -1}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _zone(name: str) -> tzinfo:
    return zone(name)


def utc(t: datetime) -> str:
    """An instant as the daemon describes one: RFC 3339 in UTC, `Z`, and a fraction only when
    there is one, without trailing zeros."""
    t = t.astimezone(timezone.utc)
    out = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        out += "." + f"{t.microsecond:06d}".rstrip("0")
    return out + "Z"


_SPAN_UNITS = (("y", 31_557_600_000_000), ("month", 2_629_800_000_000), ("w", 604_800_000_000),
               ("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000),
               ("ms", 1_000), ("us", 1))


def span(seconds: float) -> str:
    """A duration as the daemon (and systemd) writes it: `1h 30min`, `1d`, `1.500000s`, `0`."""
    t = round(seconds * 1_000_000)
    if t == 0:
        return "0"
    parts: list[str] = []
    for suffix, unit in _SPAN_UNITS:
        if t <= 0:
            break
        if t < unit:
            continue
        a, b = divmod(t, unit)
        if t < 60_000_000 and b > 0 and unit > 1:
            # Below a minute, a remainder is a decimal fraction of the unit.
            parts.append(f"{a}.{b:0{len(str(unit)) - 1}d}{suffix}")
            break
        parts.append(f"{a}{suffix}")
        t = b
    return " ".join(parts)


def _instant(name: str, value: SpecValue, now: datetime, zone: str = "UTC") -> datetime:
    """The daemon's written forms (docs/CONFIG.md, "Written times"); one without a zone in `zone`.
    A time DST repeats is its first occurrence and one it skips moves forward: zoneinfo's fold=0."""
    s = str(value)
    tz = _zone(zone)
    try:
        if s.startswith("@"):
            try:
                return within_horizon(name, datetime.fromtimestamp(float(s[1:]), timezone.utc), s)
            except (OverflowError, OSError):
                raise E.InvalidArgumentError(_INVALID, f"'{name}' {s} reaches past 9999-12-31T23:59:59Z, "
                                                       "the latest instant Tocsin schedules", name) from None
        if s.startswith("+"):
            return now + timedelta(seconds=seconds(name, s[1:], now))
        if s in _DAYS:
            day = now.astimezone(tz).date() + timedelta(days=_DAYS[s])
            return datetime(day.year, day.month, day.day, tzinfo=tz)
        if len(s) > 2 and s[2] == ":" and s[:2].isdigit():
            clock = datetime.fromisoformat("2000-01-01T" + s).time()
            return datetime.combine(now.astimezone(tz).date(), clock).replace(tzinfo=tz)
        word, _, rest = s.partition(" ")
        weekday = None
        if word.isalpha() and rest:
            matches = [i for i, w in enumerate(_WEEKDAYS) if w == word.lower() or (len(word) == 3 and w.startswith(word.lower()))]
            if not matches:
                raise ValueError(f"unknown weekday '{word}'")
            weekday, s = matches[0], rest
        utc = s.endswith(" UTC")
        t = datetime.fromisoformat((s[:-4] if utc else s).replace("Z", "+00:00"))
    except ValueError as e:
        raise _invalid(name, str(e)) from None
    if weekday is not None and t.weekday() != weekday:
        raise _invalid(name, f"{t.date().isoformat()} is a {_WEEKDAYS[t.weekday()].capitalize()}, "
                             f"not a {_WEEKDAYS[weekday].capitalize()}")
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc if utc else tz)
    return within_horizon(name, t, value)


@dataclass
class Schedule:
    """The occurrences of one trigger. `next_after(t)` is the first occurrence after `t` (with
    `first`, the first one at all, from the time it was scheduled)."""

    description: str
    once: datetime | None = None
    period: timedelta | None = None
    starting: datetime | None = None
    count: int | None = None
    until: datetime | None = None
    reminders: list[datetime] = field(default_factory=list)
    event: datetime | None = None
    calendar: CalendarRule | None = None

    def next_after(self, t: datetime, first: bool) -> datetime | None:
        if self.once is not None:
            return self.once if first else None
        if self.period is not None and self.starting is not None:
            if first:
                n = 0
            else:
                n = int((t - self.starting) / self.period) + 1
            if self.count is not None and n >= self.count:
                return None
            nxt = self.starting + n * self.period
            return None if self.until is not None and nxt > self.until else nxt
        if self.reminders:
            return next((r for r in self.reminders if r > t or (first and r >= t)), None)
        if self.calendar is not None:
            return self.calendar.next_after(t)
        return None

    def before(self, due: datetime) -> timedelta | None:
        return self.event - due if self.event is not None and self.reminders else None


def schedule_for(fields: dict[str, SpecValue], now: datetime, min_period: float, zone: str) -> Schedule:
    """The schedule of a spec, refused as the daemon refuses it."""
    kinds = [k for k in ("after", "every", "on_calendar") if k in fields] + (["at"] if "at" in fields and "remind_before" not in fields else [])
    if "remind_before" in fields:
        kinds.append("remind_before")
    if len(kinds) != 1:
        raise E.InvalidArgumentError(_INVALID, f"a notification needs exactly one trigger, got {kinds or 'none'}", "at")
    kind = kinds[0]
    zone_of = str(fields["timezone"]) if fields.get("timezone") else zone
    _zone(zone_of)
    if kind == "at":
        at = _instant("at", fields["at"], now, zone_of)
        if at <= now:
            raise E.InvalidTriggerError("io.github.tocsin.Error.InvalidTrigger",
                                        "field 'at': 'at' is in the past; a past time is never delivered", "at")
        return Schedule(f"at {utc(at)}", once=at)
    if kind == "after":
        s = positive_seconds("after", fields["after"], now)
        return Schedule(f"at {utc(now + timedelta(seconds=s))}", once=now + timedelta(seconds=s))
    if kind == "every":
        p = positive_seconds("every", fields["every"], now)
        if p < min_period:
            raise E.InvalidArgumentError(_INVALID, f"'every' is {p}s, closer than [daemon] min_period ({min_period}s)", "every")
        period = timedelta(seconds=p)
        starting = _instant("starting", fields["starting"], now, zone_of) if "starting" in fields else now + period
        count = fields.get("count")
        until = _instant("until", fields["until"], now, zone_of) if "until" in fields else None
        if until is not None and until < (starting if starting > now else now):
            raise invalid_trigger("every", "field 'every': 'every' never fires: 'until' is before the next firing")
        description = f"every {span(p)} from {utc(starting)}"
        if isinstance(count, int):
            description += ", once" if count == 1 else f", {count} times"
        if until is not None:
            description += f", until {utc(until)}"
        return Schedule(description, period=period, starting=starting,
                        count=int(count) if isinstance(count, int) else None, until=until)
    if kind == "remind_before":
        event = _instant("at", fields["at"], now, zone_of)
        offsets = fields["remind_before"]
        assert isinstance(offsets, list)
        if not offsets:
            raise E.InvalidArgumentError(_INVALID, "'remind_before' must list at least one offset", "remind_before")
        if len(offsets) > 64:
            raise E.InvalidArgumentError(_INVALID, f"'remind_before' has {len(offsets)} offsets; the limit is 64",
                                         "remind_before")
        spans = [_seconds("remind_before", o) for o in offsets]
        # Neighbours (the same offset twice is one reminder) at least min_period apart.
        ordered = sorted(set(spans))
        for a, b in zip(ordered, ordered[1:]):
            if b - a < min_period:
                i, j = spans.index(a) + 1, spans.index(b) + 1
                raise E.InvalidArgumentError(
                    _INVALID, f"offsets {min(i, j)} and {max(i, j)} of 'remind_before' ({offsets[i - 1]} and "
                              f"{offsets[j - 1]}) are {b - a:g}s apart, closer than [daemon] min_period "
                              f"({min_period:g}s)", "remind_before")
        times = sorted({event - timedelta(seconds=s) for s in spans if s <= (event - datetime.min.replace(
            tzinfo=timezone.utc)).total_seconds()})
        future = [t for t in times if t > now]
        if not future:
            raise invalid_trigger("remind_before", "field 'remind_before': every reminder of 'remind_before' is in the past")
        # Each offset once, as the daemon merges equal ones; zero with its unit, as it shows it.
        shown = [span(s) if s else "0s" for s in dict.fromkeys(spans)]
        return Schedule(f"{', '.join(shown)} before {utc(event)}", reminders=future, event=event)
    tz = fields.get("timezone")
    rule = CalendarRule.parse(str(fields["on_calendar"]), str(tz) if tz else zone)
    if rule.next_after(now) is None:
        raise E.InvalidTriggerError("io.github.tocsin.Error.InvalidTrigger", "field 'on_calendar': it never elapses", "on_calendar")
    gap, fold = fields.get("dst_gap"), fields.get("dst_fold")
    return Schedule(normalized(str(fields["on_calendar"]), str(tz) if tz else zone,
                               str(gap) if gap is not None else None, str(fold) if fold is not None else None),
                    calendar=rule)
