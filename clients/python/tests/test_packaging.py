"""What `pip` gets: the sdist and the wheel's description, built from this directory."""

from __future__ import annotations

import os
import re
import tarfile
from pathlib import Path


PACKAGE = Path(__file__).resolve().parents[1]


def test_the_sdist_holds_no_tests_it_cannot_run(tmp_path: Path) -> None:
    # The tests need the daemon and the repository's bus config: shipping some of them (without
    # conftest.py and daemon.py) gave an sdist whose tests fail to collect.
    from setuptools import build_meta  # in the test extras: never skipped
    here = os.getcwd()
    os.chdir(PACKAGE)
    try:
        name = build_meta.build_sdist(str(tmp_path))
    finally:
        os.chdir(here)
    with tarfile.open(tmp_path / name) as sdist:
        files = [m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()]
    assert [f for f in files if f.startswith("tests/")] == [], files
    assert "src/tocsin/py.typed" in files and "README.md" in files


def test_the_description_names_files_that_exist_and_links_nothing_relative() -> None:
    readme = (PACKAGE / "README.md").read_text()
    assert not re.search(r"\]\((?!https?://)", readme), "a relative link is dead on the package index"
    for doc in re.findall(r"`(docs/[^`]+)`", readme):
        assert (PACKAGE.parents[1] / doc).is_file(), doc
