"""The browser pass: every lab's graded item as a learner meets it in JupyterLab at 1280x800, in a real Chromium.

For each lab (00-11) and exercises 01, 02 and 12, in a fresh course home (``rocmlab labs`` into a temp folder,
HOME, JupyterLab's folders and the progress record all temporary; quick sizes, ROCMLAB_QUICK=1):

- the cells above the graded cell run from the Run menu (or, where a row says so, the cells it names);
- (c) **untouched**: the graded cell runs as the starter has it;
- (a) **wrong**: a typical wrong answer (the task's ``wrong_answers()``, a puzzle's wrong kernel, the grader's
  wrong submissions, or a one-line change of the reference) is typed into the cell (or saved into the file the
  cell grades, then **Grade again** is pressed): it must lose points, in red, with a hint;
- (b) **right**: the course's reference answer the same way: full marks of what this machine can award, in green.

Each verdict is read from the page (its text and colour), checked to fit 1280 px, and screenshotted. The table
goes to test-artifacts/browser/pass-table.md (screenshots in test-artifacts/browser/pass/) and is printed.

It drives JupyterLab with the test suite's harness, tests/helpers/labharness.py (the server, Chromium, a
notebook page), and reads overflow with tests/helpers/views.py. Needs Chromium (``apt-get install chromium``)
and playwright, as the browser tests do.

    python tools/browser_pass.py                    # every row (about 20 min on a busy 2-core machine)
    python tools/browser_pass.py --only 01 ex01     # some rows (ids: 00..11, 01b, 01c, ex01, ex02, ex12)
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.labharness import ARTIFACTS, Notebook, chromium, descendants, jupyterlab  # noqa: E402
from tests.helpers.views import VIEWPORT, overflowing_outputs  # noqa: E402

SHOTS = ARTIFACTS / "pass"
TABLE = ARTIFACTS / "pass-table.md"
GREEN, RED, GREY = "rgb(26, 127, 55)", "rgb(207, 34, 46)", "rgb(110, 119, 129)"   # rocmlab.course.verdict.COLOURS
COLOUR_NAMES = {GREEN: "green", RED: "red", GREY: "grey"}
POINTS = re.compile(r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) points?(?: here)?(?: \(of (\d+(?:\.\d+)?) on an MI300X\))?")


# --------------------------------------------------------------------------- answers, from the course itself

def function_source(module: str, name: str, rename: str | None = None) -> str:
    """A top-level function of a course module as a learner would type it: its decorators, body and the module's
    top-level constants it uses; renamed to the name the notebook cell defines."""
    import importlib.util

    path = Path(importlib.util.find_spec(module).origin)
    text = path.read_text()
    tree = ast.parse(text)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    consts = [ast.get_source_segment(text, n) for n in tree.body if isinstance(n, ast.Assign)
              and {t.id for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)} & used]
    lines = text.splitlines()
    start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
    src = "\n".join(lines[start:fn.end_lineno])
    if rename:
        src = re.sub(rf"\bdef {re.escape(name)}\(", f"def {rename}(", src, count=1)
    return "\n".join(consts + ([""] if consts else []) + [src])


def nested_source(fn, rename: str) -> str:
    """A nested function (a task's ``wrong_answers()``) as top-level source, renamed."""
    src = textwrap.dedent(inspect.getsource(fn))
    return re.sub(rf"\bdef {re.escape(fn.__name__)}\(", f"def {rename}(", src, count=1)


def splice(cell_source: str, name: str, new_def: str) -> str:
    """The cell with its top-level function ``name`` (decorators included) replaced by ``new_def``."""
    tree = ast.parse(cell_source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = cell_source.splitlines()
    start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
    return "\n".join(lines[:start] + new_def.splitlines() + lines[fn.end_lineno:])


def puzzle(key: str, wrong: str | None = None) -> str:
    """A Triton puzzle's reference kernel (or its wrong kernel ``wrong``), as source."""
    from rocmlab.course import puzzles as P

    P.setup()
    import importlib

    for lab in ("lab06_triton_on_amd", "lab09_attention_on_mi300x", "lab10_fp8_gemm"):
        importlib.import_module(f"rocmlab.course.labs.{lab}.puzzles")
    p = P.find(key)
    return function_source(p.module, wrong or p.solution)


def exercise(eid: str) -> str:
    from rocmlab import grader

    return grader.load(eid).solution


def edited(eid: str, old: str, new: str) -> str:
    src = exercise(eid)
    if old not in src:
        raise ValueError(f"{eid}: {old!r} is not in the reference any more: update the wrong answer here")
    return src.replace(old, new, 1)


def wrong_submission(name: str) -> str:
    from rocmlab.grader.wrong import wrong_submissions

    return wrong_submissions()[name].source


# --------------------------------------------------------------------------- the rows

@dataclass
class Row:
    id: str
    notebook: str                     # under the course home
    item: str                         # the graded item, as the table names it
    cell: str = ""                    # a line of the graded cell's source (finds it)
    kind: str = "cell"                # cell: the answer is the cell's code; file: saved into `file`, Grade again
    wrong: Callable | None = None     # (cell source, page text of earlier outputs) -> the cell or file text
    right: Callable | None = None
    wrong_name: str = ""
    file: str = ""
    prelude: tuple = ()               # lines finding the cells to run first (default: every cell above)
    after: tuple = ()                 # lines finding cells to run when done (Lab 04: stop the server)
    recheck: str = ""                 # then grade the right answer again: what the page says (its name here)
    note: str = ""
    timeout_s: float = 900.0
    result: dict = field(default_factory=dict)


def _lab01_numbers(outputs: str) -> tuple[int, int]:
    m = re.search(r"n = (\d+) elements with blockDim\.x = (\d+)", outputs)
    if not m:
        raise RuntimeError("Lab 01: the question of exercise 1 (n and blockDim.x) is not on the page")
    return int(m.group(1)), int(m.group(2))


def _lab01(source: str, outputs: str, right: bool) -> str:
    n, block = _lab01_numbers(outputs)
    waves = -(-block // 64) if right else -(-block // 32)      # wrong: a warp of 32 on the MI300X
    return (f"blocks = {-(-n // block)}                  # gridDim.x\n"
            f"mi300x_waves_per_block = {waves}  # wavefronts of 64 in one block\n"
            f"h200_warps_per_block = {-(-block // 32)}    # warps of 32 in one block\n"
            "ex1.check(blocks, mi300x_waves_per_block, h200_warps_per_block)")


def _lab01_occupancy(source: str, outputs: str, right: bool) -> str:
    from rocmlab.hip import occupancy as occ

    m = re.search(r"uses (\d+) VGPRs, no AGPRs, 32 SGPRs and (\d+) bytes of LDS per workgroup, launched with "
                  r"(\d+) threads", outputs)
    if not m:
        raise RuntimeError("Lab 01: the question of exercise 3 (VGPRs, LDS, block) is not on the page")
    o = occ.occupancy(int(m.group(1)), 0, 32, int(m.group(2)), int(m.group(3)), "gfx942")
    limit = o.limiting if right else "SGPRs"            # wrong: the waves right, the limit not
    return (f"waves = {o.waves_per_simd}        # waves per SIMD\n"
            f"limited_by = {limit!r}   # 'VGPRs', 'SGPRs', 'LDS' or 'workgroup size'\n"
            "ex3.check(waves, limited_by)")


def _wave_sum(start: str) -> str:
    from rocmlab.course.labs.lab01_hip_programming_model import lab as lab01

    return lab01.WAVE_SUM_STARTER.replace("int off = 16", f"int off = {start}", 1)


def _task(module: str, name: str, ref: Callable[[], str], wrong_key: str):
    def right(source, _):
        return splice(source, name, ref())

    def wrong(source, _):
        import importlib

        fn = importlib.import_module(module).wrong_answers()[wrong_key]
        return splice(source, name, nested_source(fn, name))
    return wrong, right


L03 = "rocmlab.course.labs.lab03_pytorch_on_rocm.task"
L05 = "rocmlab.course.labs.lab05_quickreduce_tuning.task"
L07 = "rocmlab.course.labs.lab07_matrix_cores.task"

W03, R03 = _task(L03, "fast_scores", lambda: "import torch\n\n\n" + function_source(
    "rocmlab.course.labs.lab03_pytorch_on_rocm.reference", "fast_scores"), "batched, but .item() on the total")
W07, R07 = _task(L07, "vgpr_budget", lambda: function_source(
    "rocmlab.course.labs.lab07_matrix_cores.reference", "vgpr_budget"), "ignores AGPRs")
R05 = ("from rocmlab.course.labs.lab05_quickreduce_tuning.task import reference_choose\n\n\n"
       "def choose(s):\n    return reference_choose(s)   # the course's reference method\n")
W05 = "def choose(s):\n    return (\"fp\", 32)   # always fp16: ignores the link and the message size\n"


def _kernel(module: str, name: str, rename: str):
    return lambda s, _: splice(s, rename, function_source(module, name, rename))


def _puzzle_kernel(key: str, rename: str, wrong: str | None = None):
    def make(s, _):
        from rocmlab.course import puzzles as P

        puzzle(key)
        p = P.find(key)
        return splice(s, rename, function_source(p.module, wrong or p.solution, rename))
    return make


def _lab11(source: str, right: bool) -> str:
    from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11

    oob, uaf = lab11.faulting_line("oob_write"), lab11.faulting_line("use_after_free")
    if not right:
        oob += 1                                      # wrong: the line after the bad write
    return (source.replace("oob_line = None", f"oob_line = {oob}", 1)
            .replace("uaf_line = None", f"uaf_line = {uaf}", 1))


K08 = "rocmlab.course.labs.lab08_mi300x_package.kernels"

ROWS = [
    Row("00", "00-setup.ipynb", "none: the set-up lab has no graded cell (its doctor and progress widgets grade "
        "nothing)", kind="none"),
    Row("01", "01-hip-programming-model.ipynb", "exercise 1: launch shape (blocks, wavefronts, warps)",
        cell="ex1.check(blocks", wrong=lambda s, o: _lab01(s, o, False), right=lambda s, o: _lab01(s, o, True),
        wrong_name="MI300X wavefronts counted as warps of 32 (block / 32)"),
    Row("01b", "01-hip-programming-model.ipynb", "exercise 2: wave sum for any wavefront size "
        "(my-work/lab01/wave_sum.hip, gfx942 ISA)", cell="lab01.wave_sum_widget(wave_sum)", kind="file",
        file="my-work/lab01/wave_sum.hip", wrong=lambda s, o: _wave_sum("32"), right=lambda s, o: _wave_sum("warpSize / 2"),
        wrong_name="the loop starts at a literal 32 (right step count on gfx942, wrong on a warp of 32)"),
    Row("01c", "01-hip-programming-model.ipynb", "exercise 3: waves per SIMD and the limiting resource",
        cell="ex3.check(waves, limited_by)", wrong=lambda s, o: _lab01_occupancy(s, o, False),
        right=lambda s, o: _lab01_occupancy(s, o, True), wrong_name="the waves right, limited_by 'SGPRs'"),
    Row("02", "02-porting-cuda-to-hip.ipynb", "port-block-reduction (my-work/block-reduction/block_sum.hip)",
        cell='Workbench("block-reduction")', kind="file", file="my-work/block-reduction/block_sum.hip",
        wrong=lambda s, o: wrong_submission("hard-coded warp of 32"), right=lambda s, o: exercise("block-reduction"),
        wrong_name="grader.wrong 'hard-coded warp of 32' (shuffle from 16, lane = % 32)"),
    Row("03", "03-pytorch-on-rocm.ipynb", "fix-the-slow-step (task03.grade(fast_scores))", cell="task03.grade(fast_scores)",
        wrong=W03, right=R03, wrong_name="wrong_answers(): 'batched, but .item() on the total'"),
    Row("04", "04-vllm-on-rocm.ipynb", "meet-a-serving-target (settings, on the lab's live vLLM server)",
        cell="task04.grade(target, settings, url)",
        prelude=("quick = None", "from rocmlab.serve import bench", "server, url, model = None",
                 "target = task04.draw(quick=quick)"),
        wrong=lambda s, o: s.replace('{"max_concurrency": 1}', '{"request_rate": 0.25}', 1),
        right=lambda s, o: s.replace('{"max_concurrency": 1}', '{"max_concurrency": 4}', 1),
        wrong_name='{"request_rate": 0.25} (requests arrive slower than one at a time serves them)',
        after=("rc = server.stop()",), recheck="right answer again after the lab's last cell stopped the server",
        note="cells run first: parameters, imports, the server start (section 3) and the target; the lab's "
             "benchmark sweeps in between are left out (they do not feed the grade)"),
    Row("05", "05-quickreduce-tuning.ipynb", "codec-per-message (task05.grade(choose))", cell="task05.grade(choose)",
        wrong=lambda s, o: splice(s, "choose", W05), right=lambda s, o: splice(s, "choose", R05),
        wrong_name="wrong_answers(): 'always fp (ignores the link and the size)'",
        note="graded here with the references present (a self-study clone); in a workshop hub the preview grades "
             "the answers' form only and the instructor's grade judges the choices"),
    Row("06", "06-triton-on-amd.ipynb", "puzzle add-vectors (P.check)", cell='P.check("add-vectors"',
        wrong=_puzzle_kernel("add-vectors", "add_vec_kernel", "add_vec_wrong"),
        right=_puzzle_kernel("add-vectors", "add_vec_kernel"), wrong_name="kernels.add_vec_wrong"),
    Row("07", "07-matrix-cores.ipynb", "waves-per-simd (task07.grade(vgpr_budget))", cell="task07.grade(vgpr_budget)",
        wrong=W07, right=R07, wrong_name="wrong_answers(): 'ignores AGPRs'"),
    Row("08", "08-mi300x-package.ipynb", "xcd-remap (task08.grade(xcd_remap_kernel))",
        cell="task08.grade(xcd_remap_kernel)",
        wrong=_kernel(K08, "remap_floor_kernel", "xcd_remap_kernel"),
        right=_kernel(K08, "remap_kernel", "xcd_remap_kernel"), wrong_name="kernels.remap_floor_kernel (n // XCDS)"),
    Row("09", "09-attention-on-mi300x.ipynb", "puzzle row-softmax (P.check)", cell='P.check("row-softmax"',
        wrong=_puzzle_kernel("row-softmax", "softmax_rows_kernel", "softmax_rows_wrong_first_block_max"),
        right=_puzzle_kernel("row-softmax", "softmax_rows_kernel"),
        wrong_name="kernels.softmax_rows_wrong_first_block_max"),
    Row("10", "10-fp8-gemm.ipynb", "puzzle fp8-quantize (P.check)", cell='P.check("fp8-quantize"',
        wrong=_puzzle_kernel("fp8-quantize", "fp8_quant_kernel", "fp8_quant_wrong_other_max"),
        right=_puzzle_kernel("fp8-quantize", "fp8_quant_kernel"),
        wrong_name="kernels.fp8_quant_wrong_other_max (the other format's maximum: overflow)"),
    Row("11", "11-counters-and-faults.ipynb", "faulting-line questions (oob_write, use_after_free)",
        cell="oob_line = None", wrong=lambda s, o: _lab11(s, False), right=lambda s, o: _lab11(s, True),
        wrong_name="oob_write: the line after the bad write (use_after_free right)",
        prelude=("quick = None", "from rocmlab.course import progress", 'for name in ("oob_write", "use_after_free")'),
        note="cells run first: parameters, imports and the numbered sources; the lab's file grades (four "
             "exercises, graded in their own notebooks) are left out"),
    Row("ex01", "exercises/01-vector-add.ipynb", "vector-add (my-work/vector-add/vector_add.hip)",
        cell="display(bench.widget())", kind="file", file="exercises/my-work/vector-add/vector_add.hip",
        wrong=lambda s, o: wrong_submission("wrong index"), right=lambda s, o: exercise("vector-add"),
        wrong_name="grader.wrong 'wrong index' (i = blockIdx.x + threadIdx.x)"),
    Row("ex02", "exercises/02-saxpy-events.ipynb", "saxpy-events (my-work/saxpy-events/saxpy.hip)",
        cell="display(bench.widget())", kind="file", file="exercises/my-work/saxpy-events/saxpy.hip",
        wrong=lambda s, o: edited("saxpy-events", "z[i] = a * x[i] + y[i];", "z[i] = a * x[i] - y[i];"),
        right=lambda s, o: exercise("saxpy-events"), wrong_name="one line: z[i] = a * x[i] - y[i]"),
    Row("ex12", "exercises/12-lds-tiles-prefetch.ipynb", "lds-tiles-prefetch (my-work/lds-tiles-prefetch/stencil.hip)",
        cell="display(bench.widget())", kind="file", file="exercises/my-work/lds-tiles-prefetch/stencil.hip",
        wrong=lambda s, o: edited("lds-tiles-prefetch", "tile[R + 4 * q + 3] = v.w;", "tile[R + 4 * q + 3] = v.z;"),
        right=lambda s, o: exercise("lds-tiles-prefetch"), wrong_name="one line: tile[R + 4 * q + 3] = v.z"),
]


# --------------------------------------------------------------------------- the page

CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"
_IDLE = "() => /\\|\\s*Idle/.test([...document.querySelectorAll('.jp-StatusBar-Item, .jp-StatusBar-TextItem')]" \
        ".map(e => e.textContent).join(' '))"


def find_cell(nb_path: Path, line: str) -> int:
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    hits = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and line in c.source]
    if not hits:
        raise RuntimeError(f"{nb_path.name}: no code cell holds {line!r}")
    return hits[0]


def cell_sources(nb_path: Path) -> list[tuple[str, str]]:
    import nbformat

    return [(c.cell_type, c.source) for c in nbformat.read(str(nb_path), as_version=4).cells]


class Page:
    def __init__(self, nb: Notebook):
        self.nb, self.page = nb, nb.page

    def cell(self, i: int):
        return self.page.locator(CELLS).nth(i)

    def prompt(self, i: int) -> str:
        return (self.cell(i).locator(".jp-InputArea-prompt").text_content() or "").strip()

    def select(self, i: int) -> None:
        c = self.cell(i)
        c.scroll_into_view_if_needed()
        c.locator(".jp-InputArea-prompt").click()

    def errors(self, i: int) -> str:
        texts = self.cell(i).locator(".jp-OutputArea-output").all_text_contents()
        bad = [t for t in texts if "Traceback (most recent call last)" in t or re.search(r"^\s*-{20,}\s*\n\s*\w+(Error|Exception)\b", t)]
        return bad[0] if bad else ""

    def wait_idle(self, timeout_s: float) -> None:
        self.page.wait_for_function(_IDLE, timeout=timeout_s * 1000, polling=500)

    def run_cell(self, i: int, timeout_s: float) -> None:
        """Select cell i, Ctrl+Enter (JupyterLab's run), wait until it has run and the kernel is idle."""
        before = self.prompt(i)
        self.select(i)
        self.page.keyboard.press("Control+Enter")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            p = self.prompt(i)
            if re.fullmatch(r"\[\d+\]:", p) and p != before and self.page.evaluate(_IDLE):
                return
            self.page.wait_for_timeout(500)
        raise TimeoutError(f"cell {i} did not finish in {timeout_s:.0f} s (prompt {self.prompt(i)!r})")

    def run_all_above(self, i: int, timeout_s: float) -> None:
        self.select(i)
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        self.page.locator('.lm-Menu-item[data-command="notebook:run-all-above"]').click()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.page.wait_for_timeout(1000)
            info = self.page.evaluate(
                """([sel, n]) => [...document.querySelectorAll(sel)].slice(0, n).map(c => ({
                     code: c.classList.contains('jp-CodeCell'),
                     prompt: (c.querySelector('.jp-InputArea-prompt')?.textContent || '').trim()}))""",
                [CELLS, i])
            code = [k for k, c in enumerate(info) if c["code"]]
            for k in code:
                err = self.errors(k)
                if err:
                    raise RuntimeError(f"cell {k} shows an error: {err.strip().splitlines()[-1][:300]}")
            if all(re.fullmatch(r"\[\d+\]:", info[k]["prompt"]) for k in code) and self.page.evaluate(_IDLE):
                return
        raise TimeoutError(f"the cells above cell {i} did not finish in {timeout_s:.0f} s")

    def set_source(self, i: int, text: str) -> None:
        """Replace the cell's code as a learner does: click into it, select all, type (inserted as text)."""
        editor = self.cell(i).locator(".jp-InputArea-editor .cm-content")
        editor.scroll_into_view_if_needed()
        editor.click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.press("Delete")
        self.page.keyboard.insert_text(text)
        shown = "\n".join(self.cell(i).locator(".jp-InputArea-editor .cm-line").all_text_contents())
        if shown.rstrip() != text.rstrip():
            raise RuntimeError(f"cell {i}: the editor holds other text than was typed:\n{shown[:400]}")
        self.page.keyboard.press("Escape")

    def mark_old(self, i: int) -> None:
        self.cell(i).evaluate("c => c.querySelectorAll('.rocmlab-verdict').forEach(v => v.dataset.passOld = '1')")

    def wait_new_verdict(self, i: int, timeout_s: float) -> None:
        self.cell(i).locator(".rocmlab-verdict:not([data-pass-old])").first.wait_for(timeout=timeout_s * 1000)
        self.page.wait_for_timeout(300)
        self.wait_idle(timeout_s)
        self.page.wait_for_function(
            "(el) => !/grading\\.\\.\\./.test(el.textContent)", arg=self.cell(i).element_handle(),
            timeout=timeout_s * 1000)

    def verdicts(self, i: int) -> list[dict]:
        return self.cell(i).locator(".rocmlab-verdict").evaluate_all(
            """vs => vs.map(v => { const r = v.getBoundingClientRect();
                 return {text: v.textContent.trim(), color: getComputedStyle(v).color,
                         right: r.right, width: r.width, visible: r.width > 0 && r.height > 0}; })""")

    def first_problem(self, i: int) -> str:
        """The first failed (or not run) check's row of a report: what went wrong and what to do."""
        rows = self.cell(i).locator(".rocmlab-checks tr").evaluate_all(
            "rs => rs.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))")
        bad = [r for r in rows if r and ("failed" in r[0] or "not run" in r[0])]
        return " ".join(bad[0][1:]) if bad else ""

    def outputs_text(self, upto: int) -> str:
        return "\n".join(t for k in range(upto)
                         for t in self.page.locator(CELLS).nth(k).locator(".jp-OutputArea-output").all_text_contents())

    def shot(self, i: int, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        v = self.cell(i).locator(".rocmlab-verdict").first
        target = v if v.count() else self.cell(i)
        target.evaluate("e => e.scrollIntoView({block: 'start'})")
        self.page.evaluate("""() => { const s = document.querySelector(
            '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer'); if (s) s.scrollTop -= 120; }""")
        self.page.wait_for_timeout(400)
        path = SHOTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


# --------------------------------------------------------------------------- one row

def reading(page: Page, i: int, shot: str) -> dict:
    vs = page.verdicts(i)
    err = page.errors(i)
    over = [o for o in overflowing_outputs(page.page) if o["cell"] == i]
    earned = earnable = possible = 0.0
    counted = False
    for v in vs:
        m = POINTS.search(v["text"])
        if m:
            counted = True
            earned += float(m.group(1))
            earnable += float(m.group(2))
            possible += float(m.group(3) or m.group(2))
    marks = [re.match(r"\[([^\]]+)\]", v["text"]).group(1) if re.match(r"\[([^\]]+)\]", v["text"]) else "?"
             for v in vs]
    return dict(verdicts=[v["text"] for v in vs], colours=[COLOUR_NAMES.get(v["color"], v["color"]) for v in vs],
                marks=marks, problem=page.first_problem(i), earned=earned, earnable=earnable, possible=possible, counted=counted,
                fits=not over and all(v["right"] <= VIEWPORT[0] for v in vs), overflow=over[:2],
                error=err.strip().splitlines()[-1][:300] if err else "", shot=str(page.shot(i, shot)))


def answer(page: Page, row: Row, i: int, text: str, timeout_s: float, home: Path) -> None:
    page.mark_old(i)
    if row.kind == "file":
        (home / row.file).write_text(text)
        button = page.cell(i).locator(".jupyter-widgets button", has_text="Grade again")
        button.scroll_into_view_if_needed()
        button.click()
    else:
        page.set_source(i, text)
        page.run_cell(i, timeout_s)
    page.wait_new_verdict(i, timeout_s)


def run_row(ctx, server, row: Row, home: Path) -> dict:
    if row.kind == "none":
        return dict(skipped=row.item)
    nb_path = home / row.notebook
    i = find_cell(nb_path, row.cell)
    source = cell_sources(nb_path)[i][1]
    nb = Notebook.open(ctx, server, row.notebook, timeout_s=180)
    page = Page(nb)
    out: dict = {"cell": i}
    t0 = time.monotonic()
    try:
        if row.prelude:
            for line in row.prelude:
                page.run_cell(find_cell(nb_path, line), row.timeout_s)
                err = page.errors(find_cell(nb_path, line))
                if err:
                    raise RuntimeError(f"cell {find_cell(nb_path, line)} shows an error: {err.strip()[-300:]}")
        else:
            page.run_all_above(i, row.timeout_s)
        out["setup_s"] = round(time.monotonic() - t0)
        # (c) untouched: the cell as the starter has it (a file-graded cell grades the file when it runs)
        page.mark_old(i)
        page.run_cell(i, row.timeout_s)
        page.wait_new_verdict(i, row.timeout_s)
        out["untouched"] = reading(page, i, f"{row.id}-untouched")
        earlier = page.outputs_text(i)
        # (a) wrong, then (b) right
        for phase, make in (("wrong", row.wrong), ("right", row.right)):
            t = time.monotonic()
            answer(page, row, i, make(source, earlier), row.timeout_s, home)
            out[phase] = reading(page, i, f"{row.id}-{phase}")
            out[phase]["s"] = round(time.monotonic() - t)
        for line in row.after:
            page.run_cell(find_cell(nb_path, line), row.timeout_s)
        if row.recheck:
            page.mark_old(i)
            page.run_cell(i, row.timeout_s)
            page.wait_new_verdict(i, row.timeout_s)
            out["recheck"] = reading(page, i, f"{row.id}-recheck")
    except Exception as exc:      # noqa: BLE001 - the row says what went wrong; the pass goes on
        out["failed"] = f"{type(exc).__name__}: {str(exc)[:600]}"
        out["trace"] = traceback.format_exc()[-2000:]
        with contextlib.suppress(Exception):
            out["failed_shot"] = str(page.shot(i, f"{row.id}-FAILED"))
    finally:
        out["total_s"] = round(time.monotonic() - t0)
        nb.close()
        stop_kernels(server)
    return out


def stop_kernels(server) -> None:
    """Shut down the row's kernels (and anything they left running) before the next row starts."""
    import psutil

    with contextlib.suppress(Exception):
        for k in server.api("kernels") or []:
            with contextlib.suppress(Exception):
                server.api(f"kernels/{k['id']}", method="DELETE", timeout=30)
    with contextlib.suppress(Exception):
        for s in server.api("sessions") or []:
            with contextlib.suppress(Exception):
                server.api(f"sessions/{s['id']}", method="DELETE", timeout=30)
    time.sleep(2)
    left = [p for p in descendants(server.proc.pid)]
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(left, timeout=10)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()


# --------------------------------------------------------------------------- the table

def pts(r: dict) -> str:
    if not r:
        return "-"
    if not r["counted"]:
        return f"{'/'.join(r['marks'])}, no points"
    tail = f" (of {r['possible']:g})" if r["possible"] != r["earnable"] else ""
    return f"{r['earned']:g}/{r['earnable']:g}{tail}"


def judge(out: dict) -> dict:
    """Each phase's pass/fail, from what the page showed."""
    w, r, u = out.get("wrong"), out.get("right"), out.get("untouched")
    ok = {}
    if w:
        ok["wrong"] = (any(m == "not yet" for m in w["marks"]) and w["earned"] < w["earnable"] and "red" in w["colours"] and not w["error"])
    if r:
        said = r["earnable"] == r["possible"] or "not checked here" in " ".join(r["verdicts"])
        ok["right"] = (all(m == "correct" for m in r["marks"]) and r["counted"] and r["earned"] == r["earnable"] > 0
                       and set(r["colours"]) == {"green"} and not r["error"] and said)
    if u and r:
        ok["untouched"] = (u["earned"] < r["earnable"] or not u["counted"]) and "correct" not in u["marks"] \
            and not u["error"]
    rc = out.get("recheck")
    if rc:      # nothing could be checked (the server is stopped): never "correct", in the neutral colour
        ok["recheck"] = "correct" not in rc["marks"] and set(rc["colours"]) == {"grey"} and not rc["error"]
    for phase in ("wrong", "right", "untouched", "recheck"):
        if out.get(phase):
            ok[f"{phase} fits"] = out[phase]["fits"]
    return ok


def mark(ok: dict, phase: str) -> str:
    """✔ where the phase did what it must, ✘ where not (or its verdict did not fit 1280 px)."""
    if phase not in ok:
        return ""
    return "✔" if ok[phase] and ok.get(f"{phase} fits", True) else "✘"


def short(text: str, n: int = 220) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " …"


def table(rows: list[Row], started: str, took_s: float) -> str:
    head = ["# Browser pass: every lab's graded item in JupyterLab at 1280x800 (Chromium)", "",
            f"Run {started} UTC, {took_s / 60:.0f} min; machine: {machine()}. Quick sizes (ROCMLAB_QUICK=1), a fresh "
            "course home (`rocmlab labs`), HOME and the progress record temporary. Reproduce: "
            "`python tools/browser_pass.py` (rows: `--only 01 ex01`).", "",
            "✔: the page showed what it must (wrong: [not yet] in red, below the points this machine can award; "
            "right: [correct] in green, all of them, and what it could not check said; untouched: below full) and "
            "the verdict fits 1280 px; ✘: it did not. Points are earned/what this machine can award (of what an "
            "MI300X can). Screenshots: test-artifacts/browser/pass/ROW-PHASE.png.", "",
            "| lab | graded item | wrong caught (points) | right full (points) | untouched score | verdicts shown "
            "(wrong / right / untouched) |", "|---|---|---|---|---|---|"]
    detail = ["", "## Verdicts in full", ""]
    for row in rows:
        o = row.result
        if o.get("skipped"):
            head.append(f"| {row.id} | {o['skipped']} | - | - | - | - |")
            continue
        ok = judge(o)
        fail = f" **not finished: {short(o['failed'], 200)}**" if o.get("failed") else ""
        cells = [f"{mark(ok, p)} {pts(o.get(p))}" for p in ("wrong", "right", "untouched")]
        shown = " / ".join(short(" ".join(o[p]["verdicts"]) or "(no verdict)", 160) if o.get(p) else "-"
                           for p in ("wrong", "right", "untouched"))
        if o.get("recheck"):
            rc = o["recheck"]
            shown += (f"; {mark(ok, 'recheck')} {row.recheck}: {short(' '.join(rc['verdicts']), 160)} "
                      f"({', '.join(rc['colours'])}, {pts(rc)})")
        note = f" ({row.note})" if row.note else ""
        head.append(f"| {row.id} | {row.item}; wrong answer: {row.wrong_name}{note} | {cells[0]} | {cells[1]} | "
                    f"{cells[2]} | {shown}{fail} |")
        detail.append(f"### {row.id}: {row.notebook}, cell {o.get('cell')}")
        detail.append("")
        for p in ("untouched", "wrong", "right", "recheck"):
            if not o.get(p):
                continue
            r = o[p]
            fits = "fits 1280 px" if r["fits"] else f"DOES NOT FIT: {r['overflow']}"
            detail.append(f"- **{p}** ({', '.join(r['colours'])}; {fits}; {r.get('s', o.get('setup_s', '-'))} s; "
                          f"`{Path(r['shot']).relative_to(ROOT) if Path(r['shot']).is_relative_to(ROOT) else r['shot']}`):")
            for v in r["verdicts"] or ["(no verdict element)"]:
                detail.append(f"  > {v}")
            if r.get("problem"):
                detail.append(f"  >\n  > first failed check: {r['problem']}")
            if r["error"]:
                detail.append(f"  error in the cell: {r['error']}")
        if o.get("failed"):
            detail.append(f"- **not finished**: {o['failed']}")
            detail.append("```\n" + o.get("trace", "") + "\n```")
        detail.append("")
    return "\n".join(head + detail) + "\n"


def machine() -> str:
    try:
        from rocmlab.machine.detect import current

        return current().summary().splitlines()[0]
    except Exception as exc:   # noqa: BLE001
        return f"(not detected: {exc})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="row ids: 00..11, 01b, 01c, ex01, ex02, ex12")
    args = ap.parse_args(argv)
    rows = [r for r in ROWS if not args.only or r.id in args.only]
    unknown = set(args.only or ()) - {r.id for r in ROWS}
    if unknown:
        ap.error(f"no rows {sorted(unknown)}: choose from {[r.id for r in ROWS]}")
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocmlab-browser-pass-") as tmp:
        tmp = Path(tmp)
        home = tmp / "course"
        os.environ["ROCMLAB_PROGRESS"] = str(tmp / "progress.json")   # the grades of this pass, never the user's
        os.environ["ROCMLAB_QUICK"] = "1"
        subprocess.run([sys.executable, "-m", "rocmlab.cli", "labs", str(home)], check=True, cwd=tmp,
                       stdout=subprocess.DEVNULL)
        with jupyterlab(home, tmp / "work") as server, chromium(tmp / "chromium", viewport=VIEWPORT) as ctx:
            # Lab 04 last: it starts a vLLM server (minutes, 2 GB); the table keeps the labs' order
            for row in sorted(rows, key=lambda r: r.id == "04"):
                print(f"[{time.strftime('%H:%M:%S')}] {row.id}: {row.notebook}", flush=True)
                row.result = run_row(ctx, server, row, home)
                if row.result.get("failed"):
                    print(f"    not finished: {row.result['failed']}", flush=True)
                TABLE.parent.mkdir(parents=True, exist_ok=True)
                TABLE.write_text(table([r for r in rows if r.result], started, time.monotonic() - t0))
    text = table(rows, started, time.monotonic() - t0)
    TABLE.write_text(text)
    print(text)
    print(f"written: {TABLE} and {SHOTS}/")
    bad = [r.id for r in rows if r.result.get("failed") or not all(judge(r.result).values())]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
