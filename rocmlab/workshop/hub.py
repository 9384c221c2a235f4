"""A real JupyterHub on one machine, started and stopped from Python (the hub tests and benchmarks/hub_load.py).

:func:`jupyterhub` writes a ``jupyterhub_config.py`` into a work folder and runs ``python -m jupyterhub`` on
127.0.0.1 (free ports for the proxy, its API and the hub), with ``configurable-http-proxy`` from npm. It waits
for ``/hub/health`` and, on exit (also on failure), stops the hub, the proxy and every learner's server it
started, then checks that none of them is left.

What it is and is not:

- Authentication: JupyterHub's ``DummyAuthenticator`` (one shared password, the listed users only).
- Spawner: ``SimpleLocalProcessSpawner``: each learner's JupyterLab is a real process the hub spawns, with its
  own home folder, but **all run as the hub's Unix user**. So the exchange's folder permissions do not keep
  learners apart here; they do where each learner is a Unix user (TLJH) or a pod (Kubernetes), and
  tests/hub/test_exchange.py checks them with two real uids.
- GPU seats: the pre-spawn hook of :mod:`rocmlab.workshop.seats`, with ``n_gpus`` seats (no GPU needs to be
  there: it only hands out ``HIP_VISIBLE_DEVICES`` indices). The instructor (an admin) takes no seat.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import paths
from rocmlab.workshop.exchange import prepare

NO_PROXY = ("configurable-http-proxy not found on PATH: install it from npm, pinned as scripts/setup/50-hub.sh does: "
            "`npm install -g configurable-http-proxy@5.3.0` on node >= 20, `@4.6.3` on Debian's node 18")


class HubError(RuntimeError):
    """The hub did not start, or a call to it failed: the message says why and carries its log's tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Hub:
    workdir: Path
    port: int
    token: str            # an admin service token (users, servers, tokens, access to servers)
    password: str
    exchange: Path
    proc: subprocess.Popen
    log_path: Path
    seen_pids: set = field(default_factory=set)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.workdir / "home" / user

    def request(self, path: str, method: str = "GET", data=None, timeout: float = 30.0, token: str | None = None):
        """(status, parsed JSON or text) for ``path`` on the hub's port, with the admin token."""
        body = None if data is None else json.dumps(data).encode()
        req = urllib.request.Request(f"{self.base}{path}", data=body, method=method,
                                     headers={"Authorization": f"token {token or self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def api(self, path: str, method: str = "GET", data=None, timeout: float = 30.0):
        status, body = self.request(f"/hub/api/{path.lstrip('/')}", method, data, timeout)
        if status >= 400:
            raise HubError(f"{method} /hub/api/{path} answered {status}: {body}")
        return body

    def spawn(self, user: str, timeout_s: float = 120.0) -> float:
        """Start ``user``'s server and wait until the hub says it is ready; returns the seconds it took.

        Raises HubError with the hub's message when the spawn fails (e.g. no GPU seat left)."""
        t0 = time.monotonic()
        status, body = self.request(f"/hub/api/users/{user}/server", "POST", timeout=timeout_s)
        if status not in (201, 202, 400) or (status == 400 and "already running" not in str(body)):
            raise HubError(f"spawning {user}'s server failed ({status}): {_message(body)}")
        deadline = t0 + timeout_s
        while time.monotonic() < deadline:
            model = self.api(f"users/{user}")
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                return time.monotonic() - t0
            if not server and not model.get("pending"):
                raise HubError(f"{user}'s server stopped while starting: {self.spawn_error(user)}")
            time.sleep(0.2)
        raise HubError(f"{user}'s server was not ready in {timeout_s:.0f} s\n{self.log_tail()}")

    def spawn_error(self, user: str) -> str:
        """The reason the hub logged for ``user``'s last failed spawn."""
        lines = [ln for ln in self.log_tail(400).splitlines() if user in ln and ("rror" in ln or "fail" in ln)]
        return lines[-1] if lines else self.log_tail(15)

    def stop_server(self, user: str, timeout_s: float = 60.0) -> None:
        self.request(f"/hub/api/users/{user}/server", "DELETE", timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            model = self.api(f"users/{user}")
            if not model.get("servers") and not model.get("pending"):
                return
            time.sleep(0.2)
        raise HubError(f"{user}'s server did not stop in {timeout_s:.0f} s")

    def execute(self, user: str, code: str, timeout_s: float = 120.0) -> str:
        """Run ``code`` in a new kernel of ``user``'s server (through the proxy, as a browser would), return
        its output; the kernel is shut down afterwards. Raises HubError with the traceback if the code fails."""

        base = f"/user/{user}/api/kernels"
        status, kernel = self.request(base, "POST", {"name": "python3"}, timeout=timeout_s)
        if status >= 400:
            raise HubError(f"starting a kernel in {user}'s server failed ({status}): {_message(kernel)}")

        def run():   # its own thread and event loop: the caller may be inside one (Playwright's sync API)
            return asyncio.run(asyncio.wait_for(self._execute_ws(f"{base}/{kernel['id']}/channels", code),
                                                timeout_s))

        try:
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(run).result()
        except asyncio.TimeoutError:
            raise HubError(f"code in {user}'s kernel did not finish in {timeout_s:.0f} s") from None
        finally:
            self.request(f"{base}/{kernel['id']}", "DELETE", timeout=30)

    async def _execute_ws(self, path: str, code: str) -> str:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        ws = await websocket_connect(HTTPRequest(f"ws://127.0.0.1:{self.port}{path}",
                                                 headers={"Authorization": f"token {self.token}"}))
        msg_id, session = secrets.token_hex(8), secrets.token_hex(8)
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": "rocmlab", "session": session, "msg_type": "execute_request",
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        out, error, replied, idle = [], None, False, False
        try:
            while not (replied and idle):
                raw = await ws.read_message()
                if raw is None:
                    raise HubError("the kernel's websocket closed before the code finished")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["header"]["msg_type"], msg["content"]
                if kind == "stream":
                    out.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    out.append(content["data"].get("text/plain", ""))
                elif kind == "error":
                    error = "\n".join(content.get("traceback", [])) or f"{content['ename']}: {content['evalue']}"
                elif kind == "execute_reply":
                    replied = True
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
        finally:
            ws.close()
        if error:
            plain = re.sub(r"\x1b\[[0-9;]*m", "", error)
            raise HubError(f"the code failed in the kernel:\n{plain}")
        return "".join(out)

    def server_env(self, user: str) -> dict:
        """The environment of ``user``'s running single-user server process (read from /proc)."""
        import psutil

        for p in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                env = p.environ()
                if env.get("JUPYTERHUB_USER") == user and "jupyterhub" in " ".join(p.cmdline()):
                    return env
        raise HubError(f"no running server process for {user}")

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def remember_pids(self) -> set[int]:
        import psutil

        with contextlib.suppress(psutil.Error):
            self.seen_pids |= {self.proc.pid, *(p.pid for p in psutil.Process(self.proc.pid).children(recursive=True))}
        return set(self.seen_pids)

    def stop(self, timeout_s: float = 30.0) -> list[str]:
        """SIGTERM the hub (it stops the servers it spawned and the proxy), then kill what is left.

        Returns the processes that were still alive after all that (empty when everything stopped)."""
        import psutil

        self.remember_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        left = []
        for pid in self.seen_pids - {self.proc.pid}:
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _, alive = psutil.wait_procs(left, timeout=5)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=5)
        still = []
        for pid in self.seen_pids:
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    still.append(f"{pid} {' '.join(p.cmdline())[:100]}")
        return still


def _message(body) -> str:
    return body.get("message", str(body)) if isinstance(body, dict) else str(body)


def write_config(workdir: Path, *, learners: list[str], instructor: str, n_gpus: int, exchange: Path, port: int,
                 token: str, password: str, environment: dict | None = None, quiet_lab: bool = True) -> Path:
    """The hub's config file: every value is written into it, so the hub can be started by hand from it too."""
    settings = {
        "workdir": str(workdir), "learners": learners, "instructor": instructor, "n_gpus": n_gpus,
        "exchange": str(exchange), "port": port, "hub_port": free_port(), "proxy_api_port": free_port(),
        "token": token, "password": password, "python": sys.executable, "environment": environment or {},
        "quiet_lab": quiet_lab, "proxy": shutil.which("configurable-http-proxy"),
    }
    path = workdir / "jupyterhub_config.py"
    path.write_text("# written by rocmlab.workshop.hub.write_config; run: python -m jupyterhub -f THIS_FILE\n"
                    "import json\n\nfrom rocmlab.workshop.hubconfig import configure\n\n"
                    f"configure(c, json.loads({json.dumps(json.dumps(settings, indent=1))}))  # noqa: F821\n")
    return path


@contextlib.contextmanager
def jupyterhub(workdir, learners: list[str], *, instructor: str = "instructor", n_gpus: int = 8, exchange=None,
               port: int | None = None, timeout_s: float = 90.0, environment: dict | None = None):
    """A running hub with ``learners`` and ``instructor`` allowed; stopped (with all it spawned) on exit."""
    if shutil.which("configurable-http-proxy") is None:
        raise HubError(NO_PROXY)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    exchange = Path(exchange) if exchange else workdir / "exchange"

    prepare(exchange)
    port = port or free_port()
    token, password = secrets.token_hex(24), secrets.token_urlsafe(12)
    env_pass = {"PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                "ROCMLAB_HOME": str(paths.home()),
                "ROCMLAB_QUICK": os.environ.get("ROCMLAB_QUICK", "1"), **(environment or {})}
    cfg = write_config(workdir, learners=list(learners), instructor=instructor, n_gpus=n_gpus, exchange=exchange,
                       port=port, token=token, password=password, environment=env_pass)
    log_path = workdir / "jupyterhub.log"
    env = dict(os.environ)
    env.pop("JUPYTERHUB_API_TOKEN", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(cfg)], cwd=workdir, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_term_with_parent)
    hub = Hub(workdir, port, token, password, exchange, proc, log_path)
    try:
        _wait_healthy(hub, timeout_s)
        yield hub
    finally:
        left = hub.stop()
        if left:
            raise HubError(f"processes left after the hub stopped: {left}")


def _term_with_parent() -> None:
    """In the hub's process before exec: SIGTERM it when the process that started it dies (even by SIGKILL),
    so the hub still stops its servers and proxy. Linux only; elsewhere the hub outlives a killed parent."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)      # PR_SET_PDEATHSIG


def _wait_healthy(hub: Hub, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rc = hub.proc.poll()
        if rc is not None:
            raise HubError(f"JupyterHub exited with status {rc} before it was healthy\n--- {hub.log_path} ---\n"
                           f"{hub.log_tail()}")
        try:
            status, _ = hub.request("/hub/health", timeout=2)
            if status == 200:
                hub.remember_pids()
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.25)
    raise HubError(f"JupyterHub did not answer /hub/health on 127.0.0.1:{hub.port} within {timeout_s:.0f} s\n"
                   f"--- {hub.log_path} ---\n{hub.log_tail()}")
