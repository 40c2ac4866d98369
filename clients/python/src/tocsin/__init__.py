"""Client of the Tocsin notification gateway, shaped like an app's notification center.

    import asyncio, tocsin

    async def main() -> None:
        async with await tocsin.NotificationCenter.connect() as center:
            events = center.events()
            await center.add(tocsin.Request(tocsin.Content("Tea"), tocsin.After(180), key="tea"))
            async for event in events:
                print(event)

`SyncNotificationCenter` is the same, blocking; `tocsin.testing.FakeNotificationCenter` an
in-memory stand-in with a virtual clock for an app's tests.
"""

from ._center import BUS_NAME, INTERFACE, OBJECT_PATH, NotificationCenter
from ._errors import (
    DaemonNotRunningError,
    DaemonStoppingError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidTriggerError,
    LimitsExceededError,
    NotFoundError,
    QuotaExceededError,
    StorageError,
    TocsinError,
    UnknownBackendError,
)
from ._events import (
    Acknowledged,
    ActionInvoked,
    Cancelled,
    CancelledAll,
    Event,
    Fired,
    Interrupted,
    MissedFiring,
    QuietChanged,
    Snoozed,
    Unanswered,
)
from ._model import (
    Content,
    HistoryEntry,
    Missed,
    PendingNotification,
    QuietState,
    Request,
    Status,
    Urgency,
)
from ._protocol import Center
from ._stream import EventStream
from ._sync import SyncEventStream, SyncNotificationCenter
from ._triggers import After, At, Calendar, RemindBefore, Trigger, calendar_expression

__all__ = [
    "BUS_NAME", "INTERFACE", "OBJECT_PATH",
    "Acknowledged", "ActionInvoked", "After", "At", "Calendar", "Cancelled", "CancelledAll", "Center", "Content",
    "DaemonNotRunningError", "DaemonStoppingError", "Event", "EventStream", "Fired", "HistoryEntry", "Interrupted", "InvalidArgumentError",
    "InvalidConfigError", "InvalidTriggerError", "LimitsExceededError", "Missed", "MissedFiring",
    "NotFoundError", "NotificationCenter", "PendingNotification", "QuietChanged", "QuietState",
    "QuotaExceededError", "RemindBefore", "Request", "Snoozed", "Status", "StorageError",
    "SyncEventStream", "SyncNotificationCenter", "TocsinError", "Trigger", "Unanswered",
    "UnknownBackendError", "Urgency", "calendar_expression",
]
__version__ = "0.1.0"
