"""The course's own JupyterLab settings, as `rocmlab lab` (and `./go lab`) start JupyterLab (rocmlab.commands.lab):

- a ``.hip`` file opens in the editor highlighted as C++ (keywords and types in their own colours), while the
  same text in a ``.txt`` file (the control) shows no highlighting;
- the news pop-up is off: the server hands the notification plugin ``fetchNews: "false"`` as its default, and
  no "news" toast covers the page on the first start. The control: the same server without the course's
  settings folder would serve JupyterLab's own default ("none": ask), read from the schema it ships.

The screenshot of the editor goes to test-artifacts/browser/views/hip-editor.png (1280x800).
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from tests.helpers.labharness import chromium
from tests.helpers.views import VIEWPORT, artifacts_dir

HIP = """#include <hip/hip_runtime.h>

// one thread per element: z = x + y
__global__ void add(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}

int main() {
    const int n = 1 << 20;
    float* d = nullptr;
    hipMalloc(&d, 3 * n * sizeof(float));
    hipLaunchKernelGGL(add, dim3((n + 255) / 256), dim3(256), 0, 0, d, d + n, d + 2 * n, n);
    return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"""

#: Token spans CodeMirror draws for a highlighted language (JupyterLab's highlight style: class names
#: starting "cm-" or "tok-" inside a line, or a span with an inline colour).
_TOKENS_JS = """() => { const lines = [...document.querySelectorAll('.jp-FileEditor .cm-content .cm-line')];
  return lines.reduce((n, l) => n + l.querySelectorAll('span[class]').length, 0); }"""


@pytest.fixture(scope="module")
def browser(no_leftovers, tmp_path_factory):
    import os

    from tests.helpers.labharness import descendants
    with chromium(tmp_path_factory.mktemp("chromium-settings"), viewport=VIEWPORT) as ctx:
        yield ctx
        no_leftovers |= {p.pid for p in descendants(os.getpid())}


def _open_in_editor(browser, server, name: str):
    page = browser.new_page()
    page.goto(server.url(f"lab/tree/{name}?reset"), wait_until="domcontentloaded")
    page.locator(".jp-FileEditor .cm-content .cm-line").first.wait_for(timeout=120_000)
    page.wait_for_function("() => document.querySelector('.jp-FileEditor .cm-content').textContent"
                           ".includes('hipLaunchKernelGGL')", timeout=60_000)
    page.wait_for_timeout(1500)              # the language loads after the text
    return page


def test_a_hip_file_is_highlighted_as_cpp_and_a_txt_file_is_not(server, browser):
    (server.root / "kernel.hip").write_text(HIP)
    (server.root / "kernel.txt").write_text(HIP)           # the control: same text, no language
    page = _open_in_editor(browser, server, "kernel.hip")
    try:
        hip_tokens = page.evaluate(_TOKENS_JS)
        shots = artifacts_dir() / "views"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "hip-editor.png"))
        status = page.locator(".jp-StatusBar-Item, .jp-StatusBar-TextItem").all_text_contents()
    finally:
        page.close()
    page = _open_in_editor(browser, server, "kernel.txt")
    try:
        txt_tokens = page.evaluate(_TOKENS_JS)
    finally:
        page.close()
    assert hip_tokens >= 20, (hip_tokens, status)              # keywords, types, numbers, comments, strings
    assert txt_tokens == 0, txt_tokens
    assert any("HIP" in s for s in status), status              # the status bar names the language


def test_the_news_pop_up_is_off_by_the_courses_settings(server, browser):
    url = f"{server.base}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={server.token}"
    with urllib.request.urlopen(url, timeout=30) as r:
        data = json.loads(r.read())
    # served as the plugin's default (overrides), not written as a user setting: the learner may change it
    assert data["schema"]["properties"]["fetchNews"]["default"] == "false", data["schema"]["properties"]
    assert "fetchNews" not in (data.get("settings") or {}), data.get("settings")
    # the control: JupyterLab's own schema asks ("none"); the course's folder is what turns it off
    import sys
    from pathlib import Path
    shipped = Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/notification.json"
    assert json.loads(shipped.read_text())["properties"]["fetchNews"]["default"] == "none"
    page = browser.new_page()
    try:
        page.goto(server.url("lab?reset"), wait_until="domcontentloaded")
        page.locator(".jp-LabShell").wait_for(timeout=120_000)
        page.wait_for_timeout(3000)
        toasts = page.locator(".Toastify__toast").all_text_contents()
    finally:
        page.close()
    assert not [t for t in toasts if "news" in t.lower()], toasts
