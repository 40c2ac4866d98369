#!/usr/bin/env python3
"""A listener that reacts to popup actions and to firings.

    listener.py --key standup --title "Stand-up" --after 5min \
        --action join="Join call" --action later="In 10 minutes" --info url=https://meet.example/daily

schedules a notification with buttons (or, without --title, only listens to the keys given with
--key), then follows its events: each firing is printed; `join` (or a click on the popup) runs
--open with the notification's `url`; `later` schedules it again in --later; Acknowledged and
Cancelled are printed. One JSON line per event and per reaction; `--once` exits after the first
action. asyncio, as an app with its own event loop would use it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess

import tocsin


def pair(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name, value


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


async def react(center: tocsin.NotificationCenter, event: tocsin.Event, args: argparse.Namespace) -> bool:
    """Handles one event; True when the listener is done."""
    if isinstance(event, tocsin.Fired):
        say(event="fired", key=event.key, title=event.title, occurrence=event.occurrence)
        return False
    if isinstance(event, tocsin.ActionInvoked):
        say(event="action", key=event.key, action=event.action, user_info=dict(event.user_info))
        if event.action in ("join", "default"):
            url = event.user_info.get("url", "")
            if args.open and url:
                subprocess.run([*args.open.split(), url], check=False)
            say(reaction="opened", key=event.key, url=url)
        elif event.action == "later":
            content = tocsin.Content(args.title or event.key, actions=dict(args.action), user_info=dict(event.user_info),
                                     backends=args.backend)
            key = await center.add(tocsin.Request(content, tocsin.After(args.later), key=event.key))
            say(reaction="rescheduled", key=key, after=args.later)
        return bool(args.once)
    if isinstance(event, (tocsin.Acknowledged, tocsin.Cancelled)):
        say(event=type(event).__name__.lower(), key=event.key)
    return False


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", help="bus address (default: the session bus)")
    parser.add_argument("--key", action="append", default=[], help="a key to follow (and the key of --title)")
    parser.add_argument("--title")
    parser.add_argument("--after", default="5min")
    parser.add_argument("--action", action="append", type=pair, default=[], help="id=label")
    parser.add_argument("--info", action="append", type=pair, default=[], help="user_info key=value")
    parser.add_argument("--backend", action="append", help="backends (default: the daemon's)")
    parser.add_argument("--later", default="10min")
    parser.add_argument("--open", help="command to open a url with (e.g. xdg-open)")
    parser.add_argument("--once", action="store_true")
    args = parser.parse_args()
    async with await tocsin.NotificationCenter.connect(args.bus) as center:
        events = center.events()
        center.track(args.key)
        if args.title:
            content = tocsin.Content(args.title, actions=dict(args.action), user_info=dict(args.info), backends=args.backend)
            key = await center.add(tocsin.Request(content, tocsin.After(args.after), key=args.key[0] if args.key else None))
            say(event="scheduled", key=key)
        say(event="listening")
        async for event in events:
            if await react(center, event, args):
                break


if __name__ == "__main__":
    asyncio.run(main())
