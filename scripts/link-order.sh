#!/usr/bin/env bash
# Writes scripts/tocsin.link-order, the order in which scripts/build-release.sh asks the linker to
# lay out `tocsin`: the functions a desktop session runs first, together, then the data the idle
# daemon touches.
#   bash scripts/link-order.sh [TOCSIN]     TOCSIN: a release tocsin (default: build-release.sh's)
#
# Why: the kernel maps a program's code into its memory 64 KB at a time around each page it runs
# (fault-around), so an idle daemon's resident code is every 64 KB window that holds one function
# it ran. The linker's default order scatters the ~8,000 functions a session runs over the 13 MB
# of code, and the idle daemon held 8 MB of it. Packed together they take about 5 MB (measured in
# docs/BENCHMARKS.md, "Footprint"). Functions stay in separate sections for this
# (build-release.sh's -function-sections).
#
# How: callgrind records every function one daemon runs (started with the footprint benchmark's
# configuration under Xvfb and dunst, scheduling, firing, acknowledging and reloading) and every
# function each `tocsin` command runs against it. The list keeps them in four groups, each packed:
# what the daemon runs from start until it is idle (all an idle daemon keeps mapped), then what it
# runs to answer the commands a status bar and a day's scheduling send, then the rest of what it
# runs (firing, acknowledging, reloading), then the commands' own. callgrind_control dumps the
# daemon's profile between the phases. Names the binary does not define (the C libraries') are
# left out. Names are stable across builds of the same code; after the code changes, names that
# no longer exist are ignored by the linker, and build-release.sh prints how many still match:
# regenerate when that falls.
#
# Data too, last in the list: the read-only data and the zeroed data (.rodata, .bss) the daemon
# reads or writes from start until it is idle. The same fault-around maps .rodata 64 KB at a
# time, and the few hundred bytes of constants and metadata caches that each module touches at
# start were spread over all 2 MB of it; a .bss page costs memory of its own once written.
# valgrind's lackey traces every load and store of a second daemon; each address in those two
# sections is named by the symbol at or below it, whose section the linker then places first (a
# section with no symbol of its own, such as a C++ function's jump table, cannot be named: it
# stays where it was, and the symbol before it is placed first for nothing).
#
# Needs valgrind, python3, dbus-daemon, Xvfb, dunst and gdbus. Takes about two minutes. Run from
# anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
tocsin="${1:-$root/.build-release-static/release/tocsin}"
out="$root/scripts/tocsin.link-order"
for tool in valgrind callgrind_control dbus-daemon Xvfb dunst gdbus nm readelf python3 mkfifo; do
  command -v "$tool" >/dev/null || { echo "link-order: $tool is not installed" >&2; exit 1; }
done
[ -x "$tocsin" ] || { echo "link-order: no $tocsin (run scripts/build-release.sh first)" >&2; exit 1; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 that Swift's clang writes; the symbol table is enough.
strip --strip-debug -o "$work/tocsin" "$tocsin"
bin="$work/tocsin"
mkdir -p "$work/cli" "$work/daemon"
cli() {
  valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-instr=no \
    --callgrind-out-file="$work/cli/%p" "$bin" "$@" > /dev/null 2>&1 || true
}

dbus-daemon --config-file=contrib/test/dbus-session.conf --nofork --print-address=1 > "$work/address" 2>/dev/null &
until [ -s "$work/address" ]; do sleep 0.05; done
export DBUS_SESSION_BUS_ADDRESS=$(head -1 "$work/address")
export HOME="$work" XDG_CONFIG_HOME="$work/config" XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data"
display=$(for d in $(seq 90 199); do [ -e "/tmp/.X$d-lock" ] || { echo "$d"; break; }; done)
Xvfb ":$display" -nolisten tcp -screen 0 800x600x24 > /dev/null 2>&1 &
until [ -e "/tmp/.X11-unix/X$display" ]; do sleep 0.05; done
DISPLAY=":$display" dunst > /dev/null 2>&1 &
gdbus wait --session --timeout 20 org.freedesktop.Notifications

# tocsin-bench footprint's configuration (the built-in default) and a calendar notification.
cat > "$work/tocsin.toml" <<'EOF'
[daemon]
missed = "fire-once"
max_pending_per_client = 1000000

[backend.desktop]
type = "libnotify"

[backend.events]
type = "dbus-signal"

[backend.log]
type = "log"

[[notification]]
key = "weekday"
title = "Stand-up"
on_calendar = "Mon..Fri 09:25"

EOF
cp "$work/tocsin.toml" "$work/data.toml"
valgrind --tool=callgrind --demangle=no --compress-strings=no --dump-instr=no \
  --callgrind-out-file="$work/daemon/%p" "$bin" daemon --config "$work/tocsin.toml" \
  --state-dir "$work/st" > "$work/daemon.log" 2>&1 &
daemon=$!
gdbus wait --session --timeout 120 io.github.tocsin.Gateway
# Idle: no CPU time used for a second (the daemon arms its timers and waits). With the data trace,
# the filter's time counts too: a daemon blocked on a full pipe uses none while it is still busy.
cpu_time() {
  local pid total=0
  for pid in "$daemon" ${filter:-}; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
  done
  echo "$total"
}
settled() {
  local deadline=$((SECONDS + 120)) before after
  after=$(cpu_time)
  while [ $SECONDS -lt $deadline ]; do
    sleep 1
    before=$after
    after=$(cpu_time)
    [ "$after" != "$before" ] || return 0
  done
  echo "link-order: the daemon did not become idle" >&2
  exit 1
}
# Has callgrind write what the daemon ran so far to $work/daemon/PID.N. callgrind_control exits 0
# even when it reached no callgrind (vgdb needs ptrace), so the file is what tells.
dump() {
  callgrind_control --dump "$daemon" > "$work/dump-$1.log" 2>&1 || true
  local deadline=$((SECONDS + 60))
  until [ -s "$work/daemon/$daemon.$1" ]; do
    if [ $SECONDS -ge $deadline ]; then
      echo "link-order: callgrind wrote no dump $1 of the daemon:" >&2
      cat "$work/dump-$1.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}
settled
dump 1

cli status
cli schedule --title x --after 1h
cli list
for i in $(seq 200); do
  gdbus call --session --dest io.github.tocsin.Gateway --object-path /io/github/tocsin/Gateway \
    --method io.github.tocsin.Gateway1.Schedule "{'key': <'fill-$i'>, 'title': <'n $i'>, 'after': <'1h'>}" > /dev/null
done
cli next 'Mon..Fri 09:25' --count 3
cli check contrib/examples/alarm-clock.toml
settled
dump 2

# A repeat from the configuration, added by a reload so that it fires only in this phase.
cat >> "$work/tocsin.toml" <<'EOF'

[[notification]]
key = "tick"
title = "tick"
every = "2s"
count = 2
EOF
cli reload
cli schedule --key soon --title soon --after 2s
cli schedule --key ring --title ring --after 2s --action snooze=Snooze
cli schedule --key cal --title cal --on-calendar 'Mon..Fri 09:25' --timezone Europe/Berlin
cli schedule --key auction --title auction --at +2d --remind-before 24h --remind-before 1h
cli schedule --key rep --title rep --every 1h --count 3
cli list
cli check contrib/examples/standup.toml
# The firings of tick, soon and ring (the daemon runs about fifty times slower under callgrind).
gdbus monitor --session --dest io.github.tocsin.Gateway > "$work/signals" &
monitor=$!
deadline=$((SECONDS + 60))
until [ "$(grep -c "Fired" "$work/signals" || true)" -ge 4 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
kill "$monitor"
cli snooze ring 1m
cli ack ring
cli history
cli post --title now
cli quiet
cli reload
cli cancel rep
cli --help
kill -TERM "$daemon"
wait "$daemon" || true
profiled=$daemon

# The data a second daemon touches from start until idle (header). lackey writes a line per
# access (" L 0010a8c0,8"); the filter keeps each 8-byte granule an access covers, in first-touch
# order (every address of the process: data_names keeps the binary's, relative to where valgrind
# loaded it).
mkfifo "$work/trace"
python3 -c '
import re, sys
line = re.compile(rb"^ [LSM] ([0-9a-f]+),([0-9]+)", re.M)
seen, rest = {}, b""
while chunk := sys.stdin.buffer.read1(1 << 24):
    rest += chunk
    end = rest.rfind(b"\n") + 1
    for m in line.finditer(rest, 0, end):
        a = int(m.group(1), 16)
        for g in range(a >> 3, (a + max(int(m.group(2)), 1) - 1 >> 3) + 1):
            seen.setdefault(g, None)
    rest = rest[end:]
sys.stdout.write("".join(f"{g << 3:x}\n" for g in seen))
' < "$work/trace" > "$work/data-touched" &
filter=$!
valgrind --tool=lackey --trace-mem=yes --log-fd=9 "$bin" daemon --config "$work/data.toml" \
  --state-dir "$work/data-st" 9> "$work/trace" > "$work/data.log" 2>&1 &
daemon=$!
gdbus wait --session --timeout 120 io.github.tocsin.Gateway
# Idle, then idle a few seconds more: what the daemon does just after start (a timer's task)
# touches data an idle daemon keeps.
settled
sleep 5
settled
base=$(awk -v bin="$bin" '$6 == bin { split($1, r, "-"); print r[1]; exit }' "/proc/$daemon/maps")
[ -n "$base" ] || { echo "link-order: $bin is not in the lackey run's maps" >&2; exit 1; }
kill -TERM "$daemon"
wait "$daemon" || true
wait "$filter"
[ -s "$work/data-touched" ] || { echo "link-order: the lackey run traced nothing (see $work/data.log)" >&2; cat "$work/data.log" >&2; exit 1; }
# Each touched address in .rodata or .bss, named by the data symbol at or below it.
data_names() {
  python3 - "$bin" "$base" "$work/data-touched" <<'PY'
import bisect, re, subprocess, sys
binary, base, touched = sys.argv[1], int(sys.argv[2], 16), sys.argv[3]
ranges = []
for l in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\.rodata|\.bss)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", l)
    if m:
        ranges.append((int(m.group(2), 16), int(m.group(2), 16) + int(m.group(3), 16)))
syms = []
for l in subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    f = l.split(" ", 2)
    if len(f) == 3 and f[1] in "bBdDrRVvu":
        syms.append((int(f[0], 16), f[2]))
starts = [a for a, _ in syms]
seen = set()
for l in open(touched):
    a = int(l, 16) - base
    if not any(lo <= a < hi for lo, hi in ranges):
        continue
    i = bisect.bisect_right(starts, a) - 1
    if i >= 0 and syms[i][1] not in seen:
        seen.add(syms[i][1])
        print(syms[i][1])
PY
}
# Every protocol conformance descriptor too: a conformance lookup that misses the runtime's cache
# reads all of them, so one such lookup (a cast) maps every page that holds one.
data_names > "$work/data-traced"
[ -s "$work/data-traced" ] || { echo "link-order: no .rodata or .bss symbol was touched; is $bin stripped?" >&2; exit 1; }
{ cat "$work/data-traced"; nm --defined-only "$bin" | awk '$3 ~ /Mc$/ { print $3 }'; } | awk '!seen[$0]++' > "$work/data-names"

defined="$work/defined"
nm --defined-only "$bin" | awk '{ print $3 }' | sort -u > "$defined"
names() { cat "$@" | awk '/^fn=/ { sub(/^fn=(\([0-9]+\) )?/, ""); if (!seen[$0]++) print }'; }
# Written aside and moved into place, so a failure leaves the previous list.
{
  echo "# Generated by scripts/link-order.sh from $(git rev-parse --short HEAD 2>/dev/null || echo "a build"); read by scripts/build-release.sh."
  # The daemon's dumps in the order written (PID.1, PID.2, then PID at its exit), then the commands'.
  { names "$work/daemon/$profiled.1"; names "$work/daemon/$profiled.2"; names "$work/daemon/$profiled"
    names "$work"/cli/*; } | awk '!seen[$0]++' | grep -xF -f "$defined"
  echo "# Data the daemon touches from start until idle (.rodata, .bss)."
  cat "$work/data-names"
} > "$work/link-order"
mv "$work/link-order" "$out"
echo "link-order: $(grep -vc '^#' "$out") names in $out ($(wc -l < "$work/data-names") of them data," \
     "$(wc -l < "$work/data-traced") traced)" >&2
