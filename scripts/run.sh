#!/usr/bin/env bash
# The main job for a newcomer: install what is missing, build, check the example configs, and run
# the daemon in the foreground on the quick-start demo (a firing 3 s after start). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product tocsin
bin="$(swift build -c release --show-bin-path)/tocsin"
for f in contrib/examples/*.toml; do
  printf '%s: ' "$f"
  "$bin" check "$f"
done
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT
run=("$bin" daemon --config contrib/examples/demo.toml --state-dir "$state/state")
if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] && command -v dbus-run-session >/dev/null; then
  dbus-run-session -- "${run[@]}"
  exit $?
fi
"${run[@]}"
