#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: installs the system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
# Three runs: the oracle-heavy suites (thousands of systemd-analyze and tomllib comparisons, which
# keep both cores busy) first, then everything with real processes, buses and timing, so the
# timing assertions (a Fired signal within 50 ms of due) measure Tocsin and not a saturated machine.
# The load and burst suites saturate both cores on purpose, so they run last, alone.
heavy='TocsinTimeTests|TocsinConfigTests'
load='LoadTests|FaultBurstTests'
swift test --skip-build --filter "$heavy"
swift test --skip-build --skip "$heavy|$load"
swift test --skip-build --filter "$load"
