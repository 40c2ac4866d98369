"""The event stream both centers hand out: an async iterator over one queue per stream, filtered to
the keys its center scheduled unless it was opened for all keys."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

from ._events import CancelledAll, Event, QuietChanged

_END = object()
T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float | None, what: str) -> T:
    """`asyncio.wait_for`, raising the builtin TimeoutError the API promises: before Python 3.11
    `asyncio.wait_for` raises `asyncio.TimeoutError`, which `except TimeoutError` does not catch."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"{what} within {timeout} s") from None


class EventStream:
    """`async for event in center.events(): ...`. Events are queued from the moment the stream is
    opened, so open it before scheduling. `next(timeout)` waits for one with a deadline."""

    def __init__(self, wants_key: Callable[[str], bool], all_keys: bool, on_close: Callable[[EventStream], None]) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._wants_key = wants_key
        self.all_keys = all_keys
        self._on_close = on_close
        self._closed = False

    def offer(self, event: Event) -> None:
        """Queues `event` if this stream wants it (called by the center for every event)."""
        if self._closed:
            return
        if self.all_keys or isinstance(event, CancelledAll) or (not isinstance(event, QuietChanged) and self._wants_key(event.key)):
            self._queue.put_nowait(event)

    def end(self) -> None:
        """Ends iteration after what is queued (the center closed)."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_END)

    def close(self) -> None:
        """Stops the stream: iteration ends once the events queued before are taken."""
        self.end()
        self._on_close(self)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            raise StopAsyncIteration
        return item  # type: ignore[return-value]

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; TimeoutError after `timeout` seconds, StopAsyncIteration once closed.
        An event already queued is returned even with a timeout of 0."""
        if not self._queue.empty():
            return await self.__anext__()
        return await within(self.__anext__(), timeout, "no event")

    def pending_events(self) -> list[Event]:
        """The events queued and not yet taken, without waiting (they stay taken)."""
        out: list[Event] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is _END:
                self._queue.put_nowait(_END)
                break
            out.append(item)  # type: ignore[arg-type]
        return out

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
