#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: installs the system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
# Four runs: the oracle-heavy suites (thousands of systemd-analyze and tomllib comparisons, which
# keep both cores busy) first, then everything with real processes, buses and timing, so the
# timing assertions (a Fired signal within 50 ms of due) measure Tocsin and not a saturated machine.
# The fault-injection and security suites (mounts, kill -9, many python clients) and the
# compressed two days (thousands of deliveries in 3 s) come after those, so they do not slow the
# timing assertions of the others; the load and burst suites saturate both cores on purpose,
# so they run last, alone.
heavy='TocsinTimeTests|TocsinConfigTests'
faults='FaultKillTests|FaultStorageTests|SecurityTests|DayOfFiringsTests'
load='LoadTests|FaultBurstTests'
# The fleet suites (a real mosquitto, two daemons per test, "stops both within a second", an idle
# measurement) run alone: beside the other suites of the second run they missed their deadlines
# under load, which measures the machine, not the fleet.
fleet='FleetTests|FleetScheduleTests|FleetIdleTests'
swift test --skip-build --filter "$heavy"
swift test --skip-build --skip "$heavy|$faults|$load|$fleet"
swift test --skip-build --filter "$fleet"
swift test --skip-build --filter "$faults"
swift test --skip-build --filter "$load"

# Proof under stress, short versions (docs/RELIABILITY.md has the long runs and how to rerun):
# each fuzz target for a minute from its seed corpus, then the suites under AddressSanitizer and
# under ThreadSanitizer (scripts/sanitize.sh says which). Each has its own scratch path, so none
# rebuilds another's.
bash scripts/fuzz.sh all "${TOCSIN_FUZZ_SECONDS:-60}"
bash scripts/sanitize.sh address
bash scripts/sanitize.sh thread
