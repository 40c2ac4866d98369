#!/usr/bin/env bash
# Makes the README's pictures, so they show what the current code shows: a real popup (dunst
# under Xvfb) and `tocsin list` / `tocsin status` in a terminal (tmux, captured as text and
# drawn as PNG). Everything runs on a private bus, display and state; nothing of the user's is
# touched. Writes docs/images/{popup.png,list.txt,list.png,status.txt,status.png}.
#   bash scripts/screenshots.sh [path/to/tocsin]   (default: the debug build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${1:-$(swift build --show-bin-path)/tocsin}"
out="$root/docs/images"
mkdir -p "$out"
for tool in Xvfb dunst dunstctl dbus-daemon tmux import convert; do
  command -v "$tool" >/dev/null || { echo "screenshots: $tool is missing (bash scripts/install-deps.sh)" >&2; exit 1; }
done
work="$(mktemp -d -t tocsin-shots.XXXXXX)"
helpers=()
sock="tocsin-shots-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  local i
  for ((i = ${#helpers[@]} - 1; i >= 0; i--)); do kill -TERM "${helpers[$i]}" 2>/dev/null || true; wait "${helpers[$i]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A fixed zone and terminal size keep the pictures comparable from run to run.
export TZ=Europe/Berlin
exec 5< <(exec dbus-daemon --config-file="$root/contrib/test/dbus-session.conf" --nofork --print-address 2>"$work/dbus.log")
helpers+=("$!")
read -r -t 20 address <&5
export DBUS_SESSION_BUS_ADDRESS="$address"
exec 4< <(exec Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>&1 2>"$work/xvfb.log")
helpers+=("$!")
read -r -t 20 number <&4
export DISPLAY=":$number"
dunst -config "$root/contrib/test/dunstrc" >"$work/dunst.log" 2>&1 &
helpers+=("$!")
gdbus wait --session --timeout 20 org.freedesktop.Notifications

cat >"$work/config.toml" <<'TOML'
[backend.desktop]
type = "libnotify"

[backend.log]
type = "log"

[[notification]]
key = "standup"
title = "Stand-up"
body = "Daily stand-up in 5 minutes."
on_calendar = "Mon..Fri 09:25"

[[notification]]
key = "backup"
title = "Weekly backup"
on_calendar = "Sun 20:00"
TOML
"$bin" daemon --config "$work/config.toml" --state-dir "$work/state" >"$work/daemon.log" 2>&1 &
helpers+=("$!")
gdbus wait --session --timeout 20 io.github.tocsin.Gateway
"$bin" schedule --key tea --title "Tea is ready" --after 4min >/dev/null
"$bin" schedule --key water --title "Drink water" --every 1h --starting +2s >/dev/null
"$bin" post --key hello --title "Hello from Tocsin" --body "A popup from tocsin post, drawn by dunst." --action open=Open >/dev/null

# The popup: wait (bounded) until dunst shows it, then crop the screen's top-right corner.
for _ in $(seq 100); do
  [ "$(dunstctl count displayed)" -ge 1 ] && break
  sleep 0.1
done
import -window root "$work/screen.png"
convert "$work/screen.png" -crop 520x140+760+0 +repage "$out/popup.png"

# `water` fires two seconds in; wait until it has, so list has a LAST column to show.
for _ in $(seq 100); do
  # Only water can have a last firing: hello was posted, not scheduled.
  "$bin" list --json | grep -q '"last_fire"' && break
  sleep 0.1
done

# The terminal: a plain shell in a tmux pane, the command typed as a person would, the screen
# captured as text and drawn with a monospace font.
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/tocsin"
shot() {
  local name="$1"; shift
  tmux -L "$sock" new-session -d -s "$name" -x 200 -y 16 \
    "env DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS' TZ='$TZ' PATH='$work/bin:$PATH' PS1='$ ' bash --norc --noprofile"
  # Type only once the shell shows its prompt, or the keys echo above it.
  for _ in $(seq 100); do
    tmux -L "$sock" capture-pane -p -t "$name" | grep -q '^\$ *$' && break
    sleep 0.1
  done
  tmux -L "$sock" send-keys -t "$name" "$*; echo '[done]'" Enter
  for _ in $(seq 100); do
    tmux -L "$sock" capture-pane -p -t "$name" | grep -q '^\[done\]' && break
    sleep 0.1
  done
  tmux -L "$sock" capture-pane -p -t "$name" | sed -e "s/; echo '\[done\]'//" -e '/^\[done\]/,$d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$out/$name.txt"
  # label: reads % as an escape; the text has none of its own, but say so rather than assume.
  convert -background '#1e1e1e' -fill '#e6e6e6' -font DejaVu-Sans-Mono -pointsize 14 -border 12 -bordercolor '#1e1e1e' \
    label:"$(sed 's/%/%%/g' "$out/$name.txt")" "$out/$name.png"
}
shot list tocsin list
shot status tocsin status
echo "screenshots: wrote $(cd "$out" && ls | tr '\n' ' ')" >&2
