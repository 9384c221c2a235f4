"""JupyterLab as learners use it: a real Chromium opens the labs, runs them from the Run menu and moves widgets.

Screenshots go to test-artifacts/browser/ (git-ignored). Needs Debian's chromium (scripts/setup/10-system.sh).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.browser_notebooks import write_widget_notebook
from tests.helpers.labharness import Notebook, plot_data

ROOT = Path(__file__).resolve().parents[2]


def test_setup_lab_runs_and_the_doctor_widget_renders(server, browser):
    shutil.copy(ROOT / "labs" / "00-setup.ipynb", server.root / "00-setup.ipynb")
    nb = Notebook.open(browser, server, "00-setup.ipynb")
    try:
        cells = nb.run_all(timeout_s=240)
        code = [c for c in cells if c["code"]]
        assert code and all(re.fullmatch(r"\[\d+\]:", c["prompt"]) for c in code), [c["prompt"] for c in code]

        table = nb.page.locator(".jupyter-widgets table.rocmlab-doctor")
        table.wait_for(timeout=30_000)
        rows = table.locator("tbody tr")
        shown = [[td.strip() for td in r] for r in rows.evaluate_all(
            "rs => rs.map(r => [...r.querySelectorAll('td')].map(td => td.textContent))")]
        assert shown, "the doctor widget's table has no rows"
        assert {r[0] for r in shown} <= {"ok", "warn", "fail", "skip"}, shown
        # the widget shows the real doctor's checks: the same names as `rocmlab doctor --json` in the same env
        out = subprocess.run([sys.executable, "-m", "rocmlab.cli", "doctor", "--json"], env=server.env,
                             capture_output=True, text=True, timeout=120)
        expected = [c["name"] for c in json.loads(out.stdout)["checks"]]
        assert [r[1] for r in shown] == expected
        button = nb.page.locator(".jupyter-widgets button", has_text="Run checks again")
        assert button.count() == 1
        table.scroll_into_view_if_needed()
        nb.screenshot("00-setup-doctor")
        nb.screenshot("00-setup-doctor-widget", locator=table)
        # the button re-runs the checks in the kernel and redraws the same table
        button.click()
        nb.wait_idle()
        names = table.locator("tbody tr td:nth-child(2)").all_text_contents()
        assert [n.strip() for n in names] == expected
    finally:
        nb.close()


def _slider_value(page) -> int:
    return int(page.locator(".widget-slider .widget-readout").first.inner_text().strip())


def _move_slider_and_check(nb, presses: int, expect_y) -> tuple[int, int]:
    """Press ArrowRight on the slider handle; wait until the plot's data shows what the kernel computed."""
    page = nb.page
    handle = page.locator(".widget-slider .noUi-handle").first
    handle.wait_for(timeout=30_000)
    k_before = _slider_value(page)
    handle.focus()
    for _ in range(presses):
        handle.press("ArrowRight")
    k_after = k_before + presses
    page.wait_for_function(
        "(k) => document.querySelector('.widget-slider .widget-readout')?.textContent.trim() == String(k)",
        arg=k_after, timeout=15_000)
    want = list(expect_y(k_after))
    page.wait_for_function(
        """(want) => { const gd = document.querySelector('.js-plotly-plot');
             if (!gd || !gd.data) return false; const y = Array.from(gd.data[0].y);
             return y.length == want.length && y.every((v, i) => Math.abs(v - want[i]) < 1e-9); }""",
        arg=want, timeout=30_000)
    return k_before, k_after


def test_slider_drives_a_plotly_figure_widget(server, browser):
    k0, presses = random.randint(1, 4), random.randint(1, 4)
    write_widget_notebook(server.root / "widget-check.ipynb", k0=k0)
    nb = Notebook.open(browser, server, "widget-check.ipynb")
    try:
        nb.run_all(timeout_s=120)
        nb.page.locator(".js-plotly-plot").wait_for(timeout=30_000)
        x = np.linspace(0.0, 1.0, 11)
        before = plot_data(nb.page)
        assert before and np.allclose(before[0]["y"], x ** k0), before
        assert _slider_value(nb.page) == k0
        nb.screenshot("widget-before", locator=nb.page.locator(".jp-OutputArea-output .widget-vbox").first)

        k_before, k_after = _move_slider_and_check(nb, presses, lambda k: x ** k)
        after = plot_data(nb.page)
        assert k_before == k0 and k_after == k0 + presses
        assert not np.allclose(after[0]["y"], before[0]["y"]), "the plot did not change"
        title = nb.page.locator(".js-plotly-plot .gtitle").text_content()
        assert title == f"k = {k_after}", title
        nb.screenshot("widget-after", locator=nb.page.locator(".jp-OutputArea-output .widget-vbox").first)
    finally:
        nb.close()



LAB01 = ROOT / "labs" / "01-hip-programming-model.ipynb"


@pytest.mark.skipif(not LAB01.exists(), reason="labs/01-hip-programming-model.ipynb (the occupancy explorer) "
                    "is not on this branch; test_slider_drives_a_plotly_figure_widget covers the harness")
def test_lab01_occupancy_explorer_follows_the_vgpr_slider(server, browser):
    """The real lab: Run All as a learner, then move the explorer's VGPR slider and watch the VGPR bar."""
    from rocmlab.hip import occupancy as occ

    shutil.copy(LAB01, server.root / LAB01.name)
    nb = Notebook.open(browser, server, LAB01.name)
    try:
        nb.run_all(timeout_s=420)
        page = nb.page
        # the explorer's output: the one widget box with the "VGPRs per lane" slider and a plotly figure
        box = page.locator(".jp-OutputArea-output .widget-vbox", has=page.locator(
            ".widget-slider .widget-label", has_text="VGPRs per lane")).filter(
            has=page.locator(".js-plotly-plot")).first
        box.wait_for(timeout=30_000)
        box.scroll_into_view_if_needed()
        slider = box.locator(".widget-slider", has=page.locator(".widget-label", has_text="VGPRs per lane"))
        plot = box.locator(".js-plotly-plot")
        read = "gd => ({x: Array.from(gd.data[0].x), y: Array.from(gd.data[0].y)," \
               " title: gd.layout.title && (gd.layout.title.text ?? gd.layout.title)})"
        before = plot.evaluate(read)
        v0 = int(slider.locator(".widget-readout").text_content().strip())
        expect0 = occ.occupancy(v0, 0, 24, 0, 256, "gfx942")
        assert before["x"][0] == "VGPRs" and before["y"][0] == expect0.limits["VGPRs"], (before, expect0)
        nb.screenshot("lab01-explorer-before", locator=box)

        presses = random.randint(1, 5)
        handle = slider.locator(".noUi-handle")
        handle.focus()
        for _ in range(presses):
            handle.press("ArrowRight")
        v1 = v0 + 8 * presses                                   # the slider's step is the VGPR granule, 8
        want = occ.occupancy(v1, 0, 24, 0, 256, "gfx942")
        page.wait_for_function(
            """([el, y0]) => Array.from(el.data[0].y)[0] === y0""",
            arg=[plot.element_handle(), want.limits["VGPRs"]], timeout=30_000)
        after = plot.evaluate(read)
        assert slider.locator(".widget-readout").text_content().strip() == str(v1)
        assert after["y"] != before["y"], "the explorer's bars did not change"
        assert f"{want.waves_per_simd} of {want.max_waves} waves per SIMD" in str(after["title"]), after
        nb.screenshot("lab01-explorer-after", locator=box)
    finally:
        nb.close()
