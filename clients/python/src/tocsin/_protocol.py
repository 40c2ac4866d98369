"""What an app codes against, so the real center and the fake are interchangeable."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from types import TracebackType
from typing import Protocol, TypeVar

from ._model import Content, HistoryEntry, PendingNotification, QuietState, Request, Status
from ._stream import EventStream
from ._time import Duration, Instant


C = TypeVar("C", bound="Center")


class Center(Protocol):
    """NotificationCenter and tocsin.testing.FakeNotificationCenter both are one."""

    async def add(self, request: Request) -> str:
        """Schedules a request; returns its key."""

    async def post(self, content: Content, key: str | None = None, *, replace: bool = True) -> str:
        """Delivers content now (unless `replace=False` and the key is pending); returns its key."""

    def iter_pending(self, page_size: int = 1000) -> AsyncIterator[PendingNotification]:
        """Every pending notification, in key order, a page at a time."""

    async def pending(self, page_size: int = 1000) -> list[PendingNotification]:
        """Every pending notification, soonest first."""

    async def remove(self, keys: str | Iterable[str]) -> list[str]:
        """Cancels these keys; returns those that were pending."""

    async def remove_all(self) -> int:
        """Cancels everything pending; returns how many."""

    async def acknowledge(self, key: str) -> bool:
        """Stops a ringing or snoozed notification; False if it was neither."""

    async def snooze(self, key: str, duration: Duration | None = None, *, duration_: Duration | None = None) -> datetime:
        """Silences a fired notification until the returned instant (`duration_`: the former
        spelling of `duration`, deprecated)."""

    async def history(self, key: str | None = None, since: datetime | None = None,
                      limit: int | None = None) -> list[HistoryEntry]:
        """Recorded events, newest first."""

    async def status(self) -> Status:
        """The daemon's version, pid, pending count and backend health."""

    async def quiet_on(self, for_: Duration | None = None, until: Instant | None = None) -> QuietState:
        """Quiet hours on, for a duration or until an instant."""

    async def quiet_off(self) -> QuietState:
        """Quiet hours off; what was held is delivered."""

    async def quiet_status(self) -> QuietState:
        """Whether it is quiet, why, and until when."""

    async def reload(self) -> None:
        """Reloads the daemon's config."""

    async def wait_for_daemon(self, timeout: float) -> None:
        """Returns once the daemon is there; TimeoutError after `timeout` seconds."""

    def track(self, keys: Iterable[str]) -> None:
        """Adds keys the filtered event streams follow."""

    def events(self, all_keys: bool = False) -> EventStream:
        """A stream of events for this client's keys (all with all_keys)."""

    async def close(self) -> None:
        """Ends every stream and lets go of the connection."""

    async def __aenter__(self: C) -> C:
        """`async with center:` closes it at the end."""

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Closes the center."""
