"""Fixtures: a private bus with a real `tocsin daemon`, and the harness the conformance suite runs
against both the daemon and tocsin.testing's fake."""

from __future__ import annotations

import asyncio
import sys
import wave
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import tocsin  # noqa: E402
from daemon import Daemon, PrivateBus  # noqa: E402
from tocsin.testing import FakeNotificationCenter  # noqa: E402

CONFIG = """
[backend.log]
type = "log"
format = "json"

[backend.events]
type = "dbus-signal"
"""


def short_sound(directory: Path) -> Path:
    """A 0.1 s silent WAV, so an alarm may ring every second."""
    path = directory / "ring.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 800)
    return path


def alarm_config(directory: Path, every: str = "1s", max_rings: int = 2) -> str:
    """log, events and an `alarm` (sound) backend that rings with /bin/true as its player."""
    return CONFIG + f"""
[backend.alarm]
type = "sound"
file = "{short_sound(directory)}"
player = ["/bin/true", "{{file}}"]
every = "{every}"
max_rings = {max_rings}
"""


@pytest.fixture
def bus() -> Iterator[PrivateBus]:
    b = PrivateBus()
    yield b
    b.close()


@pytest.fixture
def daemon(bus: PrivateBus, tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(bus, CONFIG, tmp_path)
    d.start()
    yield d
    d.stop()


Body = Callable[["Harness", tocsin.Center], Awaitable[None]]


class Harness:
    """What a conformance test needs from either world: a center, the time, and time passing.
    With the daemon, time passes by itself and events are awaited with a deadline; with the fake,
    `elapse` moves its virtual clock and the events are queued at once."""

    name = ""
    timeout = 15.0

    def now(self) -> datetime:
        raise NotImplementedError

    def elapse(self, seconds: float) -> None:
        raise NotImplementedError

    async def center(self) -> tocsin.Center:
        raise NotImplementedError

    async def other_center(self) -> tocsin.Center:
        """Another app on the same daemon."""
        raise NotImplementedError

    def run(self, body: Body) -> None:
        async def main() -> None:
            center = await self.center()
            try:
                await body(self, center)
            finally:
                await center.close()
        asyncio.run(main())


class DaemonHarness(Harness):
    name = "daemon"

    def __init__(self, bus: PrivateBus, daemon: Daemon) -> None:
        self.bus, self.daemon = bus, daemon

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def elapse(self, seconds: float) -> None:
        pass

    async def center(self) -> tocsin.Center:
        return await tocsin.NotificationCenter.connect(self.bus.address)

    async def other_center(self) -> tocsin.Center:
        return await tocsin.NotificationCenter.connect(self.bus.address)


class FakeHarness(Harness):
    name = "fake"
    timeout = 0.5

    def __init__(self) -> None:
        self.fake = FakeNotificationCenter(alarm_backends=("alarm",), ring_every=2, max_rings=2)

    def now(self) -> datetime:
        return self.fake.clock.now()

    def elapse(self, seconds: float) -> None:
        self.fake.advance(seconds)

    async def center(self) -> tocsin.Center:
        return self.fake

    async def other_center(self) -> tocsin.Center:
        return self.fake.client()


@pytest.fixture(params=["fake", "daemon"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "fake":
        yield FakeHarness()
        return
    b = PrivateBus()
    # Rings 2 s apart: a test looks at the first ring well before the second, even under load.
    d = Daemon(b, alarm_config(tmp_path, every="2s"), tmp_path)
    try:
        d.start()
        yield DaemonHarness(b, d)
    finally:
        d.stop()
        b.close()
