#!/usr/bin/python3
"""Print Tocsin's gateway signals as JSON lines, one per event.

Usage: watch-fired.py [--address ADDRESS]   (default: the session bus)

A minimal client of the D-Bus API, written with dbus-python (Debian: python3-dbus, python3-gi).
Each line carries the receive time ("received_us", unix microseconds), so it doubles as a
latency probe: compare it with the "due" of a Fired event.
"""
import json
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

INTERFACE = "io.github.tocsin.Gateway1"
PATH = "/io/github/tocsin/Gateway"


def plain(value):
    """dbus-python values to JSON-friendly Python values."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (dbus.Array, list, tuple, dbus.Struct)):
        return [plain(v) for v in value]
    if isinstance(value, (dbus.String, dbus.ObjectPath, str)):
        return str(value)
    if isinstance(value, (dbus.Double, float)):
        return float(value)
    return int(value)


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    if len(sys.argv) == 3 and sys.argv[1] == "--address":
        bus = dbus.bus.BusConnection(sys.argv[2])
    else:
        bus = dbus.SessionBus()

    def on_signal(*args, **kwargs):
        received = time.time_ns() // 1000
        event = {"event": kwargs["member"], "received_us": received, "args": [plain(a) for a in args]}
        print(json.dumps(event), flush=True)

    bus.add_signal_receiver(on_signal, dbus_interface=INTERFACE, path=PATH, member_keyword="member")
    # Tell the caller the match is in place, so no event is missed after this line.
    print(json.dumps({"event": "ready"}), flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
