#!/usr/bin/env bash
# The demo: the daemon in the foreground, plus one demo notification, on the session bus.
#
# TOCSIN_DEMO_OWN_BUS=1 (run.sh, when there is no session bus) starts a private bus first.
# Popups need a notification server. When there is none and the bus is our own, with Xvfb and
# dunst installed, the demo starts them on a virtual display, so the popup is real, and saves
# a screenshot of it. Otherwise it says once that popups are off and why, and leaves the
# desktop backend out of its configuration, so no delivery to it fails and retries.
# TOCSIN_DEMO_DISPLAY=none skips the virtual display (the headless path, as tests run it).
# TOCSIN_DEMO_DIR names the run's directory (default: a new one under /tmp); it is kept.
#
# Ctrl-C reaches every process of the terminal's group, but this script's background jobs (`&`,
# no job control) start with SIGINT ignored, so only the script acts on it: its trap stops the
# daemon with SIGTERM, then the helpers. The helpers (bus, Xvfb, dunst) run in sessions of their
# own and go last: the daemon never sees its bus vanish while it shuts down.
# Being in sessions of their own, nothing that kills the script's group reaches them: each
# helper's PID is written to $run/helpers.pids as it starts, so a harness that has to kill the
# script (a test that failed) can stop them too.
set -euo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
run="${TOCSIN_DEMO_DIR:-$(mktemp -d -t tocsin-demo.XXXXXX)}"
mkdir -p "$run"
: >"$run/helpers.pids"
helpers=()
daemon=""
display=""

say() { echo "demo: $*" >&2; }
add_helper() {
  helpers+=("$1")
  echo "$1" >>"$run/helpers.pids"
}

# Each step goes to $run/stop.log as well: a stop that hangs says where (the tests print it). A
# write that fails must not end the stop half-way (set -e), so the log is best effort.
stop_log() { echo "stop: $*" >>"$run/stop.log" 2>/dev/null || true; }
stop_all() {
  local p i rc
  stop_log "daemon ${daemon:-(none)}, helpers ${helpers[*]:-(none)}"
  # A process already gone is not waited for: inside this trap, run while the main flow's own
  # `wait` for the daemon was interrupted, bash's `wait` for that reaped daemon was seen to block
  # for good (the stop log ended at "was gone").
  if [ -n "$daemon" ]; then
    if kill -TERM "$daemon" 2>/dev/null; then
      rc=0; wait "$daemon" 2>/dev/null || rc=$?
      stop_log "daemon $daemon waited for (status $rc)"
    else
      stop_log "daemon $daemon was gone"
    fi
  fi
  # Newest first: the bus, started first, goes last.
  for ((i = ${#helpers[@]} - 1; i >= 0; i--)); do
    p="${helpers[$i]}"
    if kill -TERM "$p" 2>/dev/null; then
      rc=0; wait "$p" 2>/dev/null || rc=$?
      stop_log "helper $p waited for (status $rc)"
    else
      stop_log "helper $p was gone"
    fi
  done
}
trap 'stop_all; say "stopped; the run directory $run is kept"; exit 0' INT TERM

if [ "${TOCSIN_DEMO_OWN_BUS:-}" = 1 ]; then
  # A throw-away bus (the test suite's config: no activation, nothing else on it).
  exec 5< <(exec setsid dbus-daemon --config-file="$root/contrib/test/dbus-session.conf" --nofork --print-address 2>"$run/dbus.log")
  add_helper "$!"
  if ! read -r -t 20 address <&5; then say "could not start a session bus (see $run/dbus.log)"; stop_all; exit 1; fi
  export DBUS_SESSION_BUS_ADDRESS="$address"
fi

has_notification_server() {
  gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
    --method org.freedesktop.DBus.NameHasOwner org.freedesktop.Notifications 2>/dev/null | grep -q true
}

why_no_popups=""
tried_display=""
if ! has_notification_server; then
  if [ "${TOCSIN_DEMO_OWN_BUS:-}" = 1 ] && [ "${TOCSIN_DEMO_DISPLAY:-}" != none ] \
     && command -v Xvfb >/dev/null && command -v dunst >/dev/null; then
    tried_display=1
    # Xvfb picks a free display and writes its number to fd 3 once it accepts clients.
    exec 4< <(exec setsid Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>&1 2>"$run/xvfb.log")
    add_helper "$!"
    if read -r -t 20 number <&4; then
      display=":$number"
      DISPLAY="$display" setsid dunst -config "$root/contrib/test/dunstrc" >"$run/dunst.log" 2>&1 &
      add_helper "$!"
      gdbus wait --session --timeout 20 org.freedesktop.Notifications || true
    fi
  fi
  if ! has_notification_server; then
    why_no_popups="no notification server runs on this session bus"
    if [ "${TOCSIN_DEMO_DISPLAY:-}" = none ]; then
      why_no_popups+=" (a headless machine)"
    elif [ -n "$tried_display" ]; then
      why_no_popups+=", and Xvfb with dunst could not provide one (see $run/xvfb.log and $run/dunst.log)"
    elif [ "${TOCSIN_DEMO_OWN_BUS:-}" = 1 ]; then
      why_no_popups+=" (install xvfb and dunst, as scripts/install-deps.sh does, for popups on a virtual display)"
    else
      why_no_popups+=" (start one, e.g. dunst, or run this in a desktop session)"
    fi
    display=""
  fi
fi

config="$run/config.toml"
{
  echo '# The demo configuration (scripts/demo-session.sh).'
  echo '[backend.log]'
  echo 'type = "log"'
  echo '[backend.events]'
  echo 'type = "dbus-signal"'
  if [ -z "$why_no_popups" ]; then
    echo '[backend.desktop]'
    echo 'type = "libnotify"'
  fi
} >"$config"

if [ -n "$why_no_popups" ]; then
  say "popups are off: $why_no_popups. Scheduling, the log and D-Bus signals work; a desktop session (or Xvfb and dunst) brings popups."
elif [ -n "$display" ]; then
  say "popups go to dunst on the virtual display $display (no desktop here)"
fi

# A private state directory keeps the demo from touching a real ~/.local/state/tocsin.
"$bin" daemon --config "$config" --state-dir "$run/state" &
daemon=$!
# Wait (bounded) for the daemon to own its bus name, then schedule the demo through the CLI.
if gdbus wait --session --timeout 20 io.github.tocsin.Gateway; then
  "$bin" watch >"$run/events.txt" 2>/dev/null &
  add_helper "$!"
  key="$("$bin" schedule --key demo --title "Hello from Tocsin" --body "Scheduled by scripts/run.sh three seconds ago." --after 3s)"
  say "scheduled '$key'; it fires in 3 s (Ctrl-C stops the daemon)"
  "$bin" list >&2
  "$bin" status >&2
  # The firing shows as a Fired signal (the events backend); wait for it, bounded.
  for _ in $(seq 100); do
    grep -q '^Fired demo' "$run/events.txt" 2>/dev/null && break
    sleep 0.2
  done
  if grep -q '^Fired demo' "$run/events.txt" 2>/dev/null; then
    say "'$key' fired"
    if [ -n "$display" ] && command -v import >/dev/null; then
      # dunst draws a moment after it accepts the popup: wait until it counts one displayed.
      for _ in $(seq 50); do
        [ "$(DISPLAY="$display" dunstctl count displayed 2>/dev/null || echo 0)" -ge 1 ] && break
        sleep 0.2
      done
      if import -display "$display" -window root "$run/popup.png" 2>/dev/null; then
        say "screenshot of the popup: $run/popup.png"
      fi
    fi
  fi
  if [ "${TOCSIN_DEMO_OWN_BUS:-}" = 1 ]; then
    say "the daemon keeps running on a private bus; from another terminal: DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS' $bin status (Ctrl-C here stops it)"
  else
    say "the daemon keeps running; try '$bin list' or '$bin status', Ctrl-C stops it"
  fi
fi
status=0
wait "$daemon" || status=$?
daemon=""
stop_all
exit "$status"
