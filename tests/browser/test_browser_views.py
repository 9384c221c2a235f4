"""Every lab and exercise notebook as a learner sees it at 1280x800: executed headless (papermill, quick
sizes), then opened in JupyterLab in Chromium. No output area may be wider than the page, no code line longer
than 100 characters, no table value broken across lines, and every cell tagged ``graded`` must show its verdict
once. One screenshot per notebook goes to test-artifacts/browser/views/
(``<stem>.png``: the first screen; ``<stem>-full-NN.png``: the whole notebook, in tiles), and every overflowing output
gets its own ``<stem>-overflow-<cell>.png``. A summary of the overflows is written to ``overflow.json`` (``overflow-gwN.json`` per pytest-xdist worker), and
the seconds each view spent per phase to ``phases.json`` (``phases-gwN.json``).

Notebooks are found on disk, so labs added later are covered. One JupyterLab serves them all; each
notebook's kernel is shut down when its test ends.

    ROCMLAB_QUICK=1 .venv/bin/python -m pytest tests/browser/test_browser_views.py
    ROCMLAB_BROWSER_ONLY=01-hip,exercises/03 ...     # a subset, by path fragment
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary
import pytest
from tests.helpers.browser_notebooks import write_view_control_notebook
from tests.helpers.labharness import Notebook, chromium
from tests.helpers.views import (ROOT, VIEWPORT, artifacts_dir, broken_values, discover, execute, executed, graded_cells,
                   long_code_lines, missing_verdicts, overflowing_code, overflowing_outputs, repeated_verdicts,
                   screenshot_full, wait_rendered)

ONLY = [s for s in os.environ.get("ROCMLAB_BROWSER_ONLY", "").split(",") if s]
NOTEBOOKS = [p for p in discover() if not ONLY or any(s in str(p.relative_to(ROOT / "labs")) for s in ONLY)]
SUMMARY: dict[str, list] = {}
#: seconds per notebook in each phase of its view (open, render, reload, run live, checks, screenshots, close):
#: written beside the overflows, so that the suite's time in this test can be read per phase
PHASES: dict[str, dict] = {}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT / "labs"))


@pytest.fixture(scope="module")
def browser(no_leftovers, tmp_path_factory):
    """Chromium at the size the course is laid out for: 1280x800."""
    import os as _os

    from tests.helpers.labharness import descendants
    with chromium(tmp_path_factory.mktemp("chromium-views"), viewport=VIEWPORT) as ctx:
        yield ctx
        no_leftovers |= {p.pid for p in descendants(_os.getpid())}


@pytest.fixture(scope="module", autouse=True)
def overflow_summary():
    yield SUMMARY
    out = artifacts_dir() / "views"
    out.mkdir(parents=True, exist_ok=True)
    total = sum(len(v) for v in SUMMARY.values())
    worker = os.environ.get("PYTEST_XDIST_WORKER")      # each worker views some notebooks: a file each
    suffix = f"-{worker}" if worker else ""
    (out / f"overflow{suffix}.json").write_text(json.dumps({"overflowing_outputs": total, "notebooks": SUMMARY},
                                                           indent=1))
    (out / f"phases{suffix}.json").write_text(json.dumps(PHASES, indent=1))


def _shutdown_kernels(server) -> None:
    for s in server.api("sessions") or []:
        try:
            server.api(f"sessions/{s['id']}", method="DELETE", timeout=20)
        except Exception:
            pass


def _trust(server, rel: str) -> None:
    """Sign the executed notebook with the server's key, so JupyterLab shows its outputs as the learner saw them
    when they ran it (an unsigned notebook's HTML is sanitized: its styles would be dropped). What
    ``jupyter trust`` does, in this process: the server's data folder holds the key and the signatures."""
    notary = NotebookNotary(data_dir=server.env["JUPYTER_DATA_DIR"])
    notary.sign(nbformat.read(str(server.root / rel), as_version=4))


def _look(browser, server, rel: str, stem: str, seen: dict | None = None) -> tuple[list, list[int], list[dict]]:
    """Open an executed notebook; return (overflowing outputs, graded cells without a verdict, outputs that
    never rendered). ``seen`` (a dict) also gets the code and table checks: ``long_code`` (lines over 100
    characters), ``wide_code`` (editors wider than their cell), ``broken`` (a table value broken across lines)
    and ``repeated`` (an output that says its verdict more than once)."""
    t0 = time.monotonic()
    phases = PHASES.setdefault(stem, {})

    def phase(name: str) -> None:
        nonlocal t0
        phases[name] = round(phases.get(name, 0) + time.monotonic() - t0, 1)
        t0 = time.monotonic()
    _trust(server, rel)
    nb = Notebook.open(browser, server, rel, timeout_s=120)
    phase("open")
    try:
        stuck = wait_rendered(nb.page)
        phase("render")
        if stuck:      # widget state restored while the kernel connects can race: one reload, a longer wait
            nb.page.reload(wait_until="domcontentloaded")
            nb.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
            stuck = wait_rendered(nb.page, timeout_s=120)
            phase("reload")
        if stuck:      # widgets that live in their kernel (plotly FigureWidgets): run it live, as a learner does
            nb.run_all(timeout_s=900)
            stuck = wait_rendered(nb.page, timeout_s=120)
            phase("run live")
        wide = overflowing_outputs(nb.page)
        missing = missing_verdicts(nb.page, graded_cells(server.root / rel))
        if seen is not None:
            seen.update(long_code=long_code_lines(nb.page), wide_code=overflowing_code(nb.page),
                        broken=broken_values(nb.page), repeated=repeated_verdicts(nb.page))
        shots = artifacts_dir() / "views"
        nb.page.screenshot(path=str(shots / f"{stem}.png"))
        cells = nb.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        for w in wide[:6]:
            cell = cells.nth(w["cell"])
            out = (cell.locator(".jp-RenderedMarkdown").first if w["output"] == "markdown"
                   else cell.locator(".jp-OutputArea-output").nth(w["output"]))
            out.scroll_into_view_if_needed()
            out.screenshot(path=str(shots / f"{stem}-overflow-{w['cell']}.png"))
        phase("checks")
        screenshot_full(nb.page, shots / f"{stem}-full")
        phase("screenshots")
        return wide, missing, stuck
    finally:
        nb.close()
        _shutdown_kernels(server)
        phase("close")


def test_the_view_checks_catch_a_wide_output_and_a_graded_cell_without_a_verdict(server, browser):
    """The control: a notebook with one wide output, one wide markdown table and one graded cell that shows
    nothing must fail both checks, at exactly those cells; its wrapped output, its prose table and its graded cell
    with a verdict must pass."""
    write_view_control_notebook(server.root / "control.ipynb")
    execute(server.root / "control.ipynb", server.root / "control.ipynb", timeout_s=60)
    seen: dict = {}
    wide, missing, stuck = _look(browser, server, "control.ipynb", "control", seen)
    assert stuck == []
    assert [w["cell"] for w in wide] == [2, 5], wide              # the 4000-px line and the table of long names
    assert wide[1]["output"] == "markdown", wide                  # the wrapped output and the prose table pass
    assert missing == [4], missing                                # cell 3 shows its verdict, cell 4 does not
    # code that fits: cell 7's 163-character line is caught, cell 8's 100 characters pass (and fit the editor)
    assert [(c["cell"], c["length"]) for c in seen["long_code"]] == [(7, 163)], seen["long_code"]
    assert [c["cell"] for c in seen["wide_code"]] == [7], seen["wide_code"]
    # a value broken inside a narrow column (cell 9) is caught; cell 10 keeps it whole beside wrapping prose;
    # pandas' own table breaks a hyphenated name beside prose (cell 12), the course's shows it whole (cell 13);
    # a wrap table's long name broken at its underscores passes (cell 14), the same name broken at its hyphens
    # is caught (cell 15)
    assert [b["cell"] for b in seen["broken"]] == [9, 12, 15], seen["broken"]
    assert seen["broken"][0]["text"].startswith("1234"), seen["broken"]
    assert seen["broken"][1]["text"] == "port-block-reduction" and "-|" in seen["broken"][1]["at"], seen["broken"]
    assert seen["broken"][2]["text"] == "xcd-remap-grouped_v2_tile" and "-|" in seen["broken"][2]["at"], seen
    # one verdict line per output: cell 11 says it twice, cell 3 once
    assert [(r["cell"], r["n"]) for r in seen["repeated"]] == [(11, 2)], seen["repeated"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_notebook_fits_the_page_and_every_graded_cell_shows_a_verdict(path, server, browser):
    rel = _rel(path)
    dest = server.root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(executed(path), dest)      # the session's one run of this notebook (shared with test_labs_run)
    stem = rel.replace("/", "-").removesuffix(".ipynb")
    seen: dict = {}
    wide, missing, stuck = _look(browser, server, rel, stem, seen)
    SUMMARY[rel] = wide
    nb = nbformat.read(str(dest), as_version=4)
    problems = [f"cell {w['cell']} output {w['output']}: {w['wide'][0][0]} {w['wide'][0][1]} px in "
                f"{w['wide'][0][2]} px ({w['text'][:50]!r})" for w in wide]
    problems += [f"cell {c['cell']} line {c['line']}: {c['length']} characters of code, more than 100 "
                 f"({c['text'][:40]!r})" for c in seen["long_code"]]
    problems += [f"cell {c['cell']}: the code editor is {c['wide'][0]} px wide in {c['wide'][1]} px"
                 for c in seen["wide_code"]]
    problems += [f"cell {b['cell']}: a table value is broken over {b['lines']} lines at {b['at']!r} "
                 f"({b['text']!r})" for b in seen["broken"]]
    problems += [f"cell {r['cell']} output {r['output']}: the verdict is said {r['n']} times" for r in seen["repeated"]]
    problems += [f"cell {s['cell']}: an output never rendered: {s['text']!r}" for s in stuck]
    problems += [f"graded cell {i} shows no verdict ({nb.cells[i].source.splitlines()[0][:60]!r})" for i in missing]
    assert not problems, f"{rel} at {VIEWPORT[0]}x{VIEWPORT[1]}:\n" + "\n".join(problems)


def test_grade_again_after_an_edit_shows_the_new_score(server, browser):
    """A learner's loop in the real browser: Run All an exercise notebook, open the .hip file from the link (an
    editor tab opens), change the file, press Grade again, and see the new score for the file as it is now."""
    from rocmlab import grader

    src = next((ROOT / "labs" / "exercises").glob("*-block-reduction.ipynb"))
    rel = f"grade-again/{src.name}"
    (server.root / "grade-again").mkdir(exist_ok=True)
    shutil.copy(src, server.root / rel)
    nb = Notebook.open(browser, server, rel, timeout_s=120)
    try:
        nb.run_all(timeout_s=900)
        page = nb.page
        verdict = page.locator(".jupyter-widgets .rocmlab-verdict").first
        verdict.wait_for(timeout=30_000)
        before = verdict.text_content()
        assert "[not yet]" in before and "points here" in before, before
        shots = artifacts_dir() / "views"
        box = page.locator(".jp-OutputArea-output .widget-vbox", has=page.locator(".rocmlab-verdict")).first
        box.scroll_into_view_if_needed()
        nb.page.screenshot(path=str(shots / "grade-again-before.png"))

        # the link opens the learner's file in JupyterLab's editor, in a tab beside the notebook
        page.locator("a.rocmlab-open").first.click()
        page.locator(".lm-TabBar-tab", has_text="block_sum.hip").first.wait_for(timeout=30_000)
        page.locator(".jp-FileEditor .cm-content").first.wait_for(timeout=30_000)
        # the editor appears before the file's text arrives: wait for the text (it fails if it never comes)
        page.wait_for_function("() => { const e = document.querySelector('.jp-FileEditor .cm-content');"
                               " return e && e.textContent.includes('__shfl_down_sync'); }", timeout=30_000)
        nb.page.screenshot(path=str(shots / "grade-again-editor.png"))

        # the edit (as the editor's save would write it), then back to the notebook and Grade again
        path = server.root / "grade-again" / "my-work" / "block-reduction" / "block_sum.hip"
        assert path.is_file()
        path.write_text(grader.load("block-reduction").solution)
        page.locator(".lm-TabBar-tab", has_text=src.name).first.click()
        page.locator(".jupyter-widgets button", has_text="Grade again").first.click()
        page.wait_for_function(
            "() => { const v = document.querySelector('.jupyter-widgets .rocmlab-verdict');"
            " return v && v.textContent.includes('[correct]'); }", timeout=300_000)
        after = verdict.text_content()
        score = lambda t: float(re.search(r"([\d.]+)/[\d.]+ points here", t).group(1))  # noqa: E731
        assert score(after) > score(before), (before, after)
        box.scroll_into_view_if_needed()
        nb.page.screenshot(path=str(shots / "grade-again-after.png"))
    finally:
        nb.close()
        _shutdown_kernels(server)
