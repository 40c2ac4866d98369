#!/usr/bin/env python3
"""Issue 17's acceptance at scale: N pending, `tocsin list` shows them all, the daemon never leaves the bus.

Starts a private session bus (the stock session config: messages up to 128 MiB) and
`tocsin daemon` on it with a fresh state directory, schedules N notifications as one client
(64 calls in flight, dbus-fast), then:
  - calls List() (one reply): it must be refused with LimitsExceeded when too large, not sent;
  - runs `tocsin list` and `tocsin list --json` and counts what they show;
  - checks the daemon still owns its name and never logged "lost the bus connection".
Prints one JSON line of figures.

    python3 scripts/list_at_scale.py --tocsin .build/release/tocsin --pending 250000
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

NAME, PATH, IFACE = "io.github.tocsin.Gateway", "/io/github/tocsin/Gateway", "io.github.tocsin.Gateway1"


async def call(bus, member, signature="", body=()):
    reply = await bus.call(Message(destination=NAME, path=PATH, interface=IFACE, member=member,
                                   signature=signature, body=list(body)))
    if reply.message_type == MessageType.ERROR:
        raise RuntimeError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
    return reply.body


async def schedule_all(bus, n, window):
    todo = iter(range(n))
    errors = []

    async def worker():
        for i in todo:
            spec = {"key": Variant("s", f"p{i:06d}"), "title": Variant("s", f"pending {i}"),
                    "body": Variant("s", "far future"), "after": Variant("s", f"{86400 + i}s")}
            try:
                await call(bus, "Schedule", "a{sv}", [spec])
            except RuntimeError as e:
                errors.append(str(e))
    await asyncio.gather(*(worker() for _ in range(window)))
    return errors


def run(cmd, env):
    t = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True)
    return p, round(time.monotonic() - t, 2)


async def main(o):
    tmp = tempfile.mkdtemp(prefix="tocsin-scale-")
    out = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
                         check=True, capture_output=True, text=True).stdout.split()
    address, bus_pid = out[0], int(out[1])
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
    config = os.path.join(tmp, "config.toml")
    with open(config, "w") as f:
        f.write('[daemon]\nmax_pending_per_client = 1000000\n[backend.log]\ntype = "log"\n')
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([o.tocsin, "daemon", "--config", config, "--state-dir", os.path.join(tmp, "state")],
                              env=env, stdout=log, stderr=log, start_new_session=True)
    result = {"pending": o.pending}
    try:
        bus = await MessageBus(bus_address=address).connect()
        deadline = time.monotonic() + 30
        while True:
            r = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                       interface="org.freedesktop.DBus", member="NameHasOwner", signature="s", body=[NAME]))
            if r.body[0]:
                break
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit("the daemon did not come up")
            await asyncio.sleep(0.1)
        t = time.monotonic()
        errors = await schedule_all(bus, o.pending, o.window)
        result["schedule_s"] = round(time.monotonic() - t, 1)
        result["schedule_errors"] = len(errors)
        result["pending_property"] = (await bus.call(Message(
            destination=NAME, path=PATH, interface="org.freedesktop.DBus.Properties", member="Get",
            signature="ss", body=[IFACE, "Pending"]))).body[0].value
        t = time.monotonic()
        try:
            items = (await call(bus, "List"))[0]
            result["List"] = f"answered with {len(items)}"
        except RuntimeError as e:
            result["List"] = str(e)[:200]
        result["List_s"] = round(time.monotonic() - t, 2)
        p, s = run([o.tocsin, "list"], env)
        result["tocsin_list"] = {"exit": p.returncode, "lines": p.stdout.count(b"\n"), "s": s,
                                 "stderr": p.stderr.decode()[:200]}
        p, s = run([o.tocsin, "list", "--json"], env)
        keys = [e["key"] for e in json.loads(p.stdout)] if p.returncode == 0 else []
        result["tocsin_list_json"] = {"exit": p.returncode, "entries": len(keys), "distinct": len(set(keys)),
                                      "all": set(keys) == {f"p{i:06d}" for i in range(o.pending)}, "s": s}
        owner = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                       interface="org.freedesktop.DBus", member="NameHasOwner", signature="s", body=[NAME]))
        result["daemon_owns_name"] = owner.body[0]
        result["daemon_running"] = daemon.poll() is None
        log.flush()
        log.seek(0)
        text = log.read()
        result["lost_the_bus"] = text.count("lost the bus connection")
        with open(f"/proc/{daemon.pid}/status") as f:
            result["daemon_rss_kb"] = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        bus.disconnect()
    finally:
        if daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(30)
        os.kill(bus_pid, signal.SIGTERM)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tocsin", default=".build/release/tocsin")
    ap.add_argument("--pending", type=int, default=250000)
    ap.add_argument("--window", type=int, default=64)
    asyncio.run(main(ap.parse_args()))
