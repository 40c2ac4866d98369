#!/usr/bin/env bash
# The main job for a newcomer: install what is missing, build, and run the daemon in the
# foreground with its built-in configuration. A demo notification is scheduled through the CLI
# and printed by the log backend 3 seconds later. Ctrl-C stops everything cleanly.
# Without a session bus (a headless machine, a root shell) it starts a private one, and shows a
# real popup on a virtual display where Xvfb and dunst are installed (scripts/demo-session.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product tocsin
bin="$(swift build -c release --show-bin-path)/tocsin"
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
  TOCSIN_DEMO_OWN_BUS=1 exec bash scripts/demo-session.sh "$bin"
fi
exec bash scripts/demo-session.sh "$bin"
