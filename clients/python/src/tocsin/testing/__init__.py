"""Test doubles for apps that use tocsin: `FakeNotificationCenter`, an in-memory center on a
`VirtualClock` that records every call (`calls`) and fires when the test moves the clock.

    center = FakeNotificationCenter()
    events = center.events()
    await app.remind_me(center)                  # the code under test
    center.advance("1h")                         # or center.fire_next()
    assert (await events.next(0)).key == "tea"
"""

from ._clock import VirtualClock
from ._fake import Call, FakeNotificationCenter

__all__ = ["Call", "FakeNotificationCenter", "VirtualClock"]
