#!/usr/bin/env python3
"""Auction reminders: 24 h, 3 h and 1 h before an auction ends, and when it ends; all of a lot's
reminders are cancelled at once when it is won.

    auction.py schedule --lot 4711 --title "Vintage camera" --ends 2027-03-14T18:00:00+01:00 --url https://...
    auction.py list                 # each lot and its next reminder
    auction.py won --lot 4711       # the remaining reminders of the lot go, in one call

One notification per lot with `remind_before` carries all four reminders, so the daemon skips
those already past and one cancel removes the rest. Prints one JSON line per command.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta

import tocsin

REMINDERS = (timedelta(hours=24), timedelta(hours=3), timedelta(hours=1), timedelta(0))
PREFIX = "auction-"


def schedule(center: tocsin.SyncNotificationCenter, lot: str, title: str, ends: datetime, url: str | None) -> str:
    content = tocsin.Content(
        title=f"Auction: {title}", body=f"Bidding closes at {ends.isoformat()}",
        user_info={"lot": lot, **({"url": url} if url else {})},
        actions={"open": "Open lot"} if url else {},
    )
    return center.add(tocsin.Request(content, tocsin.RemindBefore(ends, REMINDERS), key=PREFIX + lot))


def won(center: tocsin.SyncNotificationCenter, lot: str) -> bool:
    """Cancels every reminder of the lot still to come (one notification holds them all)."""
    return bool(center.remove(PREFIX + lot))


def lots(center: tocsin.SyncNotificationCenter) -> list[dict[str, str | None]]:
    return [{"lot": p.user_info.get("lot", p.key[len(PREFIX):]), "title": p.title,
             "next_reminder": p.next_fire.isoformat() if p.next_fire else None}
            for p in center.pending() if p.key.startswith(PREFIX)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", help="bus address (default: the session bus)")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("schedule")
    s.add_argument("--lot", required=True)
    s.add_argument("--title", required=True)
    s.add_argument("--ends", required=True, type=datetime.fromisoformat, help="RFC 3339 with an offset")
    s.add_argument("--url")
    w = sub.add_parser("won")
    w.add_argument("--lot", required=True)
    sub.add_parser("list")
    args = parser.parse_args()
    with tocsin.SyncNotificationCenter(args.bus) as center:
        if args.command == "schedule":
            print(json.dumps({"scheduled": schedule(center, args.lot, args.title, args.ends, args.url)}))
        elif args.command == "won":
            print(json.dumps({"lot": args.lot, "cancelled": won(center, args.lot)}))
        else:
            print(json.dumps({"lots": lots(center)}))


if __name__ == "__main__":
    main()
