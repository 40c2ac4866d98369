"""The real client against a real daemon: what only a bus can show (other clients, restarts,
paging, the blocking facade, a missing daemon)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

import tocsin
from conftest import CONFIG
from daemon import Daemon, PrivateBus
from tocsin import After, Content, Request


def run(coro: object) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


def test_the_event_stream_survives_a_daemon_restart(daemon: Daemon) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            events = c.events()
            await c.add(Request(Content("Across the restart"), After(3), key="across"))
            owner = c.daemon_owner
            daemon.stop()
            with pytest.raises(tocsin.DaemonNotRunningError):
                await c.status()
            daemon.start()
            await c.wait_for_daemon(15)
            assert c.daemon_owner and c.daemon_owner != owner
            fired = await events.next(20)
            assert isinstance(fired, tocsin.Fired) and fired.key == "across"
            await c.post(Content("After the restart"), key="after")
            fired = await events.next(15)
            assert isinstance(fired, tocsin.Fired) and fired.key == "after"
    run(main())


def test_pending_walks_every_page_once(bus: PrivateBus, tmp_path: Path) -> None:
    # TOCSIN_PYCLIENT_PENDING=250000 runs the same walk at the scale docs/CLIENTS.md reports.
    count = int(os.environ.get("TOCSIN_PYCLIENT_PENDING", "2500"))
    daemon = Daemon(bus, CONFIG + "\n[daemon]\nmax_pending_per_client = 1000000\n", tmp_path)
    daemon.start()
    figures: dict[str, float] = {}

    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            keys = [f"n{i:0{len(str(count))}d}" for i in range(count)]
            todo = iter(keys)

            async def worker() -> None:
                for k in todo:
                    await c.add(Request(Content(k), After(f"{3600 + int(k[1:])}s"), key=k))
            t = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(32)))
            figures["schedule_s"] = time.monotonic() - t
            t = time.monotonic()
            pages = [p async for p in c.iter_pending(page_size=1000)]
            figures["iter_pending_s"] = time.monotonic() - t
            assert [p.key for p in pages] == keys, "key order, each once"
            t = time.monotonic()
            pending = await c.pending(page_size=333)
            figures["pending_s"] = time.monotonic() - t
            assert [p.key for p in pending] == keys, "soonest first (the soonest is the lowest key here)"
            assert (await c.status()).pending == count
    try:
        run(main())
    finally:
        daemon.stop()
    print(f"pending at scale: {count} notifications, " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))


def test_the_blocking_facade(daemon: Daemon) -> None:
    with tocsin.SyncNotificationCenter(daemon.bus.address) as c:
        events = c.events()
        c.add(Request(Content("Sync"), After(1), key="sync"))
        assert [p.key for p in c.pending()] == ["sync"]
        fired = events.next(15)
        assert isinstance(fired, tocsin.Fired) and fired.key == "sync"
        with pytest.raises(tocsin.InvalidTriggerError):
            c.add(Request(Content("x"), tocsin.At("2001-01-01T00:00:00Z")))
        c.add(Request(Content("Kept"), After("1h"), key="kept"))
        assert c.post(Content("Not posted"), key="kept", replace=False) == "kept"
        assert [(p.key, p.title) for p in c.pending()] == [("kept", "Kept")], "replace=False reached the daemon"
        assert c.remove_all() == 1


def test_a_refused_string_never_reaches_the_bus_and_the_connection_stays_usable(daemon: Daemon) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            for bad in ("\ud800", "a\0b"):
                with pytest.raises(tocsin.InvalidArgumentError) as info:
                    await c.add(Request(Content("t", body=bad), After(5)))
                assert info.value.field == "body" and info.value.name == "io.github.tocsin.Client.InvalidArgument"
                with pytest.raises(tocsin.InvalidArgumentError):
                    await c.acknowledge(bad)
            assert (await c.status()).pending == 0
    run(main())
    assert "error" not in daemon.stderr().lower()


def test_no_daemon_is_a_clear_error(bus: PrivateBus) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(bus.address) as c:
            with pytest.raises(tocsin.DaemonNotRunningError) as info:
                await c.add(Request(Content("x"), After(5)))
            assert "not running" in str(info.value)
    run(main())


def test_a_bus_that_never_answers_is_given_up_at_the_timeout(tmp_path: Path) -> None:
    # A socket that accepts (the kernel's backlog) and never speaks: authentication never ends.
    import socket
    path = str(tmp_path / "silent")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(8)

    async def main() -> None:
        started = time.monotonic()
        with pytest.raises(tocsin.TocsinError) as info:
            # The outer deadline turns a hang (the defect) into a failure of this test.
            await asyncio.wait_for(tocsin.NotificationCenter.connect(f"unix:path={path}", timeout=1), 10)
        assert time.monotonic() - started < 10
        assert f"the bus at unix:path={path} accepted the connection but did not answer within 1 s" in str(info.value)
    try:
        run(main())
    finally:
        server.close()


def test_a_stopping_daemon_is_a_daemon_not_running_error() -> None:
    # A daemon that is stopping still answers, refuses every change, and changes nothing: an app
    # that already handles a daemon going away handles this one too.
    from tocsin._errors import from_dbus
    e = from_dbus("io.github.tocsin.Error.Stopping", "the daemon is stopping; nothing was changed")
    assert isinstance(e, tocsin.DaemonStoppingError)
    assert isinstance(e, tocsin.DaemonNotRunningError) and isinstance(e, ConnectionError)
    assert e.name == "io.github.tocsin.Error.Stopping" and e.field is None


def test_reload_with_a_broken_config_raises_its_diagnostics(daemon: Daemon) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            daemon.config_path.write_text("[backend.log]\ntype = \"log\"\nbogus = 1\n")
            with pytest.raises(tocsin.InvalidConfigError) as info:
                await c.reload()
            assert "bogus" in info.value.message
    run(main())


def test_a_daemon_error_carries_name_field_and_message(daemon: Daemon) -> None:
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            with pytest.raises(tocsin.InvalidArgumentError) as info:
                await c.add(Request(Content("x"), After("3parsecs")))
            e = info.value
            assert e.name == "org.freedesktop.DBus.Error.InvalidArgs"
            assert e.field == "after"
            assert "unknown time unit 'parsecs'" in e.message
    run(main())


def test_losing_the_bus_ends_the_event_streams(bus: PrivateBus) -> None:
    async def main() -> None:
        c = await tocsin.NotificationCenter.connect(bus.address)
        events = c.events(all_keys=True)
        bus.close()
        with pytest.raises(StopAsyncIteration):
            await events.next(15)
        await c.close()
    run(main())


def test_the_per_client_quota_is_a_quota_error_naming_the_limit(bus: PrivateBus, tmp_path: Path) -> None:
    daemon = Daemon(bus, CONFIG + "\n[daemon]\nmax_pending_per_client = 2\n", tmp_path)
    daemon.start()

    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(bus.address) as c:
            for k in ("a", "b"):
                await c.add(Request(Content(k), After("1h"), key=k))
            with pytest.raises(tocsin.QuotaExceededError) as info:
                await c.add(Request(Content("c"), After("1h"), key="c"))
            assert info.value.name == "io.github.tocsin.Error.QuotaExceeded"
            assert info.value.field == "max_pending_per_client", info.value.message
            assert [p.key for p in await c.pending()] == ["a", "b"]
    try:
        run(main())
    finally:
        daemon.stop()


def test_a_daemon_that_answers_stopping_raises_daemon_stopping_error(bus: PrivateBus) -> None:
    # A stand-in that owns the gateway's name and answers as a stopping daemon does: the client
    # must keep the error's class and words, not call it "not running".
    from dbus_fast import DBusError
    from dbus_fast.aio import MessageBus
    from dbus_fast.service import ServiceInterface, method

    class Stopping(ServiceInterface):
        def __init__(self) -> None:
            super().__init__("io.github.tocsin.Gateway1")

        @method()
        def Schedule(self, spec: "a{sv}") -> "s":  # type: ignore[name-defined]  # noqa: F821
            raise DBusError("io.github.tocsin.Error.Stopping", "the daemon is stopping; nothing was changed")

    async def main() -> None:
        server = await MessageBus(bus_address=bus.address).connect()
        server.export("/io/github/tocsin/Gateway", Stopping())
        await server.request_name("io.github.tocsin.Gateway")
        try:
            async with await tocsin.NotificationCenter.connect(bus.address) as c:
                with pytest.raises(tocsin.DaemonStoppingError) as info:
                    await c.add(Request(Content("x"), After(5)))
                assert str(info.value).endswith("the daemon is stopping; nothing was changed"), str(info.value)
                assert info.value.name == "io.github.tocsin.Error.Stopping"
        finally:
            server.disconnect()
    run(main())


def test_gateway_signals_from_any_other_connection_are_dropped(daemon: Daemon) -> None:
    # Match rules do not filter a signal addressed to the client's unique name: anyone on the bus
    # can send one. Only the current owner of the gateway's name is believed, and only the bus
    # may say who that is.
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(daemon.bus.address) as c:
            owner = c.daemon_owner
            assert owner
            events = c.events(all_keys=True)
            me = c._bus.unique_name
            spoofer = await MessageBus(bus_address=daemon.bus.address).connect()
            try:
                owner_changed = Message.new_signal("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                                   "sss", [tocsin.BUS_NAME, owner, spoofer.unique_name])
                owner_changed.destination = me
                spoofer.send(owner_changed)
                for _ in range(2):  # before and after the forged change of owner
                    forged = Message.new_signal(tocsin.OBJECT_PATH, tocsin.INTERFACE, "ActionInvoked", "ssa{ss}",
                                                ["standup", "join", {"url": "https://evil.example"}])
                    forged.destination = me
                    spoofer.send(forged)
                # The bus keeps one sender's messages to one receiver in order, and the client
                # handles them in order: once it has answered this ping, it has seen the signals.
                pong = await spoofer.call(Message(destination=me, path="/", interface="org.freedesktop.DBus.Peer",
                                                  member="Ping"))
                assert pong is not None and pong.message_type == MessageType.METHOD_RETURN
            finally:
                spoofer.disconnect()
            assert events.pending_events() == [], "a forged signal was delivered"
            assert c.daemon_owner == owner, "a forged NameOwnerChanged was believed"
            key = await c.post(Content("Real"))
            fired = await events.next(15)
            assert isinstance(fired, tocsin.Fired) and fired.key == key, fired
    run(main())


def test_deadlines_raise_the_builtin_timeout_error(bus: PrivateBus) -> None:
    # Before Python 3.11 asyncio.wait_for raises asyncio.TimeoutError, which `except TimeoutError`
    # misses; the documented TimeoutError must be what every deadline raises.
    async def main() -> None:
        async with await tocsin.NotificationCenter.connect(bus.address) as c:
            try:
                await c.wait_for_daemon(0.05)
            except TimeoutError as e:
                assert tocsin.BUS_NAME in str(e), str(e)
            else:
                raise AssertionError("no daemon runs on this bus")
    run(main())
    with tocsin.SyncNotificationCenter(bus.address) as s:
        try:
            s.events().next(0.05)
        except TimeoutError:
            pass
        else:
            raise AssertionError("next() returned with nothing to return")


def test_the_blocking_facade_walks_pages_and_waits_for_the_daemon(daemon: Daemon) -> None:
    with tocsin.SyncNotificationCenter(daemon.bus.address) as c:
        c.wait_for_daemon(15)
        for k in ("b", "a", "c"):
            c.add(Request(Content(k), After("1h"), key=k))
        assert [p.key for p in c.iter_pending(page_size=2)] == ["a", "b", "c"]
        with pytest.raises(tocsin.InvalidArgumentError) as info:
            list(c.iter_pending(page_size=-1))
        assert info.value.field == "page_size"
        with pytest.raises(tocsin.NotFoundError):
            c.snooze("nobody", duration=60)


def test_a_bus_that_is_not_there_or_refuses_is_a_tocsin_error_naming_its_address(tmp_path: Path) -> None:
    import socket
    refusing = str(tmp_path / "refusing")
    s = socket.socket(socket.AF_UNIX)
    s.bind(refusing)  # bound, never listening: a connection is refused
    s.close()
    missing = f"unix:path={tmp_path / 'missing'}"

    async def main() -> None:
        for address in (missing, f"unix:path={refusing}"):
            with pytest.raises(tocsin.TocsinError) as info:
                await asyncio.wait_for(tocsin.NotificationCenter.connect(address, timeout=5), 10)
            assert info.value.name == "org.freedesktop.DBus.Error.NoServer"
            assert f"cannot connect to the bus at {address}: " in str(info.value), str(info.value)
            assert not isinstance(info.value, OSError)
        with pytest.raises(tocsin.InvalidArgumentError) as bad:
            await tocsin.NotificationCenter.connect("garbage-address")
        assert bad.value.field == "address" and "'garbage-address'" in bad.value.message, str(bad.value)
    run(main())
    with pytest.raises(tocsin.TocsinError) as info:
        tocsin.SyncNotificationCenter(missing)
    assert missing in str(info.value)


class LoopErrors:
    """What the loop reports to its exception handler ("Future exception was never retrieved")."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: self.messages.append(f"{context.get('message')}: {context.get('exception')!r}"))

    def collected(self) -> list[str]:
        """Once the connection is let go of: a future nobody retrieved reports itself when collected."""
        import gc
        gc.collect()
        return self.messages


def test_a_call_after_close_is_a_tocsin_error_and_a_stream_opened_after_has_ended(bus: PrivateBus) -> None:
    async def main() -> None:
        errors = LoopErrors()
        c = await tocsin.NotificationCenter.connect(bus.address, timeout=10)
        await c.close()
        started = time.monotonic()
        with pytest.raises(tocsin.TocsinError) as info:
            await c.status()
        assert time.monotonic() - started < 5, "the call waited for a reply on a closed connection"
        assert info.value.name == "org.freedesktop.DBus.Error.Disconnected"
        assert f"Status: the connection to the bus at {bus.address} was closed" in str(info.value), str(info.value)
        with pytest.raises(StopAsyncIteration):
            await c.events().next(5)
        del c, info  # dbus-fast keeps its last write's future as long as the connection
        assert errors.collected() == []
    run(main())


def test_losing_the_bus_makes_calls_tocsin_errors_and_ends_streams_opened_after(bus: PrivateBus) -> None:
    async def main() -> None:
        errors = LoopErrors()
        c = await tocsin.NotificationCenter.connect(bus.address, timeout=10)
        before = c.events()
        bus.close()
        with pytest.raises(StopAsyncIteration):
            await before.next(15)  # the client has seen the bus go
        with pytest.raises(tocsin.TocsinError) as info:
            await c.add(Request(Content("x"), After(5)))
        assert info.value.name == "org.freedesktop.DBus.Error.Disconnected"
        assert f"Schedule: the connection to the bus at {bus.address} was lost" in str(info.value), str(info.value)
        with pytest.raises(StopAsyncIteration):
            await c.events(all_keys=True).next(5)
        await c.close()
        del c, before, info  # dbus-fast keeps its last write's future as long as the connection
        assert errors.collected() == []
    run(main())


def test_a_call_as_the_bus_goes_is_a_tocsin_error(bus: PrivateBus) -> None:
    # Before the client has read the end of the connection: the call itself meets it.
    async def main() -> None:
        c = await tocsin.NotificationCenter.connect(bus.address, timeout=10)
        bus.close()
        with pytest.raises(tocsin.TocsinError) as info:
            await c.status()
        assert info.value.name == "org.freedesktop.DBus.Error.Disconnected", str(info.value)
        assert bus.address in str(info.value)
        await c.close()
    run(main())


def test_the_blocking_facade_after_close_raises_a_tocsin_error_and_its_streams_end(daemon: Daemon) -> None:
    import gc
    import warnings
    c = tocsin.SyncNotificationCenter(daemon.bus.address)
    events = c.events()
    key = c.post(Content("Before close"))
    assert events.next(15).key == key
    c.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for call in (c.status, c.pending, lambda: c.add(Request(Content("x"), After(5))), lambda: c.track(["x"]),
                     lambda: list(c.iter_pending()), c.events):
            with pytest.raises(tocsin.TocsinError) as info:
                call()
            assert info.value.name == "org.freedesktop.DBus.Error.Disconnected"
            assert f"the connection to the bus at {daemon.bus.address} was closed" in str(info.value), str(info.value)
        with pytest.raises(StopAsyncIteration):
            events.next(5)
        assert list(events) == []
        gc.collect()  # a coroutine never awaited warns when it is collected
    assert [str(w.message) for w in caught] == []
    c.close()


def test_ctrl_c_in_a_blocking_wait_for_an_event_keeps_the_event(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import threading
    from tocsin._stream import EventStream

    waiting = threading.Event()
    original = EventStream.__anext__

    async def anext_noting_the_wait(self: EventStream) -> tocsin.Event:
        waiting.set()
        return await original(self)
    monkeypatch.setattr(EventStream, "__anext__", anext_noting_the_wait)

    def press_ctrl_c() -> None:
        if waiting.wait(15):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with tocsin.SyncNotificationCenter(daemon.bus.address) as c:
            events = c.events()
            presser = threading.Thread(target=press_ctrl_c)
            presser.start()
            with pytest.raises(KeyboardInterrupt):
                events.next(15)  # the deadline only bounds a failure: Ctrl-C comes first
            presser.join()
            assert waiting.is_set()
            key = c.post(Content("After Ctrl-C"))
            fired = events.next(15)
            assert isinstance(fired, tocsin.Fired) and fired.key == key, fired
    finally:
        signal.signal(signal.SIGINT, previous)
