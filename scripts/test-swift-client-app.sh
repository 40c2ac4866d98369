#!/usr/bin/env bash
# The Swift client's acceptance: a package outside the repository (contrib/examples/swift-app,
# copied to a temporary directory) depends on Tocsin by path, imports TocsinClient, and
#   1. passes its own tests with TocsinClientTesting and no bus (the session bus address points
#      nowhere, so a test that touched D-Bus would fail);
#   2. runs its demo against the built `tocsin daemon` on a private bus with the example
#      dbus-service backend, and receives its Fired and the action the backend chooses.
# Needs `swift build` to have run (it uses .build/debug/tocsin and the resolved versions).
# The outer build has its own scratch path inside .build, so reruns are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scratch="$root/.build/swift-client-app"
tocsin="$(swift build --show-bin-path)/tocsin"
[[ -x $tocsin ]] || { echo "no $tocsin: run swift build first" >&2; exit 1; }

work=$(mktemp -d /tmp/tocsin-swift-app-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cp -R contrib/examples/swift-app/. "$work/app"
sed -i "s|@TOCSIN_PATH@|$root|" "$work/app/Package.swift"
# The same dependency versions as this checkout's build: its pins, so SwiftPM takes them from
# its local cache of the repositories instead of resolving anew.
if [[ -f Package.resolved ]]; then cp Package.resolved "$work/app/Package.resolved"; fi

echo "== the app's tests, without a bus"
DBUS_SESSION_BUS_ADDRESS="unix:path=$work/no-bus-here" DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/no-bus-here" \
    swift test --package-path "$work/app" --scratch-path "$scratch" 2>&1 | grep -vE '^(warning: prohibited flag|\[[0-9]+/[0-9]+\])' 

echo "== the app against a daemon"
swift build --package-path "$work/app" --scratch-path "$scratch" --product reminders-demo 2>&1 | tail -n 1
demo="$(swift build --package-path "$work/app" --scratch-path "$scratch" --show-bin-path)/reminders-demo"

exec {bus_out}< <(exec dbus-daemon --config-file="$root/contrib/test/dbus-session.conf" --nofork --print-address)
pids+=($!)
read -r -t 15 address <&$bus_out
[[ -n $address ]] || { echo "dbus-daemon did not start" >&2; exit 1; }

/usr/bin/python3 -u contrib/backends/tocsin-backend-example.py --address "$address" \
    --bus-name org.example.AppBridge --report action:bid >"$work/bridge.log" 2>&1 &
pids+=($!)
mkdir -p "$work/home"
cat >"$work/config.toml" <<TOML
[daemon]
timezone = "UTC"

[backend.events]
type = "dbus-signal"

[backend.bridge]
type = "dbus-service"
bus_name = "org.example.AppBridge"
TOML
HOME="$work/home" XDG_STATE_HOME="$work/home/state" NOTIFY_SOCKET= TZ=UTC \
    "$tocsin" daemon --config "$work/config.toml" --state-dir "$work/state" --bus "$address" 2>"$work/daemon.log" &
pids+=($!)
for name in org.example.AppBridge io.github.tocsin.Gateway; do
    gdbus wait --address "$address" --timeout 30 "$name" || { echo "$name did not appear"; cat "$work/daemon.log"; exit 1; }
done

out=$(TOCSIN_BUS_ADDRESS="$address" timeout 90 "$demo") || { echo "demo failed: $out"; cat "$work/daemon.log"; exit 1; }
echo "$out"
grep -q '^reminder 4 for lot 7$' <<<"$out" || { echo "no Fired for the app's reminder" >&2; exit 1; }
grep -q '^open the bid page for lot 7$' <<<"$out" || { echo "no action for the app's reminder" >&2; exit 1; }
echo "swift client app: ok"
