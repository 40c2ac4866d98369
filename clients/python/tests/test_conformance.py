"""One suite, two worlds: every test runs against the real daemon on a private bus and against
tocsin.testing.FakeNotificationCenter, so the fake an app tests with behaves as the daemon does."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import tocsin
from conftest import Harness
from tocsin import After, At, Calendar, Content, RemindBefore, Request


def test_a_notification_fires_once_with_its_content_and_is_then_gone(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        key = await c.add(Request(Content("Tea", body="Green", user_info={"cup": "2"}), After(1), key="tea"))
        assert key == "tea"
        h.elapse(1)
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired), fired
        assert (fired.key, fired.title, fired.body, fired.occurrence, fired.late, fired.reason) == \
            ("tea", "Tea", "Green", 1, False, "scheduled")
        assert fired.user_info == {"cup": "2"}
        assert await c.pending() == []
    harness.run(body)


def test_pending_lists_soonest_first_with_content_and_a_generated_key(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        later = await c.add(Request(Content("Later", urgency=tocsin.Urgency.CRITICAL), After("2h")))
        sooner = await c.add(Request(Content("Sooner", user_info={"a": "b"}), After("1h"), key="sooner"))
        assert later.startswith("py-") and sooner == "sooner"
        pending = await c.pending()
        assert [p.key for p in pending] == [sooner, later]
        assert [p.title for p in pending] == ["Sooner", "Later"]
        assert [p.state for p in pending] == ["scheduled", "scheduled"]
        assert pending[0].user_info == {"a": "b"} and pending[1].urgency == "critical"
        first = pending[0].next_fire
        assert first is not None and abs((first - (h.now() + timedelta(hours=1))).total_seconds()) < 5
    harness.run(body)


def test_remove_and_remove_all_cancel_and_say_what_existed(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        for k in ("a", "b", "c"):
            await c.add(Request(Content(k), After("1h"), key=k))
        assert await c.remove(["a", "nope"]) == ["a"]
        assert await events.next(h.timeout) == tocsin.Cancelled("a")
        assert await c.remove_all() == 2
        cancelled = {await events.next(h.timeout), await events.next(h.timeout)}
        assert cancelled == {tocsin.Cancelled("b"), tocsin.Cancelled("c")}
        assert await events.next(h.timeout) == tocsin.CancelledAll(2)
        assert await c.pending() == [] and await c.remove_all() == 0
    harness.run(body)


def test_replace_false_keeps_the_existing_notification(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        await c.add(Request(Content("First"), After("1h"), key="k"))
        await c.add(Request(Content("Second"), After("2h"), key="k", replace=False))
        assert [p.title for p in await c.pending()] == ["First"]
        await c.add(Request(Content("Third"), After("2h"), key="k"))
        assert [p.title for p in await c.pending()] == ["Third"]
    harness.run(body)


def test_wake_is_kept_and_listed(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        await c.add(Request(Content("Up"), After("1h"), key="up", wake=True))
        await c.add(Request(Content("Tea"), After("2h"), key="tea"))
        assert [(p.key, p.wake) for p in await c.pending()] == [("up", True), ("tea", False)]
    harness.run(body)


def test_post_delivers_now(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        key = await c.post(Content("Build finished", user_info={"job": "7"}))
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired)
        assert (fired.key, fired.reason, fired.user_info) == (key, "post-now", {"job": "7"})
    harness.run(body)


def test_post_with_replace_false_keeps_a_pending_notification_and_posts_nothing(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Later"), After("1h"), key="kept"))
        [before] = await c.pending()
        assert await c.post(Content("Now"), key="kept", replace=False) == "kept", "the key of the one kept"
        # With nothing of the key pending it posts as usual.
        assert await c.post(Content("Fresh"), key="fresh", replace=False) == "fresh"
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and fired.key == "fresh", fired
        [after] = await c.pending()
        assert (after.key, after.title, after.state, after.last_fire, after.next_fire) == \
            ("kept", "Later", "scheduled", None, before.next_fire), after
        assert [e.key for e in await c.history(key="kept")] == [], "nothing was posted under the kept key"
        assert events.pending_events() == [], "no event for the kept key"
        assert await c.post(Content("Replaced"), key="kept") == "kept"
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and (fired.key, fired.title) == ("kept", "Replaced"), fired
        assert await c.pending() == [], "replace=True (the default) replaced it"
    harness.run(body)


def test_a_posted_alarm_rings_and_post_with_replace_false_keeps_it(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        assert await c.post(Content("Ring", backends=["alarm", "events"]), key="ring") == "ring"
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and (fired.key, fired.title) == ("ring", "Ring"), fired
        [p] = await c.pending()
        assert (p.key, p.title, p.state, p.rings) == ("ring", "Ring", "ringing", 1), p
        assert p.last_fire == fired.fired and p.trigger.startswith("at "), p
        assert await c.post(Content("Again", backends=["alarm", "events"]), key="ring", replace=False) == "ring"
        assert [(q.key, q.title, q.state) for q in await c.pending()] == [("ring", "Ring", "ringing")]
        assert events.pending_events() == [], "nothing posted while it rings"
        assert await c.acknowledge("ring") is True
        assert await events.next(h.timeout) == tocsin.Acknowledged("ring")
        assert await c.pending() == []
    harness.run(body)


def test_a_repeating_interval_fires_count_times(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Stretch"), After(1, repeats=True, count=3), key="stretch"))
        seen = []
        for _ in range(3):
            h.elapse(1)
            e = await events.next(h.timeout)
            assert isinstance(e, tocsin.Fired)
            seen.append(e.occurrence)
        assert seen == [1, 2, 3]
        assert await c.pending() == []
    harness.run(body)


def test_remind_before_skips_past_offsets_and_says_which_offset_fired(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        end = h.now() + timedelta(hours=1, seconds=2)
        await c.add(Request(Content("Auction"), RemindBefore(end, ["24h", timedelta(hours=3), 3600, 0]), key="lot"))
        [p] = await c.pending()
        assert p.next_fire is not None and abs((p.next_fire - (end - timedelta(hours=1))).total_seconds()) < 1
        h.elapse(2)
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and fired.before == timedelta(hours=1)
        [p] = await c.pending()
        assert p.next_fire is not None and abs((p.next_fire - end).total_seconds()) < 1
    harness.run(body)


def test_a_calendar_built_from_components_fires_at_the_next_match(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        await c.add(Request(Content("Morning"), Calendar.every(hour=7, timezone="UTC"), key="morning"))
        now = h.now()
        expected = now.replace(hour=7, minute=0, second=0, microsecond=0)
        if expected <= now:
            expected += timedelta(days=1)
        [p] = await c.pending()
        assert p.next_fire == expected
    harness.run(body)


def test_written_times_are_read_in_the_daemons_zone(harness: Harness) -> None:
    """systemd's forms as the daemon reads them (docs/CONFIG.md, "Written times"); both worlds
    run in UTC here, the daemon with TZ=UTC and the fake with its default zone."""
    async def body(h: Harness, c: tocsin.Center) -> None:
        await c.add(Request(Content("x"), At("2030-01-01 09:00"), key="local"))
        await c.add(Request(Content("x"), At("Tue 2030-01-01 09:00:30"), key="weekday"))
        await c.add(Request(Content("x"), At("2030-01-02"), key="date"))
        await c.add(Request(Content("x"), At("tomorrow"), key="tomorrow"))
        due = {p.key: p.next_fire for p in await c.pending()}
        utc = timezone.utc
        midnight = (h.now() + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
        assert due == {"local": datetime(2030, 1, 1, 9, tzinfo=utc), "weekday": datetime(2030, 1, 1, 9, 0, 30, tzinfo=utc),
                       "date": datetime(2030, 1, 2, tzinfo=utc), "tomorrow": midnight}, due
        with pytest.raises(tocsin.InvalidArgumentError) as info:
            await c.add(Request(Content("x"), At("Wed 2030-01-01 09:00")))
        assert info.value.field == "at" and "2030-01-01 is a Tuesday, not a Wednesday" in str(info.value), str(info.value)
    harness.run(body)


@pytest.mark.parametrize("row", [
    ("a time already past", lambda now: Request(Content("x"), At(now - timedelta(seconds=5))),
     tocsin.InvalidTriggerError, "at"),
    ("a zero interval", lambda now: Request(Content("x"), After(0)), tocsin.InvalidArgumentError, "after"),
    ("an interval of half a microsecond, written", lambda now: Request(Content("x"), After("0.5us")),
     tocsin.InvalidArgumentError, "after"),
    ("a period under min_period", lambda now: Request(Content("x"), After(0.5, repeats=True)),
     tocsin.InvalidArgumentError, "every"),
    ("an unknown backend", lambda now: Request(Content("x", backends=["nope"]), After(5)),
     tocsin.UnknownBackendError, "backends"),
    ("an empty backends list", lambda now: Request(Content("x", backends=[]), After(5)),
     tocsin.InvalidArgumentError, "backends"),
    ("a key with a space", lambda now: Request(Content("x"), After(5), key="a b"), tocsin.InvalidArgumentError, "key"),
    ("a lone surrogate", lambda now: Request(Content("x\udc80"), After(5)), tocsin.InvalidArgumentError, "title"),
    ("a NUL in user_info", lambda now: Request(Content("x", user_info={"k": "a\0b"}), After(5)),
     tocsin.InvalidArgumentError, "user_info"),
    ("a NUL in a user_info key", lambda now: Request(Content("x", user_info={"k\0j": "v"}), After(5)),
     tocsin.InvalidArgumentError, "user_info"),
    ("a NUL in an action id", lambda now: Request(Content("x", actions={"a\0b": "Label"}), After(5)),
     tocsin.InvalidArgumentError, "actions"),
    ("an empty title", lambda now: Request(Content(""), After(5)), tocsin.InvalidArgumentError, "title"),
    ("an empty action id", lambda now: Request(Content("x", actions={"": "Label"}), After(5)),
     tocsin.InvalidArgumentError, "actions"),
    ("an empty user_info key", lambda now: Request(Content("x", user_info={"": "v"}), After(5)),
     tocsin.InvalidArgumentError, "user_info"),
    ("a naive datetime", lambda now: Request(Content("x"), At(datetime(2030, 1, 1))), tocsin.InvalidArgumentError, "at"),
    ("a wake that is not a boolean", lambda now: Request(Content("x"), After(5), wake="yes"),  # type: ignore[arg-type]
     tocsin.InvalidArgumentError, "wake"),
], ids=lambda row: row[0])
def test_refusals_name_the_field(harness: Harness, row: tuple) -> None:  # type: ignore[type-arg]
    name, make, error, field = row

    async def body(h: Harness, c: tocsin.Center) -> None:
        with pytest.raises(error) as info:
            await c.add(make(h.now()))
        assert info.value.field is not None and info.value.field.split(".")[0].split("[")[0] == field, \
            f"{name}: field {info.value.field!r} in {info.value}"
        assert await c.pending() == [], f"{name}: nothing is scheduled"
    harness.run(body)


def test_acknowledge_and_snooze_of_unknown_or_unfired_keys(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        with pytest.raises(tocsin.NotFoundError) as info:
            await c.acknowledge("nobody")
        assert info.value.field == "key"
        with pytest.raises(tocsin.NotFoundError):
            await c.snooze("nobody", 60)
        await c.add(Request(Content("Later"), After("1h"), key="later"))
        assert await c.acknowledge("later") is False
        with pytest.raises(tocsin.InvalidArgumentError) as info2:
            await c.snooze("later", 60)
        assert info2.value.field == "key"
        # A method's own argument, named as Snooze names `duration`.
        assert info2.value.message == "argument 'key': notification 'later' has not fired yet; there is nothing to snooze"
    harness.run(body)


def test_an_alarm_rings_until_acknowledged(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and fired.key == "wake"
        [p] = await c.pending()
        assert (p.key, p.state, p.rings) == ("wake", "ringing", 1)
        assert await c.acknowledge("wake") is True
        assert await events.next(h.timeout) == tocsin.Acknowledged("wake")
        assert await c.pending() == []
        assert [e.event for e in await c.history(key="wake")] == ["acknowledged", "fired"]
    harness.run(body)


def test_a_snooze_of_a_done_notification_says_what_became_of_it(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        assert isinstance(await events.next(h.timeout), tocsin.Fired)
        assert await c.acknowledge("wake") is True
        await c.add(Request(Content("Tea"), After("1h"), key="tea"))
        assert await c.remove("tea") == ["tea"]
        advice = ": only a pending or ringing one can be snoozed; to be reminded again, schedule it again"
        for key, says in (("wake", "was acknowledged at "), ("tea", "was cancelled at ")):
            with pytest.raises(tocsin.NotFoundError) as info:
                await c.snooze(key, 60)
            message = info.value.message
            assert info.value.field == "key", key
            assert message.startswith(f"notification '{key}' {says}") and message.endswith(advice), message
            when = datetime.fromisoformat(message[len(f"notification '{key}' {says}"):].split(" ")[0].rstrip(":").replace("Z", "+00:00"))
            assert abs((when - h.now()).total_seconds()) < 60, message
        with pytest.raises(tocsin.NotFoundError) as unknown:
            await c.snooze("never", 60)
        assert unknown.value.message == "no notification with key 'never'"
        # Acknowledging what is done has nothing to do (a Dismiss racing another surface's
        # acknowledge); only a key never known is an error.
        assert await c.acknowledge("wake") is False
        assert await c.acknowledge("tea") is False
        with pytest.raises(tocsin.NotFoundError):
            await c.acknowledge("never")
    harness.run(body)


def test_an_alarm_nobody_answers_ends_unanswered(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        assert isinstance(await events.next(h.timeout), tocsin.Fired)
        h.elapse(4)
        assert await events.next(h.timeout) == tocsin.Unanswered("wake", 2)
        [p] = await c.pending()
        assert p.state == "unanswered"
    harness.run(body)


def test_snooze_silences_and_delivers_again(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        assert isinstance(await events.next(h.timeout), tocsin.Fired)
        until = await c.snooze("wake", 1)
        assert abs((until - (h.now() + timedelta(seconds=1))).total_seconds()) < 1
        assert await events.next(h.timeout) == tocsin.Snoozed("wake", until)
        [p] = await c.pending()
        assert p.state == "snoozed" and p.snoozed_until == until
        h.elapse(1)
        again = await events.next(h.timeout)
        assert isinstance(again, tocsin.Fired) and again.key == "wake" and again.reason == "snooze-ended"
        assert await c.acknowledge("wake") is True
    harness.run(body)


def test_history_is_newest_first_and_filtered(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("One"), After(1), key="one"))
        await c.add(Request(Content("Two"), After("1h"), key="two"))
        h.elapse(1)
        await events.next(h.timeout)
        await c.remove("two")
        await events.next(h.timeout)
        entries = await c.history()
        assert [(e.event, e.key) for e in entries[:2]] == [("cancelled", "two"), ("fired", "one")]
        assert [e.key for e in await c.history(key="one")] == ["one"]
        assert len(await c.history(limit=1)) == 1
        with pytest.raises(tocsin.InvalidArgumentError) as info:
            await c.history(limit=10001)
        assert info.value.field == "limit"
        assert entries[1].occurrence == 1 and entries[1].title == "One"
    harness.run(body)


def test_quiet_hours_on_and_off(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events(all_keys=True)
        on = await c.quiet_on("1h")
        assert on.active and on.source == "manual"
        assert on.until is not None and abs((on.until - (h.now() + timedelta(hours=1))).total_seconds()) < 5
        changed = await events.next(h.timeout)
        assert isinstance(changed, tocsin.QuietChanged) and changed.active
        off = await c.quiet_off()
        assert not off.active
        assert not (await c.quiet_status()).active
    harness.run(body)


def test_status_counts_pending_and_names_backends(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        await c.add(Request(Content("x"), After("1h"), key="x"))
        s = await c.status()
        assert s.pending == 1 and s.next_key == "x"
        assert set(s.backends) == {"log", "events", "alarm"}
    harness.run(body)


def test_the_filtered_stream_follows_tracked_keys(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        mine, everything = c.events(), c.events(all_keys=True)
        await c.add(Request(Content("x"), After("1h"), key="x"))
        mine.close()
        await c.remove("x")
        assert await everything.next(h.timeout) == tocsin.Cancelled("x")
        with pytest.raises(StopAsyncIteration):
            await mine.next(h.timeout)
    harness.run(body)


def test_events_of_other_clients_are_filtered_out_unless_asked_or_tracked(harness: Harness) -> None:
    async def body(h: Harness, mine: tocsin.Center) -> None:
        other = await h.other_center()
        try:
            filtered, everything = mine.events(), mine.events(all_keys=True)
            theirs = other.events()
            await other.add(Request(Content("Theirs"), After("1h"), key="theirs"))
            await mine.add(Request(Content("Mine"), After("1h"), key="mine"))
            await other.remove("theirs")
            await mine.remove("mine")
            assert await everything.next(h.timeout) == tocsin.Cancelled("theirs")
            assert await everything.next(h.timeout) == tocsin.Cancelled("mine")
            assert await filtered.next(h.timeout) == tocsin.Cancelled("mine")
            assert filtered.pending_events() == []
            assert await theirs.next(h.timeout) == tocsin.Cancelled("theirs")
            mine.track(["theirs"])
            await other.add(Request(Content("Theirs"), After("1h"), key="theirs"))
            assert [p.key for p in await mine.pending()] == ["theirs"], "one daemon, whoever scheduled"
            await other.remove("theirs")
            assert await filtered.next(h.timeout) == tocsin.Cancelled("theirs")
        finally:
            await other.close()
    harness.run(body)


ZERO = "the interval must be longer than zero"


@pytest.mark.parametrize("row", [
    # (name, call, field, message, exact): an inexact message is the start of the daemon's (the
    # fake does not add the daemon's "(expected ...)" ending to an unknown unit).
    ("snooze for an unknown unit", lambda c: c.snooze("wake", "5parsecs"), "duration",
     "argument 'duration': unknown time unit 'parsecs'", False),
    ("snooze for zero", lambda c: c.snooze("wake", 0), "duration", f"argument 'duration': {ZERO} (column 1 of '0s')", True),
    # Under the microsecond the daemon counts in: zero to it, whatever form it is given in.
    ("snooze for a tenth of a microsecond", lambda c: c.snooze("wake", 1e-7), "duration",
     f"argument 'duration': {ZERO} (column 1 of '0s')", True),
    ("snooze for half a microsecond, written", lambda c: c.snooze("wake", "0.5us"), "duration",
     f"argument 'duration': {ZERO} (column 1 of '0.5us')", True),
    ("snooze for a tenth of a microsecond, written in seconds", lambda c: c.snooze("wake", " 0.0000001s"), "duration",
     f"argument 'duration': {ZERO} (column 2 of ' 0.0000001s')", True),
    ("snooze shorter than min_period", lambda c: c.snooze("wake", "500ms"), "duration",
     "argument 'duration': 500ms is below [daemon] min_period (1s); a notification may fire at most once per min_period", True),
    ("quiet for an unknown unit", lambda c: c.quiet_on("3parsecs"), "for", "field 'for': unknown time unit 'parsecs'", False),
    # The argument is named once, not again as "invalid 'for': ".
    ("quiet for zero", lambda c: c.quiet_on(0), "for", f"field 'for': {ZERO} (column 1 of the value)", True),
    ("quiet for a tenth of a microsecond", lambda c: c.quiet_on(1e-7), "for", f"field 'for': {ZERO} (column 1 of the value)", True),
    ("quiet for half a microsecond, written", lambda c: c.quiet_on("0.5us"), "for",
     f"field 'for': {ZERO} (column 1 of the value)", True),
], ids=lambda row: row[0])
def test_bad_durations_in_calls_name_the_argument(harness: Harness, row: tuple) -> None:  # type: ignore[type-arg]
    name, call, field, message, exact = row

    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        assert isinstance(await events.next(h.timeout), tocsin.Fired)
        with pytest.raises(tocsin.InvalidArgumentError) as info:
            await call(c)
        assert info.value.field == field, f"{name}: {info.value}"
        if exact:
            assert info.value.message == message, f"{name}: {info.value.message}"
        else:
            assert info.value.message.startswith(message), f"{name}: {info.value.message}"
        [p] = await c.pending()
        assert p.state in ("ringing", "unanswered"), f"{name}: the refused call changed nothing"
        assert not (await c.quiet_status()).active, f"{name}: the refused call changed nothing"
    harness.run(body)


def test_a_deadline_raises_the_builtin_timeout_error(harness: Harness) -> None:
    # `except TimeoutError` must catch it on every supported Python (before 3.11,
    # asyncio.wait_for raises asyncio.TimeoutError, which is not the builtin).
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        try:
            await events.next(0.05)
        except TimeoutError:
            pass
        else:
            raise AssertionError("next() returned with nothing to return")
    harness.run(body)


@pytest.mark.parametrize("row", [
    ("post with an empty title", lambda c, now: c.post(Content("")), tocsin.InvalidArgumentError, "title"),
    ("post with an empty action id", lambda c, now: c.post(Content("x", actions={"": "Label"})),
     tocsin.InvalidArgumentError, "actions"),
    ("a title of 4097 bytes", lambda c, now: c.add(Request(Content("é" * 2048 + "x"), After(60))),
     tocsin.InvalidArgumentError, "title"),
    ("a body of 65537 bytes", lambda c, now: c.post(Content("x", body="b" * 65537)), tocsin.InvalidArgumentError, "body"),
    ("an icon of 4097 bytes", lambda c, now: c.post(Content("x", icon="i" * 4097)), tocsin.InvalidArgumentError, "icon"),
    ("17 actions", lambda c, now: c.post(Content("x", actions={f"a{i}": "A" for i in range(17)})),
     tocsin.InvalidArgumentError, "actions"),
    ("an action label of 4097 bytes", lambda c, now: c.post(Content("x", actions={"a": "L" * 4097})),
     tocsin.InvalidArgumentError, "actions"),
    ("65 user_info entries", lambda c, now: c.post(Content("x", user_info={f"k{i}": "v" for i in range(65)})),
     tocsin.InvalidArgumentError, "user_info"),
    ("user_info of 65537 bytes", lambda c, now: c.post(Content("x", user_info={"k": "v" * 65536})),
     tocsin.InvalidArgumentError, "user_info"),
    ("a backend named twice", lambda c, now: c.post(Content("x", backends=["log", "log"])),
     tocsin.InvalidArgumentError, "backends"),
    ("count 0", lambda c, now: c.add(Request(Content("x"), After(60, repeats=True, count=0))),
     tocsin.InvalidArgumentError, "count"),
    ("count past int64", lambda c, now: c.add(Request(Content("x"), After(60, repeats=True, count=2**64))),
     tocsin.InvalidArgumentError, "count"),
    ("an unknown missed", lambda c, now: c.add(Request(Content("x"), After(60), missed="sometimes")),
     tocsin.InvalidArgumentError, "missed"),
    ("an unknown urgency", lambda c, now: c.add(Request(Content("x", urgency="meh"), After(60))),
     tocsin.InvalidArgumentError, "urgency"),
    ("an unknown dst_gap", lambda c, now: c.add(Request(Content("x"), Calendar("*-*-* 07:00", dst_gap="nah"))),
     tocsin.InvalidArgumentError, "dst_gap"),
    ("an unknown dst_fold", lambda c, now: c.add(Request(Content("x"), Calendar("*-*-* 07:00", dst_fold="nah"))),
     tocsin.InvalidArgumentError, "dst_fold"),
    ("max_late that is no duration", lambda c, now: c.add(Request(Content("x"), After(60), max_late="soon")),
     tocsin.InvalidArgumentError, "max_late"),
    ("until in the past", lambda c, now: c.add(Request(Content("x"), After(60, repeats=True,
                                                                          until=now - timedelta(days=1)))),
     tocsin.InvalidTriggerError, "every"),
    ("until before the first firing", lambda c, now: c.add(Request(Content("x"), After(60, repeats=True, until="+30s"))),
     tocsin.InvalidTriggerError, "every"),
    ("reminders closer than min_period", lambda c, now: c.add(Request(Content("x"), RemindBefore("+1d", ["1h", "3600.5s"]))),
     tocsin.InvalidArgumentError, "remind_before"),
    ("no reminder offsets", lambda c, now: c.add(Request(Content("x"), RemindBefore("+1d", []))),
     tocsin.InvalidArgumentError, "remind_before"),
    ("65 reminder offsets", lambda c, now: c.add(Request(Content("x"), RemindBefore("+100d", [f"{i}h" for i in range(65)]))),
     tocsin.InvalidArgumentError, "remind_before"),
    ("every reminder past", lambda c, now: c.add(Request(Content("x"), RemindBefore("+1h", ["2h"]))),
     tocsin.InvalidTriggerError, "remind_before"),
    ("an unknown time zone", lambda c, now: c.add(Request(Content("x"), Calendar("*-*-* 07:00", timezone="Mars/Base"))),
     tocsin.InvalidTriggerError, "timezone"),
    ("a weekday range that runs backwards", lambda c, now: c.add(Request(Content("x"), Calendar("Fri..Mon 09:00"))),
     tocsin.InvalidArgumentError, "on_calendar"),
    ("Calendar.every with a weekday range that runs backwards",
     lambda c, now: c.add(Request(Content("x"), Calendar.every(weekday="Fri..Mon", hour=9))),
     tocsin.InvalidArgumentError, "on_calendar"),
    ("an interval past year 9999", lambda c, now: c.add(Request(Content("x"), After("292000y"))),
     tocsin.InvalidArgumentError, "after"),
    ("a reminder offset past year 9999", lambda c, now: c.add(Request(Content("x"), RemindBefore("+1d", ["292000y"]))),
     tocsin.InvalidArgumentError, "remind_before"),
    ("history since a naive datetime", lambda c, now: c.history(since=datetime(2020, 1, 1)),
     tocsin.InvalidArgumentError, "since"),
    ("history since a string", lambda c, now: c.history(since="2020-01-01"),
     tocsin.InvalidArgumentError, "since"),
    ("a negative page size", lambda c, now: c.pending(-1), tocsin.InvalidArgumentError, "page_size"),
    ("quiet for and until", lambda c, now: c.quiet_on("1h", "07:00"), tocsin.InvalidArgumentError, "for"),
    ("quiet until the past", lambda c, now: c.quiet_on(until=now - timedelta(days=1)),
     tocsin.InvalidArgumentError, "until"),
    ("quiet for past year 9999", lambda c, now: c.quiet_on("292000y"), tocsin.InvalidArgumentError, "for"),
    ("a snooze past year 9999", lambda c, now: c.snooze("nobody", "292000y"), tocsin.InvalidArgumentError, "duration"),
    ("post with a replace that is not a boolean", lambda c, now: c.post(Content("x"), replace="no"),
     tocsin.InvalidArgumentError, "replace"),
], ids=lambda row: row[0])
def test_the_fake_refuses_what_the_daemon_refuses(harness: Harness, row: tuple) -> None:  # type: ignore[type-arg]
    name, call, error, field = row

    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events(all_keys=True)
        with pytest.raises(tocsin.TocsinError) as info:
            await call(c, h.now())
        assert type(info.value) is error and info.value.field == field, \
            f"{name}: {type(info.value).__name__} naming {info.value.field!r}: {info.value}"
        assert await c.pending() == [] and not (await c.quiet_status()).active, f"{name}: nothing changed"
        assert events.pending_events() == [], f"{name}: nothing was signalled"
    harness.run(body)


def test_quiet_until_a_written_time_ends_then(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        soon = await c.quiet_on(until="+2h")
        assert soon.until is not None and abs((soon.until - (h.now() + timedelta(hours=2))).total_seconds()) < 5, soon
        await c.quiet_off()
        seven = await c.quiet_on(until="07:00")
        assert seven.until is not None and seven.until.time() == datetime(2000, 1, 1, 7).time(), seven
        assert timedelta(0) < seven.until - h.now() <= timedelta(days=1), seven
        await c.quiet_off()
    harness.run(body)



def test_the_same_key_twice_is_removed_once(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("x"), After("1h"), key="dup"))
        assert await c.remove(["dup", "dup"]) == ["dup"]
        assert await events.next(h.timeout) == tocsin.Cancelled("dup")
        assert await c.pending() == []
        assert [e.event for e in await c.history(key="dup")] == ["cancelled"]
    harness.run(body)


def test_iter_pending_wait_for_daemon_async_with_and_the_snooze_keyword(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        for k in ("b", "a"):
            await c.add(Request(Content(k), After(f"{2 if k == 'a' else 1}h"), key=k))
        assert [p.key async for p in c.iter_pending(page_size=1)] == ["a", "b"], "key order, page by page"
        await c.wait_for_daemon(h.timeout)
        await c.add(Request(Content("Wake up", backends=["alarm", "events"]), After(1), key="wake"))
        h.elapse(1)
        assert isinstance(await events.next(h.timeout), tocsin.Fired)
        until = await c.snooze("wake", duration=60)
        assert abs((until - (h.now() + timedelta(seconds=60))).total_seconds()) < 5
        with pytest.warns(DeprecationWarning, match="duration_"):
            again = await c.snooze("wake", duration_=120)
        assert abs((again - (h.now() + timedelta(seconds=120))).total_seconds()) < 5
        async with await h.other_center() as other:
            assert {p.key for p in await other.pending()} == {"a", "b", "wake"}
    harness.run(body)


def test_events_and_pending_entries_are_hashable_values(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        events = c.events()
        await c.add(Request(Content("Later", user_info={"cup": "2"}), After("1h"), key="later"))
        key = await c.post(Content("Now", user_info={"cup": "2"}))
        fired = await events.next(h.timeout)
        assert isinstance(fired, tocsin.Fired) and fired.key == key, fired
        twin = tocsin.Fired(**{f: getattr(fired, f) for f in fired.__dataclass_fields__ if f != "user_info"},
                            user_info={"cup": "2"})
        assert twin == fired and hash(twin) == hash(fired)
        assert {fired, twin, tocsin.Cancelled(key)} == {fired, tocsin.Cancelled(key)}
        assert fired.user_info == {"cup": "2"} and dict(fired.user_info) == {"cup": "2"}
        with pytest.raises(TypeError):
            fired.user_info["cup"] = "3"  # type: ignore[index]
        pending = await c.pending()
        assert len({*pending, *await c.pending()}) == 1 and pending[0].user_info == {"cup": "2"}
        status = await c.status()
        assert hash(status) == hash(status) and set(status.backends) == {"log", "events", "alarm"}
    harness.run(body)


def test_pending_describes_triggers_as_the_daemon_does(harness: Harness) -> None:
    def utc(t: datetime | None) -> str:
        assert t is not None
        t = t.astimezone(timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{t.microsecond:06d}".rstrip("0") if t.microsecond else "") + "Z"

    async def body(h: Harness, c: tocsin.Center) -> None:
        event = datetime(2035, 6, 1, 12, 0, tzinfo=timezone.utc)
        written = {
            "at": (At(event), "at 2035-06-01T12:00:00Z"),
            "at-fraction": (At(event + timedelta(microseconds=500000)), "at 2035-06-01T12:00:00.5Z"),
            "every-from": (After("1d", repeats=True, starting=event, count=3, until=event + timedelta(days=30)),
                           "every 1d from 2035-06-01T12:00:00Z, 3 times, until 2035-07-01T12:00:00Z"),
            "every-once": (After(90, repeats=True, starting=event, count=1), "every 1min 30s from 2035-06-01T12:00:00Z, once"),
            "calendar": (Calendar("07:30"), "*-*-* 07:30:00 UTC"),
            "calendar-zone": (Calendar("Fri,Mon,Tue,Wed 7:05", "Europe/Berlin", dst_gap="shift"),
                              "Mon..Wed,Fri *-*-* 07:05:00 Europe/Berlin, dst_gap=shift"),
            "components": (Calendar.every(weekday="Sat,Sun", hour=[9, 7], minute=range(0, 3)),
                           "Sat,Sun *-*-* 07,09:00..02:00 UTC"),
            "remind": (RemindBefore(event, ["24h", "90s", 0, timedelta(hours=1, seconds=1.5)]),
                       "1d, 1min 30s, 0s, 1h 1.500000s before 2035-06-01T12:00:00Z"),
            # Equal offsets are one reminder: listed once.
            "remind-equal": (RemindBefore(event, ["1h", 3600, "1s", "1s", 0]), "1h, 1s, 0s before 2035-06-01T12:00:00Z"),
        }
        for key, (trigger, _) in written.items():
            await c.add(Request(Content(key), trigger, key=key))
        await c.add(Request(Content("x"), After("2h"), key="after"))
        await c.add(Request(Content("x"), After(3725, repeats=True, count=2), key="every"))
        pending = {p.key: p for p in await c.pending()}
        assert {k: pending[k].trigger for k in written} == {k: d for k, (_, d) in written.items()}
        assert pending["after"].trigger == f"at {utc(pending['after'].next_fire)}"
        assert pending["every"].trigger == f"every 1h 2min 5s from {utc(pending['every'].next_fire)}, 2 times"
    harness.run(body)


def test_status_names_the_next_firing_that_wakes_the_machine(harness: Harness) -> None:
    async def body(h: Harness, c: tocsin.Center) -> None:
        assert (await c.status()).wake_next_key is None
        await c.add(Request(Content("Sooner, no wake"), After("1h"), key="sooner"))
        await c.add(Request(Content("Wake for it"), After("2h"), key="wake", wake=True))
        await c.add(Request(Content("Later wake"), After("3h"), key="later", wake=True))
        s = await c.status()
        wake_next = next(p.next_fire for p in await c.pending() if p.key == "wake")
        assert (s.next_key, s.wake_next_key, s.wake_next) == ("sooner", "wake", wake_next)
        assert s.wake == "available" or s.wake.startswith(("off ", "unavailable: ")), s.wake
        # Armed 30 s ahead where the machine can wake (the daemon's timer keeps it to a microsecond).
        assert wake_next is not None
        if s.wake == "available":
            assert s.wake_armed is not None and abs(s.wake_armed - (wake_next - timedelta(seconds=30))) < timedelta(milliseconds=1), s
        assert s.sleep.startswith(("watching logind", "off: ")), s.sleep
    harness.run(body)
