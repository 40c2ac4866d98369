"""Exceptions carrying the daemon's D-Bus error name, the field it names and its message."""

from __future__ import annotations

import re

#: The request fields a message may name, so the field can be read back out of the daemon's text.
#: The daemon's messages quote the field first ("invalid 'after': ...", "'title' in the
#: notification spec must be ..."); a quoted word that is not a field (a backend's name) is skipped.
FIELDS = frozenset({
    "key", "title", "body", "at", "after", "every", "count", "starting", "until", "on_calendar",
    "remind_before", "timezone", "dst_gap", "dst_fold", "backends", "urgency", "icon", "category",
    "sound", "actions", "user_info", "missed", "max_late", "fleet", "wake", "replace", "for", "duration",
    "since", "limit", "after_key", "max_pending", "max_pending_per_client",
})

_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)(?:\.[^']*)?'")


def field_in(message: str) -> str | None:
    """The first request field the message quotes, if any."""
    for match in _QUOTED.finditer(message):
        if match.group(1) in FIELDS:
            return match.group(1)
    return None


class TocsinError(Exception):
    """A refused request: `name` is the D-Bus error name (or the client's own for checks made
    before sending), `field` the request field it concerns when the message names one."""

    def __init__(self, name: str, message: str, field: str | None = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.field = field if field is not None else field_in(message)


class InvalidArgumentError(TocsinError, ValueError):
    """A malformed request: refused by the client before sending, or by the daemon (InvalidArgs)."""


class InvalidTriggerError(InvalidArgumentError):
    """The trigger can never fire (a time already past, an empty calendar expression...)."""


class NotFoundError(TocsinError, LookupError):
    """No pending notification has that key."""


class QuotaExceededError(TocsinError):
    """`max_pending` or this client's `max_pending_per_client` is reached."""


class UnknownBackendError(InvalidArgumentError):
    """`backends` names an instance the daemon's config does not declare."""


class InvalidConfigError(TocsinError):
    """`Reload` found mistakes in the config file; the message lists them."""


class StorageError(TocsinError):
    """The daemon could not make the change durable; nothing changed."""


class LimitsExceededError(TocsinError):
    """The reply would be larger than a message on the bus may be."""


class DaemonNotRunningError(TocsinError, ConnectionError):
    """Nobody owns the gateway's bus name (and the bus could not start the daemon)."""


class DaemonStoppingError(DaemonNotRunningError):
    """The daemon is stopping and refused the call; nothing changed. Ask again once it is back."""


CLIENT_ERROR = "io.github.tocsin.Client.InvalidArgument"

_BY_NAME: dict[str, type[TocsinError]] = {
    "org.freedesktop.DBus.Error.InvalidArgs": InvalidArgumentError,
    "io.github.tocsin.Error.InvalidTrigger": InvalidTriggerError,
    "io.github.tocsin.Error.NotFound": NotFoundError,
    "io.github.tocsin.Error.QuotaExceeded": QuotaExceededError,
    "io.github.tocsin.Error.UnknownBackend": UnknownBackendError,
    "io.github.tocsin.Error.InvalidConfig": InvalidConfigError,
    "io.github.tocsin.Error.Storage": StorageError,
    "org.freedesktop.DBus.Error.LimitsExceeded": LimitsExceededError,
    "org.freedesktop.DBus.Error.ServiceUnknown": DaemonNotRunningError,
    "org.freedesktop.DBus.Error.NameHasNoOwner": DaemonNotRunningError,
    "io.github.tocsin.Error.Stopping": DaemonStoppingError,
}


def from_dbus(name: str, message: str) -> TocsinError:
    """The exception for a D-Bus error reply."""
    cls = _BY_NAME.get(name, TocsinError)
    if name == "io.github.tocsin.Error.UnknownBackend":
        return cls(name, message, "backends")
    if name == "io.github.tocsin.Error.NotFound":
        return cls(name, message, "key")
    if name == "io.github.tocsin.Error.QuotaExceeded":
        # The limit is named as the config writes it ("[daemon] max_pending_per_client"), unquoted.
        limit = re.search(r"\b(max_pending_per_client|max_pending)\b", message)
        return cls(name, message, limit.group(1) if limit else None)
    if message.startswith("action '"):
        # "action 'a' has an id of 1 and a label of 4097 bytes": an entry of 'actions', unquoted.
        return cls(name, message, "actions")
    return cls(name, message)


def client_error(field: str, message: str) -> InvalidArgumentError:
    """A check the client made before anything was sent."""
    return InvalidArgumentError(CLIENT_ERROR, message, field)
