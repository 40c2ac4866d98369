"""Triggers and their wire form; the calendar builder's expressions checked against the daemon's
own calendar (`tocsin next`), and the fake's calendar against the same."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

import tocsin
from daemon import tocsin_binary
from tocsin import After, At, Calendar, RemindBefore, calendar_expression
from tocsin.testing._calendar import CalendarRule

BUILDER_ROWS = [
    ("an hour alone is on the hour", dict(hour=7), "*-*-* 07:00:00"),
    ("hour and minute", dict(hour=6, minute=30), "*-*-* 06:30:00"),
    ("a minute alone is every hour", dict(minute=15), "*-*-* *:15:00"),
    ("a second alone is every minute", dict(second=30), "*-*-* *:*:30"),
    ("nothing is midnight", dict(), "*-*-* 00:00:00"),
    ("weekdays by range", dict(weekday="Mon..Fri", hour=9, minute=25), "Mon..Fri *-*-* 09:25:00"),
    ("weekdays listed", dict(weekday=["Sat", "Sun"], hour=10), "Sat,Sun *-*-* 10:00:00"),
    ("a date", dict(year=2031, month=3, day=14, hour=18), "2031-03-14 18:00:00"),
    ("lists and ranges", dict(month=[1, 7], day=range(1, 8), hour=[8, 20]), "*-01,07-01..07 08,20:00:00"),
]


@pytest.mark.parametrize("row", BUILDER_ROWS, ids=lambda r: r[0])
def test_the_builder_writes_systemd_expressions_the_daemon_reads_as_the_fake_does(row: tuple) -> None:  # type: ignore[type-arg]
    name, components, expected = row
    expression = calendar_expression(**components)
    assert expression == expected, name
    start = datetime(2030, 1, 1, 12, 0, 7, tzinfo=timezone.utc)
    r = subprocess.run([tocsin_binary(), "next", "--json", "--from", f"@{int(start.timestamp())}", "--timezone", "UTC",
                        "--count", "4", expression], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"{name}: {r.stderr}"
    daemon = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in json.loads(r.stdout)["next"]]
    rule = CalendarRule.parse(expression, "UTC")
    fake, t = [], start
    for _ in daemon:
        nxt = rule.next_after(t)
        assert nxt is not None, name
        fake.append(nxt)
        t = nxt
    assert fake == daemon, name


@pytest.mark.parametrize("row", [
    ("an hour out of range", dict(hour=24), "'hour' must be between 0 and 23"),
    ("an empty list", dict(minute=[]), "'minute' must not be empty"),
    ("a range with a step", dict(day=range(1, 10, 2)), "step 1"),
    ("a weekday that is none", dict(weekday="Funday"), "'weekday' has 'Funday'"),
    ("a year before 1970", dict(year=1969), "'year' must be between 1970 and 2199"),
], ids=lambda r: r[0])
def test_the_builder_refuses_what_no_calendar_matches(row: tuple) -> None:  # type: ignore[type-arg]
    name, components, message = row
    with pytest.raises(tocsin.InvalidArgumentError) as info:
        calendar_expression(**components)
    assert message in info.value.message and info.value.field == "on_calendar", name


@pytest.mark.parametrize("row", [
    ("whole seconds", After(90), {"after": "90s"}),
    ("a timedelta", After(timedelta(minutes=15)), {"after": "900s"}),
    ("below a second", After(timedelta(milliseconds=1500)), {"after": "1500000us"}),
    ("a string as is", After("1h 30min"), {"after": "1h 30min"}),
    ("repeating", After(60, repeats=True, count=3), {"every": "60s", "count": 3}),
    ("repeating until", After("1h", repeats=True, until=datetime(2030, 1, 2, tzinfo=timezone.utc)),
     {"every": "1h", "until": "2030-01-02T00:00:00Z"}),
    ("at, in UTC", At(datetime(2030, 1, 1, 18, tzinfo=timezone(timedelta(hours=1)))), {"at": "2030-01-01T17:00:00Z"}),
    ("at, with microseconds", At(datetime(2030, 1, 1, 0, 0, 0, 5, tzinfo=timezone.utc)), {"at": "2030-01-01T00:00:00.000005Z"}),
    ("remind before", RemindBefore("2030-01-01T00:00:00Z", ["24h", timedelta(hours=1), 0]),
     {"at": "2030-01-01T00:00:00Z", "remind_before": ["24h", "3600s", "0s"]}),
    ("a calendar in a zone", Calendar("Mon..Fri 07:30", "Europe/Berlin", dst_gap="shift"),
     {"on_calendar": "Mon..Fri 07:30", "timezone": "Europe/Berlin", "dst_gap": "shift"}),
], ids=lambda r: r[0])
def test_trigger_fields(row: tuple) -> None:  # type: ignore[type-arg]
    name, trigger, fields = row
    assert trigger.fields() == fields, name


@pytest.mark.parametrize("row", [
    ("a negative interval", After(-1), "after", "'after' must not be negative, got -1"),
    ("a negative timedelta", After(timedelta(seconds=-90)), "after", "'after' must not be negative, got datetime.timedelta"),
    ("not a number", After(float("nan")), "after", "'after' must be a finite duration, got nan"),
    ("count without repeats", After(5, count=2), "count", None),
    ("a naive until", After(5, repeats=True, until=datetime(2030, 1, 1)), "until", None),
    ("a single string as offsets", RemindBefore("2030-01-01T00:00:00Z", "1h"), "remind_before", None),
    ("a surrogate in a zone", Calendar("daily", "Europe/\udc00"), "timezone", None),
], ids=lambda r: r[0])
def test_trigger_refusals_name_the_field(row: tuple) -> None:  # type: ignore[type-arg]
    name, trigger, field, message = row
    with pytest.raises(tocsin.InvalidArgumentError) as info:
        trigger.fields()
    assert info.value.field == field, f"{name}: {info.value}"
    assert message is None or info.value.message.startswith(message), f"{name}: {info.value.message}"
