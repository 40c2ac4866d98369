#!/usr/bin/python3
"""Load and burst clients for the Tocsin daemon, written with dbus-python (not our code).

  load.py burst --address ADDR --clients 4 --calls 2500 --out DIR [--at RFC3339]
      Each client (its own process and bus connection) sends its calls asynchronously, at most
      --window unanswered at a time, and logs how each ended, one line per call in DIR/client-N.log:
        ok KEY                 the daemon replied with the key: it must be durable
        refused KEY ERROR      the daemon answered with an error (every 10th call is invalid)
        lost KEY ERROR         the daemon vanished before replying: the outcome is unknown
        failed KEY ERROR       the call never reached a daemon (the name had no owner)
      Prints "replies N" as replies come in, then "done".

  load.py load --address ADDR --clients 20 --seconds 10 [--pid PID] [--out FILE]
      Clients (threads, each its own connection) schedule, list and cancel for --seconds while
      their notifications fire; a separate listener process records every Fired signal. Waits
      until everything that should fire has fired, then prints one JSON summary and exits 1 if
      anything was lost, duplicated or fired after a successful cancel, or any call failed.

  load.py run --clients 100 --seconds 60 [--tocsin PATH]
      The long version, self-contained: a private dbus-daemon, the daemon from PATH (default
      .build/debug/tocsin), `load` against it, and the daemon's own log checked for exactly-once.

Figures and how they were measured: docs/RELIABILITY.md.
"""
import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

DEST = "io.github.tocsin.Gateway"
PATH = "/io/github/tocsin/Gateway"
IFACE = "io.github.tocsin.Gateway1"


def gateway(address):
    import dbus
    bus = dbus.bus.BusConnection(address)
    return bus, dbus.Interface(bus.get_object(DEST, PATH, introspect=False), IFACE)


# MARK: burst

def burst_client(address, index, calls, window, at, out_dir, counter):
    import dbus
    import dbus.mainloop.glib
    from gi.repository import GLib
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    log = open(os.path.join(out_dir, "client-%d.log" % index), "w", buffering=1)
    gw = dbus.Interface(bus.get_object(DEST, PATH, introspect=False), IFACE)
    loop = GLib.MainLoop()
    state = {"next": 0, "open": 0}

    def finished(key, line):
        log.write(line)
        state["open"] -= 1
        with counter.get_lock():
            counter.value += 1
        send_more()

    def classify(key, e):
        name = e.get_dbus_name() or ""
        if name.startswith("io.github.tocsin.") or name == "org.freedesktop.DBus.Error.InvalidArgs":
            kind = "refused"
        elif name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
            kind = "failed"
        else:
            kind = "lost"  # NoReply, Disconnected, ...: the daemon may or may not have made it durable
        finished(key, "%s %s %s\n" % (kind, key, name))

    def send_more():
        while state["open"] < window and state["next"] < calls:
            i = state["next"]
            state["next"] += 1
            key = "b%d-%d" % (index, i)
            spec = {"key": key, "title": key, "at": at}
            if i % 10 == 9:
                spec["at"] = "@1"  # in the past: refused with InvalidTrigger
            state["open"] += 1
            gw.Schedule(dbus.Dictionary(spec, signature="sv"), signature="a{sv}", timeout=120,
                        reply_handler=lambda k, key=key: finished(key, "ok %s\n" % key),
                        error_handler=lambda e, key=key: classify(key, e))
        if state["open"] == 0 and state["next"] >= calls:
            loop.quit()

    GLib.idle_add(lambda: (send_more(), False)[1])
    loop.run()
    log.close()


def burst(args):
    counter = multiprocessing.Value("i", 0)
    procs = [multiprocessing.Process(target=burst_client,
                                     args=(args.address, i, args.calls, args.window, args.at, args.out, counter))
             for i in range(args.clients)]
    for p in procs:
        p.start()
    last = -1
    while any(p.is_alive() for p in procs):
        value = counter.value
        if value != last:
            print("replies %d" % value, flush=True)
            last = value
        time.sleep(0.05)  # progress reporting only; the test waits on these lines
    for p in procs:
        p.join()
    print("replies %d" % counter.value, flush=True)
    print("done", flush=True)
    return 0 if all(p.exitcode == 0 for p in procs) else 1


# MARK: load

def fired_listener(address, path, ready):
    import dbus
    import dbus.mainloop.glib
    from gi.repository import GLib
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    out = open(path, "w", buffering=1)

    def on_fired(key, info):
        out.write("%s %d %s\n" % (key, int(info.get("occurrence", 0)), info.get("reason", "")))

    bus.add_signal_receiver(on_fired, "Fired", IFACE)
    # The match rule is in place once a round trip to the bus has completed.
    bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping", "", ())
    ready.set()
    GLib.MainLoop().run()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def client_group(address, ids, seconds, go, connected, results):
    """One process's share of the clients: each a thread with its own bus connection."""
    import dbus
    lock = threading.Lock()
    expected, cancelled, errors = set(), set(), []
    latencies = {"Schedule": [], "List": [], "Cancel": []}

    def worker(n, bus, gw):
        rnd = random.Random(n)
        mine = []
        i = 0
        while time.monotonic() < deadline:
            i += 1
            op = rnd.random()
            try:
                if op < 0.6 or not mine:
                    key = "L%d-%d" % (n, i)
                    after = rnd.choice(["1s", "2s", "3s", "1500ms", "2500ms"])
                    t0 = time.monotonic()
                    gw.Schedule(dbus.Dictionary({"key": key, "title": "load %s" % key, "after": after,
                                                 "user_info": dbus.Dictionary({"n": str(i)}, signature="ss")},
                                                signature="sv"))
                    dt = time.monotonic() - t0
                    with lock:
                        expected.add(key)
                        latencies["Schedule"].append(dt)
                    mine.append(key)
                elif op < 0.8:
                    t0 = time.monotonic()
                    gw.List()
                    dt = time.monotonic() - t0
                    with lock:
                        latencies["List"].append(dt)
                else:
                    key = mine.pop(rnd.randrange(len(mine)))
                    t0 = time.monotonic()
                    existed = bool(gw.Cancel(key))
                    dt = time.monotonic() - t0
                    with lock:
                        latencies["Cancel"].append(dt)
                        if existed:
                            expected.discard(key)
                            cancelled.add(key)
            except dbus.DBusException as e:
                with lock:
                    errors.append("%s: %s" % (e.get_dbus_name(), e.get_dbus_message()[:200]))
        bus.close()

    # Connected one after another before the clock starts: simultaneous handshakes from one
    # process starve each other past the bus's authentication timeout.
    connections = []
    for n in ids:
        try:
            connections.append((n,) + gateway(address))
        except dbus.DBusException as e:
            errors.append("connect: %s" % e)
    connected.release()
    go.wait()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=worker, args=c) for c in connections]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put({"expected": sorted(expected), "cancelled": sorted(cancelled), "errors": errors, "latencies": latencies})


def load(args):
    import dbus
    fired_path = args.fired or tempfile.mktemp(prefix="tocsin-fired-")
    ready = multiprocessing.Event()
    listener = multiprocessing.Process(target=fired_listener, args=(args.address, fired_path, ready), daemon=True)
    listener.start()
    if not ready.wait(30):
        print(json.dumps({"error": "the Fired listener did not start"}))
        return 1

    max_after = 3.0
    rss = []
    stop = threading.Event()
    # Clients are threads spread over several processes: one Python process's GIL would
    # otherwise cap the call rate, measuring the client instead of the daemon.
    processes = max(1, min(args.processes, args.clients))
    groups = [list(range(g, args.clients, processes)) for g in range(processes)]
    go = multiprocessing.Event()
    connected = multiprocessing.Semaphore(0)
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=client_group, args=(args.address, ids, args.seconds, go, connected, results))
             for ids in groups]
    for p in procs:
        p.start()
    for _ in procs:
        connected.acquire(timeout=120)

    def sampler():
        while not stop.is_set():
            if args.pid:
                try:
                    rss.append((round(time.monotonic() - start, 1), rss_kib(args.pid)))
                except OSError:
                    pass
            stop.wait(1.0)  # a sampling period, not synchronisation

    start = time.monotonic()
    threading.Thread(target=sampler, daemon=True).start()
    go.set()
    expected, cancelled, errors = set(), set(), []
    latencies = {"Schedule": [], "List": [], "Cancel": []}
    for _ in procs:
        r = results.get(timeout=args.seconds + 300)
        expected |= set(r["expected"])
        cancelled |= set(r["cancelled"])
        errors += r["errors"]
        for op, v in r["latencies"].items():
            latencies[op] += v
    for p in procs:
        p.join()
    calls_done = time.monotonic()

    def fired_lines():
        with open(fired_path) as f:
            return [line.split() for line in f if line.strip()]

    # Everything scheduled is due within max_after of the end; wait for it, bounded.
    wait_until = time.monotonic() + max_after + 30
    while time.monotonic() < wait_until:
        keys = {l[0] for l in fired_lines()}
        if expected <= keys:
            break
        time.sleep(0.2)  # polling the listener's file; bounded by wait_until
    # A marker due after everything else: once it fired, any duplicate would have been seen.
    _, gw = gateway(args.address)
    gw.Schedule(dbus.Dictionary({"key": "load-marker", "title": "marker", "after": "2s"}, signature="sv"))
    marker_until = time.monotonic() + 30
    while time.monotonic() < marker_until and not any(l[0] == "load-marker" for l in fired_lines()):
        time.sleep(0.2)
    stop.set()

    counts = {}
    for l in fired_lines():
        counts[l[0]] = counts.get(l[0], 0) + 1
    missing = sorted(k for k in expected if counts.get(k, 0) == 0)
    duplicated = sorted(k for k, c in counts.items() if c > 1)
    after_cancel = sorted(k for k in cancelled if k in counts)
    calls = sum(len(v) for v in latencies.values())
    elapsed = calls_done - start
    warm_samples = [(t, kib) for t, kib in rss if t >= min(10.0, args.seconds / 3)]
    warm = [kib for _, kib in warm_samples]
    slope = 0.0
    if len(warm_samples) >= 2:
        # Least-squares trend after warm-up: flat means no growth per minute under steady load.
        mt = sum(t for t, _ in warm_samples) / len(warm_samples)
        mk = sum(k for _, k in warm_samples) / len(warm_samples)
        den = sum((t - mt) ** 2 for t, _ in warm_samples)
        slope = 60 * sum((t - mt) * (k - mk) for t, k in warm_samples) / den if den else 0.0
    summary = {
        "clients": args.clients, "seconds": round(elapsed, 1), "calls": calls,
        "calls_per_second": round(calls / elapsed, 1) if elapsed else 0,
        "errors": len(errors), "first_errors": errors[:5],
        "scheduled_not_cancelled": len(expected), "cancelled": len(cancelled),
        "fired": sum(1 for k in counts if k != "load-marker"),
        "missing": len(missing), "first_missing": missing[:5],
        "duplicated": len(duplicated), "first_duplicated": duplicated[:5],
        "fired_after_cancel": len(after_cancel), "first_fired_after_cancel": after_cancel[:5],
        "latency_ms": {op: {"p50": round(percentile(v, 50) * 1000, 2), "p99": round(percentile(v, 99) * 1000, 2),
                            "max": round(max(v) * 1000, 2) if v else 0, "n": len(v)} for op, v in latencies.items()},
        "rss_kib": {"first": rss[0][1] if rss else 0, "warm_min": min(warm) if warm else 0,
                    "warm_max": max(warm) if warm else 0, "last": rss[-1][1] if rss else 0, "samples": len(rss),
                    "warm_trend_kib_per_min": round(slope, 1),
                    "every_10s": [kib for t, kib in rss if int(t) % 10 == 0][::1]},
        "expected_keys": sorted(expected) if args.keys else None,
        "cancelled_keys": sorted(cancelled) if args.keys else None,
    }
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(summary) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if not k.endswith("_keys")}), flush=True)
    listener.terminate()
    ok = not errors and not missing and not duplicated and not after_cancel
    return 0 if ok else 1


# MARK: run (long version, self-contained)

def run(args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tocsin = args.tocsin or os.path.join(root, ".build", "debug", "tocsin")
    work = tempfile.mkdtemp(prefix="tocsin-load-")
    os.chmod(work, 0o700)
    bus = subprocess.Popen(["dbus-daemon", "--config-file=%s/contrib/test/dbus-session.conf" % root, "--nofork", "--print-address"],
                           stdout=subprocess.PIPE, text=True)
    address = bus.stdout.readline().strip()
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write('[backend.log]\ntype = "log"\nformat = "json"\n\n[backend.events]\ntype = "dbus-signal"\n')
    log_path = os.path.join(work, "daemon.jsonl")
    daemon = subprocess.Popen([tocsin, "daemon", "--config", config, "--state-dir", work + "/state", "--bus", address],
                              stdout=open(log_path, "w"), stderr=open(work + "/daemon.err", "w"),
                              env=dict(os.environ, HOME=work, TZ="UTC"))
    try:
        subprocess.run(["gdbus", "wait", "--address", address, "--timeout", "30", DEST], check=True)
        args.address = address
        args.pid = daemon.pid
        args.keys = True
        out = os.path.join(work, "summary.json")
        args.out = out
        rc = load(args)
        with open(out) as f:
            summary = json.load(f)
        # Independent check against the daemon's own log: each expected key exactly once.
        counts = {}
        with open(log_path) as f:
            for line in f:
                if line.startswith("{"):
                    k = json.loads(line).get("key")
                    counts[k] = counts.get(k, 0) + 1
        bad = [k for k in summary["expected_keys"] if counts.get(k, 0) != 1]
        bad += [k for k in summary["cancelled_keys"] if counts.get(k, 0) != 0]
        print(json.dumps({"log_check": "ok" if not bad else "failed", "log_mismatches": bad[:10]}), flush=True)
        return rc if not bad else 1
    finally:
        daemon.terminate()
        daemon.wait(10)
        bus.terminate()
        bus.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("burst")
    b.add_argument("--address", required=True)
    b.add_argument("--clients", type=int, default=4)
    b.add_argument("--calls", type=int, default=2500)
    b.add_argument("--window", type=int, default=64)
    b.add_argument("--at", default="+30s")
    b.add_argument("--out", required=True)
    for name in ("load", "run"):
        p = sub.add_parser(name)
        if name == "load":
            p.add_argument("--address", required=True)
            p.add_argument("--pid", type=int, default=0)
        else:
            p.add_argument("--tocsin")
        p.add_argument("--clients", type=int, default=20)
        p.add_argument("--processes", type=int, default=4, help="client processes the clients are spread over")
        p.add_argument("--seconds", type=float, default=10)
        p.add_argument("--out")
        p.add_argument("--fired")
        p.add_argument("--keys", action="store_true", help="include the expected and cancelled keys in the summary")
    args = ap.parse_args()
    if args.command == "burst":
        return burst(args)
    if args.command == "load":
        return load(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
