"""A real-browser harness for JupyterLab: the server, Chromium, and what a learner does in a notebook.

- :func:`jupyterlab` starts ``jupyter lab`` from the installed package on a loopback port with a token, with
  HOME and every JUPYTER_* folder in a temp dir, and stops it (and its kernels) on exit, even on failure.
  A server that cannot start (port taken, bad option) raises :class:`JupyterLabStartError` with the reason
  and the tail of its log.
- :func:`chromium` drives Debian's ``/usr/bin/chromium`` through Playwright (never a downloaded browser).
- :class:`Notebook` opens a notebook in JupyterLab, runs all cells from the Run menu, waits for the status
  bar's "| Idle", and raises :class:`NotebookCellError` naming the failing cell when one shows an error.
- :func:`live_processes` / :func:`descendants` let tests prove that nothing is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import glob
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

def find_chromium() -> tuple[str | None, str]:
    """(path, '') of a Chromium the tests can drive, or (None, why not and the fix for this platform).
    ROCMLAB_CHROMIUM, else Debian's /usr/bin/chromium, Google Chrome, or Playwright's own Chromium (installed
    with `python -m playwright install chromium`). Ubuntu's /usr/bin/chromium-browser is a snap launcher that
    does not run in containers, so it is not used. The tests never download a browser."""
    explicit = os.environ.get("ROCMLAB_CHROMIUM")
    if explicit:
        return (explicit, "") if os.access(explicit, os.X_OK) else (None, f"ROCMLAB_CHROMIUM={explicit} is not an executable")
    cands = ["/usr/bin/chromium", "/usr/bin/google-chrome", "/opt/google/chrome/chrome"]
    cands += sorted(glob.glob(os.path.expanduser("~/.cache/ms-playwright/chromium-*/chrome-linux*/chrome")), reverse=True)
    for c in cands:
        if os.access(c, os.X_OK):
            return c, ""
    try:
        ubuntu = "ubuntu" in Path("/etc/os-release").read_text().lower()
    except OSError:
        ubuntu = False
    fix = ("Ubuntu has no chromium deb (only a snap, which does not run in containers): python -m playwright install "
           "chromium (needs the network), or install Google Chrome's .deb, or set ROCMLAB_CHROMIUM" if ubuntu
           else "apt-get install -y chromium, or set ROCMLAB_CHROMIUM")
    return None, f"no Chromium for the browser tests: {fix}"


CHROMIUM, NO_CHROMIUM = find_chromium()
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "browser"


class JupyterLabStartError(RuntimeError):
    """JupyterLab did not come up: the message says why and carries the tail of its log."""


class NotebookCellError(AssertionError):
    """A cell showed an error (or the notebook did not finish running) in the browser."""


class LeftoverProcessError(AssertionError):
    """Processes were still alive after the harness stopped everything."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def live_processes(pids) -> list[str]:
    """'pid name' for each pid still running (zombies count as gone: their parent has not reaped them yet)."""
    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{pid} {' '.join(p.cmdline())[:120] or p.name()}")
        except psutil.NoSuchProcess:
            pass
    return out


def _kill_all(procs: list[psutil.Process], grace_s: float) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


# --------------------------------------------------------------------------- the server

@dataclass
class JupyterLab:
    root: Path
    port: int
    token: str
    proc: subprocess.Popen
    log_path: Path
    env: dict = field(repr=False, default_factory=dict)
    seen_pids: set = field(default_factory=set)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET", timeout: float = 5.0):
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            return json.loads(body) if body else None

    def log_tail(self, n: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def remember_pids(self) -> set[int]:
        """The server and everything under it now (kernels and their children). Called before stopping."""
        self.seen_pids |= {self.proc.pid, *(p.pid for p in descendants(self.proc.pid))}
        return set(self.seen_pids)

    def stop(self, timeout_s: float = 20.0) -> None:
        """Ask the server to shut down (it stops its kernels), then TERM/KILL whatever is left."""
        tree = [psutil.Process(p) for p in self.remember_pids() if psutil.pid_exists(p)]
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.api("shutdown", method="POST")
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        # kernels run in their own sessions: reap any the server did not stop
        _kill_all([p for p in tree if p.pid != self.proc.pid and p.is_running()], grace_s=5)


def isolated_env(work: Path) -> dict:
    """The environment for a server whose HOME and JUPYTER_* folders are all under ``work``."""
    env = dict(os.environ)
    home = work / "home"
    dirs = {"HOME": home, "JUPYTER_CONFIG_DIR": work / "jupyter-config", "JUPYTER_DATA_DIR": work / "jupyter-data",
            "JUPYTER_RUNTIME_DIR": work / "jupyter-runtime", "IPYTHONDIR": work / "ipython",
            "JUPYTERLAB_SETTINGS_DIR": work / "lab-settings", "JUPYTERLAB_WORKSPACES_DIR": work / "lab-workspaces",
            "XDG_CACHE_HOME": home / ".cache", "MPLCONFIGDIR": work / "mpl"}
    for k, v in dirs.items():
        v.mkdir(parents=True, exist_ok=True)
        env[k] = str(v)
    # the course's per-user cache (gfx942 bitcode, built kernels) stays where set-up put it
    env["ROCMLAB_HOME"] = os.environ.get("ROCMLAB_HOME") or str(Path.home() / ".cache" / "rocmlab")
    env.setdefault("ROCMLAB_QUICK", "1")
    env.pop("JUPYTER_TOKEN", None)
    # the course's own JupyterLab settings, as `rocmlab lab` starts it: .hip/.cu highlighting and no news
    # pop-up (test_browser_settings.py checks both arrive; nothing is written into the user settings here)
    from rocmlab.commands.lab import jupyter_env
    env = jupyter_env(env)
    # every cell in the page (no virtual scrolling), so that a view check sees every output
    nbset = dirs["JUPYTERLAB_SETTINGS_DIR"] / "@jupyterlab" / "notebook-extension"
    nbset.mkdir(parents=True, exist_ok=True)
    (nbset / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    return env


#: What a start error says when the port was taken (the harness then draws another, unless the port was given).
PORT_IN_USE = "is already in use"


@contextlib.contextmanager
def jupyterlab(root: Path, work: Path, port: int | None = None, timeout_s: float = 90.0, extra_args=()):
    """JupyterLab serving ``root`` on 127.0.0.1:``port`` (a free one by default) with a random token. A drawn port
    that another program binds first (free_port lets it go before JupyterLab binds it) is drawn again, twice."""
    given = port
    token = secrets.token_hex(16)
    env = isolated_env(work)
    for attempt in range(1, 4):
        port = given or free_port()
        log_path = work / f"jupyterlab-{port}.log"
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--ServerApp.open_browser=False", *extra_args]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        server = JupyterLab(root=root, port=port, token=token, proc=proc, log_path=log_path, env=env)
        try:
            _wait_ready(server, timeout_s)
            break
        except JupyterLabStartError as exc:
            server.stop()
            if given or attempt == 3 or PORT_IN_USE not in str(exc):
                raise
    try:
        yield server
    finally:
        server.stop()


def _wait_ready(server: JupyterLab, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rc = server.proc.poll()
        if rc is not None:
            log = server.log_tail()
            if re.search(r"already in use|Address already in use|Errno 98", log):
                reason = (f"port {server.port} on 127.0.0.1 {PORT_IN_USE}; stop what listens there "
                          f"or let the harness pick a free port (port=None)")
            else:
                reason = "see its log below"
            raise JupyterLabStartError(f"JupyterLab exited with status {rc} before it was ready: {reason}\n"
                                       f"--- {server.log_path} (last lines) ---\n{log}")
        try:
            server.api("status", timeout=2)
            return
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            time.sleep(0.25)
    raise JupyterLabStartError(f"JupyterLab did not answer /api/status on port {server.port} within {timeout_s:.0f} s\n"
                               f"--- {server.log_path} (last lines) ---\n{server.log_tail()}")


# --------------------------------------------------------------------------- the browser

@contextlib.contextmanager
def chromium(work: Path, viewport=(1440, 1000)):
    """A Playwright browser context on Debian's Chromium with a fresh profile in ``work``."""
    if CHROMIUM is None:
        import pytest

        pytest.skip(NO_CHROMIUM)   # said in pytest's summary (-ra) with the fix: never skipped silently
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            user_data_dir=str(work / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": viewport[0], "height": viewport[1]})
        try:
            yield ctx
        finally:
            ctx.close()


# --------------------------------------------------------------------------- a notebook in the browser

_STATUS_JS = """() => [...document.querySelectorAll('.jp-StatusBar-Item, .jp-StatusBar-TextItem')]
    .map(e => e.textContent).join(' ')"""

_CELLS_JS = r"""() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  return cells.map((c, i) => {
    const code = c.classList.contains('jp-CodeCell');
    const prompt = code ? (c.querySelector('.jp-InputArea-prompt')?.textContent || '').trim() : '';
    const errs = [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent)
      .filter(t => /Traceback \(most recent call last\)|Error displaying widget|Failed to load model class/.test(t)
                   || /^\s*-{20,}\s*\n\s*\w+(Error|Exception)\b/.test(t));
    const src = (c.querySelector('.jp-InputArea-editor .cm-line')?.textContent || '').trim();
    return {index: i, code, prompt, errors: errs, src};
  });
}"""


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b", ln):
            return ln
    return lines[-1] if lines else text


@dataclass
class Notebook:
    """One notebook open in JupyterLab, in its own browser page."""

    page: object
    name: str

    @classmethod
    def open(cls, ctx, server: JupyterLab, rel_path: str, timeout_s: float = 90.0) -> Notebook:
        page = ctx.new_page()
        # ?reset: a fresh workspace, so notebooks opened by earlier tests are not restored as tabs
        page.goto(server.url(f"lab/tree/{rel_path}?reset"), wait_until="domcontentloaded")
        nb = cls(page, Path(rel_path).stem)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout_s * 1000)
        nb.wait_idle(timeout_s)
        return nb

    def status(self) -> str:
        return self.page.evaluate(_STATUS_JS)

    def wait_idle(self, timeout_s: float = 60.0) -> None:
        try:
            self.page.wait_for_function(f"() => /\\|\\s*Idle/.test(({_STATUS_JS})())", timeout=timeout_s * 1000)
        except Exception as exc:
            self.screenshot(f"FAILED-{self.name}-kernel")
            raise NotebookCellError(f"{self.name}: the kernel never reached '| Idle' in {timeout_s:.0f} s "
                                    f"(status bar: {self.status()!r})") from exc

    def cells(self) -> list[dict]:
        return self.page.evaluate(_CELLS_JS)

    def run_all(self, timeout_s: float = 300.0) -> list[dict]:
        """Run > Run All Cells, as a learner does; wait until nothing is queued and the kernel is idle.

        Raises NotebookCellError naming the first cell that shows an error (and the cells that never ran).
        """
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        self.page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
        done_js = f"""() => {{
          const st = ({_STATUS_JS})();
          const cells = ({_CELLS_JS})().filter(c => c.code);
          if (!/\\|\\s*Idle/.test(st) || cells.some(c => c.prompt.includes('*'))) return false;
          return cells.every(c => /\\[\\d+\\]/.test(c.prompt)) || cells.some(c => c.errors.length);
        }}"""
        try:
            self.page.wait_for_function(done_js, timeout=timeout_s * 1000, polling=250)
        except Exception as exc:
            self.screenshot(f"FAILED-{self.name}-timeout")
            stuck = [c for c in self.cells() if c["code"] and not re.search(r"\[\d+\]", c["prompt"])]
            raise NotebookCellError(f"{self.name}: Run All did not finish in {timeout_s:.0f} s; cells not done: "
                                    + ", ".join(f"{c['index']} {c['prompt']!r} ({c['src'][:60]})" for c in stuck)
                                    ) from exc
        cells = self.cells()
        bad = [c for c in cells if c["errors"]]
        if bad:
            self.screenshot(f"FAILED-{self.name}-error")
            first = bad[0]
            not_run = [c["index"] for c in cells if c["code"] and not re.search(r"\[\d+\]", c["prompt"])]
            msg = (f"{self.name}: cell {first['index']} ({first['src'][:70]!r}) shows an error in the browser: "
                   f"{_last_line(first['errors'][0])}")
            if len(bad) > 1:
                msg += f"; cells with errors: {[c['index'] for c in bad]}"
            if not_run:
                msg += f"; cells that never ran: {not_run}"
            raise NotebookCellError(msg)
        return cells

    def screenshot(self, name: str, locator=None) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        with contextlib.suppress(Exception):
            (locator or self.page).screenshot(path=str(path))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.page.close()


def plot_data(page, selector: str = ".js-plotly-plot") -> list[dict]:
    """The traces plotly.js holds in the page (x, y as plain lists; name; type)."""
    return page.evaluate(
        """(sel) => { const gd = document.querySelector(sel); if (!gd || !gd.data) return null;
             return gd.data.map(t => ({name: t.name ?? null, type: t.type ?? null,
                                       x: t.x ? Array.from(t.x) : null, y: t.y ? Array.from(t.y) : null})); }""",
        selector)
