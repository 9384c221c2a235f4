"""Fixtures for the hub tests: a real JupyterHub (rocmlab.workshop.hub) with configurable-http-proxy, and the
Chromium harness of tests/browser. Every test here is marked `hub` (and the browser one `browser` too)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.labharness import descendants, live_processes   # the same harness as tests/browser

ROOT = Path(__file__).resolve().parents[2]

ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "hub"


@pytest.fixture(scope="module")
def no_leftovers():
    """Everything the module's hubs, servers, kernels and browsers started is gone when the module ends."""
    before = {p.pid for p in descendants(os.getpid())}
    seen: set[int] = set()
    yield seen
    seen |= {p.pid for p in descendants(os.getpid())} - before
    left = live_processes(seen)
    assert not left, f"hub test left processes behind: {left}"


@pytest.fixture(scope="module", autouse=True)
def _checkout_modes_kept():
    """A hub in ``users`` mode locks the references of the package its servers run, this checkout's among them
    (files 0600 root, ``.git`` and ``tests/`` 0700): each module puts back the modes and owners it found."""
    from rocmlab.workshop import references
    from tests.helpers.kept_modes import kept_modes

    with kept_modes(references.locked_paths):
        yield


@pytest.fixture(scope="session")
def needs_proxy():
    if shutil.which("configurable-http-proxy") is None:
        from rocmlab.workshop.hub import NO_PROXY

        pytest.fail(NO_PROXY)
