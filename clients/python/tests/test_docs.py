"""Every Python snippet of docs/PYTHON-CLIENT.md, run as a program against a real daemon."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from daemon import REPOSITORY, Daemon

GUIDE = REPOSITORY / "docs" / "PYTHON-CLIENT.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_guide_has_snippets() -> None:
    assert len(SNIPPETS) >= 5


@pytest.mark.parametrize("index", range(len(SNIPPETS)), ids=lambda i: f"snippet {i + 1}")
def test_snippet_runs(daemon: Daemon, index: int) -> None:
    env = dict(os.environ, **daemon.bus.environment)
    r = subprocess.run([sys.executable, "-c", SNIPPETS[index]], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"snippet {index + 1} of {GUIDE.name}:\n{SNIPPETS[index]}\nstderr: {r.stderr}"
