#!/usr/bin/env bash
# The Python client (clients/python) as a user gets it: a fresh virtualenv, `pip install` of the
# package with its test extras (dbus-fast, pytest, mypy from the package index), `mypy --strict`
# on the package and its examples, then pytest against the built daemon on private buses.
#   TOCSIN_BIN     the daemon to test (default .build/debug/tocsin, from `swift build`)
#   TOCSIN_PYTHON  the interpreter for the venv (default /usr/bin/python3, Debian's; needs python3-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${TOCSIN_PYTHON:-/usr/bin/python3}
venv=$root/.build/python-client-venv
export TOCSIN_BIN=${TOCSIN_BIN:-$root/.build/debug/tocsin}

if [ ! -x "$TOCSIN_BIN" ]; then
  echo "test-python-client: no daemon at $TOCSIN_BIN (run swift build, or set TOCSIN_BIN)" >&2
  exit 1
fi

"$python" -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root/clients/python[test]"
"$venv/bin/python" -c 'import tocsin, tocsin.testing'
"$venv/bin/python" -m mypy --strict --no-incremental "$root/clients/python/src/tocsin" "$root/contrib/examples/python"
cd "$root/clients/python"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests
