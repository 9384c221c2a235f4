"""``rocmlab preflight``: run every lab headless with quick parameters, before a workshop.

Each notebook runs through papermill with ``quick=True`` in its own kernel. A failing
lab never stops the others: its error, the failing cell and its source go into the
summary. Outputs: the executed notebooks, ``summary.json``, ``summary.md`` and
``summary.html`` (lab, status, duration, backend, headline figures). Exit status 1
when any lab failed, 2 for bad input. The labs run in a temporary copy with a progress record of their own:
the labs folder and the user's progress record are left as they were.

The failing cell is the one that was running when the lab failed (an exception, a cell
timeout, a kernel that died), numbered as in the lab itself: papermill's injected
``parameters`` cell is not counted. ``cell_index`` counts from 0, ``cell_number`` from 1.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import optional_imports, settings
from rocmlab.machine.detect import current
from rocmlab.status import VERDICTS, check_status

#: The progress record's variable (rocmlab.settings): a preflight's kernels record into a temporary one.
PROGRESS_ENV = "ROCMLAB_PROGRESS"
#: An optional package a lab stops without -> how to install it (added to that lab's error).
INSTALL_FIX = {"triton": "pip install 'rocmlab[triton]' (CPU machines; ROCm and CUDA torch builds bring their own "
                         "Triton)",
               "vllm": "set ROCMLAB_SERVE_URL to a running server, or install vLLM"}
#: Characters of an error shown in summary.md's table (summary.json and .html have all of it).
MD_ERROR_CHARS = 200


class PreflightError(Exception):
    """Bad input: the message names the problem and the fix."""


@dataclass
class LabResult:
    lab: str
    status: str               # a verdict: passed | failed
    duration_s: float
    backend: str
    output: str               # the executed notebook
    headlines: list = field(default_factory=list)
    error: str = ""           # ename: evalue
    cell_index: int | None = None     # in the lab as written (0 = its first cell); None: no cell had started
    cell_source: str = ""

    def __post_init__(self):
        check_status(self.status, VERDICTS, f"lab {self.lab}: status")

    @property
    def cell_number(self) -> int | None:
        return None if self.cell_index is None else self.cell_index + 1

    def where(self) -> str:
        """Where the lab failed, for a person: 'cell 3' (counting from 1), or why there is no cell."""
        if self.cell_index is None:
            return "before any cell ran (the kernel did not start, or the notebook could not be read)"
        if self.cell_index < 0:
            return "in the injected parameters cell (check the lab's parameters cell)"
        return f"cell {self.cell_number}"


INJECTED_TAG = "injected-parameters"
PAPERMILL_ERROR_TAG = "papermill-error-cell-tag"


def failed_cell(executed: Path, index: int | None = None) -> tuple[int | None, str]:
    """(index in the lab as written, source) of the cell that failed in an executed notebook.

    ``index`` is papermill's index in the executed notebook (its PapermillExecutionError); without
    it (a timeout, a dead kernel) the failed cell is the last one papermill started. The injected
    parameters cell is not counted (-1 when it is the one that failed)."""
    import nbformat

    try:
        nb = nbformat.read(str(executed), as_version=4)
    except Exception:      # not written, or cut: nothing to say
        return None, ""
    # papermill writes a failed notebook with markdown cells of its own (an error banner, an anchor
    # before the failed cell); its cell_index counts the notebook without them
    cells = [c for c in nb.cells if PAPERMILL_ERROR_TAG not in c.get("metadata", {}).get("tags", [])]
    if index is None:
        started = [i for i, c in enumerate(cells) if (c.get("metadata", {}).get("papermill") or {}).get("start_time")]
        if not started:
            return None, ""
        index = started[-1]
    if not 0 <= index < len(cells):
        return None, ""
    injected = [i for i, c in enumerate(cells) if INJECTED_TAG in c.get("metadata", {}).get("tags", [])]
    source = cells[index].get("source", "")
    if index in injected:
        return -1, source
    return index - sum(i < index for i in injected), source


def find_labs(labs_dir: Path, only: str | None = None) -> list[Path]:
    labs_dir = Path(labs_dir)
    if not labs_dir.exists():
        raise PreflightError(f"labs folder '{labs_dir}' does not exist; "
                             "give --labs a folder of notebooks (the course's is labs/)")
    if not labs_dir.is_dir():
        raise PreflightError(f"'{labs_dir}' is a file, not a folder; give --labs the folder holding the notebooks")
    labs = sorted(p for p in labs_dir.glob("*.ipynb") if not p.name.startswith("."))
    if only:
        labs = [p for p in labs if only in p.name]
    if not labs:
        what = f" matching '{only}'" if only else ""
        raise PreflightError(f"no notebooks{what} in '{labs_dir}'; expected files like 00-setup.ipynb")
    return labs


def read_headlines(path: str) -> list[dict]:
    """The figures a lab's ``headline()`` calls appended to ``path`` (one JSON object a line)."""
    try:
        with open(path) as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def _run_one(nb: Path, out_dir: Path, quick: bool, timeout_s: int) -> LabResult:
    """One lab through papermill; its ``backend`` is the caller's to fill in."""
    optional_imports.skip()         # papermill reads notebooks with nbformat: 0.8 s less (rocmlab.optional_imports)
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = out_dir / nb.name
    fd, hl_path = tempfile.mkstemp(prefix="headlines-", suffix=".jsonl")
    os.close(fd)
    old = os.environ.get(settings.HEADLINES_ENV)
    os.environ[settings.HEADLINES_ENV] = hl_path
    start = time.monotonic()
    result = LabResult(nb.stem, "passed", 0.0, "", str(out))
    try:
        papermill.execute_notebook(str(nb), str(out), parameters={"quick": quick}, cwd=str(nb.parent),
                                   progress_bar=False, execution_timeout=timeout_s, kernel_name="python3")
    except PapermillExecutionError as exc:
        result.status = "failed"
        result.error = f"{exc.ename}: {exc.evalue}" + _install_fix(exc.ename, exc.evalue)
        result.cell_index, source = failed_cell(out, exc.cell_index)
        result.cell_source = source or exc.source
    except Exception as exc:  # kernel death, timeouts, unreadable notebooks: record, go on
        result.status = "failed"
        kind = type(exc).__name__
        if kind == "CellTimeoutError":
            result.error = (f"{kind}: the cell ran longer than {timeout_s:g} s (--timeout): it hangs, or needs a "
                            "larger --timeout")
        elif kind == "DeadKernelError":
            result.error = (f"{kind}: the kernel died (a crash, os._exit, or out of memory): run the lab by hand "
                            "to see why")
        else:
            result.error = f"{kind}: {exc}"
        result.cell_index, result.cell_source = failed_cell(out)
    finally:
        if old is None:
            os.environ.pop(settings.HEADLINES_ENV, None)
        else:
            os.environ[settings.HEADLINES_ENV] = old
        result.duration_s = time.monotonic() - start
        result.headlines = read_headlines(hl_path)
        os.unlink(hl_path)
    return result


def _install_fix(ename: str, evalue: str) -> str:
    """For a lab stopped by a missing optional package: what is missing and how to install it ('' otherwise)."""
    if ename != "ModuleNotFoundError":
        return ""
    name = evalue.split("'")[1].split(".")[0] if evalue.count("'") >= 2 else ""
    fix = INSTALL_FIX.get(name)
    return f" (an optional package this lab needs is not installed: {fix})" if fix else ""


def run(labs_dir: Path, out_dir: Path, quick: bool = True, timeout_s: float = settings.PREFLIGHT_CELL_TIME_LIMIT_S,
        only: str | None = None, progress: bool = True) -> list[LabResult]:
    from tqdm.auto import tqdm

    try:
        timeout_s = settings.time_limit(timeout_s, what="--timeout", maximum=settings.PREFLIGHT_MAX_CELL_TIME_S)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None
    labs = find_labs(labs_dir, only)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    bar = tqdm(labs, desc="preflight", unit="lab", disable=not progress)
    with _scratch_copy(Path(labs_dir)) as work, ThreadPoolExecutor(max_workers=1) as pool:
        detecting = pool.submit(lambda: current().label)   # imports torch (0.7 s) while the first kernel starts
        for nb in bar:
            bar.set_postfix_str(nb.stem)
            result = _run_one(work / nb.name, out_dir, quick, timeout_s)
            result.backend = detecting.result()
            results.append(result)
            write_summary(results, out_dir)   # after every lab: a killed run keeps what it did
    return results


@contextlib.contextmanager
def _scratch_copy(labs_dir: Path):
    """A temporary copy of the labs (``rocmlab labs``' copy: course files only, no one's my-work) to run them in,
    with a progress record of its own (``ROCMLAB_PROGRESS``, which the kernels inherit): a preflight leaves the labs
    folder as it was (the starter files the labs write go into the copy's my-work/) and writes no grade into the
    user's progress record. Both are removed afterwards."""
    from rocmlab import catalog

    old = os.environ.get(PROGRESS_ENV)
    with tempfile.TemporaryDirectory(prefix="rocmlab-preflight-") as tmp:
        work = Path(tmp) / "labs"
        catalog.copy_labs(work, src=labs_dir)
        os.environ[PROGRESS_ENV] = str(Path(tmp) / "progress.json")
        try:
            yield work
        finally:
            if old is None:
                os.environ.pop(PROGRESS_ENV, None)
            else:
                os.environ[PROGRESS_ENV] = old


def _headline_text(h: dict) -> str:
    v = h["value"]
    v = f"{v:.4g}" if isinstance(v, float) else str(v)
    return f"{h['name']}: {v} {h['unit']}".strip()


def md_cell(text: str, limit: int | None = None) -> str:
    """Text made safe for one cell of a Markdown table: one line (a multi-line error keeps its
    lines, separated by ' / '), '|' escaped, at most ``limit`` characters."""
    one = " / ".join(line.strip() for line in str(text).splitlines() if line.strip())
    if limit is not None and len(one) > limit:
        one = one[:limit - 1].rstrip() + "…"
    return one.replace("\\", "\\\\").replace("|", "\\|")


def write_summary(results: list[LabResult], out_dir: Path) -> dict:
    out_dir = Path(out_dir)
    data = {"labs": [{**asdict(r), "cell_number": r.cell_number} for r in results],
            "passed": sum(r.status == "passed" for r in results),
            "failed": sum(r.status == "failed" for r in results)}
    (out_dir / "summary.json").write_text(json.dumps(data, indent=2))
    head = "| lab | status | duration (s) | backend | headline figures |\n|---|---|---|---|---|\n"
    rows = []
    for r in results:
        figs = md_cell("; ".join(_headline_text(h) for h in r.headlines))
        if r.status == "failed":
            figs = f"**{md_cell(r.error, MD_ERROR_CHARS)}** ({r.where()})" + (f"; {figs}" if figs else "")
        rows.append(f"| {md_cell(r.lab)} | {r.status} | {r.duration_s:.1f} | {md_cell(r.backend)} | {figs} |")
    md = head + "\n".join(rows) + f"\n\n{data['passed']} passed, {data['failed']} failed\n"
    if any(r.status == "failed" for r in results):
        md += ("\nCells are numbered from 1 as in each lab (the injected parameters cell is not counted); "
               "the whole error and the cell's source are in summary.html and summary.json.\n")
    (out_dir / "summary.md").write_text(md)
    cells = "".join(
        f"<tr class='{r.status}'><td>{html.escape(r.lab)}</td><td>{r.status}</td><td>{r.duration_s:.1f}</td>"
        f"<td>{html.escape(r.backend)}</td><td>{html.escape('; '.join(_headline_text(h) for h in r.headlines))}"
        f"{'<pre>' + html.escape(r.error + chr(10) + chr(10) + r.where() + ':' + chr(10) + r.cell_source) + '</pre>' if r.error else ''}</td></tr>"
        for r in results)
    (out_dir / "summary.html").write_text(
        "<!doctype html><meta charset=utf-8><title>rocmlab preflight</title>"
        "<style>td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left}"
        ".failed{background:#fdd}.passed{background:#efe}</style>"
        f"<h1>rocmlab preflight</h1><table><tr><th>lab</th><th>status</th><th>duration (s)</th>"
        f"<th>backend</th><th>headline figures</th></tr>{cells}</table>"
        f"<p>{data['passed']} passed, {data['failed']} failed</p>")
    return data
