#!/usr/bin/env python3
"""The floor under harness.py's burst figure: what the bus and the harness's subscriber alone cost.

One connection writes BURST `Fired` signals shaped as Tocsin's (the fields of
`GatewayService.firedSignal`), marshalled beforehand, in a single send; a second connection
receives them exactly as `harness.py latency` does (dbus-fast, the same match rule and handler).
Received-minus-sent percentiles are what no daemon could beat on this machine, bus and client:
a daemon that had everything ready at the due instant would still show them.

Prints one JSON line. Run by `tocsin-bench versus`; alone: python3 burst_floor.py [--burst N]
"""
import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import time

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

IFACE, PATH = "io.github.tocsin.Gateway1", "/io/github/tocsin/Gateway"
MATCH = f"type='signal',interface='{IFACE}',member='Fired'"
DBUS = dict(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus")


def now_us():
    return time.time_ns() // 1000


def pct(values, q):
    values = sorted(values)
    return round(values[max(0, math.ceil(q * len(values)) - 1)], 3) if values else None


def fired(i, t):
    info = {"title": Variant("s", f"burst {i}"), "body": Variant("s", "due together"), "due": Variant("x", t),
            "fired": Variant("x", t), "occurrence": Variant("u", 1), "late": Variant("b", False),
            "reason": Variant("s", "scheduled"), "urgency": Variant("s", "normal"),
            "user_info": Variant("a{ss}", {}), "backends": Variant("as", ["events"])}
    return Message.new_signal(PATH, IFACE, "Fired", "sa{sv}", [f"b{i}", info])


async def measure(address, burst):
    sub = await MessageBus(bus_address=address).connect()
    sender = await MessageBus(bus_address=address).connect()
    try:
        await sub.call(Message(member="AddMatch", signature="s", body=[MATCH], **DBUS))
        got, all_in = {}, asyncio.Event()

        def on_message(msg):  # as harness.py's latency test
            if msg.message_type == MessageType.SIGNAL and msg.member == "Fired" and msg.body[0].startswith("b"):
                got[msg.body[0]] = (now_us(), msg.body[1]["fired"].value)
                if len(got) == burst:
                    all_in.set()
        sub.add_message_handler(on_message)
        t = now_us()
        wire = []
        for i in range(burst):
            m = fired(i, t)
            m.serial = 1_000_000 + i
            wire.append(m._marshall(False))
        data = b"".join(wire)
        await sub.call(Message(member="GetId", **DBUS))  # the match is in place
        sent = now_us()
        sender._sock.setblocking(True)
        sender._sock.sendall(data)
        await asyncio.wait_for(all_in.wait(), 60)
        lat = [(r - sent) / 1000 for r, _ in got.values()]
        return {"burst": burst, "received": len(got), **{f"lat_{q}_ms": pct(lat, v) for q, v in
                                                         (("p50", .5), ("p99", .99), ("max", 1))}}
    finally:
        sub.disconnect()
        sender.disconnect()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3, help="measure this many times, report the best p99")
    o = ap.parse_args()
    out = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
                         check=True, capture_output=True, text=True).stdout.split()
    address, bus_pid = out[0], int(out[1])
    try:
        runs = [asyncio.run(measure(address, o.burst)) for _ in range(o.runs)]
    finally:
        os.kill(bus_pid, signal.SIGTERM)
    best = min(runs, key=lambda r: r["lat_p99_ms"])
    print(json.dumps({"test": "burst_floor", **best, "p99_of_runs_ms": [r["lat_p99_ms"] for r in runs]}), flush=True)


if __name__ == "__main__":
    main()
