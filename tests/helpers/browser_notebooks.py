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
    of prose that wraps. Cell 7 has a 163-character code line (too long), cell 8 one of exactly 100; cell 9's table
    breaks a number in a narrow column, cell 10's keeps it on one line beside wrapping prose; cell 11 is graded
    and says its verdict twice in one output. Cell 12 is pandas' own table of a hyphenated name beside prose (it
    breaks the name), cell 13 the same DataFrame shown in a kernel that imported rocmlab.course (whole); cell 14 a
    wrap table's long name in a narrow box (breaks at its underscores only), cell 15 the same name in a narrow
    plain cell (breaks at a hyphen)."""
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
        ("code", "too_long = '" + "x" * 150 + "'"),
        ("code", "at_the_limit = '" + "y" * 83 + "'"),
        ("code", "cell = \"<td style='width:40px;max-width:40px;overflow-wrap:anywhere'>\"\n"
                 "display(HTML('<table><tr>' + cell + '1234567890.123456</td>' + cell + 'a b c</td></tr></table>'))"),
        ("code", "keep = \"<td style='white-space:nowrap'>\"\n"
                 "prose = '<td>' + 'prose ' * 300 + '</td>'\n"
                 "display(HTML('<table><tr>' + keep + '1234567890.123456</td>' + prose + '</tr></table>'))"),
        ("code", "display(HTML(\"<p class='rocmlab-verdict'>[not yet]</p><p class='rocmlab-verdict'>[not yet]</p>\"))",
         ["graded"]),
        ("code", "import pandas as pd\n"
                 "pd.set_option('display.max_colwidth', None)  # the prose is shown whole, and wraps\n"
                 "models = pd.DataFrame({'task': ['port-block-reduction'], 'note': ['prose that wraps ' * 120]})\n"
                 "display(HTML(models.to_html()))  # pandas' own table"),
        ("code", "import rocmlab.course  # shows pandas tables with their values whole\n"
                 "display(models)"),
        ("code", "from rocmlab.html_table import html_table\n"
                 "name = [['xcd-remap-grouped_v2_tile']]\n"
                 "display(HTML(\"<div style='width:90px'>\" + html_table(['name'], name, wrap=True) + '</div>'))"),
        ("code", "narrow = \"<td style='width:90px;max-width:90px'>\"\n"
                 "display(HTML('<table><tr>' + narrow + 'xcd-remap-grouped_v2_tile</td></tr></table>'))"),
    ])
    nbformat.write(nb, str(path))
