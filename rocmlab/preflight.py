"""``rocmlab preflight``: run every lab headless with quick parameters, before a workshop.

Each notebook runs through papermill with ``quick=True`` in its own kernel. A failing
lab never stops the others: its error, the failing cell and its source go into the
summary. Outputs: the executed notebooks, ``summary.json``, ``summary.md`` and
``summary.html`` (lab, status, duration, backend, headline figures). Exit status 1
when any lab failed, 2 for bad input.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab.report import HEADLINES_ENV, read_headlines


class PreflightError(Exception):
    """Bad input: the message names the problem and the fix."""


@dataclass
class LabResult:
    lab: str
    status: str               # passed | failed
    duration_s: float
    backend: str
    output: str               # the executed notebook
    headlines: list = field(default_factory=list)
    error: str = ""           # ename: evalue
    cell_index: int | None = None
    cell_source: str = ""


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


def _run_one(nb: Path, out_dir: Path, quick: bool, timeout_s: int, backend: str) -> LabResult:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = out_dir / nb.name
    fd, hl_path = tempfile.mkstemp(prefix="headlines-", suffix=".jsonl")
    os.close(fd)
    old = os.environ.get(HEADLINES_ENV)
    os.environ[HEADLINES_ENV] = hl_path
    start = time.monotonic()
    result = LabResult(nb.stem, "passed", 0.0, backend, str(out))
    try:
        papermill.execute_notebook(str(nb), str(out), parameters={"quick": quick}, cwd=str(nb.parent),
                                   progress_bar=False, execution_timeout=timeout_s, kernel_name="python3")
    except PapermillExecutionError as exc:
        result.status = "failed"
        result.error = f"{exc.ename}: {exc.evalue}"
        result.cell_index = exc.cell_index
        result.cell_source = exc.source
    except Exception as exc:  # kernel death, timeouts, unreadable notebooks: record, go on
        result.status = "failed"
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if old is None:
            os.environ.pop(HEADLINES_ENV, None)
        else:
            os.environ[HEADLINES_ENV] = old
        result.duration_s = time.monotonic() - start
        result.headlines = read_headlines(hl_path)
        os.unlink(hl_path)
    return result


def run(labs_dir: Path, out_dir: Path, quick: bool = True, timeout_s: int = 900, only: str | None = None,
        progress: bool = True) -> list[LabResult]:
    from tqdm.auto import tqdm

    from rocmlab.platform import current

    labs = find_labs(labs_dir, only)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    backend = current().label
    results = []
    bar = tqdm(labs, desc="preflight", unit="lab", disable=not progress)
    for nb in bar:
        bar.set_postfix_str(nb.stem)
        results.append(_run_one(nb, out_dir, quick, timeout_s, backend))
        write_summary(results, out_dir)   # after every lab: a killed run keeps what it did
    return results


def _headline_text(h: dict) -> str:
    v = h["value"]
    v = f"{v:.4g}" if isinstance(v, float) else str(v)
    return f"{h['name']}: {v} {h['unit']}".strip()


def write_summary(results: list[LabResult], out_dir: Path) -> dict:
    out_dir = Path(out_dir)
    data = {"labs": [asdict(r) for r in results],
            "passed": sum(r.status == "passed" for r in results),
            "failed": sum(r.status == "failed" for r in results)}
    (out_dir / "summary.json").write_text(json.dumps(data, indent=2))
    head = "| lab | status | duration (s) | backend | headline figures |\n|---|---|---|---|---|\n"
    rows = []
    for r in results:
        figs = "; ".join(_headline_text(h) for h in r.headlines)
        if r.status == "failed":
            figs = f"**{r.error}** (cell {r.cell_index})" + (f"; {figs}" if figs else "")
        rows.append(f"| {r.lab} | {r.status} | {r.duration_s:.1f} | {r.backend} | {figs.replace('|', '/')} |")
    md = head + "\n".join(rows) + f"\n\n{data['passed']} passed, {data['failed']} failed\n"
    (out_dir / "summary.md").write_text(md)
    cells = "".join(
        f"<tr class='{r.status}'><td>{html.escape(r.lab)}</td><td>{r.status}</td><td>{r.duration_s:.1f}</td>"
        f"<td>{html.escape(r.backend)}</td><td>{html.escape('; '.join(_headline_text(h) for h in r.headlines))}"
        f"{'<pre>' + html.escape(r.error + chr(10) + r.cell_source) + '</pre>' if r.error else ''}</td></tr>"
        for r in results)
    (out_dir / "summary.html").write_text(
        "<!doctype html><meta charset=utf-8><title>rocmlab preflight</title>"
        "<style>td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left}"
        ".failed{background:#fdd}.passed{background:#efe}</style>"
        f"<h1>rocmlab preflight</h1><table><tr><th>lab</th><th>status</th><th>duration (s)</th>"
        f"<th>backend</th><th>headline figures</th></tr>{cells}</table>"
        f"<p>{data['passed']} passed, {data['failed']} failed</p>")
    return data
