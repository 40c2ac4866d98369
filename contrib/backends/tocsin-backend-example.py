#!/usr/bin/python3
"""An example Tocsin backend service: implements io.github.tocsin.Backend1 (see
contrib/io.github.tocsin.Backend1.xml) on the bus, the way a chat bridge or a smart-light
controller would, and keeps what it was given until Tocsin withdraws it.

It appends one JSON line per call to --journal (default: standard output), so a person or a
test can see exactly what Tocsin sent. --report makes it answer each delivery the way a person
would: `ack` emits Acknowledge(key), `action:ID` emits ActionInvoked(key, ID). --behave hang
never answers Deliver and --behave crash exits during it, to show that Tocsin copes.

    /usr/bin/python3 contrib/backends/tocsin-backend-example.py --bus-name org.example.Bridge

Needs dbus-python and PyGObject (Debian: python3-dbus, python3-gi).
"""
import argparse
import json
import os
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

INTERFACE = "io.github.tocsin.Backend1"
PATH = "/io/github/tocsin/Backend"


def plain(value):
    """dbus-python values as JSON-friendly Python values (dbus.Boolean is an int subclass)."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    return value


class Permanent(dbus.DBusException):
    _dbus_error_name = INTERFACE + ".Error.Permanent"


class Backend(dbus.service.Object):
    def __init__(self, bus, journal, behave, report):
        super().__init__(bus, PATH)
        self.journal = journal
        self.behave = behave
        self.report = report
        self.shown = {}  # key -> the latest firing: the state a real bridge would keep

    def write(self, record):
        self.journal.write(json.dumps(record, sort_keys=True) + "\n")
        self.journal.flush()

    @dbus.service.method(INTERFACE, in_signature="a{sv}", out_signature="",
                         async_callbacks=("reply", "error"))
    def Deliver(self, firing, reply, error):
        firing = plain(firing)
        self.write({"call": "Deliver", "firing": firing})
        if self.behave == "hang":
            return  # never replies: Tocsin's timeout ends the call
        if self.behave == "crash":
            os._exit(3)
        if not firing.get("title"):
            error(Permanent("a firing needs a title"))
            return
        self.shown[firing["key"]] = firing
        reply()
        if self.report == "ack":
            self.Acknowledge(firing["key"])
        elif self.report.startswith("action:"):
            self.ActionInvoked(firing["key"], self.report[len("action:"):])

    @dbus.service.method(INTERFACE, in_signature="ss", out_signature="")
    def Withdraw(self, key, reason):
        self.write({"call": "Withdraw", "key": str(key), "reason": str(reason),
                    "was_shown": self.shown.pop(str(key), None) is not None})

    @dbus.service.signal(INTERFACE, signature="ss")
    def ActionInvoked(self, key, action):
        pass

    @dbus.service.signal(INTERFACE, signature="s")
    def Acknowledge(self, key):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bus-name", default="io.github.tocsin.ExampleBackend")
    p.add_argument("--address", help="bus address (default: the session bus)")
    p.add_argument("--journal", help="file to append one JSON line per call to (default: stdout)")
    p.add_argument("--behave", choices=["normal", "hang", "crash"], default="normal")
    p.add_argument("--report", default="none", help="none, ack or action:ID, after each delivery")
    args = p.parse_args()
    if args.report not in ("none", "ack") and not args.report.startswith("action:"):
        p.error("--report must be none, ack or action:ID")

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(args.address) if args.address else dbus.SessionBus()
    journal = open(args.journal, "a", encoding="utf-8") if args.journal else sys.stdout
    backend = Backend(bus, journal, args.behave, args.report)
    name = dbus.service.BusName(args.bus_name, bus, do_not_queue=True)
    print("ready", args.bus_name, bus.get_unique_name(), flush=True)
    loop = GLib.MainLoop()
    try:
        loop.run()
    except KeyboardInterrupt:
        pass
    del name, backend


if __name__ == "__main__":
    main()
