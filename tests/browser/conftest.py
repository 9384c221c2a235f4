"""Fixtures for the real-browser tests: one JupyterLab + one Chromium per module, and a check that both
leave no process behind. The harness is tests/helpers/labharness.py."""

from __future__ import annotations

import os

import pytest

from tests.helpers.labharness import chromium, descendants, jupyterlab, live_processes


@pytest.fixture(scope="module")
def no_leftovers():
    """Everything the module's servers and browsers started is gone when the module ends."""
    before = {p.pid for p in descendants(os.getpid())}
    seen: set[int] = set()
    yield seen
    seen |= {p.pid for p in descendants(os.getpid())} - before
    left = live_processes(seen)
    assert not left, f"browser test left processes behind: {left}"


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    return tmp_path_factory.mktemp("lab-root")


@pytest.fixture(scope="module")
def server(no_leftovers, lab_root, tmp_path_factory):
    with jupyterlab(lab_root, tmp_path_factory.mktemp("lab-work")) as srv:
        yield srv
        no_leftovers |= srv.remember_pids()


@pytest.fixture(scope="module")
def browser(no_leftovers, tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium")) as ctx:
        yield ctx
        no_leftovers |= {p.pid for p in descendants(os.getpid())}
