"""Each example in contrib/examples/python/, run as a program against a real daemon."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import tocsin
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus
from conftest import CONFIG, alarm_config
from daemon import REPOSITORY, Daemon, NotificationMock, PrivateBus

EXAMPLES = REPOSITORY / "contrib" / "examples" / "python"


def example(daemon: Daemon, name: str, *args: str) -> dict[str, Any]:
    """Runs an example to its end; its last line of output, decoded."""
    env = dict(os.environ, **daemon.bus.environment)
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"{name} {args}: {r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture
def alarm_daemon(bus: PrivateBus, tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(bus, alarm_config(tmp_path, every="1s", max_rings=100), tmp_path)
    d.start()
    yield d
    d.stop()


def test_auction_reminders_fire_before_the_end_and_go_at_once_when_won(daemon: Daemon) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as watcher:
            events = watcher.events(all_keys=True)
            # Ends in 1 h 2 s: the 24 h and 3 h reminders are past, the 1 h one is 2 s away.
            ends = (datetime.now(timezone.utc) + timedelta(hours=1, seconds=2)).isoformat()
            out = example(daemon, "auction.py", "schedule", "--lot", "4711", "--title", "Camera", "--ends", ends,
                          "--url", "https://auction.example/lot/4711")
            assert out == {"scheduled": "auction-4711"}
            example(daemon, "auction.py", "schedule", "--lot", "99", "--title", "Lamp",
                    "--ends", (datetime.now(timezone.utc) + timedelta(days=3)).isoformat())
            fired = await events.next(15)
            assert isinstance(fired, tocsin.Fired) and fired.key == "auction-4711"
            assert fired.before == timedelta(hours=1) and fired.title == "Auction: Camera"
            assert fired.user_info["url"] == "https://auction.example/lot/4711"
            listed = example(daemon, "auction.py", "list")["lots"]
            assert {lot["lot"] for lot in listed} == {"4711", "99"}
            camera = next(lot for lot in listed if lot["lot"] == "4711")
            assert abs(datetime.fromisoformat(camera["next_reminder"]) - datetime.fromisoformat(ends)) < timedelta(seconds=1)
            assert example(daemon, "auction.py", "won", "--lot", "4711") == {"lot": "4711", "cancelled": True}
            assert await events.next(15) == tocsin.Cancelled("auction-4711")
            assert [lot["lot"] for lot in example(daemon, "auction.py", "list")["lots"]] == ["99"]
            assert example(daemon, "auction.py", "won", "--lot", "4711")["cancelled"] is False
    asyncio.run(main())


def test_alarm_notes_show_the_nearest_ring_until_acknowledged_and_come_back_on_start(
        alarm_daemon: Daemon, tmp_path: Path) -> None:
    notes = str(tmp_path / "notes.json")
    base = ["--notes", notes, "--backend", "alarm", "--backend", "events"]

    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(alarm_daemon.bus.address) as watcher:
            events = watcher.events(all_keys=True)
            soon = (datetime.now(timezone.utc) + timedelta(seconds=2)).isoformat()
            example(alarm_daemon, "alarm_notes.py", *base, "add", "--key", "tea", "--title", "Tea", "--at", soon)
            example(alarm_daemon, "alarm_notes.py", *base, "add", "--key", "wake", "--title", "Wake up", "--daily", "06:30")
            shown = example(alarm_daemon, "alarm_notes.py", *base, "start")
            assert shown["scheduled"] == 2 and shown["nearest"]["key"] == "tea"
            fired = await events.next(15)
            assert isinstance(fired, tocsin.Fired) and fired.key == "note-tea"
            ringing = {p.key: p for p in await watcher.pending()}["note-tea"]
            assert ringing.state == "ringing"
            # Starting the app again while it rings keeps it ringing, and shows it first.
            assert example(alarm_daemon, "alarm_notes.py", *base, "start")["nearest"]["key"] == "tea"
            assert example(alarm_daemon, "alarm_notes.py", *base, "ack", "tea") == {"acknowledged": True}
            assert await events.next(15) == tocsin.Acknowledged("note-tea")
            # The daemon loses its schedule (a new machine, a wiped state): the app's start restores it.
            alarm_daemon.stop()
            subprocess.run(["rm", "-rf", str(alarm_daemon.state_dir)], check=True)
            alarm_daemon.start()
            await watcher.wait_for_daemon(15)
            assert await watcher.pending() == []
            again = example(alarm_daemon, "alarm_notes.py", *base, "start")
            assert again["expired"] == ["tea"] and again["nearest"]["key"] == "wake"
            [wake] = await watcher.pending()
            assert wake.key == "note-wake" and wake.next_fire is not None
            assert (wake.next_fire.hour, wake.next_fire.minute) == (6, 30)
    asyncio.run(main())


def test_a_repeating_reminder_fires_count_times(daemon: Daemon) -> None:
    env = dict(os.environ, **daemon.bus.environment)
    r = subprocess.run([sys.executable, str(EXAMPLES / "repeat.py"), "--title", "Stretch", "--every", "1s",
                        "--count", "3", "--follow"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0] == {"scheduled": "repeat", "every": "1s", "count": 3}
    assert lines[1:] == [{"fired": "repeat", "occurrence": n} for n in (1, 2, 3)]


class Lines:
    """A child's stdout, one JSON line at a time, each awaited with a deadline."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def next(self, timeout: float = 20) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        if not line:
            err = await self.process.stderr.read() if self.process.stderr else b""
            raise AssertionError(f"the listener ended: {err.decode()}")
        return json.loads(line)


def test_the_listener_reacts_to_popup_actions_and_firings(bus: PrivateBus, tmp_path: Path) -> None:
    mock = NotificationMock(bus)
    daemon = Daemon(bus, CONFIG + '\n[backend.popup]\ntype = "libnotify"\n', tmp_path)
    try:
        daemon.start()
        asyncio.run(listen(daemon, mock))
    finally:
        daemon.stop()
        mock.close()


async def mock_calls(address: str) -> tuple[MessageBus, asyncio.Queue[str]]:
    """The names of the methods called on the mock server, in order (its MethodCalled signal is
    sent as it handles each call), so a test waits for the popup before pressing its button."""
    bus = await MessageBus(bus_address=address).connect()
    calls: asyncio.Queue[str] = asyncio.Queue()

    def on_message(m: Message) -> None:
        if m.message_type == MessageType.SIGNAL and m.member == "MethodCalled":
            calls.put_nowait(str(m.body[0]))
    bus.add_message_handler(on_message)
    rule = f"type='signal',sender='{NotificationMock.NAME}',interface='org.freedesktop.DBus.Mock',member='MethodCalled'"
    await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                           interface="org.freedesktop.DBus", member="AddMatch", signature="s", body=[rule]))
    return bus, calls


async def next_call(calls: asyncio.Queue[str], name: str) -> None:
    while await asyncio.wait_for(calls.get(), 20) != name:
        pass


async def listen(daemon: Daemon, mock: NotificationMock) -> None:
    env = dict(os.environ, **daemon.bus.environment)
    monitor, calls = await mock_calls(daemon.bus.address)
    p = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLES / "listener.py"), "--key", "standup", "--title", "Stand-up", "--after", "1s",
        "--action", "join=Join call", "--action", "later=In 10 minutes", "--info", "url=https://meet.example/daily",
        "--later", "10min", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out = Lines(p)
    try:
        assert await out.next() == {"event": "scheduled", "key": "standup"}
        assert await out.next() == {"event": "listening"}
        assert await out.next() == {"event": "fired", "key": "standup", "title": "Stand-up", "occurrence": 1}
        # The popup is the mock server's notification 1; "pressing" its button goes through the
        # daemon, which routes it back as ActionInvoked with the notification's user_info.
        await next_call(calls, "Notify")
        mock.press(1, "join")
        assert await out.next() == {"event": "action", "key": "standup", "action": "join",
                                    "user_info": {"url": "https://meet.example/daily"}}
        assert await out.next() == {"reaction": "opened", "key": "standup", "url": "https://meet.example/daily"}
        mock.press(1, "later")
        assert (await out.next())["action"] == "later"
        assert await out.next() == {"reaction": "rescheduled", "key": "standup", "after": "10min"}
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            [again] = await c.pending()
            assert again.key == "standup" and again.next_fire is not None
            assert timedelta(minutes=9) < again.next_fire - datetime.now(timezone.utc) <= timedelta(minutes=10)
            await c.remove("standup")
        assert await out.next() == {"event": "cancelled", "key": "standup"}
    finally:
        if p.returncode is None:
            p.kill()
        await p.wait()
        monitor.disconnect()
