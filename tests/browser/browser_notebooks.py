"""Notebooks the browser tests generate, so the harness is proven without depending on any lab."""

from __future__ import annotations

import nbformat
from nbtools import new_notebook


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


def write_view_control_notebook(path) -> None:
    """The control for the view checks. After papermill injects its parameters cell (index 1): cell 2's output
    is a 4000-px line (too wide), cell 3 is graded and shows a verdict next to long prose that wraps, cell 4 is
    graded and shows no verdict; markdown cell 5 is a table of long code names (too wide), markdown cell 6 a table
    of prose that wraps."""
    long_names = " | ".join(f"`{'VLLM_SOME_VERY_LONG_SETTING_NAME_' * 2}{i}`" for i in range(4))
    nb = new_notebook([
        ("code", "quick = None", ["parameters"]),
        ("code", "from IPython.display import HTML, display\n"
                 "display(HTML(\"<pre style='white-space:pre'>\" + 'x' * 600 + '</pre>'))"),
        ("code", "display(HTML(\"<p class='rocmlab-verdict'>correct</p><p>\" + 'wrapped prose ' * 400 + '</p>'))",
         ["graded"]),
        ("code", "print('graded, but nothing says whether it is right')", ["graded"]),
        ("md", f"| a | b | c | d |\n|---|---|---|---|\n| {long_names} |"),
        ("md", "| setting | what it does |\n|---|---|\n| `X=1` | " + "prose that wraps at its spaces " * 40 + "|"),
    ])
    nbformat.write(nb, str(path))
