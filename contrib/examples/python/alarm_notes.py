#!/usr/bin/env python3
"""Alarm notes: a set of alarms kept in a notes file, each ringing until acknowledged; the
nearest one is shown; every alarm is rescheduled when the app starts.

    alarm_notes.py --notes alarms.json add --key wake --title "Wake up" --daily 06:30
    alarm_notes.py --notes alarms.json add --key dentist --title Dentist --at 2027-01-12T09:00:00+01:00
    alarm_notes.py --notes alarms.json start      # (re)schedules every note, prints the nearest
    alarm_notes.py --notes alarms.json ack wake   # stop it ringing
    alarm_notes.py --notes alarms.json remove dentist

The notes file is the app's truth; the daemon's schedule follows it. Ringing needs a `sound`
backend in the daemon's config (see contrib/examples/alarm-clock.toml): `--backend` names it.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

import tocsin

PREFIX = "note-"


def load(path: Path) -> list[dict[str, str]]:
    return json.loads(path.read_text()) if path.exists() else []


def save(path: Path, notes: list[dict[str, str]]) -> None:
    path.write_text(json.dumps(notes, indent=2) + "\n")


def request(note: dict[str, str], backends: list[str]) -> tocsin.Request:
    trigger: tocsin.Trigger
    if "daily" in note:
        hour, minute = (int(x) for x in note["daily"].split(":"))
        trigger = tocsin.Calendar.every(hour=hour, minute=minute, timezone=note.get("timezone"))
    else:
        trigger = tocsin.At(datetime.fromisoformat(note["at"]))
    return tocsin.Request(tocsin.Content(note["title"], backends=backends, user_info={"note": note["key"]}),
                          trigger, key=PREFIX + note["key"])


def start(center: tocsin.SyncNotificationCenter, notes: list[dict[str, str]], backends: list[str]) -> dict[str, object]:
    """Schedules every note again (a note still ringing keeps ringing); a one-off alarm whose time
    has passed is reported and left out. Returns what to show: the nearest alarm."""
    ringing = {p.key for p in center.pending() if p.state in ("ringing", "snoozed")}
    expired = []
    for note in notes:
        if PREFIX + note["key"] in ringing:
            continue
        try:
            center.add(request(note, backends))
        except tocsin.InvalidTriggerError:
            expired.append(note["key"])
    mine = [p for p in center.pending() if p.key.startswith(PREFIX)]
    nearest = mine[0] if mine else None
    return {"scheduled": len(mine), "expired": expired,
            "nearest": None if nearest is None else {
                "key": nearest.key[len(PREFIX):], "title": nearest.title, "state": nearest.state,
                "at": nearest.next_fire.isoformat() if nearest.next_fire else None}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", help="bus address (default: the session bus)")
    parser.add_argument("--notes", type=Path, default=Path("alarm-notes.json"))
    parser.add_argument("--backend", action="append", help="backends to ring on (default: alarm)")
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add")
    a.add_argument("--key", required=True)
    a.add_argument("--title", required=True)
    when = a.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", help="RFC 3339 with an offset")
    when.add_argument("--daily", help="HH:MM")
    a.add_argument("--timezone")
    sub.add_parser("start")
    sub.add_parser("ack").add_argument("key")
    sub.add_parser("remove").add_argument("key")
    args = parser.parse_args()
    backends = args.backend or ["alarm"]
    notes = load(args.notes)
    with tocsin.SyncNotificationCenter(args.bus) as center:
        if args.command == "add":
            note = {k: v for k, v in (("key", args.key), ("title", args.title), ("at", args.at),
                                      ("daily", args.daily), ("timezone", args.timezone)) if v}
            center.add(request(note, backends))
            save(args.notes, [n for n in notes if n["key"] != args.key] + [note])
            print(json.dumps({"added": args.key}))
        elif args.command == "start":
            print(json.dumps(start(center, notes, backends)))
        elif args.command == "ack":
            print(json.dumps({"acknowledged": center.acknowledge(PREFIX + args.key)}))
        else:
            save(args.notes, [n for n in notes if n["key"] != args.key])
            print(json.dumps({"removed": bool(center.remove(PREFIX + args.key))}))


if __name__ == "__main__":
    main()
