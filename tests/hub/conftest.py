"""Fixtures for the hub tests: a real JupyterHub (rocmlab.workshop.hub) with configurable-http-proxy, and the
Chromium harness of tests/browser. Every test here is marked `hub` (and the browser one `browser` too).
tests/hub is a package so that this conftest does not shadow tests/conftest.py."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "browser"))      # labharness: the same harness as tests/browser
from labharness import descendants, live_processes  # noqa: E402

ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "hub"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/hub/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.hub)


@pytest.fixture(scope="module")
def no_leftovers():
    """Everything the module's hubs, servers, kernels and browsers started is gone when the module ends."""
    before = {p.pid for p in descendants(os.getpid())}
    seen: set[int] = set()
    yield seen
    seen |= {p.pid for p in descendants(os.getpid())} - before
    left = live_processes(seen)
    assert not left, f"hub test left processes behind: {left}"


@pytest.fixture(scope="session")
def needs_proxy():
    if shutil.which("configurable-http-proxy") is None:
        from rocmlab.workshop.hub import NO_PROXY

        pytest.fail(NO_PROXY)
