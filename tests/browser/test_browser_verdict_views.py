"""The course's one verdict element and the puzzle view as a learner sees them in JupyterLab at 1280x800:

- an exercise graded by the real grader (a block reduction missing a barrier: the simulator catches it) shows
  one verdict line with the points, then the checks, then the details folded (closed);
- a Triton puzzle whose kernel loads and stores past the end shows the verdict and, per program, what it loaded
  and stored (one grid per buffer, the out-of-bounds accesses named), and the interpreter's warnings only inside
  the folded details;
- an empty starter kernel says "not answered yet", not "N of N outputs are NaN".

Every element fits the page, no table value is broken, and each output says its verdict once. Screenshots go to
test-artifacts/browser/views/verdict.png, puzzle-view.png and puzzle-not-answered.png.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from tests.helpers.labharness import Notebook, chromium
from nbformat.sign import NotebookNotary
from nbtools import new_notebook
from tests.helpers.views import (VIEWPORT, artifacts_dir, broken_values, execute, overflowing_outputs, repeated_verdicts,
                   wait_rendered)

GRADE = '''
from IPython.display import HTML, display
from rocmlab import grader
from rocmlab.course.widgets.grader import report_html

broken = grader.load("block-reduction").solution.replace("__syncthreads();", "", 1)   # a missing barrier
display(HTML(report_html(grader.check("block-reduction", broken))))
'''

PUZZLE = '''
from rocmlab.course import puzzles as P
from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06
P.setup()
import triton
import triton.language as tl


@triton.jit
def add_vec_kernel(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offs)                    # bug 1: no mask, the last program reads past x
    y = tl.load(y_ptr + offs, mask=offs < N0)
    unused = (y - y) / (y - y)                   # bug 2: 0/0 (the interpreter warns)
    z = tl.where(offs < N0, x + y, 1.0)
    tl.store(z_ptr + offs, z, mask=offs < N0 + 8)            # bug 3: 8 stores past the end of z


P.check("add-vectors", add_vec_kernel)
'''

EMPTY = '''
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pass                                         # the starter: nothing written yet


P.check("add-constant", add_kernel)
'''


@pytest.fixture(scope="module")
def browser(no_leftovers, tmp_path_factory):
    import os

    from tests.helpers.labharness import descendants
    with chromium(tmp_path_factory.mktemp("chromium-verdicts"), viewport=VIEWPORT) as ctx:
        yield ctx
        no_leftovers |= {p.pid for p in descendants(os.getpid())}


def test_a_verdict_and_a_puzzle_view_in_the_browser(server, browser):
    path = server.root / "verdicts.ipynb"
    nbformat.write(new_notebook([("code", "quick = None", ["parameters"]), ("code", GRADE, ["graded"]),
                                 ("code", PUZZLE, ["graded"]), ("code", EMPTY, ["graded"])]), str(path))
    execute(path, path, timeout_s=600)
    NotebookNotary(data_dir=server.env["JUPYTER_DATA_DIR"]).sign(nbformat.read(str(path), as_version=4))
    nb = Notebook.open(browser, server, "verdicts.ipynb", timeout_s=120)
    try:
        page = nb.page
        assert wait_rendered(page) == []
        # papermill put its parameters cell at 1: the grade is cell 2, the puzzle 3, the empty starter 4
        cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        verdicts = {i: cells.nth(i).locator(".rocmlab-verdict").all_text_contents() for i in (2, 3, 4)}
        assert all(len(v) == 1 for v in verdicts.values()), verdicts
        assert verdicts[2][0].startswith("[not yet]") and "points here" in verdicts[2][0], verdicts[2]
        assert verdicts[3][0].startswith("[not yet]") and "0/1 points" in verdicts[3][0], verdicts[3]
        assert verdicts[4][0].startswith("[not answered yet]") and "NaN" not in verdicts[4][0], verdicts[4]
        # the order: verdict line, checks, details (closed)
        box = cells.nth(2).locator(".rocmlab-result").first
        order = box.evaluate("b => [...b.children].map(c => c.className || c.tagName.toLowerCase())")
        assert order.index("rocmlab-verdict") < order.index("rocmlab-checks") < order.index("rocmlab-details")
        assert cells.nth(2).locator("details.rocmlab-details:not([open])").count() == 1
        assert "isolation" not in cells.nth(2).locator(".rocmlab-checks").inner_text()
        # the puzzle view: a grid per buffer (x, y, z) and the program table; warnings folded, not printed
        assert cells.nth(3).locator("svg.rocmlab-puzzle-grid").count() == 3
        table = cells.nth(3).locator(".rocmlab-puzzle-programs").inner_text()
        # N0 is drawn fresh (1000..3000, blocks of 256): the last program reads pad elements past x and stores
        # min(8, pad) past z, where pad is what its block covers beyond N0 (read back from the table's last row)
        rows = table.strip().splitlines()[1:]
        last = int(re.search(r"x: \d+ \(\d+\.\.(\d+)\)", rows[-1]).group(1))
        pad = 256 * len(rows) - (last + 1)
        if pad:
            assert f"load: {pad} past the end of x" in table, (pad, table)
            assert f"store: {min(8, pad)} past the end of z" in table, (pad, table)
            assert "outside z" in verdicts[3][0], verdicts[3]
        else:                                     # N0 a multiple of 256: no block reaches past the end
            assert "past the end" not in table, table
        assert "RuntimeWarning" not in verdicts[3][0]
        assert "RuntimeWarning" in cells.nth(3).locator("details.rocmlab-details").text_content()
        assert not cells.nth(3).locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']").count()
        assert overflowing_outputs(page) == [] and repeated_verdicts(page) == []
        assert broken_values(page) == []          # check names (no-warp-assumptions) stay whole

        shots = artifacts_dir() / "views"
        shots.mkdir(parents=True, exist_ok=True)
        for i, name in ((2, "verdict"), (3, "puzzle-view"), (4, "puzzle-not-answered")):
            out = cells.nth(i).locator(".jp-OutputArea-output").first
            out.evaluate("o => o.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(300)
            page.screenshot(path=str(shots / f"{name}.png"))
    finally:
        nb.close()
