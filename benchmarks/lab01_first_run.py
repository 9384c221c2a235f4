#!/usr/bin/env python3
"""Lab 01's first run as a new learner meets it, timed in a real browser (JupyterLab + headless Chromium).

    python benchmarks/lab01_first_run.py [--runs 5] [--out test-artifacts/lab01-first-run]

Each run starts from a fresh home: a new HOME, new Jupyter folders and an empty course cache (ROCMLAB_HOME: no
built kernels, no precompiled headers, no simulator runtime). Only the offline ROCm root that set-up installed is
shared (ROCMLAB_ROCM_ROOT, as a workshop hub shares it). A JupyterLab is started on that home and, once it answers,
the clock starts: the lab is opened at 1280x800, Run > Run All Cells is pressed, and two times are read:

- ``verdict_s``: from opening the lab until the first HIP cell (``%%hip --name vadd``) shows its verdict
  (``[ok] program ran`` on a GPU or the CPU simulator; ``not run: ...`` where nothing can run it);
- ``run_all_s``: from opening the lab until Run All has finished.

It prints each run, the best and the median, and the machine's load average before and after each run (on a
shared machine the other jobs' load is part of the time). ``--out`` gets ``lab01-first-run.json`` and a
screenshot of the verdict of the last run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))      # the browser harness of the test suite

LAB = "01-hip-programming-model.ipynb"
# the first HIP cell's output once its program ran (or could not run here): what the learner waits for
VERDICT_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')]
  .filter(c => (c.querySelector('.jp-InputArea-editor .cm-line')?.textContent || '').startsWith('%%hip --name vadd'))
  .some(c => /\[ok\] program ran|\[fail|not run:|cannot run/.test(c.querySelector('.jp-OutputArea')?.textContent || ''))"""


def one_run(rocm_root: Path, keep: Path | None, lab: Path = ROOT / "labs" / LAB) -> dict:
    from labharness import Notebook, chromium, jupyterlab

    work = Path(tempfile.mkdtemp(prefix="rocmlab-first-run-"))
    saved = {k: os.environ.get(k) for k in ("ROCMLAB_HOME", "ROCMLAB_ROCM_ROOT", "ROCMLAB_PROGRESS")}
    try:
        # a fresh course cache; the set-up's ROCm root; the grades go to the fresh home too
        os.environ["ROCMLAB_HOME"] = str(work / "rocmlab-home")
        os.environ["ROCMLAB_ROCM_ROOT"] = str(rocm_root)
        os.environ.pop("ROCMLAB_PROGRESS", None)
        root = work / "labs"
        root.mkdir()
        shutil.copy(lab, root / LAB)
        load_before = os.getloadavg()
        with jupyterlab(root, work / "server") as server, chromium(work / "browser", viewport=(1280, 800)) as ctx:
            t0 = time.monotonic()
            nb = Notebook.open(ctx, server, LAB, timeout_s=120)
            opened = time.monotonic() - t0
            nb.page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            nb.page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
            nb.page.wait_for_function(VERDICT_JS, timeout=300_000, polling=100)
            verdict = time.monotonic() - t0
            if keep is not None:
                cell = nb.page.locator(".jp-CodeCell", has_text="%%hip --name vadd").first
                cell.locator(".jp-OutputArea-output").last.scroll_into_view_if_needed()   # the verdict
                nb.page.screenshot(path=str(keep / "lab01-first-verdict.png"))
            done_js = r"""() => {
              const st = [...document.querySelectorAll('.jp-StatusBar-Item, .jp-StatusBar-TextItem')]
                .map(e => e.textContent).join(' ');
              const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                .map(p => p.textContent);
              return /\|\s*Idle/.test(st) && prompts.every(p => /\[\d+\]/.test(p));
            }"""
            nb.page.wait_for_function(done_js, timeout=900_000, polling=250)
            run_all = time.monotonic() - t0
            nb.close()
        return {"open_s": round(opened, 2), "verdict_s": round(verdict, 2), "run_all_s": round(run_all, 2),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()]}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "test-artifacts" / "lab01-first-run"))
    ap.add_argument("--lab", action="append", default=[],
                    help="a Lab 01 notebook to time instead of labs/ (give two, e.g. an older version saved with "
                         "git show REV:labs/01-hip-programming-model.ipynb > old.ipynb, and they take turns: "
                         "the same load for both)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from rocmlab import paths

    rocm_root = paths.rocm_root()
    if not rocm_root.is_dir():
        print(f"no offline ROCm root at {rocm_root}: run ./go setup first (or set ROCMLAB_ROCM_ROOT)", file=sys.stderr)
        return 2
    from labharness import CHROMIUM, NO_CHROMIUM

    if CHROMIUM is None:
        print(NO_CHROMIUM, file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labs = [Path(p) for p in args.lab] or [ROOT / "labs" / LAB]
    for p in labs:
        if not p.is_file():
            print(f"--lab {p}: no such notebook", file=sys.stderr)
            return 2
    every = {str(p): [] for p in labs}
    for k in range(args.runs):
        for p in labs:
            r = one_run(rocm_root, out if k == args.runs - 1 and p == labs[-1] else None, p)
            every[str(p)].append(r)
            print(f"{p.name} run {k + 1}: open {r['open_s']:.1f} s, first HIP verdict {r['verdict_s']:.1f} s, "
                  f"Run All {r['run_all_s']:.1f} s (load average {r['load_before'][0]:.1f} -> {r['load_after'][0]:.1f})",
                  flush=True)
    result = {"cpus": os.cpu_count(), "labs": {}}
    for p, runs in every.items():
        summary = {key: {"best": min(r[key] for r in runs), "median": statistics.median(r[key] for r in runs)}
                   for key in ("verdict_s", "run_all_s")}
        result["labs"][p] = {"runs": runs, "summary": summary}
        print(f"{p}: first HIP verdict best {summary['verdict_s']['best']:.1f} s, median "
              f"{summary['verdict_s']['median']:.1f} s; Run All best {summary['run_all_s']['best']:.1f} s, median "
              f"{summary['run_all_s']['median']:.1f} s ({os.cpu_count()} CPUs)")
    (out / "lab01-first-run.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
