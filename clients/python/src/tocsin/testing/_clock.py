"""A clock that moves only when a test says so."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from .._time import Duration, duration_seconds


class VirtualClock:
    """Starts at `start` (default 2030-01-01 00:00 UTC) and stands still until moved."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=timezone.utc)
        if self._now.tzinfo is None:
            raise ValueError("the clock's start must be an aware datetime")

    def now(self) -> datetime:
        """The current virtual instant."""
        return self._now

    def set(self, when: datetime) -> None:
        """Moves the clock to `when` (never backwards)."""
        if when < self._now:
            raise ValueError(f"the virtual clock does not go backwards ({when} < {self._now})")
        self._now = when

    @staticmethod
    def span(by: Duration) -> timedelta:
        """A duration as a timedelta."""
        return timedelta(seconds=duration_seconds(by))
