"""What a learner sees in an executed notebook: output areas wider than the page, graded cells without a
verdict, and the screenshots. Used by test_browser_views.py; the checks are plain functions of a page so
that a control notebook can prove each one fails on a bad view.

- A *graded cell* is a code cell tagged ``graded`` in the notebook. Its output must hold an element of class
  ``rocmlab-verdict`` (rocmlab.course.verdict writes it: correct / not yet / not answered / points), and no
  output may say its verdict more than once.
- *Code that fits*: no code line over 100 characters, and no code editor wider than its cell.
- *A table never breaks inside a value*: a table cell holding one value without spaces (a number, "3/4", a
  name) is laid out on one line, or (a long name in a ``wrap`` table) breaks only right after ``_ / , .``.
- An *overflowing output* is a ``.jp-OutputArea-output`` whose content is wider than the area
  (``scrollWidth > clientWidth``), or that holds a scrolling element wider than itself: the learner would
  have to scroll sideways (or would not see the right-hand part at all). A rendered markdown cell wider than
  its area (a table of long code names) counts too (``output`` is then ``"markdown"``).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

import nbformat

from tests.helpers import wheel_env

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = (1280, 800)

_OVERFLOW_JS = r"""() => {
  const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')];
  const found = [];
  cells.forEach((cell, index) => {
    cell.querySelectorAll('.jp-OutputArea-output').forEach((out, k) => {
      const wide = [];
      if (out.scrollWidth > out.clientWidth + 1) wide.push(['output', out.scrollWidth, out.clientWidth]);
      out.querySelectorAll('*').forEach(el => {
        const ox = getComputedStyle(el).overflowX;
        if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1)
          wide.push([el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
                     ? '.' + el.className.split(' ')[0] : ''), el.scrollWidth, el.clientWidth]);
      });
      if (wide.length) found.push({cell: index, output: k, wide: wide.slice(0, 3),
                                   text: out.textContent.trim().slice(0, 80)});
    });
    // the lab's own text: a markdown table or a code line wider than the page
    cell.querySelectorAll(':scope.jp-MarkdownCell .jp-RenderedMarkdown').forEach(md => {
      if (md.scrollWidth > md.clientWidth + 1)
        found.push({cell: index, output: 'markdown', wide: [['markdown', md.scrollWidth, md.clientWidth]],
                    text: md.textContent.trim().slice(0, 80)});
    });
  });
  return found;
}"""

_VERDICTS_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
  .map(c => [...c.querySelectorAll('.jp-OutputArea-output .rocmlab-verdict')].map(v => v.textContent.trim()))"""


def discover(root: Path = ROOT) -> list[Path]:
    """Every lab and exercise notebook, found on disk (labs added later are picked up)."""
    return sorted((root / "labs").glob("*.ipynb")) + sorted((root / "labs" / "exercises").glob("*.ipynb"))


def graded_cells(path: Path) -> list[int]:
    """Indices (in the executed notebook) of the code cells tagged ``graded``."""
    nb = nbformat.read(str(path), as_version=4)
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and "graded" in c.get("metadata", {}).get("tags", [])]


def execute(src: Path, dest: Path, timeout_s: int = 600, venv: Path | None = None) -> Path:
    """Run ``src`` headless with papermill (quick sizes) into ``dest``, in dest's folder, as a learner would: in
    this environment, or with ``venv`` in that environment's Python and kernel (tests/helpers/wheel_env.py)."""
    import papermill

    dest.parent.mkdir(parents=True, exist_ok=True)
    progress = os.environ.get("ROCMLAB_PROGRESS")
    os.environ["ROCMLAB_PROGRESS"] = str(Path(tempfile.gettempdir()) / f"rocmlab-test-progress-{SESSION}-{src.stem}.json")
    try:                      # the kernel inherits this process's environment
        if venv is not None:
            wheel_env.execute_in_venv(venv, src, dest, timeout_s)
        else:
            papermill.execute_notebook(str(src), str(dest), parameters={"quick": True}, cwd=str(dest.parent),
                                       kernel_name="python3", execution_timeout=timeout_s, progress_bar=False,
                                       log_output=False)
    finally:
        if progress is None:
            os.environ.pop("ROCMLAB_PROGRESS", None)
        else:
            os.environ["ROCMLAB_PROGRESS"] = progress
    return dest


_RUNS: dict[Path, Path | BaseException] = {}
#: One id per test session, the same in every pytest-xdist worker: a notebook run marked with it is this session's.
SESSION = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"solo-{os.getpid()}-{time.time_ns()}"


class NotebookFailed(RuntimeError):
    """This session's run of a notebook failed (in this process or in another worker)."""


def executed(src: Path) -> Path:
    """``src`` run headless once per test session (papermill, quick sizes), into test-artifacts/browser/executed/:
    the notebook test (tests/notebooks/whole/test_labs_run.py) and the view test share the one run, also across pytest-xdist
    workers (a lock per notebook; the first to ask runs it, the others wait and read the result). A failure is
    raised again for whoever asks next. The runs record grades in a progress file of the session's own
    (``ROCMLAB_PROGRESS``), never in the user's. A lab (labs/*.ipynb) runs from the session's installed wheel, in
    its venv's kernel (tests/helpers/wheel_env.py): that run is also the wheel test's proof that every lab runs
    from the wheel; an exercise notebook runs in this environment."""
    if src not in _RUNS:
        dest = artifacts_dir() / "executed" / src.relative_to(ROOT / "labs")
        dest.parent.mkdir(parents=True, exist_ok=True)
        status = dest.with_name(dest.name + ".status")
        with open(dest.with_name(dest.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                run_id, _, outcome = status.read_text().partition("\n")
            except FileNotFoundError:
                run_id, outcome = "", ""
            if run_id == SESSION:
                _RUNS[src] = dest if outcome == "ok" else NotebookFailed(outcome)
            else:
                try:
                    # a lab runs from the session's installed wheel (its one run is the wheel test's too); an
                    # exercise notebook from this checkout, and a lab too where no wheel can be built (no git)
                    from_wheel = src.parent == ROOT / "labs" and wheel_env.can_build()
                    venv = wheel_env.session_wheel(SESSION)[1] if from_wheel else None
                    _RUNS[src] = execute(src, dest, venv=venv)
                    status.write_text(SESSION + "\nok")
                except BaseException as exc:    # noqa: BLE001 - kept and raised again for the next asker
                    _RUNS[src] = exc
                    status.write_text(SESSION + "\n" + f"{type(exc).__name__}: {exc}"[:20000])
    run = _RUNS[src]
    if isinstance(run, BaseException):
        raise run
    return run


_LONG_CODE_JS = r"""(limit) => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
  .flatMap((c, i) => c.classList.contains('jp-CodeCell')
    ? [...c.querySelectorAll('.jp-InputArea-editor .cm-line')].map((l, n) => ({cell: i, line: n + 1,
        length: l.textContent.length, text: l.textContent.slice(0, 60)})).filter(l => l.length > limit)
    : [])"""

_CODE_OVERFLOW_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
  .flatMap((c, i) => [...c.querySelectorAll('.jp-InputArea-editor .cm-scroller')]
    .filter(s => s.scrollWidth > s.clientWidth + 1).map(s => ({cell: i, wide: [s.scrollWidth, s.clientWidth]})))"""

#: A table cell holding one value (no space in it: a number, "3/4", a name) whose text the browser laid out on
#: more than one line, broken somewhere other than right after a ``_`` or ``/`` (after a letter or digit) or a
#: ``,`` or ``.`` (after a letter): the places rocmlab.html_table's ``wrap`` tables may break a long name. A
#: cell laid out as code (``white-space: pre*``: a line of a side-by-side diff) is code, not a value.
_BROKEN_VALUES_JS = r"""() => {
  const out = [];
  const allowed = (prev, before) => ('_/'.includes(prev) && /\w/.test(before || ''))
                                    || (',.'.includes(prev) && /[A-Za-z]/.test(before || ''));
  const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')];
  cells.forEach((c, i) => c.querySelectorAll('.jp-OutputArea-output td, .jp-RenderedMarkdown td').forEach(td => {
    const t = td.textContent.trim();
    if (!t || /\s/.test(t) || getComputedStyle(td).whiteSpace.startsWith('pre')) return;
    // each character's line box (text nodes only: an element's own box, e.g. <code>'s padding, is no line)
    const chars = [];
    const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let k = 0; k < n.data.length; k++) {
        if (/\s/.test(n.data[k])) continue;
        const r = document.createRange(); r.setStart(n, k); r.setEnd(n, k + 1);
        const x = [...r.getClientRects()].find(x => x.width > 0 && x.height > 0);
        if (x) chars.push({ch: n.data[k], top: x.top, height: x.height});
      }
    }
    let lines = chars.length ? 1 : 0, bad = null;
    for (let k = 1; k < chars.length; k++) {
      if (chars[k].top > chars[k - 1].top + chars[k - 1].height / 2) {
        lines += 1;
        const prev = chars[k - 1].ch, before = k > 1 ? chars[k - 2].ch : '';
        if (bad === null && !allowed(prev, before))
          bad = chars.slice(Math.max(0, k - 6), k).map(x => x.ch).join('') + '|' +
                chars.slice(k, k + 6).map(x => x.ch).join('');
      }
    }
    if (bad !== null) out.push({cell: i, text: t.slice(0, 60), lines, at: bad});
  }));
  return out;
}"""

#: An output that says its verdict more than once (the issue's "said three times").
_REPEATED_VERDICTS_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
  .flatMap((c, i) => [...c.querySelectorAll('.jp-OutputArea-output')]
    .map((o, k) => ({cell: i, output: k, n: o.querySelectorAll('.rocmlab-verdict').length}))
    .filter(o => o.n > 1))"""


def long_code_lines(page, limit: int = 100) -> list[dict]:
    """Code lines (as the editor shows them) longer than ``limit`` characters."""
    return page.evaluate(_LONG_CODE_JS, limit)


def overflowing_code(page) -> list[dict]:
    """Code cells whose editor is wider than the cell (the learner scrolls sideways to read the code)."""
    return page.evaluate(_CODE_OVERFLOW_JS)


def broken_values(page) -> list[dict]:
    """Table cells whose single value is broken across lines at a place no table may break it (``at``: the
    characters either side of the first such break, split by ``|``)."""
    return page.evaluate(_BROKEN_VALUES_JS)


def repeated_verdicts(page) -> list[dict]:
    """Outputs that show more than one verdict line (one element says it once)."""
    return page.evaluate(_REPEATED_VERDICTS_JS)


def overflowing_outputs(page) -> list[dict]:
    return page.evaluate(_OVERFLOW_JS)


def verdicts_by_cell(page) -> list[list[str]]:
    return page.evaluate(_VERDICTS_JS)


def missing_verdicts(page, graded: list[int]) -> list[int]:
    shown = verdicts_by_cell(page)
    return [i for i in graded if i >= len(shown) or not shown[i]]


_UNRENDERED_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
  .flatMap((c, i) => [...c.querySelectorAll('.jp-OutputArea-output')]
    .filter(o => /Loading widget|Error displaying widget|Failed to load model/.test(o.textContent))
    .map(o => ({cell: i, text: o.textContent.trim().slice(0, 120)})))"""


def wait_rendered(page, timeout_s: float = 20.0) -> list[dict]:
    """Wait until every stored output is on the page (widgets restored from the saved state included).
    Returns the outputs that never rendered (a widget still loading, or one that failed): a view problem, or
    widgets that need their kernel (the caller then runs the notebook live). Saved widgets render in 1-3 s on a
    loaded 2-core machine, hence the 20 s."""
    try:
        page.wait_for_function(f"() => ({_UNRENDERED_JS})().length === 0", timeout=timeout_s * 1000)
    except Exception:
        pass
    page.wait_for_timeout(750)           # plotly and MathJax lay out after insertion
    return page.evaluate(_UNRENDERED_JS)


_SCROLLER = "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')"


def screenshot_full(page, prefix: Path, tile: int = 2000, max_tiles: int = 40) -> list[Path]:
    """The whole notebook at the page's width, as tiles ``<prefix>-NN.png``: the viewport is made ``tile`` px tall
    (widths, and so every wrap, stay those of 1280 px) and the notebook is scrolled a screen at a time."""
    w, h = VIEWPORT
    page.set_viewport_size({"width": w, "height": tile})
    paths = []
    try:
        page.wait_for_timeout(300)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        total = page.evaluate(f"() => {_SCROLLER}.scrollHeight")
        step = page.evaluate(f"() => {_SCROLLER}.clientHeight") - 40
        for k in range(max_tiles):
            page.evaluate(f"(y) => {{ {_SCROLLER}.scrollTop = y; }}", k * step)
            page.wait_for_timeout(150)       # the windowed notebook draws the cells scrolled in
            path = Path(f"{prefix}-{k:02d}.png")
            page.screenshot(path=str(path))
            paths.append(path)
            if (k + 1) * step >= total:
                break
    finally:
        page.set_viewport_size({"width": w, "height": h})
    return paths


def artifacts_dir() -> Path:
    return Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
