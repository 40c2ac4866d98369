#!/usr/bin/env python3
"""A repeating reminder: every N minutes, a given number of times.

    repeat.py --title "Stretch" --every 20min --count 6           # schedule and exit
    repeat.py --title "Stretch" --every 20min --count 6 --follow  # and print each firing until the last

Prints one JSON line when scheduled and, with --follow, one per firing.
"""

from __future__ import annotations

import argparse
import json

import tocsin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", help="bus address (default: the session bus)")
    parser.add_argument("--key", default="repeat")
    parser.add_argument("--title", required=True)
    parser.add_argument("--every", required=True, help="a duration: 20min, 1h, 90s")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--follow", action="store_true")
    args = parser.parse_args()
    with tocsin.SyncNotificationCenter(args.bus) as center:
        events = center.events()
        trigger = tocsin.After(args.every, repeats=True, count=args.count)
        key = center.add(tocsin.Request(tocsin.Content(args.title), trigger, key=args.key))
        print(json.dumps({"scheduled": key, "every": args.every, "count": args.count}), flush=True)
        while args.follow:
            event = events.next()
            if isinstance(event, tocsin.Fired):
                print(json.dumps({"fired": event.key, "occurrence": event.occurrence}), flush=True)
                if event.occurrence >= args.count:
                    break
            elif isinstance(event, tocsin.Cancelled):
                print(json.dumps({"cancelled": event.key}), flush=True)
                break


if __name__ == "__main__":
    main()
