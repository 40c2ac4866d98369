#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: installs the system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The libnotify declarations Tocsin writes out (it loads the library on first use) against the real headers.
sh scripts/check-libnotify-shim.sh
swift build --build-tests
# The phases and why each runs alone are in scripts/phases.sh: the timing assertions must measure
# Tocsin, not a saturated machine.
source scripts/phases.sh
swift test --skip-build --filter "$phase_heavy"
swift test --skip-build --skip "$phase_rest_skip"
swift test --skip-build --filter "$phase_timing"
swift test --skip-build --filter "$phase_fleet"
swift test --skip-build --filter "$phase_faults"
swift test --skip-build --filter "$phase_load"

# The client libraries as apps get them: the Python package in a fresh virtualenv against the
# built daemon, and a Swift package outside the repository that depends on TocsinClient by path.
bash scripts/test-python-client.sh
bash scripts/test-swift-client-app.sh

# The Debian package as users get it: scripts/package.sh builds it (static Swift runtime, lintian
# clean), and scripts/test-package.sh installs it in a clean Debian 12 root with no Swift there,
# runs the daemon and watches a firing, then purges it.
bash scripts/test-package.sh

# Proof under stress, short versions (docs/RELIABILITY.md has the long runs and how to rerun):
# each fuzz target for a minute from its seed corpus, then the suites under AddressSanitizer and
# under ThreadSanitizer (scripts/sanitize.sh says which). Each has its own scratch path, so none
# rebuilds another's.
bash scripts/fuzz.sh all "${TOCSIN_FUZZ_SECONDS:-60}"
bash scripts/sanitize.sh address
bash scripts/sanitize.sh thread
