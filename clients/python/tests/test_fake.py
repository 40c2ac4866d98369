"""What the fake adds for an app's tests: a clock that stands still, recorded calls, firing on
demand and pressing buttons, with no bus anywhere."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import tocsin
from tocsin import After, Calendar, Content, Request
from tocsin.testing import Call, FakeNotificationCenter, VirtualClock


async def remind_to_drink(center: tocsin.Center) -> str:
    """A piece of app code under test: it only knows the Center protocol."""
    return await center.add(Request(Content("Drink water", actions={"done": "Done"}, user_info={"glass": "1"}),
                                    After("30min", repeats=True, count=4), key="water"))


def test_an_app_is_tested_without_a_bus_and_its_calls_are_recorded() -> None:
    async def main() -> None:
        center = FakeNotificationCenter()
        events = center.events()
        assert await remind_to_drink(center) == "water"
        assert [c.method for c in center.calls] == ["add"]
        request = center.calls[0].args[0]
        assert isinstance(request, Request) and request.trigger == After("30min", repeats=True, count=4)
        assert center.advance("29min") == [] and events.pending_events() == []
        fired = center.advance("1min")
        assert [e.occurrence for e in fired if isinstance(e, tocsin.Fired)] == [1]
        assert await events.next(0) == fired[0]
        assert center.clock.now() == datetime(2030, 1, 1, 0, 30, tzinfo=timezone.utc)
        center.invoke_action("water", "done")
        assert await events.next(0) == tocsin.ActionInvoked("water", "done", {"glass": "1"})
        rest = center.advance("3h")
        assert [e.occurrence for e in rest if isinstance(e, tocsin.Fired)] == [2, 3, 4]
        assert await center.pending() == [] and len(center.delivered) == 4
    asyncio.run(main())


def test_fire_next_jumps_to_the_next_firing_and_nothing_moves_by_itself() -> None:
    async def main() -> None:
        clock = VirtualClock(datetime(2031, 5, 1, 8, 0, tzinfo=timezone.utc))
        center = FakeNotificationCenter(clock)
        await center.add(Request(Content("Stand-up"), Calendar.every(weekday="Mon..Fri", hour=9, minute=25), key="s"))
        assert clock.now() == datetime(2031, 5, 1, 8, 0, tzinfo=timezone.utc)
        [first] = center.fire_next()
        assert isinstance(first, tocsin.Fired) and first.due == datetime(2031, 5, 1, 9, 25, tzinfo=timezone.utc)
        [second] = center.fire_next()
        assert isinstance(second, tocsin.Fired)
        assert second.due == datetime(2031, 5, 2, 9, 25, tzinfo=timezone.utc), "Thursday, then Friday"
        [third] = center.fire_next()
        assert isinstance(third, tocsin.Fired)
        assert third.due == datetime(2031, 5, 5, 9, 25, tzinfo=timezone.utc), "then Monday"
        assert center.calls_to("add")[0].args[0].key == "s"
    asyncio.run(main())


def test_the_fake_records_refused_calls_too() -> None:
    async def main() -> None:
        center = FakeNotificationCenter()
        try:
            await center.acknowledge("nobody")
        except tocsin.NotFoundError as e:
            assert e.field == "key"
        else:
            raise AssertionError("acknowledging an unknown key must raise")
        assert center.calls == [Call("acknowledge", ("nobody",))]
    asyncio.run(main())


def test_quiet_hours_end_by_themselves_on_the_virtual_clock() -> None:
    async def main() -> None:
        center = FakeNotificationCenter()
        events = center.events(all_keys=True)
        await center.quiet_on(timedelta(hours=1))
        assert (await events.next(0)) == tocsin.QuietChanged(True, "manual", 0, center.clock.now() + timedelta(hours=1))
        center.advance("1h")
        assert (await events.next(0)) == tocsin.QuietChanged(False, "none", 0, None)
        assert not (await center.quiet_status()).active
    asyncio.run(main())


def test_the_fake_and_the_blocking_facade_have_the_real_centers_methods() -> None:
    import inspect

    def public(cls: type) -> set[str]:
        return {n for n, _ in inspect.getmembers(cls, callable) if not n.startswith("_")}
    real = public(tocsin.NotificationCenter) - {"connect"}
    assert real - public(FakeNotificationCenter) == set()
    assert real - public(tocsin.SyncNotificationCenter) == set()
    assert real - {n for n in dir(tocsin.Center) if not n.startswith("_")} == set()
    for cls in (tocsin.NotificationCenter, FakeNotificationCenter, tocsin.SyncNotificationCenter, tocsin.Center):
        assert list(inspect.signature(cls.snooze).parameters)[:3] == ["self", "key", "duration"], cls
