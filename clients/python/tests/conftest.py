from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from daemon import Daemon, PrivateBus  # noqa: E402

CONFIG = """
[backend.log]
type = "log"
format = "json"

[backend.events]
type = "dbus-signal"
"""


@pytest.fixture
def bus() -> Iterator[PrivateBus]:
    b = PrivateBus()
    yield b
    b.close()


@pytest.fixture
def daemon(bus: PrivateBus, tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(bus, CONFIG, tmp_path)
    d.start()
    yield d
    d.stop()
