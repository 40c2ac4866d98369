"""Events the daemon signals, as values. Every event has the notification's `key`. Events are
hashable and equal by value: `user_info` is a read-only mapping (a FrozenMap)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dbus_fast import Variant

from ._frozen import FrozenMap, frozen
from ._time import from_usec


@dataclass(frozen=True)
class Fired:
    """A firing (from a `dbus-signal` backend): `occurrence` counts from 1; `late` when it was
    delivered after its due time (a catch-up); `before` is the offset of a RemindBefore reminder."""

    key: str
    title: str
    body: str
    due: datetime | None
    fired: datetime | None
    occurrence: int
    late: bool
    reason: str
    urgency: str
    user_info: Mapping[str, str] = field(default_factory=FrozenMap)
    backends: tuple[str, ...] = ()
    before: timedelta | None = None

    def __post_init__(self) -> None:
        frozen(self, "user_info")

    @classmethod
    def from_wire(cls, key: str, info: Mapping[str, Any]) -> Fired:
        """From a Fired signal\'s key and info, Variants already unwrapped."""
        due, fired, before = info.get("due"), info.get("fired"), info.get("before")
        return cls(
            key=key, title=str(info.get("title", "")), body=str(info.get("body", "")),
            due=from_usec(int(due)) if due is not None else None,
            fired=from_usec(int(fired)) if fired is not None else None,
            occurrence=int(info.get("occurrence", 0)), late=bool(info.get("late", False)),
            reason=str(info.get("reason", "")), urgency=str(info.get("urgency", "normal")),
            user_info=FrozenMap(info.get("user_info", {})), backends=tuple(info.get("backends", ())),
            before=timedelta(microseconds=int(before)) if before is not None else None,
        )


@dataclass(frozen=True)
class ActionInvoked:
    """A person chose `action` (a button id, or `default` for a click on the popup)."""

    key: str
    action: str
    user_info: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        frozen(self, "user_info")


@dataclass(frozen=True)
class Acknowledged:
    """A ringing or snoozed notification was acknowledged."""

    key: str


@dataclass(frozen=True)
class Snoozed:
    """A notification was snoozed until `until`."""

    key: str
    until: datetime


@dataclass(frozen=True)
class Cancelled:
    """A notification was cancelled (by any client, or a config reload)."""

    key: str


@dataclass(frozen=True)
class MissedFiring:
    """Firings fell due while nobody could deliver them; `due` is the first one missed."""

    key: str
    due: datetime


@dataclass(frozen=True)
class Unanswered:
    """An alarm rang `rings` times and nobody acknowledged it."""

    key: str
    rings: int


@dataclass(frozen=True)
class CancelledAll:
    """`remove_all` (by any client) cancelled `count` notifications. The daemon names only the
    first 1,000 keys in `Cancelled` events; this one always follows and speaks for every key, so
    an app that tracks its keys forgets them all here. Every stream gets it: its key is empty."""

    count: int
    key: str = ""


@dataclass(frozen=True)
class Interrupted:
    """The daemon stopped (a crash) while delivering this firing to `backends`: it may or may not
    have reached them, and it is not delivered again (deliveries are at most once)."""

    key: str
    due: datetime
    occurrence: int
    backends: tuple[str, ...]


@dataclass(frozen=True)
class QuietChanged:
    """Quiet hours began or ended. Not tied to a notification: its key is empty."""

    active: bool
    source: str
    held: int
    until: datetime | None
    key: str = ""


Event = (Fired | ActionInvoked | Acknowledged | Snoozed | Cancelled | CancelledAll | MissedFiring | Unanswered
         | Interrupted | QuietChanged)


def from_signal(member: str, body: list[Any]) -> Event | None:
    """The event for a gateway signal, or None for a signal this client does not know."""
    if member == "Fired":
        return Fired.from_wire(body[0], unwrap(body[1]))
    if member == "ActionInvoked":
        return ActionInvoked(body[0], body[1], FrozenMap(body[2]))
    if member == "Acknowledged":
        return Acknowledged(body[0])
    if member == "Snoozed":
        return Snoozed(body[0], from_usec(body[1]))
    if member == "Cancelled":
        return Cancelled(body[0])
    if member == "Missed":
        return MissedFiring(body[0], from_usec(body[1]))
    if member == "Unanswered":
        return Unanswered(body[0], int(body[1]))
    if member == "CancelledAll":
        return CancelledAll(int(body[0]))
    if member == "Interrupted":
        return Interrupted(body[0], from_usec(body[1]), int(body[2]), tuple(str(b) for b in body[3]))
    if member == "QuietChanged":
        q = unwrap(body[1])
        until = q.get("until")
        return QuietChanged(bool(body[0]), str(q.get("source", "none")), int(q.get("held", 0)),
                            from_usec(int(until)) if until is not None else None)
    return None


def unwrap(value: Any) -> Any:
    """dbus-fast Variants (at any depth) to plain Python values. A page of ListPage holds up to
    10000 entries of a dozen fields, so the common leaves (str, int) are returned first."""
    while type(value) is Variant:
        value = value.value
    t = type(value)
    if t is str or t is int or t is bool:
        return value
    if t is dict:
        return {k: unwrap(v) for k, v in value.items()}
    if t is list:
        return [unwrap(v) for v in value]
    return value
