"""What goes in (Content, Request) and what comes back (pending entries, history, status, quiet)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from ._errors import client_error
from ._frozen import FrozenMap, frozen
from ._time import Duration, duration, from_usec
from ._triggers import SpecValue, Trigger
from ._validate import text, text_list, text_map


class Urgency(str, Enum):
    """How urgent a notification is (the freedesktop urgency levels)."""

    LOW = "low"
    NORMAL = "normal"
    CRITICAL = "critical"


class Missed(str, Enum):
    """What happens to firings that fell due while the daemon was down or the machine asleep."""

    SKIP = "skip"
    FIRE_ONCE = "fire-once"
    FIRE_ALL = "fire-all"


@dataclass(frozen=True)
class Content:
    """What a notification shows. `actions` maps action ids to button labels; `user_info` comes
    back with every firing and action; `backends` names the daemon's backend instances (default:
    all but alarms, which ring only when named)."""

    title: str
    body: str | None = None
    urgency: Urgency | str | None = None
    icon: str | None = None
    category: str | None = None
    sound: str | None = None
    actions: Mapping[str, str] = field(default_factory=dict)
    user_info: Mapping[str, str] = field(default_factory=dict)
    backends: Sequence[str] | None = None

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields, each string checked, as the daemon reads them."""
        out: dict[str, SpecValue] = {"title": text("title", self.title)}
        for name in ("body", "icon", "category", "sound"):
            value = getattr(self, name)
            if value is not None:
                out[name] = text(name, value)
        if self.urgency is not None:
            out["urgency"] = text("urgency", self.urgency.value if isinstance(self.urgency, Urgency) else self.urgency)
        if self.actions:
            out["actions"] = text_map("actions", self.actions)
        if self.user_info:
            out["user_info"] = text_map("user_info", self.user_info)
        if self.backends is not None:
            out["backends"] = text_list("backends", self.backends)
            if not out["backends"]:
                # As the daemon refuses it: an empty list is not "the default backends" (None).
                raise client_error("backends", "'backends' is empty, so it would deliver to nothing; "
                                               "name at least one backend, or leave it None for the default ones")
        return out


@dataclass(frozen=True)
class Request:
    """A notification to schedule: UNNotificationRequest's identifier, content and trigger. Without
    a key the daemon makes one. `replace=False` keeps an existing notification with the same key.
    `wake=True` brings the machine out of suspend for its firings where the daemon can arm wake
    alarms (CAP_WAKE_ALARM); it fires as usual either way."""

    content: Content
    trigger: Trigger
    key: str | None = None
    replace: bool = True
    missed: Missed | str | None = None
    max_late: Duration | None = None
    wake: bool = False

    def fields(self) -> dict[str, SpecValue]:
        """The spec fields, each string checked, as the daemon reads them."""
        out = self.content.fields()
        if not hasattr(self.trigger, "fields"):
            raise client_error("trigger", f"'trigger' must be At, After, Calendar or RemindBefore, got {type(self.trigger).__name__}")
        out.update(self.trigger.fields())
        if self.key is not None:
            out["key"] = text("key", self.key)
        if not isinstance(self.replace, bool):
            raise client_error("replace", "'replace' must be a boolean")
        if not self.replace:
            out["replace"] = False
        if self.missed is not None:
            out["missed"] = text("missed", self.missed.value if isinstance(self.missed, Missed) else self.missed)
        if self.max_late is not None:
            out["max_late"] = duration("max_late", self.max_late)
        if not isinstance(self.wake, bool):
            raise client_error("wake", "'wake' must be a boolean")
        if self.wake:
            out["wake"] = True
        return out


def post_fields(content: Content, key: str | None, replace: bool, made_up: str) -> dict[str, SpecValue]:
    """`post`'s spec fields, each checked as `Request.fields` checks them: the content, the key
    (`made_up` when None) and `replace` (sent only when False)."""
    if not isinstance(content, Content):
        raise client_error("content", f"post() takes a Content, got {type(content).__name__}")
    fields = content.fields()
    fields["key"] = text("key", key) if key is not None else made_up
    if not isinstance(replace, bool):
        raise client_error("replace", "'replace' must be a boolean")
    if not replace:
        fields["replace"] = False
    return fields


def _time(d: Mapping[str, Any], name: str) -> datetime | None:
    v = d.get(name)
    return from_usec(int(v)) if v is not None else None


@dataclass(frozen=True)
class PendingNotification:
    """One entry of `pending()`: a notification the daemon holds. `state` is `scheduled`,
    `ringing`, `snoozed` or `unanswered`; `next_fire` is None when nothing is scheduled (ringing)."""

    key: str
    title: str
    body: str
    trigger: str
    state: str
    source: str
    next_fire: datetime | None
    last_fire: datetime | None = None
    snoozed_until: datetime | None = None
    rings: int | None = None
    urgency: str = "normal"
    backends: tuple[str, ...] = ()
    user_info: Mapping[str, str] = field(default_factory=FrozenMap)
    wake: bool = False

    def __post_init__(self) -> None:
        frozen(self, "user_info")

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> PendingNotification:
        """From the daemon\'s a{sv}, Variants already unwrapped."""
        next_fire = d.get("next_fire")
        return cls(
            key=str(d.get("key", "")), title=str(d.get("title", "")), body=str(d.get("body", "")),
            trigger=str(d.get("trigger", "")), state=str(d.get("state", "")), source=str(d.get("source", "")),
            next_fire=from_usec(int(next_fire)) if next_fire else None,
            last_fire=_time(d, "last_fire"), snoozed_until=_time(d, "snoozed_until"),
            rings=int(d["rings"]) if "rings" in d else None, urgency=str(d.get("urgency", "normal")),
            backends=tuple(d.get("backends", ())), user_info=FrozenMap(d.get("user_info", {})),
            wake=bool(d.get("wake", False)),
        )


@dataclass(frozen=True)
class HistoryEntry:
    """A recorded event: `event` is fired, acknowledged, snoozed, cancelled, missed or unanswered."""

    time: datetime
    event: str
    key: str
    title: str = ""
    backends: tuple[str, ...] = ()
    due: datetime | None = None
    until: datetime | None = None
    occurrence: int | None = None
    late: bool | None = None
    count: int | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> HistoryEntry:
        """From the daemon\'s a{sv}, Variants already unwrapped."""
        return cls(
            time=from_usec(int(d["time"])), event=str(d["event"]), key=str(d["key"]),
            title=str(d.get("title", "")), backends=tuple(d.get("backends", ())),
            due=_time(d, "due"), until=_time(d, "until"),
            occurrence=int(d["occurrence"]) if "occurrence" in d else None,
            late=bool(d["late"]) if "late" in d else None,
            count=int(d["count"]) if "count" in d else None,
        )


@dataclass(frozen=True)
class Status:
    """The daemon: its version, pid, what it holds and each backend's health (`ok` or why not)."""

    version: str
    pid: int
    pending: int
    backends: Mapping[str, str]
    started: datetime | None = None
    config: str = ""
    state_directory: str = ""
    next_key: str | None = None
    next_fire: datetime | None = None
    wake: str = ""
    wake_next_key: str | None = None
    wake_next: datetime | None = None
    wake_armed: datetime | None = None
    sleep: str = ""

    def __post_init__(self) -> None:
        frozen(self, "backends")

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Status:
        """From the daemon\'s a{sv}, Variants already unwrapped."""
        return cls(
            version=str(d.get("version", "")), pid=int(d.get("pid", 0)), pending=int(d.get("pending", 0)),
            backends=FrozenMap(d.get("backends", {})), started=_time(d, "started"), config=str(d.get("config", "")),
            state_directory=str(d.get("state_directory", "")),
            next_key=str(d["next_key"]) if "next_key" in d else None, next_fire=_time(d, "next_fire"),
            wake=str(d.get("wake", "")), wake_next_key=str(d["wake_next_key"]) if "wake_next_key" in d else None,
            wake_next=_time(d, "wake_next"), wake_armed=_time(d, "wake_armed"), sleep=str(d.get("sleep", "")),
        )


@dataclass(frozen=True)
class QuietState:
    """Quiet hours: `source` is manual, schedule or none; `until` when it next changes by itself."""

    active: bool
    source: str
    held: int
    until: datetime | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> QuietState:
        """From the daemon\'s a{sv}, Variants already unwrapped."""
        return cls(active=bool(d.get("active", False)), source=str(d.get("source", "none")),
                   held=int(d.get("held", 0)), until=_time(d, "until"))
