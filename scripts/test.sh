#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: installs the system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
# Two runs: the oracle-heavy suites (thousands of systemd-analyze and tomllib comparisons, which
# keep both cores busy) first, then everything with real processes, buses and timing, so the
# timing assertions (a Fired signal within 50 ms of due) measure Tocsin and not a saturated machine.
heavy='TocsinTimeTests|TocsinConfigTests'
swift test --skip-build --filter "$heavy"
swift test --skip-build --skip "$heavy"

# Proof under stress, short versions (docs/RELIABILITY.md has the long runs and how to rerun):
# each fuzz target for a minute from its seed corpus, then the whole suite under AddressSanitizer
# and under ThreadSanitizer. Each has its own scratch path, so none rebuilds another's. From a
# fresh clone on 2 cores the whole script takes about 13-14 minutes (docs/RELIABILITY.md).
bash scripts/fuzz.sh all "${TOCSIN_FUZZ_SECONDS:-60}"
bash scripts/sanitize.sh address
bash scripts/sanitize.sh thread
