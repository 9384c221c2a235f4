#!/usr/bin/env python3
"""Render Lab 03's roofline and timeline widgets in a real browser (JupyterLab + headless Chromium via
Playwright) and save screenshots, to show they work outside a test harness.

    python benchmarks/lab03_screenshot.py [--out test-artifacts/lab03]

It writes a small notebook into a temporary folder, starts JupyterLab there in the background (its own
HOME and Jupyter dirs, a health wait, a clean stop), runs all cells, moves the roofline slider once, reads
the plot data back from the page (``.js-plotly-plot``) and saves roofline.png and timeline.png.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

CELLS = [
    ("code", "import torch\nfrom rocmlab.profile import Roofline, measure_ceilings, ops, profile_kernels\n"
             "from rocmlab.course.widgets.roofline import roofline_widget\nfrom rocmlab.course.widgets.timeline import kernel_table_widget\n"
             "quick = True", ["parameters"]),
    ("code", "ceil = measure_ceilings(quick=True, dtypes=('fp32', 'bf16'))\nroof = Roofline.for_device(ceil)\n"
             "res = [ops.gemm_case(n, d).run(reps=3) for n in (64, 128, 256) for d in ('fp32', 'bf16')]\n"
             "res.append(ops.axpb_case(1 << 20).run(reps=3))\nw = roofline_widget(roof, roof.place(res))\nw"),
    ("code", "m = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))\n"
             "x = torch.randn(64, 128)\nprof = profile_kernels(lambda: m(x).sum().backward(), steps=2)\n"
             "kernel_table_widget(prof)"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    import nbformat
    from nbtools import new_notebook
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "test-artifacts" / "lab03"))
    ap.add_argument("--timeout", type=float, default=180)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rocmlab-shot-"))
    nbformat.write(new_notebook(CELLS), work / "widgets.ipynb")
    env = dict(os.environ, HOME=str(work), JUPYTER_CONFIG_DIR=str(work / "cfg"), JUPYTER_DATA_DIR=str(work / "data"),
               JUPYTER_RUNTIME_DIR=str(work / "rt"), IPYTHONDIR=str(work / "ipy"), ROCMLAB_HOME=str(work / "rl"),
               PYTHONPATH=str(ROOT))
    # the kernelspec of this interpreter, not whatever python3 is first on PATH
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(work / "data" / ".."), "--name",
                    "python3"], env=env, check=True, capture_output=True)
    env["JUPYTER_PATH"] = str(work / "share" / "jupyter")
    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={work}", "--ServerApp.open_browser=False"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "lab.log", "w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"JupyterLab did not start; log: {work / 'lab.log'}") from None
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/widgets.ipynb?token={token}")
            page.get_by_text("| Idle").wait_for(timeout=args.timeout * 1000)
            page.locator("#jp-MainMenu").get_by_text("Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            plots = page.locator(".js-plotly-plot")
            deadline = time.monotonic() + args.timeout
            while plots.count() < 2 and time.monotonic() < deadline:
                time.sleep(1)
            if plots.count() < 2:
                page.screenshot(path=str(out / "failed.png"))
                raise SystemExit(f"only {plots.count()} plotly figure(s) rendered; see {out / 'failed.png'}")
            before = page.evaluate("() => { const d = document.querySelectorAll('.js-plotly-plot')[0].data;"
                                   " return d[d.length - 1].x[0]; }")
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.focus()
            for _ in range(10):
                handle.press("ArrowRight")
            time.sleep(2)
            after = page.evaluate("() => { const d = document.querySelectorAll('.js-plotly-plot')[0].data;"
                                  " return d[d.length - 1].x[0]; }")
            print(f"'your kernel' marker at {before:.4g} FLOP/byte, after 10 slider steps {after:.4g}")
            plots.nth(0).scroll_into_view_if_needed()
            plots.nth(0).screenshot(path=str(out / "roofline.png"))
            plots.nth(1).scroll_into_view_if_needed()
            plots.nth(1).screenshot(path=str(out / "timeline.png"))
            page.screenshot(path=str(out / "page.png"), full_page=True)
            browser.close()
        print(f"saved {out / 'roofline.png'}, {out / 'timeline.png'}, {out / 'page.png'}")
        return 0 if after != before else 1
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
        log.close()


if __name__ == "__main__":
    sys.exit(main())
