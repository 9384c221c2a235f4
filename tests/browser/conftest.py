"""Fixtures for the real-browser tests: one JupyterLab + one Chromium per module, and a check that both
leave no process behind."""

from __future__ import annotations

import os

import nbformat
import pytest
from labharness import chromium, descendants, jupyterlab, live_processes
from nbtools import new_notebook


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


def write_widget_notebook(path, k0: int, kmax: int = 9) -> None:
    """A small lab-like notebook: an IntSlider drives a plotly FigureWidget (y = x**k) through a kernel
    callback. The browser test moves the slider and reads the figure back from the page."""
    nb = new_notebook([
        ("md", "# Widget harness check\nA slider drives a plotly FigureWidget through a kernel callback."),
        ("code", "quick = None", ["parameters"]),
        ("code", f"""
import ipywidgets as w
import numpy as np
import plotly.graph_objects as go

x = np.linspace(0.0, 1.0, 11)
fig = go.FigureWidget(data=[go.Scatter(x=x, y=x ** {k0}, mode="lines+markers", name="y = x**k")],
                      layout=dict(title=dict(text="k = {k0}"), height=360, width=640))
k = w.IntSlider(value={k0}, min=1, max={kmax}, description="k")

def update(change):
    with fig.batch_update():
        fig.data[0].y = x ** change["new"]
        fig.layout.title.text = f"k = {{change['new']}}"

k.observe(update, names="value")
w.VBox([k, fig])
"""),
    ])
    nbformat.write(nb, str(path))


def write_raising_notebook(path, message: str) -> None:
    nb = new_notebook([
        ("code", "quick = None", ["parameters"]),
        ("code", "x = 1"),
        ("code", f"raise ValueError({message!r})"),
        ("code", "y = 2  # never runs: Run All stops at the error"),
    ])
    nbformat.write(nb, str(path))


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
