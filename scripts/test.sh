#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: installs the system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
swift test --skip-build --parallel --num-workers 2
