"""An in-memory notification center for an app's tests: the operations and events of the real
one, checked the same way, on a virtual clock that a test moves; every call is recorded."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .. import _errors as E
from .._events import (Acknowledged, ActionInvoked, Cancelled, CancelledAll, Event, Fired, QuietChanged,
                       Snoozed, Unanswered)
from .._model import Content, HistoryEntry, PendingNotification, QuietState, Request, Status, post_fields
from .._stream import EventStream
from .._time import Duration, Instant, aware, duration, duration_seconds, instant, snooze_duration
from .._triggers import SpecValue
from .._validate import history_limit, text
from .._validate import page_size as checked_page_size
from ._calendar import Unsupported
from ._checks import check_fields, invalid, seconds
from ._clock import VirtualClock
from ._schedule import Schedule, _instant, _zone, schedule_for, utc
from ._schedule import span as span_text


#: How long before a firing that asks to wake the machine the daemon's wake alarm goes off.
WAKE_AHEAD = timedelta(seconds=30)


@dataclass(frozen=True)
class Call:
    """One call the app made: the method's name and its arguments."""

    method: str
    args: tuple[Any, ...]


@dataclass
class _Entry:
    key: str
    fields: dict[str, SpecValue]
    schedule: Schedule
    next_fire: datetime | None
    occurrence: int = 0
    state: str = "scheduled"
    rings: int = 0
    last_fire: datetime | None = None
    snoozed_until: datetime | None = None
    due: datetime | None = None
    upcoming: datetime | None = None
    alarm: bool = False
    backends: tuple[str, ...] = ()

    def pending(self) -> PendingNotification:
        """As NotificationCenter.pending, on the virtual clock."""
        return PendingNotification(
            key=self.key, title=str(self.fields.get("title", "")), body=str(self.fields.get("body", "")),
            trigger=self.schedule.description, state=self.state, source="runtime", next_fire=self.next_fire,
            last_fire=self.last_fire, snoozed_until=self.snoozed_until, rings=self.rings if self.alarm and self.rings else None,
            urgency=str(self.fields.get("urgency", "normal")), backends=self.backends,
            user_info=dict(_map(self.fields.get("user_info"))), wake=bool(self.fields.get("wake", False)),
        )


def _positive_seconds(field: str, value: Duration, now: datetime) -> float:
    """A duration argument, refused as the daemon refuses it (InvalidArgs naming the argument,
    in its words): malformed, zero (or less than the microsecond the daemon counts in), or ending
    past the latest instant Tocsin schedules."""
    text_ = duration(field, value)
    # Snooze's own argument, and QuietOn's `for` read as a field of the request.
    prefix = f"argument '{field}': " if field == "duration" else f"field '{field}': "
    try:
        span = duration_seconds(text_)
    except ValueError as e:
        raise invalid(field, f"{prefix}{e}") from None
    if span <= 0:
        column = len(text_) - len(text_.lstrip(" \t")) + 1
        where = f"'{text_}'" if field == "duration" else "the value"
        raise invalid(field, f"{prefix}the interval must be longer than zero (column {column} of {where})")
    seconds(field, text_, now)
    return span


def _quiet_seconds(value: Duration, now: datetime) -> float:
    """QuietOn's `for`, refused as the daemon refuses it: its errors name the argument as
    `field 'for': ` (the engine's, unlike Snooze's `argument 'duration': `), then the column."""
    text_ = duration("for", value)
    try:
        span = duration_seconds(text_)
    except ValueError as e:
        raise invalid("for", f"field 'for': {e}") from None
    if span <= 0:
        raise invalid("for", "field 'for': the interval must be longer than zero (column 1 of the value)")
    seconds("for", text_, now)
    return span


def _map(v: SpecValue | None) -> dict[str, str]:
    return v if isinstance(v, dict) else {}


class FakeNotificationCenter:
    """Stands in for NotificationCenter with no bus. `advance(...)` moves the virtual clock and
    fires what falls due; `fire_next()` jumps to the next firing; `invoke_action(...)` is a person
    pressing a button. Backends are named as in a daemon config: `backends` (default `log` and
    `events`), of which `signal_backends` emit Fired, and `alarm_backends` ring until acknowledged
    every `ring_every`, giving up after `max_rings` with Unanswered."""

    def __init__(self, clock: VirtualClock | None = None, *, backends: Sequence[str] = ("log", "events"),
                 signal_backends: Sequence[str] = ("events",), alarm_backends: Sequence[str] = (),
                 ring_every: Duration = 60, max_rings: int = 10, min_period: Duration = 1,
                 timezone_name: str = "UTC") -> None:
        self.clock = clock or VirtualClock()
        self.calls: list[Call] = []
        self.delivered: list[Fired] = []
        self._backends = tuple(backends)
        self._signal = set(signal_backends)
        self._alarm = tuple(alarm_backends)
        self._ring_every = timedelta(seconds=duration_seconds(ring_every))
        self._max_rings = max_rings
        self._min_period = duration_seconds(min_period)
        _zone(timezone_name)
        self._zone = timezone_name
        self._entries: dict[str, _Entry] = {}
        self._content: dict[str, dict[str, SpecValue]] = {}
        self._history: list[HistoryEntry] = []
        self._keys: set[str] = set()
        self._streams: set[EventStream] = set()
        self._own: set[EventStream] = set()
        self._state: dict[str, QuietState] = {"quiet": QuietState(False, "none", 0)}

    def client(self) -> FakeNotificationCenter:
        """Another app on the same fake daemon (a second connection to the bus): the same
        notifications, clock and events, its own recorded calls, keys and streams."""
        other = object.__new__(FakeNotificationCenter)
        other.__dict__.update(self.__dict__)
        other.calls, other._keys, other._own = [], set(), set()
        return other

    def _record(self, method: str, *args: Any) -> None:
        self.calls.append(Call(method, args))

    def calls_to(self, method: str) -> list[Call]:
        """The recorded calls to one method, in order."""
        return [c for c in self.calls if c.method == method]

    # The center's operations

    async def add(self, request: Request) -> str:
        """As NotificationCenter.add, on the virtual clock."""
        self._record("add", request)
        if not isinstance(request, Request):
            raise E.client_error("request", f"add() takes a Request, got {type(request).__name__}")
        fields = request.fields()
        key = str(fields.setdefault("key", f"py-{uuid.uuid4().hex}"))
        self._check_key(key)
        check_fields(fields)
        backends = self._routing(fields)
        try:
            schedule = schedule_for(fields, self.clock.now(), self._min_period, self._zone)
        except Unsupported as e:
            raise E.InvalidArgumentError("org.freedesktop.DBus.Error.InvalidArgs",
                                         f"invalid 'on_calendar': the fake center cannot read {e}", "on_calendar") from None
        if key in self._entries and fields.get("replace") is False:
            return key
        first = schedule.next_after(self.clock.now(), first=True)
        if key in self._entries:
            self._entries.pop(key)
        self._keys.add(key)
        self._content[key] = fields
        self._entries[key] = _Entry(key, fields, schedule, first, alarm=any(b in self._alarm for b in backends),
                                    backends=backends)
        return key

    async def post(self, content: Content, key: str | None = None, *, replace: bool = True) -> str:
        """As NotificationCenter.post, on the virtual clock. With `replace=False` a pending (or
        ringing) notification of the key is kept and nothing is delivered, after the same checks;
        the key is returned all the same, as the daemon answers it."""
        self._record("post", content, key, replace)
        fields = post_fields(content, key, replace, f"py-{uuid.uuid4().hex}")
        k = str(fields["key"])
        self._check_key(k)
        check_fields(fields)
        backends = self._routing(fields)
        self._keys.add(k)
        if k in self._entries and fields.get("replace") is False:
            return k
        self._content[k] = fields
        self._entries.pop(k, None)
        now = self.clock.now()
        self._deliver(k, fields, backends, due=now, occurrence=1, reason="post-now", before=None)
        if any(b in self._alarm for b in backends):
            # As the daemon: a posted alarm rings until acknowledged (or unanswered), and is
            # pending meanwhile, with its one occurrence "at" the time it was posted.
            self._entries[k] = _Entry(k, fields, Schedule(f"at {utc(now)}", once=now), now + self._ring_every,
                                      occurrence=1, state="ringing", rings=1, last_fire=now, due=now, alarm=True,
                                      backends=backends)
        return k

    async def iter_pending(self, page_size: int = 1000) -> AsyncIterator[PendingNotification]:
        """As NotificationCenter.iter_pending, on the virtual clock: every pending notification, in key order."""
        self._record("iter_pending", page_size)
        checked_page_size(page_size)
        for key in sorted(self._entries):
            if key in self._entries:
                yield self._entries[key].pending()

    async def wait_for_daemon(self, timeout: float) -> None:
        """As NotificationCenter.wait_for_daemon: the fake daemon is always running."""
        self._record("wait_for_daemon", timeout)

    async def pending(self, page_size: int = 1000) -> list[PendingNotification]:
        self._record("pending", page_size)
        checked_page_size(page_size)
        items = [e.pending() for e in self._entries.values()]
        items.sort(key=lambda n: (n.next_fire is not None, n.next_fire or datetime.min.replace(tzinfo=timezone.utc), n.key))
        return items

    async def remove(self, keys: str | Iterable[str]) -> list[str]:
        """As NotificationCenter.remove, on the virtual clock."""
        wanted = [text("key", keys)] if isinstance(keys, str) else [text("key", k) for k in keys]
        self._record("remove", wanted)
        # As the daemon: a key listed twice is cancelled, and returned, once.
        removed = [k for k in dict.fromkeys(wanted) if k in self._entries]
        for k in removed:
            self._cancel(k)
        return removed

    async def remove_all(self) -> int:
        """As NotificationCenter.remove_all, on the virtual clock."""
        self._record("remove_all")
        keys = sorted(self._entries)
        # As the daemon: one Cancelled for each of the first 1,000 keys, then CancelledAll.
        for i, k in enumerate(keys):
            self._cancel(k, signalled=i < 1000)
        self._emit(CancelledAll(len(keys)))
        return len(keys)

    async def acknowledge(self, key: str) -> bool:
        """As NotificationCenter.acknowledge, on the virtual clock."""
        self._record("acknowledge", key)
        text("key", key)
        if key not in self._entries and any(h.key == key for h in self._history):
            return False  # as the daemon: a key its history knows (done, cancelled) has nothing to acknowledge
        e = self._entry(key)
        if e.state not in ("ringing", "snoozed"):
            return False
        self._history_add("acknowledged", key)
        self._emit(Acknowledged(key))
        self._settle(e)
        return True

    async def snooze(self, key: str, duration: Duration | None = None, *, duration_: Duration | None = None) -> datetime:
        """As NotificationCenter.snooze, on the virtual clock."""
        self._record("snooze", key, duration if duration_ is None else duration_)
        duration = snooze_duration(duration, duration_)
        text("key", key)
        span = 300.0 if duration is None else _positive_seconds("duration", duration, self.clock.now())
        if duration is not None and span < self._min_period:
            # As the daemon: a snooze delivers again when it ends, so it may be no shorter than
            # a trigger's period; checked before the key is looked up.
            raise invalid("duration", f"argument 'duration': {span_text(span)} is below [daemon] min_period "
                                      f"({span_text(self._min_period)}); a notification may fire at most once per min_period")
        if key not in self._entries:
            self._gone(key)
        e = self._entry(key)
        if e.occurrence == 0:
            raise E.InvalidArgumentError("org.freedesktop.DBus.Error.InvalidArgs",
                                         f"argument 'key': notification '{key}' has not fired yet; there is nothing to snooze", "key")
        until = self.clock.now() + timedelta(seconds=span)
        e.state, e.snoozed_until, e.next_fire, e.rings = "snoozed", until, until, 0
        self._history_add("snoozed", key, until=until)
        self._emit(Snoozed(key, until))
        return until

    async def history(self, key: str | None = None, since: datetime | None = None, limit: int | None = None) -> list[HistoryEntry]:
        """As NotificationCenter.history, on the virtual clock."""
        self._record("history", key, since, limit)
        if since is not None:
            aware("since", since)
        if limit is not None:
            history_limit(limit)
        out = [h for h in reversed(self._history) if (key is None or h.key == key) and (since is None or h.time >= since)]
        return out[: (limit or 100)]

    async def status(self) -> Status:
        """As NotificationCenter.status, on the virtual clock."""
        self._record("status")
        now = self.clock.now()
        nxt = min((e for e in self._entries.values() if e.next_fire), key=lambda e: e.next_fire or now, default=None)
        # A machine that can always wake: the daemon with CAP_WAKE_ALARM, arming the alarm 30 s
        # before the earliest firing that asks to wake it, until those 30 s begin.
        wake = min((e for e in self._entries.values() if e.next_fire and e.fields.get("wake")),
                   key=lambda e: e.next_fire or now, default=None)
        wake_next = wake.next_fire if wake else None
        armed = wake_next - WAKE_AHEAD if wake_next is not None and now < wake_next - WAKE_AHEAD else None
        return Status(version="fake", pid=0, pending=len(self._entries),
                      backends={b: "ok" for b in (*self._backends, *self._alarm)},
                      next_key=nxt.key if nxt else None, next_fire=nxt.next_fire if nxt else None,
                      wake="available", wake_next_key=wake.key if wake else None, wake_next=wake_next,
                      wake_armed=armed, sleep="off: a fake center does not watch logind")

    async def quiet_on(self, for_: Duration | None = None, until: Instant | None = None) -> QuietState:
        """As NotificationCenter.quiet_on, on the virtual clock."""
        self._record("quiet_on", for_, until)
        now = self.clock.now()
        end: datetime | None = None
        if for_ is not None and until is not None:
            raise invalid("for", "field 'for': give 'for' or 'until', not both")
        if for_ is not None:
            end = now + timedelta(seconds=_quiet_seconds(for_, now))
        elif until is not None:
            written = instant("until", until)
            end = until if isinstance(until, datetime) else _instant("until", written, now, self._zone)
            if end <= now and written[2:3] == ":" and written[:2].isdigit():
                end = _instant("until", written, now + timedelta(days=1), self._zone)  # a time of day: the next one
            if end <= now:
                raise invalid("until", f"field 'until': {_rfc3339(end, self._zone)} is not in the future")
        return self._set_quiet(QuietState(True, "manual", 0, end))

    async def quiet_off(self) -> QuietState:
        """As NotificationCenter.quiet_off, on the virtual clock."""
        self._record("quiet_off")
        return self._set_quiet(QuietState(False, "none", 0))

    async def quiet_status(self) -> QuietState:
        """As NotificationCenter.quiet_status, on the virtual clock."""
        self._record("quiet_status")
        return self._state["quiet"]

    async def reload(self) -> None:
        """As NotificationCenter.reload, on the virtual clock."""
        self._record("reload")

    def track(self, keys: Iterable[str]) -> None:
        """As NotificationCenter.track, on the virtual clock."""
        self._keys.update(text("key", k) for k in keys)

    def events(self, all_keys: bool = False) -> EventStream:
        """As NotificationCenter.events, on the virtual clock."""
        stream = EventStream(lambda k: k in self._keys, all_keys, self._forget)
        self._streams.add(stream)
        self._own.add(stream)
        return stream

    def _forget(self, stream: EventStream) -> None:
        self._streams.discard(stream)
        self._own.discard(stream)

    async def close(self) -> None:
        """As NotificationCenter.close, on the virtual clock."""
        for s in list(self._own):
            s.end()
            self._forget(s)

    async def __aenter__(self) -> FakeNotificationCenter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # What a test does to the world

    def advance(self, by: Duration) -> list[Event]:
        """Moves the clock forward by `by`, firing (and ringing) everything due meanwhile, in order."""
        return self.advance_to(self.clock.now() + VirtualClock.span(by))

    def advance_to(self, when: datetime) -> list[Event]:
        """Moves the clock to `when`, firing everything due up to it, in order; returns the events."""
        emitted: list[Event] = []
        while True:
            due = [e for e in self._entries.values() if e.next_fire is not None and e.next_fire <= when]
            if not due:
                break
            e = min(due, key=lambda x: (x.next_fire or when, x.key))
            assert e.next_fire is not None
            self.clock.set(max(e.next_fire, self.clock.now()))
            emitted += self._due(e)
        self.clock.set(when)
        if self._state["quiet"].until is not None and self._state["quiet"].until <= when:
            self._set_quiet(QuietState(False, "none", 0))
            emitted.append(QuietChanged(False, "none", 0, None))
        return emitted

    def fire_next(self) -> list[Event]:
        """Moves the clock to the next firing or ring and handles it; [] when nothing is scheduled."""
        times = [e.next_fire for e in self._entries.values() if e.next_fire is not None]
        return self.advance_to(min(times)) if times else []

    def invoke_action(self, key: str, action: str) -> ActionInvoked:
        """A person pressed the button `action` (or clicked: `default`) of `key`'s notification."""
        if key not in self._content:
            raise E.NotFoundError("io.github.tocsin.Error.NotFound", f"no notification with key '{key}'", "key")
        event = ActionInvoked(key, action, dict(_map(self._content[key].get("user_info"))))
        self._emit(event)
        return event

    # Machinery

    def _check_key(self, key: str) -> None:
        if not key or len(key.encode()) > 255:
            raise E.InvalidArgumentError("org.freedesktop.DBus.Error.InvalidArgs", "'key' must be 1 to 255 bytes", "key")
        if any(c.isspace() or not c.isprintable() for c in key):
            raise E.InvalidArgumentError("org.freedesktop.DBus.Error.InvalidArgs",
                                         "'key' must not contain spaces or control characters", "key")

    def _routing(self, fields: dict[str, SpecValue]) -> tuple[str, ...]:
        names = fields.get("backends")
        if not isinstance(names, list):
            return self._backends
        configured = (*self._backends, *self._alarm)
        for n in names:
            if n not in configured:
                raise E.UnknownBackendError("io.github.tocsin.Error.UnknownBackend",
                                            f"unknown backend '{n}' (configured: {', '.join(configured)})", "backends")
        return tuple(names)

    def _entry(self, key: str) -> _Entry:
        e = self._entries.get(key)
        if e is None:
            raise E.NotFoundError("io.github.tocsin.Error.NotFound", f"no notification with key '{key}'", "key")
        return e

    def _gone(self, key: str) -> None:
        """A snooze of a key no longer held, answered as the daemon does: what its history says
        became of it (the person snoozing a reminder that just popped up learns it is done)."""
        last = next((h for h in reversed(self._history) if h.key == key), None)
        if last is None:
            return
        when = _rfc3339(last.time, self._zone)
        what = {"cancelled": f"was cancelled at {when}",
                "acknowledged": f"was acknowledged at {when} and is done",
                "unanswered": f"rang unanswered until {when} and is done",
                "missed": f"was missed at {when} (the daemon was not running) and is done"}.get(
                    last.event, f"fired at {when} and is done")
        shown = key if len(key) <= 64 else key[:64] + "…"  # the daemon caps what it echoes
        raise E.NotFoundError("io.github.tocsin.Error.NotFound",
                              f"notification '{shown}' {what}: only a pending or ringing one can be snoozed; "
                              "to be reminded again, schedule it again", "key")

    def _emit(self, event: Event) -> None:
        for s in list(self._streams):
            s.offer(event)

    def _history_add(self, event: str, key: str, **extra: Any) -> None:
        fields = self._content.get(key, {})
        backends = self._entries[key].backends if key in self._entries else ()
        self._history.append(HistoryEntry(time=self.clock.now(), event=event, key=key,
                                          title=str(fields.get("title", "")), backends=backends, **extra))

    def _cancel(self, key: str, signalled: bool = True) -> None:
        self._history_add("cancelled", key)
        self._entries.pop(key)
        if signalled:
            self._emit(Cancelled(key))

    def _set_quiet(self, state: QuietState) -> QuietState:
        if state.active != self._state["quiet"].active:
            self._emit(QuietChanged(state.active, state.source, state.held, state.until))
        self._state["quiet"] = state
        return state

    def _deliver(self, key: str, fields: dict[str, SpecValue], backends: tuple[str, ...], due: datetime,
                 occurrence: int, reason: str, before: timedelta | None) -> Fired:
        now = self.clock.now()
        fired = Fired(key=key, title=str(fields.get("title", "")), body=str(fields.get("body", "")), due=due,
                      fired=now, occurrence=occurrence, late=(now - due).total_seconds() > 2, reason=reason,
                      urgency=str(fields.get("urgency", "normal")), user_info=dict(_map(fields.get("user_info"))),
                      backends=backends, before=before)
        self.delivered.append(fired)
        self._history.append(HistoryEntry(time=now, event="fired", key=key, title=fired.title, backends=backends,
                                          due=due, occurrence=occurrence, late=fired.late))
        if self._signal.intersection(backends):
            self._emit(fired)
        return fired

    def _due(self, e: _Entry) -> list[Event]:
        now = self.clock.now()
        if e.state == "ringing":
            if e.rings >= self._max_rings:
                e.state, e.next_fire = "unanswered", e.upcoming
                self._history_add("unanswered", e.key, count=e.rings)
                event = Unanswered(e.key, e.rings)
                self._emit(event)
                if e.upcoming is None:
                    e.next_fire = None
                return [event]
            e.rings += 1
            e.next_fire = now + self._ring_every
            return []
        reason = "snooze-ended" if e.state == "snoozed" else "scheduled"
        if e.state != "snoozed":
            e.occurrence += 1
            e.due = e.next_fire
            e.upcoming = e.schedule.next_after(e.next_fire or now, first=False)
        e.last_fire, e.snoozed_until = now, None
        fired = self._deliver(e.key, e.fields, e.backends, due=e.due or now, occurrence=e.occurrence,
                              reason=reason, before=e.schedule.before(e.due or now))
        if e.alarm:
            e.state, e.rings, e.next_fire = "ringing", 1, now + self._ring_every
        else:
            self._settle(e)
        return [fired]

    def _settle(self, e: _Entry) -> None:
        """After a firing or an acknowledge: on to the next occurrence, or gone."""
        if e.upcoming is None:
            self._entries.pop(e.key, None)
        else:
            e.state, e.next_fire, e.rings, e.snoozed_until = "scheduled", e.upcoming, 0, None


def _rfc3339(t: datetime, zone: str) -> str:
    """As the daemon writes an instant in its messages: the zone's offset, `Z` for UTC, and a
    fraction only when there is one, without trailing zeros."""
    local = t.astimezone(_zone(zone))
    out = local.strftime("%Y-%m-%dT%H:%M:%S")
    if local.microsecond:
        out += "." + f"{local.microsecond:06d}".rstrip("0")
    delta = local.utcoffset()
    offset = int(delta.total_seconds()) if delta is not None else 0
    if offset == 0:
        return out + "Z"
    sign, a = ("-" if offset < 0 else "+"), abs(offset)
    return f"{out}{sign}{a // 3600:02d}:{a // 60 % 60:02d}"
