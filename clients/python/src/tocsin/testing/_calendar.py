"""Next elapse of the calendar expressions `Calendar.every` writes (weekdays, `Y-M-D`, `H:M:S`
with values, lists, ranges and `*`), and of `H:M` forms, for the fake center. The real daemon
implements all of systemd.time(7); an expression outside this subset is refused by the fake."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo

from ._checks import invalid, zone

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class Unsupported(ValueError):
    pass


def _values(part: str, lo: int, hi: int) -> list[int] | None:
    if part == "*":
        return None
    out: set[int] = set()
    for item in part.split(","):
        m = re.fullmatch(r"(\d+)(?:\.\.(\d+))?", item)
        if not m:
            raise Unsupported(f"'{item}'")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        if not (lo <= a <= hi and lo <= b <= hi and a <= b):
            raise Unsupported(f"'{item}' out of range {lo}..{hi}")
        out.update(range(a, b + 1))
    return sorted(out)


def _weekdays(part: str) -> set[int]:
    out: set[int] = set()
    for item in part.split(","):
        ends = [e[:3].lower() for e in item.split("..")]
        if not all(e in _DAYS for e in ends) or len(ends) > 2:
            raise Unsupported(f"weekday '{item}'")
        a, b = _DAYS.index(ends[0]), _DAYS.index(ends[-1])
        if a > b:
            # As the daemon (and systemd): a range does not wrap around the week.
            raise invalid("on_calendar", f"invalid 'on_calendar': weekday range runs backwards ('{item}')")
        out.update(range(a, b + 1))
    return out


@dataclass(frozen=True)
class CalendarRule:
    weekdays: set[int] | None
    years: list[int] | None
    months: list[int] | None
    days: list[int] | None
    times: list[time]
    zone: tzinfo

    @classmethod
    def parse(cls, expression: str, zone_name: str | None) -> CalendarRule:
        words = expression.split()
        weekdays = None
        if words and re.match(r"[A-Za-z]", words[0]):
            weekdays = _weekdays(words.pop(0))
        years = months = days = None
        if words and "-" in words[0]:
            y, mo, d = (words.pop(0).split("-") + ["", ""])[:3]
            years, months, days = _values(y, 1970, 2199), _values(mo, 1, 12), _values(d, 1, 31)
        if len(words) != 1 or ":" not in words[0]:
            raise Unsupported(f"'{expression}' (the fake reads '[weekdays] [Y-M-D] H:M[:S]')")
        hms = words[0].split(":") + ["00"]
        hours, minutes, seconds = _values(hms[0], 0, 23), _values(hms[1], 0, 59), _values(hms[2], 0, 59)
        times = [time(h, m, s) for h, m, s in itertools.product(
            hours if hours is not None else range(24), minutes if minutes is not None else range(60),
            seconds if seconds is not None else range(60))]
        return cls(weekdays, years, months, days, sorted(times), zone(zone_name or "UTC"))

    def _day_matches(self, d: date) -> bool:
        return ((self.weekdays is None or d.weekday() in self.weekdays)
                and (self.years is None or d.year in self.years)
                and (self.months is None or d.month in self.months)
                and (self.days is None or d.day in self.days))

    def next_after(self, t: datetime) -> datetime | None:
        local = t.astimezone(self.zone)
        day = local.date()
        for _ in range(366 * 10):
            if self._day_matches(day):
                for tm in self.times:
                    candidate = datetime.combine(day, tm, self.zone)
                    if candidate > local:
                        return candidate.astimezone(timezone.utc)
            day += timedelta(days=1)
        return None


def _normalized_values(part: str, width: int) -> str:
    """A component as the daemon (and systemd) writes it back: values and ranges zero-padded,
    sorted by their start, each once."""
    if part == "*":
        return "*"
    items: set[tuple[int, int | None]] = set()
    for item in part.split(","):
        a, _, b = item.partition("..")
        items.add((int(a), int(b) if b else None))
    return ",".join(f"{a:0{width}d}" + (f"..{b:0{width}d}" if b is not None else "")
                    for a, b in sorted(items, key=lambda i: (i[0], -1 if i[1] is None else i[1])))


def _normalized_weekdays(days: set[int]) -> str:
    """systemd's rendering: a run of three days or more as `Mon..Wed`, shorter ones listed."""
    if len(days) == 7:
        return ""
    names = [d.capitalize() for d in _DAYS]
    runs: list[str] = []
    day = 0
    while day < 7:
        if day not in days:
            day += 1
            continue
        end = day
        while end + 1 in days:
            end += 1
        runs.append(names[day] if end == day else f"{names[day]}{'..' if end > day + 1 else ','}{names[end]}")
        day = end + 1
    return ",".join(runs)


def normalized(expression: str, zone_name: str, dst_gap: str | None = None, dst_fold: str | None = None) -> str:
    """The expression as the daemon's `pending()` describes it: systemd's normalized form, the
    zone named, and the DST policies that differ from systemd's (`*-*-* 07:00:00 UTC`)."""
    words = expression.split()
    out = []
    if words and re.match(r"[A-Za-z]", words[0]):
        weekdays = _normalized_weekdays(_weekdays(words.pop(0)))
        if weekdays:
            out.append(weekdays)
    date_part = words.pop(0) if len(words) > 1 else "*-*-*"
    y, mo, d = (date_part.split("-") + ["*", "*"])[:3]
    out.append(f"{_normalized_values(y, 4)}-{_normalized_values(mo, 2)}-{_normalized_values(d, 2)}")
    hms = (words[0].split(":") + ["00"])[:3]
    out.append(":".join(_normalized_values(v, 2) for v in hms))
    text = f"{' '.join(out)} {zone_name}"
    if dst_gap not in (None, "skip"):
        text += f", dst_gap={dst_gap}"
    if dst_fold not in (None, "first"):
        text += f", dst_fold={dst_fold}"
    return text

