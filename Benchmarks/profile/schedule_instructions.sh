#!/usr/bin/env bash
# Instructions per D-Bus `Schedule` call, counted by callgrind in every thread of the daemon:
# tocsin's, and the null gateway's (`tocsin-bench null-gateway`, which answers `Schedule` on the
# same D-Bus layer and stores nothing) as the reference in the same run.
#
# Why a count and not a rate: the `Schedule` rate on this two-core VM moves by a tenth between
# runs of the same binary, so a change of a few per cent of the daemon's work cannot be told
# from noise by timing. Instructions are the same for the same binary and workload whatever else
# the machine does (the group commit's batching, which depends on timing, moves them by under 1 %).
#
# Usage: Benchmarks/profile/schedule_instructions.sh TOCSIN TOCSIN_BENCH [CALLS]
#   TOCSIN        a release `tocsin` (its debug info is stripped into a copy: valgrind 3.19 cannot
#                 read the DWARF 5 that Swift's clang writes)
#   TOCSIN_BENCH  a release `tocsin-bench`
#   CALLS         Schedule calls counted, after 200 uncounted ones (default 2000)
# Needs valgrind, dbus-daemon and a Python with dbus-fast (as harness.py). Run from the
# repository root. Prints one line per daemon and their ratio.
set -euo pipefail
tocsin=$1 bench=$2 calls=${3:-2000}
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/schedule.py" <<'EOF'
import asyncio, os, sys
from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

async def main(count, prefix):
    bus = await MessageBus(bus_address=os.environ["DBUS_SESSION_BUS_ADDRESS"]).connect()
    window = asyncio.Semaphore(64)  # as harness.py's scale
    async def one(i):
        async with window:
            reply = await bus.call(Message(
                destination="io.github.tocsin.Gateway", path="/io/github/tocsin/Gateway",
                interface="io.github.tocsin.Gateway1", member="Schedule", signature="a{sv}",
                body=[{"key": Variant("s", f"{prefix}-{i}"), "title": Variant("s", f"n {i}"),
                       "after": Variant("s", "1h")}]))
            if reply.message_type != MessageType.METHOD_RETURN:
                sys.exit(f"Schedule failed: {reply.body}")
    await asyncio.gather(*(one(i) for i in range(count)))

asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
EOF
printf '[daemon]\nmax_pending_per_client = 1000000\n\n[backend.events]\ntype = "dbus-signal"\n' > "$work/perf.toml"
strip --strip-debug -o "$work/tocsin" "$tocsin"
strip --strip-debug -o "$work/bench" "$bench"

# count NAME COMMAND...: instructions per counted call of one daemon, on a bus of its own.
count() {
    local name=$1; shift
    local out="$work/$name.callgrind"
    dbus-daemon --config-file=contrib/test/dbus-session.conf --nofork --print-address=1 > "$work/address" 2>/dev/null &
    local bus=$!
    until [ -s "$work/address" ]; do sleep 0.05; done
    export DBUS_SESSION_BUS_ADDRESS=$(head -1 "$work/address")
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "$@" > /dev/null 2>&1 &
    local daemon=$!
    gdbus wait --session --timeout 120 io.github.tocsin.Gateway
    "$python" "$work/schedule.py" 200 warm
    callgrind_control -i on "$daemon" > /dev/null 2>&1
    "$python" "$work/schedule.py" "$calls" counted
    callgrind_control -i off "$daemon" > /dev/null 2>&1
    callgrind_control -d "$daemon" > /dev/null 2>&1
    kill "$daemon"; wait "$daemon" 2>/dev/null || true
    kill "$bus"; wait "$bus" 2>/dev/null || true
    rm -f "$work/address"
    local total
    total=$(cat "$out"* | awk '/^totals:/ { s += $2 } END { print s }')
    echo $((total / calls))
}

mkdir -p "$work/state"
t=$(count tocsin "$work/tocsin" daemon --config "$work/perf.toml" --state-dir "$work/state")
n=$(count null "$work/bench" null-gateway)
echo "tocsin daemon: $t instructions per Schedule call"
echo "null gateway:  $n instructions per Schedule call"
awk -v t="$t" -v n="$n" 'BEGIN { printf "ratio: %.2fx the null gateway\n", t / n }'
