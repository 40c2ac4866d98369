#!/usr/bin/env bash
# Runs inside a session bus: the daemon in the foreground, plus one demo notification.
set -euo pipefail
bin="$1"
state="$(mktemp -d)"
cleanup() { rm -rf "$state"; }
trap cleanup EXIT
# A private state directory keeps the demo from touching a real ~/.local/state/tocsin.
"$bin" daemon --state-dir "$state/state" &
daemon=$!
trap 'kill -TERM "$daemon" 2>/dev/null; wait "$daemon"; cleanup; exit 0' INT TERM
# Wait (bounded) for the daemon to own its bus name, then schedule the demo through the CLI.
if gdbus wait --session --timeout 20 io.github.tocsin.Gateway; then
  key="$("$bin" schedule --title "Hello from Tocsin" --body "Scheduled by scripts/run.sh three seconds ago." --after 3s)"
  echo "scheduled '$key'; it fires in 3 s (Ctrl-C stops the daemon)" >&2
fi
wait "$daemon"
