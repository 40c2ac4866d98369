"""A blocking facade for scripts: the asyncio center on an event loop in a thread of its own."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Coroutine, Iterable, Iterator
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

from ._center import NotificationCenter, disconnected
from ._events import Event
from ._model import Content, HistoryEntry, PendingNotification, QuietState, Request, Status
from ._stream import EventStream
from ._time import Duration, Instant, snooze_duration
from ._validate import page_size as checked_page_size
from ._validate import text

T = TypeVar("T")


class SyncEventStream:
    """`for event in stream:` blocks for each event; `next(timeout)` raises TimeoutError."""

    def __init__(self, center: SyncNotificationCenter, stream: EventStream) -> None:
        self._center = center
        self._stream = stream
        #: Events taken from the stream on the facade's loop and not yet handed to the caller.
        #: The loop puts each event here, never in a return value alone, so a wait that is
        #: interrupted (Ctrl-C) after the loop took its event loses nothing: the next call has it.
        self._taken: deque[Event] = deque()

    def next(self, timeout: float | None = None) -> Event:
        """The next event; TimeoutError after timeout seconds, StopAsyncIteration once closed.
        A wait interrupted by KeyboardInterrupt is cancelled: the event it waited for stays for
        the next call."""
        if self._taken:
            return self._taken.popleft()
        if self._center._loop.is_closed():
            # The facade is closed, and so is every stream: what they hold, then their end.
            self._taken.extend(self._stream.pending_events())
            if self._taken:
                return self._taken.popleft()
            raise StopAsyncIteration
        self._center._run(self._take(timeout))
        return self._taken.popleft()

    async def _take(self, timeout: float | None) -> None:
        self._taken.append(await self._stream.next(timeout))

    def __iter__(self) -> Iterator[Event]:
        while True:
            try:
                yield self.next()
            except StopAsyncIteration:
                return

    def close(self) -> None:
        """As EventStream.close: iteration ends once the events queued before are taken."""
        if not self._center._loop.is_closed():
            self._center._loop.call_soon_threadsafe(self._stream.close)

    def __enter__(self) -> SyncEventStream:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class SyncNotificationCenter:
    """`with SyncNotificationCenter() as center: center.add(...)`: the methods of
    NotificationCenter, blocking."""

    def __init__(self, address: str | None = None, *, timeout: float = 60.0) -> None:
        self._where = address or os.environ.get("DBUS_SESSION_BUS_ADDRESS") or "the session bus"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tocsin-client", daemon=True)
        self._thread.start()
        try:
            self._center = self._run(NotificationCenter.connect(address, timeout=timeout))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """`coro` run on the facade's loop, its result or exception here. Interrupted while
        waiting (KeyboardInterrupt), it is cancelled, not left running for nobody."""
        if self._loop.is_closed():
            coro.close()
            raise disconnected(self._where, True, "SyncNotificationCenter")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._run(self._center.close())
        self._stop_loop()

    def __enter__(self) -> SyncNotificationCenter:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def center(self) -> NotificationCenter:
        """The asyncio center underneath (its loop runs in this facade's thread)."""
        return self._center

    def add(self, request: Request) -> str:
        """As NotificationCenter.add, blocking: schedules a request; returns its key."""
        return self._run(self._center.add(request))

    def post(self, content: Content, key: str | None = None, *, replace: bool = True) -> str:
        """As NotificationCenter.post, blocking: delivers content now (unless `replace=False` and
        the key is pending); returns its key."""
        return self._run(self._center.post(content, key, replace=replace))

    def iter_pending(self, page_size: int = 1000) -> Iterator[PendingNotification]:
        """As NotificationCenter.iter_pending, blocking: every pending notification, in key order,
        one page at a time."""
        pages = self._center.iter_pending(checked_page_size(page_size)).__aiter__()

        async def step() -> PendingNotification:
            return await pages.__anext__()
        while True:
            try:
                yield self._run(step())
            except StopAsyncIteration:
                return

    def wait_for_daemon(self, timeout: float) -> None:
        """As NotificationCenter.wait_for_daemon, blocking: returns once the daemon is on the bus;
        TimeoutError after `timeout` seconds."""
        self._run(self._center.wait_for_daemon(timeout))

    def pending(self, page_size: int = 1000) -> list[PendingNotification]:
        """As NotificationCenter.pending, blocking: every pending notification, soonest first."""
        return self._run(self._center.pending(page_size))

    def remove(self, keys: str | Iterable[str]) -> list[str]:
        """As NotificationCenter.remove, blocking: cancels these keys; returns those that were pending."""
        return self._run(self._center.remove(keys))

    def remove_all(self) -> int:
        """As NotificationCenter.remove_all, blocking: cancels everything pending; returns how many."""
        return self._run(self._center.remove_all())

    def acknowledge(self, key: str) -> bool:
        """As NotificationCenter.acknowledge, blocking: stops a ringing or snoozed notification; False if it was neither."""
        return self._run(self._center.acknowledge(key))

    def snooze(self, key: str, duration: Duration | None = None, *, duration_: Duration | None = None) -> datetime:
        """As NotificationCenter.snooze, blocking: silences a fired notification until the returned instant
        (`duration_` is the keyword's former spelling in the asyncio center, deprecated)."""
        return self._run(self._center.snooze(key, snooze_duration(duration, duration_)))

    def history(self, key: str | None = None, since: datetime | None = None, limit: int | None = None) -> list[HistoryEntry]:
        """As NotificationCenter.history, blocking: recorded events, newest first."""
        return self._run(self._center.history(key, since, limit))

    def status(self) -> Status:
        """As NotificationCenter.status, blocking: the daemon's version, pid, pending count and backend health."""
        return self._run(self._center.status())

    def quiet_on(self, for_: Duration | None = None, until: Instant | None = None) -> QuietState:
        """As NotificationCenter.quiet_on, blocking: quiet hours on, for a duration or until an instant."""
        return self._run(self._center.quiet_on(for_, until))

    def quiet_off(self) -> QuietState:
        """As NotificationCenter.quiet_off, blocking: quiet hours off; what was held is delivered."""
        return self._run(self._center.quiet_off())

    def quiet_status(self) -> QuietState:
        """As NotificationCenter.quiet_status, blocking: whether it is quiet, why, and until when."""
        return self._run(self._center.quiet_status())

    def reload(self) -> None:
        """As NotificationCenter.reload, blocking: reloads the daemon's config."""
        self._run(self._center.reload())

    def track(self, keys: Iterable[str]) -> None:
        """As NotificationCenter.track, blocking: adds keys the filtered event streams follow."""
        checked = [text("key", k) for k in keys]
        if self._loop.is_closed():
            raise disconnected(self._where, True, "SyncNotificationCenter")
        self._loop.call_soon_threadsafe(self._center.track, checked)

    def events(self, all_keys: bool = False) -> SyncEventStream:
        """As NotificationCenter.events, blocking: a stream of events for this client's keys (all with all_keys)."""
        async def open_stream() -> EventStream:
            return self._center.events(all_keys)
        return SyncEventStream(self, self._run(open_stream()))
