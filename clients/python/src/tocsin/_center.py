"""The asyncio client of the daemon's `io.github.tocsin.Gateway1` on dbus-fast."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from dbus_fast import BusType, InvalidAddressError, Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from ._errors import DaemonNotRunningError, TocsinError, client_error, from_dbus
from ._events import Event, from_signal, unwrap
from ._model import Content, HistoryEntry, PendingNotification, QuietState, Request, Status, post_fields
from ._stream import EventStream, within
from ._time import Duration, Instant, aware, from_usec, instant, snooze_duration, to_usec
from ._time import duration as duration_text
from ._triggers import SpecValue
from ._validate import history_limit, text
from ._validate import page_size as checked_page_size

BUS_NAME = "io.github.tocsin.Gateway"
OBJECT_PATH = "/io/github/tocsin/Gateway"
INTERFACE = "io.github.tocsin.Gateway1"
#: Signals from whoever owns the gateway's name now: the bus resolves a well-known sender for
#: each signal, so the rule keeps matching a restarted daemon and never needs to be renewed.
MATCH_RULE = f"type='signal',sender='{BUS_NAME}',interface='{INTERFACE}',path='{OBJECT_PATH}'"
OWNER_RULE = (f"type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
              f"member='NameOwnerChanged',arg0='{BUS_NAME}'")


def variant(field: str, value: SpecValue) -> Variant:
    if isinstance(value, bool):
        return Variant("b", value)
    if isinstance(value, int):
        return Variant("x", value)
    if isinstance(value, str):
        return Variant("s", value)
    if isinstance(value, list):
        return Variant("as", value)
    if isinstance(value, dict):
        return Variant("a{ss}", value)
    raise client_error(field, f"'{field}' has a value of type {type(value).__name__}")


def spec(fields: dict[str, SpecValue]) -> dict[str, Variant]:
    return {k: variant(k, v) for k, v in fields.items()}


DISCONNECTED = "org.freedesktop.DBus.Error.Disconnected"
NO_SERVER = "org.freedesktop.DBus.Error.NoServer"


def disconnected(where: str, closed: bool, what: str) -> TocsinError:
    """The error of a call (or a facade) whose connection is gone: closed by the app, or lost."""
    how = "was closed (close() was called)" if closed else "was lost (the bus stopped or dropped it)"
    return TocsinError(DISCONNECTED, f"{what}: the connection to the bus at {where} {how}")


def _bus(address: str | None, where: str) -> MessageBus:
    """The (not yet connected) bus for `address`; an address dbus-fast cannot read is refused."""
    try:
        return MessageBus(bus_address=text("address", address)) if address else MessageBus(bus_type=BusType.SESSION)
    except InvalidAddressError as e:
        if address:
            raise client_error("address", f"'address' {address!r} is not a D-Bus address: {e}") from e
        raise TocsinError("org.freedesktop.DBus.Error.BadAddress", f"no session bus to connect to at {where}: {e}") from e


class NotificationCenter:
    """The daemon as an app's notification center. `await NotificationCenter.connect()` (the
    session bus, or a bus address), then `add`, `pending`, `remove`, `events()` ...; `close()` or
    `async with` when done. Every string is checked before it is sent; a refusal raises a
    TocsinError carrying the daemon's error name, the field and its message."""

    def __init__(self, bus: MessageBus, timeout: float, where: str = "the session bus") -> None:
        self._bus = bus
        self.timeout = timeout
        #: The bus as the errors name it: its address.
        self.where = where
        self._closed = False
        self._keys: set[str] = set()
        self._streams: set[EventStream] = set()
        #: The gateway's current unique name ("" while it is not on the bus).
        self.daemon_owner = ""
        self._owner_changed = asyncio.Event()
        self._watch: asyncio.Future[None] | None = None

    @classmethod
    async def connect(cls, address: str | None = None, *, timeout: float = 60.0) -> NotificationCenter:
        """Connects to the session bus (or `address`) and subscribes to the gateway's signals. The
        daemon need not be running: its signals arrive once it starts. A bus that is not there,
        refuses the connection, or accepts it and never answers (given up after `timeout` seconds)
        raises a `TocsinError` naming its address; an address that is not one raises
        `InvalidArgumentError` for the field `address`."""
        where = address or os.environ.get("DBUS_SESSION_BUS_ADDRESS") or "the session bus"
        bus = _bus(address, where)

        async def handshake() -> NotificationCenter:
            await bus.connect()
            center = cls(bus, timeout, where)
            bus.add_message_handler(center._on_message)
            for rule in (MATCH_RULE, OWNER_RULE):
                await center._bus_call("AddMatch", "s", [rule])
            owner = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                           interface="org.freedesktop.DBus", member="GetNameOwner",
                                           signature="s", body=[BUS_NAME]))
            if owner is not None and owner.message_type == MessageType.METHOD_RETURN:
                center.daemon_owner = owner.body[0]
            return center

        # dbus-fast's connect waits for authentication and Hello without a deadline of its own.
        try:
            center = await asyncio.wait_for(handshake(), timeout)
        except asyncio.TimeoutError:
            bus.disconnect()
            raise TocsinError("org.freedesktop.DBus.Error.Timeout",
                              f"the bus at {where} accepted the connection but did not answer within {timeout} s "
                              "(it is stopped, wedged, or not a D-Bus bus)") from None
        except TocsinError:
            bus.disconnect()
            raise
        except Exception as e:
            # No socket there, nobody listening, authentication refused, the bus hanging up: the
            # app learns which bus, in the package's own error.
            bus.disconnect()
            raise TocsinError(NO_SERVER, f"cannot connect to the bus at {where}: {str(e) or type(e).__name__}") from e
        except BaseException:
            bus.disconnect()
            raise
        center._watch = asyncio.ensure_future(center._end_streams_on_disconnect())
        return center

    async def _end_streams_on_disconnect(self) -> None:
        """A lost bus (not a restarted daemon: that is only a new owner of the name) ends every
        stream, so an app iterating events learns of it instead of waiting forever."""
        try:
            await self._bus.wait_for_disconnect()  # type: ignore[no-untyped-call]
        except Exception:
            pass
        for s in list(self._streams):
            s.end()

    async def close(self) -> None:
        """Ends every stream and lets go of the connection. A call made after raises a
        `TocsinError` (`org.freedesktop.DBus.Error.Disconnected`); a stream opened after is ended."""
        self._closed = True
        self._bus.disconnect()
        if self._watch is not None:
            await self._watch
        self._streams.clear()

    async def __aenter__(self) -> NotificationCenter:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    # Calls

    async def _send(self, member: str, msg: Message) -> Message | None:
        """`msg` sent and its reply. A connection closed or lost, before or while it is sent, is a
        TocsinError naming the bus: dbus-fast would raise OSError (EBADF, EPIPE) or, in older
        versions, wait for a reply that never comes."""
        if not self._bus.connected:
            raise disconnected(self.where, self._closed, member)
        try:
            return await self._bus.call(msg)
        except Exception as e:
            if not self._bus.connected:
                raise disconnected(self.where, self._closed, member) from e
            raise

    async def _bus_call(self, member: str, signature: str, body: list[Any]) -> list[Any]:
        reply = await self._send(member, Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                                 interface="org.freedesktop.DBus", member=member,
                                                 signature=signature, body=body))
        if reply is None:
            raise TocsinError("org.freedesktop.DBus.Error.NoReply", f"{member}: no reply from the bus")
        if reply.message_type == MessageType.ERROR:
            raise TocsinError(reply.error_name or "", str(reply.body[0]) if reply.body else "")
        return list(reply.body)

    async def _call(self, member: str, signature: str = "", body: Sequence[Any] = ()) -> list[Any]:
        msg = Message(destination=BUS_NAME, path=OBJECT_PATH, interface=INTERFACE, member=member,
                      signature=signature, body=list(body))
        try:
            reply = await asyncio.wait_for(self._send(member, msg), self.timeout)
        except asyncio.TimeoutError:
            raise TocsinError("org.freedesktop.DBus.Error.NoReply",
                              f"{member}: no reply from the daemon within {self.timeout} s") from None
        if reply is None:
            raise TocsinError("org.freedesktop.DBus.Error.NoReply", f"{member}: no reply")
        if reply.message_type == MessageType.ERROR:
            message = str(reply.body[0]) if reply.body else ""
            error = from_dbus(reply.error_name or "", message)
            # Nobody owns the name: say so plainly. A daemon that answers it is stopping keeps its
            # own class and words.
            if type(error) is DaemonNotRunningError:
                error = DaemonNotRunningError(error.name, f"the Tocsin daemon is not running ({message})")
            raise error
        return list(reply.body)

    async def add(self, request: Request) -> str:
        """Schedules `request` (replacing a pending one with its key unless `replace=False`) and
        returns its key. Without a key the client makes one, so its events are known to be ours
        even when they arrive before the reply."""
        if not isinstance(request, Request):
            raise client_error("request", f"add() takes a Request, got {type(request).__name__}")
        fields = request.fields()
        key = str(fields.setdefault("key", f"py-{uuid.uuid4().hex}"))
        return await self._keyed("Schedule", key, fields)

    async def post(self, content: Content, key: str | None = None, *, replace: bool = True) -> str:
        """Delivers `content` now; returns its key. A pending notification with the key is
        replaced, unless `replace=False`: then it is kept, nothing is posted, and its key is
        returned all the same (as `add` keeps one)."""
        fields = post_fields(content, key, replace, f"py-{uuid.uuid4().hex}")
        return await self._keyed("PostNow", str(fields["key"]), fields)

    async def _keyed(self, member: str, key: str, fields: dict[str, SpecValue]) -> str:
        known = key in self._keys
        self._keys.add(key)
        try:
            body = await self._call(member, "a{sv}", [spec(fields)])
        except BaseException:
            if not known:
                self._keys.discard(key)
            raise
        return str(body[0])

    def track(self, keys: Iterable[str]) -> None:
        """Adds keys to the ones this client's filtered event streams follow (keys scheduled by an
        earlier run of the app, or by its config file)."""
        self._keys.update(text("key", k) for k in keys)

    async def iter_pending(self, page_size: int = 1000) -> AsyncIterator[PendingNotification]:
        """Every pending notification, in key order, one `ListPage` at a time (at most 10000)."""
        size = checked_page_size(page_size)
        after = ""
        while True:
            notifications, after = await self._call("ListPage", "su", [after, size])
            for d in notifications:
                yield PendingNotification.from_wire(unwrap(d))
            if not after:
                return

    async def pending(self, page_size: int = 1000) -> list[PendingNotification]:
        """Every pending notification, soonest first (ringing ones, with no next firing, first)."""
        items = [n async for n in self.iter_pending(page_size)]
        items.sort(key=lambda n: (n.next_fire is not None, n.next_fire or datetime.min, n.key))
        return items

    async def remove(self, keys: str | Iterable[str]) -> list[str]:
        """Cancels these notifications; returns the keys that were pending."""
        wanted = [text("key", keys)] if isinstance(keys, str) else [text("key", k) for k in keys]
        existed = await asyncio.gather(*(self._call("Cancel", "s", [k]) for k in wanted))
        return [k for k, e in zip(wanted, existed) if e[0]]

    async def remove_all(self) -> int:
        """Cancels every pending notification (on this machine); returns how many there were."""
        return int((await self._call("CancelAll"))[0])

    async def acknowledge(self, key: str) -> bool:
        """Stops a ringing or snoozed notification; False if it was neither."""
        return bool((await self._call("Acknowledge", "s", [text("key", key)]))[0])

    async def snooze(self, key: str, duration: Duration | None = None, *, duration_: Duration | None = None) -> datetime:
        """Silences it and delivers it again after `duration` (default: the daemon's 5 min).
        `duration_` is the keyword's former spelling, deprecated."""
        duration = snooze_duration(duration, duration_)
        d = "" if duration is None else duration_text("duration", duration)
        return from_usec(int((await self._call("Snooze", "ss", [text("key", key), d]))[0]))

    async def history(self, key: str | None = None, since: datetime | None = None, limit: int | None = None) -> list[HistoryEntry]:
        """Recorded events, newest first."""
        f: dict[str, Variant] = {}
        if key is not None:
            f["key"] = Variant("s", text("key", key))
        if since is not None:
            f["since"] = Variant("x", to_usec(aware("since", since)))
        if limit is not None:
            f["limit"] = Variant("u", history_limit(limit))
        events = (await self._call("History", "a{sv}", [f]))[0]
        return [HistoryEntry.from_wire(unwrap(d)) for d in events]

    async def status(self) -> Status:
        """The daemon's version, pid, pending count and backend health."""
        return Status.from_wire(unwrap((await self._call("Status"))[0]))

    async def quiet_on(self, for_: Duration | None = None, until: Instant | None = None) -> QuietState:
        """Quiet hours on now: for a duration, or until an instant (or `07:00`); neither: until off."""
        f = "" if for_ is None else duration_text("for", for_)
        u = "" if until is None else instant("until", until)
        return QuietState.from_wire(unwrap((await self._call("QuietOn", "ss", [f, u]))[0]))

    async def quiet_off(self) -> QuietState:
        """Quiet hours off; what was held is delivered."""
        return QuietState.from_wire(unwrap((await self._call("QuietOff"))[0]))

    async def quiet_status(self) -> QuietState:
        """Whether it is quiet, why, and until when."""
        return QuietState.from_wire(unwrap((await self._call("QuietStatus"))[0]))

    async def reload(self) -> None:
        """Reloads the daemon's config; InvalidConfigError lists its mistakes."""
        await self._call("Reload")

    # Events

    def events(self, all_keys: bool = False) -> EventStream:
        """A stream of the daemon's events for the keys this client scheduled or tracks (all keys,
        and QuietChanged, with `all_keys`). It survives a restart of the daemon; it is ended
        already when the connection is closed or lost, as every stream is then."""
        stream = EventStream(lambda k: k in self._keys, all_keys, self._streams.discard)
        if self._bus.connected:
            self._streams.add(stream)
        else:
            stream.end()
        return stream

    async def wait_for_daemon(self, timeout: float) -> None:
        """Returns once the gateway's name has an owner; TimeoutError after `timeout` seconds."""
        async def owned() -> None:
            while not self.daemon_owner:
                self._owner_changed.clear()
                await self._owner_changed.wait()
        await within(owned(), timeout, f"no daemon owned {BUS_NAME}")

    def _on_message(self, msg: Message) -> None:
        if msg.message_type != MessageType.SIGNAL:
            return
        if msg.member == "NameOwnerChanged" and msg.interface == "org.freedesktop.DBus":
            # Only the bus itself says who owns a name: another connection can address a signal
            # to this one whatever the match rules say.
            if msg.sender == "org.freedesktop.DBus" and msg.body and msg.body[0] == BUS_NAME:
                self.daemon_owner = str(msg.body[2])
                self._owner_changed.set()
            return
        if msg.interface != INTERFACE or msg.path != OBJECT_PATH:
            return
        # A unicast signal reaches this connection whatever its match rules say; the bus sets the
        # sender to the unique name of the connection that sent it, so only the gateway's current
        # owner is believed (as DBUS-API.md asks of backend signals).
        if not self.daemon_owner or msg.sender != self.daemon_owner:
            return
        try:
            event = from_signal(msg.member or "", list(msg.body))
        except (IndexError, TypeError, ValueError, AttributeError):
            event = None  # a signal of another shape (a newer daemon's) is not ours to guess at
        if event is None:
            return
        for s in list(self._streams):
            s.offer(event)


