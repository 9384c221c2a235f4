"""A real JupyterHub on one machine, started and stopped from Python (the hub tests and benchmarks/hub_load.py).

:func:`jupyterhub` (the short form of :func:`running_hub` with a :class:`HubRequest`) lays out a work folder,
writes a ``jupyterhub_config.py`` (:mod:`.hubconfig`) and runs ``python -m jupyterhub`` on 127.0.0.1 (free ports
for the proxy, its API and the hub), with ``configurable-http-proxy`` from npm. It waits for ``/hub/health`` and,
on exit (also on failure), stops the hub, the proxy and every learner's server it started, checks that none of
them is left, and removes the Unix users and cgroups it created.

Two modes (``mode=``):

- ``"users"`` (the workshop; needs root): each learner is a Unix user of their own (``user_prefix`` + name,
  created on their first spawn, home 0700), their server runs as that user with a memory and CPU limit; the
  exchange's folder permissions keep learners apart; the instructor (an admin) runs as root and grades.
- ``"dry-run"``: every server runs as the hub's own user (JupyterHub's ``SimpleLocalProcessSpawner``). Nothing
  keeps learners apart: for one person trying the course, and the control of the isolation tests.

The work folder (``WORK``, passable by every user: 0711)::

    WORK/hub/          root 0700: config (token, password), database, log, GPU seat state, users created
    WORK/home/NAME/    each learner's home, theirs, 0700 (WORK/home is 0711)
    WORK/exchange/     the hand-in exchange (rocmlab.workshop.exchange): inbound/, outbound/feedback/, grades/
    WORK/instructor/   root 0700: the grading seed (grading-seed) and the reference solutions (references/)

GPU seats: the pre-spawn hook of :mod:`rocmlab.workshop.seats`, with ``n_gpus`` seats (no GPU needs to be
there). Where the seats have device nodes (``gpu_devices``: from the KFD topology, or given) each server's
cgroup may open only its seat's; the instructor takes no seat. Each learner's server also gets a process
limit, a home of its own size, a private /tmp (what the server reads under /tmp, e.g. a course cloned there, is
bound back read-only: :func:`server_reads`), and the offline ROCm root (see :class:`HubRequest`); nothing
root writes into a learner's home follows their links (:mod:`.learner_space`). The grading seed is used as
``rocmlab grade --seed-file WORK/instructor/grading-seed``, never on a command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import html
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
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import paths
from rocmlab.workshop import learner_space
from rocmlab.workshop.exchange import prepare

NO_PROXY = ("configurable-http-proxy not found on PATH: install it from npm, pinned as scripts/setup/50-hub.sh does: "
            "`npm install -g configurable-http-proxy@5.3.0` on node >= 20, `@4.6.3` on Debian's node 18")


class HubError(RuntimeError):
    """The hub did not start, or a call to it failed: the message says why and carries its log's tail."""


#: How many times :func:`jupyterhub` starts the hub when a port it drew was taken before the hub bound it.
START_TRIES = 3


def port_taken(log: str) -> bool:
    """True when the hub's log says a port it was to listen on was in use (the hub's, the proxy's or its API's:
    :func:`free_port` draws a free port, and another program may bind it before the hub does)."""
    return "Address already in use" in log or "EADDRINUSE" in log


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
    mode: str = "users"
    user_prefix: str = ""
    seen_pids: set = field(default_factory=set)
    disk: tuple | None = None     # (images folder, bytes): each learner's home is a file system of that size
    tries: int = 1                # how many starts it took (a port drawn free was taken before the hub bound it)
    server_reads: list = field(default_factory=list)   # folders under /tmp bound back read-only for the servers

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state(self) -> Path:
        """The hub's own folder (root 0700): config, database, log, GPU seat state."""
        return self.workdir / "hub"

    @property
    def seat_state(self) -> Path:
        return self.state / "gpu-seats.json"

    @property
    def instructor_dir(self) -> Path:
        """The instructor's folder (root 0700): ``grading-seed`` and ``references/``."""
        return self.workdir / "instructor"

    def home(self, user: str) -> Path:
        return self.workdir / "home" / user

    def system_user(self, user: str) -> str | None:
        """The Unix user ``user``'s server runs as (None in dry-run: the hub's own)."""
        return f"{self.user_prefix}{user}" if self.mode == "users" else None

    def put_file(self, user: str, relpath: str, data: str | bytes, replace: bool = True) -> Path:
        """Hand out a file: write it into ``user``'s home, owned by them; creates the learner's Unix user in
        ``users`` mode if the hub has not yet. Never follows a link the learner planted in their home: a link
        (or a folder) at ``relpath`` or on the way to it raises :class:`~.learner_space.PlantedLink` naming it.
        ``replace=False`` keeps a file the learner already has there."""
        from rocmlab.workshop.hubconfig import ensure_unix_user

        home = self.home(user)
        if self.mode == "users":
            pw = ensure_unix_user(self.system_user(user), home, record=self.state / "created-users",
                                  disk=self.disk)
            uid, gid = pw.pw_uid, pw.pw_gid
        else:
            home.mkdir(parents=True, exist_ok=True)
            uid, gid = os.geteuid(), os.getegid()
        data = data.encode() if isinstance(data, str) else data
        return learner_space.write_file(home, uid, gid, relpath, data, replace=replace)

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

    def page(self, user: str, path: str, timeout: float = 30.0) -> tuple[int, str]:
        """(status, text) of the hub's page ``path`` as ``user`` sees it in a browser: logged in with the shared
        password (the login form, its XSRF cookie), e.g. ``/hub/spawn-pending/NAME`` after a failed spawn."""
        import http.cookiejar

        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with opener.open(f"{self.base}/hub/login", timeout=timeout) as r:
            form = r.read().decode(errors="replace")
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
        data = urllib.parse.urlencode({"username": user, "password": self.password,
                                       **({"_xsrf": html.unescape(xsrf.group(1))} if xsrf else {})}).encode()
        try:
            with opener.open(f"{self.base}/hub/login?next={urllib.parse.quote(path)}", data=data, timeout=timeout) as r:
                return r.status, _message(r.read().decode(errors="replace"), None)
        except urllib.error.HTTPError as e:
            return e.code, _message(e.read().decode(errors="replace"), None)

    def api(self, path: str, method: str = "GET", data=None, timeout: float = 30.0):
        status, body = self.request(f"/hub/api/{path.lstrip('/')}", method, data, timeout)
        if status >= 400:
            raise HubError(f"{method} /hub/api/{path} answered {status}: {body}")
        return body

    def spawn(self, user: str, timeout_s: float = 120.0) -> float:
        """Start ``user``'s server and wait until the hub says it is ready; returns the seconds it took.

        Raises HubError with the hub's message when the spawn fails: e.g. no GPU seat left, or a server that
        exited before it answered, with its last lines (:class:`~.hubconfig.ServerDidNotStart`)."""
        t0 = time.monotonic()
        status, body = self.request(f"/hub/api/users/{user}/server", "POST", timeout=timeout_s)
        if status not in (201, 202, 400) or (status == 400 and "already running" not in str(body)):
            raise HubError(f"spawning {user}'s server failed ({status}): {_message(body, 4000)}")
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
        """Why ``user``'s last spawn failed, as the learner's page says it (the hub's spawn progress: its
        failure message), else the last line the hub logged about it."""
        req = urllib.request.Request(f"{self.base}/hub/api/users/{user}/server/progress",
                                     headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                events = [json.loads(ln[5:]) for ln in r.read().decode(errors="replace").splitlines()
                          if ln.startswith("data:")]
            failed = [e["message"] for e in events if e.get("failed") and e.get("message")]
            if failed:
                return failed[-1]
        except (urllib.error.URLError, OSError, ValueError):
            pass
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
            raise HubError(f"starting a kernel in {user}'s server failed ({status}): {_message(kernel)}\n"
                           f"--- {self.log_path} ---\n{self.log_tail()}")

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

    def contents(self, user: str, path: str, method: str = "GET", text: str | None = None) -> tuple[int, object]:
        """``user``'s server's contents API (``/user/NAME/api/contents/PATH``): GET reads a file or lists a
        folder, PUT writes ``text`` as a file. Returns (status, body)."""
        body = None if text is None else {"type": "file", "format": "text", "content": text}
        return self.request(f"/user/{user}/api/contents/{path.lstrip('/')}", method, body, timeout=60)

    def terminal(self, user: str, command: str, timeout_s: float = 60.0) -> str:
        """Run ``command`` in a new terminal of ``user``'s server (the terminals REST API and its websocket,
        as JupyterLab's terminal does) and return what it printed; the terminal is deleted afterwards."""
        status, term = self.request(f"/user/{user}/api/terminals", "POST", {}, timeout=60)
        if status >= 400:
            raise HubError(f"opening a terminal in {user}'s server failed ({status}): {_message(term)}")
        name = term["name"]

        def run():
            return asyncio.run(asyncio.wait_for(self._terminal_ws(user, name, command), timeout_s))

        try:
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(run).result()
        except asyncio.TimeoutError:
            raise HubError(f"the command in {user}'s terminal did not finish in {timeout_s:.0f} s") from None
        finally:
            self.request(f"/user/{user}/api/terminals/{name}", "DELETE", timeout=30)

    async def _terminal_ws(self, user: str, name: str, command: str) -> str:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        ws = await websocket_connect(HTTPRequest(f"ws://127.0.0.1:{self.port}/user/{user}/terminals/websocket/{name}",
                                                 headers={"Authorization": f"token {self.token}"}))
        mark = secrets.token_hex(6)
        # the marker is printed split in two, so the echo of the typed line never matches it
        ws.write_message(json.dumps(["stdin", f"stty -echo; {command}; echo; echo END-{mark[:3]}''{mark[3:]}-$?\r"]))
        out = []
        try:
            while True:
                raw = await ws.read_message()
                if raw is None:
                    raise HubError(f"{user}'s terminal closed before the command finished: {''.join(out)[-300:]}")
                kind, *rest = json.loads(raw)
                if kind == "stdout":
                    out.append(rest[0])
                    text = "".join(out)
                    m = re.search(rf"END-{mark}-(\d+)", text)
                    if m:
                        text = re.sub(r"\x1b\][^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]", "", text[:m.start()])
                        text = text.replace("\r", "")
                        return text.split("\n", 1)[1] if "stty -echo;" in text else text   # the typed line
        finally:
            ws.close()

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
                if msg["header"]["msg_type"] == "status" and \
                        msg["content"].get("execution_state") in ("restarting", "dead"):
                    raise HubError("the kernel died while running the code (killed: out of memory?), "
                                   f"state {msg['content']['execution_state']}")
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
        return self.server_process(user).environ()

    def server_process(self, user: str):
        """``user``'s running single-user server process (a psutil.Process)."""
        import psutil

        for p in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                env = p.environ()
                if env.get("JUPYTERHUB_USER") == user and "jupyterhub" in " ".join(p.cmdline()):
                    return p
        raise HubError(f"no running server process for {user}")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

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


def _message(body, limit: int | None = 600) -> str:
    """The words of an answer: a JSON error's message, or an HTML error page's text (JupyterHub answers a
    proxied request that failed with its own page), short enough to read in a traceback."""
    if isinstance(body, dict):
        return body.get("message", str(body))
    text = str(body)
    if "<html" in text[:2000].lower():
        text = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", " ", text)
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
    return text[:limit]


#: What a learner's server starts with unless told otherwise: the JupyterLab a workshop needs, without the
#: language-server extension (jupyter_lsp looks for a dozen language servers at every start; the course
#: installs none) -- see docs/results/hub-load.md, "Where a spawn's time goes".
FAST_SERVER_ARGS = ["--ServerApp.jpserver_extensions=jupyter_lsp=False"]

#: Put first on the learners' servers' PYTHONPATH (``fast_start=True``): ``rfc3987_syntax`` is then not
#: importable, so jsonschema (imported by jupyter_events at every server start) skips its optional IRI format
#: checker, whose import compiles an RFC 3987 grammar with lark: about 60% of a server's start-up CPU time
#: here. Nothing a learner's server validates uses the "iri" format.
SKIP_RFC3987 = ('"""Left out of learners\' servers by rocmlab.workshop.hub (fast_start): jsonschema treats it as '
                'optional."""\nraise ImportError("rfc3987_syntax is left out of this server (rocmlab workshop '
                'hub, fast_start)")\n')


def _server_site(folder: Path) -> Path:
    """A folder (0755) with the stand-ins above, for the front of the servers' PYTHONPATH."""
    pkg = folder / "rfc3987_syntax"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(SKIP_RFC3987)
    for d in (folder, pkg):
        os.chmod(d, 0o755)
    os.chmod(pkg / "__init__.py", 0o644)
    return folder


def write_config(state: Path, *, learners: list[str], instructor: str, n_gpus: int, exchange: Path, homes: Path,
                 port: int, token: str, password: str, mode: str = "users", user_prefix: str = "jupyter-",
                 environment: dict | None = None, quiet_lab: bool = True, mem_limit: str | None = "2G",
                 cpu_limit: float | None = 1.0, cull_idle_s: int | None = 3600,
                 server_args: list[str] | None = None, server_python: str | None = None,
                 admin_environment: dict | None = None, pids_limit: int | None = None,
                 disk_limit: str | None = None, tmp_limit: str | None = None,
                 gpu_devices: list | str | None = None, server_reads: list[str] | None = None) -> Path:
    """The hub's config file (in ``state``, root 0700: it holds the token and the password). Every value is
    written into it, so the hub can be started by hand from it too."""
    settings = {
        "workdir": str(state), "learners": learners, "instructor": instructor, "n_gpus": n_gpus,
        "exchange": str(exchange), "homes": str(homes), "port": port, "hub_port": free_port(),
        "proxy_api_port": free_port(), "token": token, "password": password, "python": sys.executable,
        "server_python": server_python or sys.executable, "admin_environment": admin_environment or {},
        "environment": environment or {}, "quiet_lab": quiet_lab, "proxy": shutil.which("configurable-http-proxy"),
        "mode": mode, "user_prefix": user_prefix, "mem_limit": mem_limit, "cpu_limit": cpu_limit,
        "cull_idle_s": cull_idle_s, "cgroup_tag": f"rocmlab-hub-{port}",
        "server_args": FAST_SERVER_ARGS if server_args is None else server_args,
        "pids_limit": pids_limit, "disk_limit": disk_limit, "tmp_limit": tmp_limit, "gpu_devices": gpu_devices,
        "server_reads": server_reads or [],
    }
    path = state / "jupyterhub_config.py"
    path.write_text("# written by rocmlab.workshop.hub.write_config; run: python -m jupyterhub -f THIS_FILE\n"
                    "import json\n\nfrom rocmlab.workshop.hubconfig import configure\n\n"
                    f"configure(c, json.loads({json.dumps(json.dumps(settings, indent=1))}))  # noqa: F821\n")
    os.chmod(path, 0o600)
    return path


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def learner_python(pythonpath: str = "") -> tuple[str, str]:
    """(interpreter, PYTHONPATH) for learners' servers: this Python if an unprivileged user can run it with
    the course importable; else the system's Python of the same version with this environment's
    site-packages on PYTHONPATH (a Python installed under root's private home is not reachable by learners).
    Raises HubError with the fix when neither works."""
    import sysconfig

    probe = SERVER_IMPORTS
    site = sysconfig.get_paths()["purelib"]
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # PYTHONPATH folders are not site folders: their .pth files (an editable install's path) are not read,
    # so the folders those name are listed too
    named = []
    for pth in sorted(Path(site).glob("*.pth")):
        try:
            lines = pth.read_text().splitlines()
        except OSError:
            continue
        named += [ln.strip() for ln in lines if ln.strip().startswith("/") and os.path.isdir(ln.strip())]
    tries = [(sys.executable, pythonpath)]
    for cand in (f"/usr/bin/{ver}", f"/usr/local/bin/{ver}"):
        if os.path.exists(cand) and os.path.realpath(cand) != os.path.realpath(sys.executable):
            tries.append((cand, os.pathsep.join(p for p in (pythonpath, site, *named) if p)))
    why = ""
    for exe, pp in tries:
        try:
            r = subprocess.run([exe, "-c", probe], cwd="/", capture_output=True, text=True, preexec_fn=_as_nobody,
                               env={"PYTHONPATH": pp, "PATH": os.defpath}, timeout=120)
        except OSError as exc:
            why = str(exc)
            continue
        if r.returncode == 0:
            return exe, pp
        why = r.stderr.strip()[-200:]
    raise HubError(f"no Python an unprivileged learner can run: {sys.executable} (or what it links to) is not "
                   f"reachable by other users ({why}). Install the course in a Python every "
                   f"user can read (e.g. /opt/rocmlab/venv, mode 755), or provide /usr/bin/{ver}")


def server_reads(python: str, environment: dict) -> list[str]:
    """The folders under /tmp a learner's server reads: its Python (and what that links to), this environment,
    every folder of its PYTHONPATH, JUPYTER_PATH, JUPYTER_CONFIG_PATH and PATH, the offline ROCm root, the
    course's package and labs. A learner's server gets a private /tmp, which hides them: the hub binds these back
    read-only (:func:`rocmlab.workshop.hubconfig.private_tmp_namespace`). Outermost folders only."""
    import rocmlab

    cands = [python, os.path.realpath(python), sys.prefix, Path(rocmlab.__file__).parent, paths.labs_dir()]
    for key in ("PYTHONPATH", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PATH", "ROCMLAB_ROCM_ROOT"):
        cands += (environment.get(key) or "").split(os.pathsep)
    found = set()
    for cand in filter(None, map(str, cands)):
        for p in (os.path.normpath(os.path.abspath(cand)), os.path.realpath(cand)):
            if p.startswith("/tmp/") and os.path.exists(p):
                found.add(p if os.path.isdir(p) else os.path.dirname(p))
    return sorted(p for p in found if not any(p.startswith(q + "/") for q in found))


#: What a learner's server must import (the probe of :func:`learner_python` and :func:`_check_private_tmp`).
SERVER_IMPORTS = "import jupyterhub.singleuser, rocmlab.workshop.exchange"


def _check_private_tmp(python: str, environment: dict, tmp_limit: str, keep: list[str], reads: list[str]) -> None:
    """Run :data:`SERVER_IMPORTS` as nobody inside a private /tmp made as a learner's server's is; HubError naming
    the folders under /tmp and the fix if it fails."""
    from rocmlab.workshop.hubconfig import private_tmp_namespace

    def preexec():
        private_tmp_namespace(tmp_limit, tuple(keep), tuple(reads))
        _as_nobody()

    env = {k: environment[k] for k in ("PYTHONPATH", "PATH", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH") if environment.get(k)}
    r = subprocess.run([python, "-c", SERVER_IMPORTS], cwd="/", capture_output=True, text=True, preexec_fn=preexec,
                       env=env, timeout=120)
    if r.returncode != 0:
        raise HubError(f"learners' servers could not start inside their private /tmp: `{python} -c "
                       f"'{SERVER_IMPORTS}'` failed there as an unprivileged user: {r.stderr.strip()[-300:]}. "
                       f"Folders under /tmp they read, bound back read-only: {', '.join(reads) or 'none'}. Fix: "
                       "install the course outside /tmp (e.g. clone it to /opt/rocmlab and run ./go setup there), "
                       "or start the hub with tmp_limit=None (no private /tmp)")


def _learner_bin(folder: Path, python: str) -> Path:
    """``python`` and ``rocmlab`` for learners' terminals when their servers run the system's Python."""
    folder.mkdir(mode=0o755, exist_ok=True)
    os.chmod(folder, 0o755)
    link = folder / "python"
    if not link.is_symlink():
        link.symlink_to(python)
    cli = folder / "rocmlab"
    cli.write_text(f"#!{python}\nimport sys\nfrom rocmlab.cli import main\nsys.exit(main())\n")
    os.chmod(cli, 0o755)
    return folder


def _check_passable(path: Path) -> None:
    """Every folder above ``path`` must let other users pass (x for others), or no learner reaches their home."""
    for d in [path, *path.parents]:
        if not os.stat(d).st_mode & 0o001:
            raise HubError(f"{d} is closed to other users (mode {os.stat(d).st_mode & 0o777:o}): learners could "
                           f"not reach their homes under {path}. Give a work folder every user can pass through "
                           "(e.g. tempfile.mkdtemp() then chmod 0711)")


@dataclass(frozen=True)
class HubRequest:
    """What :func:`running_hub` starts: the learners, the instructor, the seats and every learner's server's limits.

    ``workdir``: the work folder (laid out as the module's text says). ``mode="users"`` (root only): each learner
    their own Unix user ``user_prefix + NAME`` (created on their first spawn, removed on exit if this hub created
    it). ``mode="dry-run"``: all as the hub's user. ``exchange``: the hand-in exchange's folder (default
    WORK/exchange). ``port``: the hub's (default: a free one, drawn again when it was taken). ``timeout_s``: how
    long the hub may take to answer /hub/health. ``environment``: added to every learner's server's. More
    learners than ``n_gpus`` seats is an error unless ``oversubscribe`` (then the learner past the last seat gets
    the error when their server starts). ``fast_start`` (default) starts learners' servers without jupyter_lsp
    and without jsonschema's IRI checker (:data:`SKIP_RFC3987`); False: as JupyterLab comes; ``server_args``:
    the servers' own arguments (default :data:`FAST_SERVER_ARGS`). ``cull_idle_s``: stop servers idle that long
    (None: never).

    Limits of each learner's server (``users`` mode; None turns one off): ``mem_limit``, ``cpu_limit``,
    ``pids_limit`` (processes and threads: cgroup ``pids.max`` and RLIMIT_NPROC), ``disk_limit`` (the home is
    a file system of that size), ``tmp_limit`` (a private tmpfs /tmp), ``gpu_devices`` (per seat, the device
    nodes its server may open; ``"auto"``: /dev/kfd and the seat's render node from the KFD topology, none
    without a GPU). ``rocm_root``: the offline ROCm root learners compile with (every user must be able to
    read it, e.g. /opt/rocmlab/rocm-7.2.4); default ``ROCMLAB_ROCM_ROOT`` or this user's root if others can
    read it.

    A clone under /tmp works as any other place: what the servers read there is bound back read-only into their
    private /tmp (:func:`server_reads`), checked before the hub starts (HubError naming the folders and the fix
    otherwise). ``bind_server_reads=False`` leaves that out: only the control of the hub tests, whose spawn then
    fails with the server's own words."""
    workdir: str | os.PathLike
    learners: list[str]
    instructor: str = "instructor"
    n_gpus: int = 8
    exchange: str | os.PathLike | None = None
    port: int | None = None
    timeout_s: float = 90.0
    environment: dict | None = None
    mode: str = "users"
    user_prefix: str = "jupyter-"
    mem_limit: str | None = "2G"
    cpu_limit: float | None = 1.0
    cull_idle_s: int | None = 3600
    oversubscribe: bool = False
    server_args: list[str] | None = None
    fast_start: bool = True
    pids_limit: int | None = 1024
    disk_limit: str | None = "4G"
    tmp_limit: str | None = "1G"
    gpu_devices: list | str | None = "auto"
    rocm_root: str | os.PathLike | None = None
    bind_server_reads: bool = True


def jupyterhub(workdir, learners: list[str], **options):
    """A running hub with ``learners`` and ``instructor`` allowed; stopped (with all it spawned) on exit: the
    short form of ``running_hub(HubRequest(workdir, learners, **options))``; ``options`` are
    :class:`HubRequest`'s fields."""
    return running_hub(HubRequest(workdir, learners, **options))


@contextlib.contextmanager
def running_hub(request: HubRequest):
    """Check the request, lay out the work folder, prepare the learners' servers, start the hub (again on fresh
    ports when one it drew was taken), wait for it; on exit stop it and remove what it created."""
    _check_hub_request(request)
    layout = _lay_out(request)
    token, password = secrets.token_hex(24), secrets.token_urlsafe(12)
    servers = _learner_servers(request, layout)
    hub = _start(request, layout, servers, token, password)
    try:
        yield hub
    finally:
        left = hub.stop()
        _remove_created(hub)
        if left:
            raise HubError(f"processes left after the hub stopped: {left}")


# --- the stages of running_hub -----------------------------------------------------------------------------

def _check_hub_request(req: HubRequest) -> None:
    """HubError naming the fix for a request this machine cannot serve, before anything is written."""
    from rocmlab.settings import RUN_PROCESS_LIMIT
    from rocmlab.workshop import seats
    from rocmlab.workshop.hubconfig import MODES

    if req.mode not in MODES:
        raise HubError(f"hub mode {req.mode!r}: use one of {MODES} ('dry-run': every server as one user, no isolation)")
    if req.mode == "users" and os.geteuid() != 0:
        raise HubError("mode='users' runs each learner as their own Unix user, so the hub must run as root "
                       "(sudo); for a one-person try-out use mode='dry-run'")
    if shutil.which("configurable-http-proxy") is None:
        raise HubError(NO_PROXY)
    if req.pids_limit is not None and req.pids_limit < 2 * RUN_PROCESS_LIMIT:
        raise HubError(f"pids_limit={req.pids_limit} is too low: a learner's grade alone may use {RUN_PROCESS_LIMIT} "
                       f"processes (the sandbox's limit) next to their server's; give {2 * RUN_PROCESS_LIMIT} or more "
                       "(1024 for a workshop), or None for no cap")
    if not req.oversubscribe:
        try:
            seats.check_learners(len(req.learners), req.n_gpus)
        except seats.NoFreeGpu as exc:
            raise HubError(str(exc)) from None


@dataclass(frozen=True)
class _Layout:
    """The work folder's parts (see the module's text)."""
    workdir: Path
    state: Path           # WORK/hub: config, database, log, seat state (root 0700)
    homes: Path           # WORK/home (0711)
    exchange: Path


def _lay_out(req: HubRequest) -> _Layout:
    """The work folder, its parts with their modes, the exchange and the instructor's material."""
    workdir = Path(req.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o711)
    state, homes, instructor_dir = workdir / "hub", workdir / "home", workdir / "instructor"
    for d, m in ((state, 0o700), (homes, 0o711), (instructor_dir, 0o700)):
        d.mkdir(exist_ok=True)
        os.chmod(d, m)
    if req.mode == "users":
        _check_passable(homes)
    exchange = Path(req.exchange) if req.exchange else workdir / "exchange"
    prepare(exchange)
    _instructor_material(instructor_dir)
    return _Layout(workdir, state, homes, exchange)


@dataclass(frozen=True)
class _Servers:
    """How the learners' servers start: their Python, environment, arguments and the folders under /tmp they read."""
    python: str
    environment: dict
    args: list[str] | None
    reads: list[str]


def _learner_servers(req: HubRequest, layout: _Layout) -> _Servers:
    """The learners' servers' Python and environment (checked: it imports as a learner, inside a private /tmp)."""
    workdir = layout.workdir
    server_args = req.server_args
    server_python, pythonpath = (learner_python(os.environ.get("PYTHONPATH", "")) if req.mode == "users"
                                 else (sys.executable, os.environ.get("PYTHONPATH", "")))
    env_pass = {"PYTHONPATH": pythonpath,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
                "ROCMLAB_QUICK": os.environ.get("ROCMLAB_QUICK", "1"), **(req.environment or {})}
    if req.fast_start:
        env_pass["PYTHONPATH"] = os.pathsep.join(p for p in (str(_server_site(workdir / "server-site")),
                                                             env_pass["PYTHONPATH"]) if p)
    else:
        server_args = server_args if server_args is not None else []
    learner_root = _learner_rocm_root(req.rocm_root) if req.mode == "users" else None
    if learner_root:
        env_pass.setdefault("ROCMLAB_ROCM_ROOT", learner_root)
    if req.mode == "dry-run":
        env_pass.setdefault("ROCMLAB_HOME", str(paths.home()))
    elif server_python != sys.executable:     # the system's Python: point it at this environment's Jupyter
        env_pass.setdefault("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
        env_pass.setdefault("JUPYTER_CONFIG_PATH", str(Path(sys.prefix) / "etc" / "jupyter"))
        env_pass["PATH"] = f"{_learner_bin(workdir / 'bin', server_python)}{os.pathsep}{env_pass['PATH']}"
    reads = (server_reads(server_python, env_pass) if req.mode == "users" and req.tmp_limit and req.bind_server_reads
             else [])
    if reads:
        from rocmlab.workshop.hubconfig import can_unshare_mounts

        if not can_unshare_mounts():
            _check_private_tmp(server_python, env_pass, req.tmp_limit,
                               [str(workdir), str(layout.exchange), str(layout.homes)], reads)
    return _Servers(server_python, env_pass, server_args, reads)


def _start(req: HubRequest, layout: _Layout, servers: _Servers, token: str, password: str) -> Hub:
    """Start the hub and wait until it is healthy; again, on freshly drawn ports, when a port it drew was taken
    (:data:`START_TRIES` in all). HubError with its log's tail when it does not start."""
    for attempt in range(1, START_TRIES + 1):
        hub = _launch(req, layout, servers, token, password, attempt)
        try:
            _wait_healthy(hub, req.timeout_s)
            return hub
        except HubError as exc:
            left = hub.stop()
            _remove_created(hub)
            if left:
                raise HubError(f"processes left after the hub stopped: {left}; it had not started: {exc}") from None
            if attempt == START_TRIES or not port_taken(hub.log_text()):
                raise
    raise AssertionError("unreachable: the last try returns or raises")


def _launch(req: HubRequest, layout: _Layout, servers: _Servers, token: str, password: str, attempt: int) -> Hub:
    """Write the hub's config (its own and the proxy's ports drawn afresh) and start ``python -m jupyterhub``."""
    from rocmlab.workshop.hubconfig import parse_bytes

    state = layout.state
    port = req.port or free_port()
    cfg = write_config(state, learners=list(req.learners), instructor=req.instructor, n_gpus=req.n_gpus,
                       exchange=layout.exchange, homes=layout.homes, port=port, token=token, password=password,
                       environment=servers.environment, mode=req.mode, user_prefix=req.user_prefix,
                       mem_limit=req.mem_limit, cpu_limit=req.cpu_limit, cull_idle_s=req.cull_idle_s,
                       server_args=servers.args, server_python=servers.python,
                       admin_environment={"ROCMLAB_HOME": str(paths.home()),      # the instructor grades as root
                                          "ROCMLAB_ROCM_ROOT": str(paths.rocm_root())}, pids_limit=req.pids_limit,
                       disk_limit=req.disk_limit, tmp_limit=req.tmp_limit, gpu_devices=req.gpu_devices,
                       server_reads=servers.reads)
    log_path = state / "jupyterhub.log"
    env = dict(os.environ)
    env.pop("JUPYTERHUB_API_TOKEN", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(cfg)], cwd=state, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_term_with_parent)
    return Hub(layout.workdir, port, token, password, layout.exchange, proc, log_path, req.mode, req.user_prefix,
               disk=(state / "disks", parse_bytes(req.disk_limit)) if req.mode == "users" and req.disk_limit else None,
               tries=attempt, server_reads=servers.reads)


def _learner_rocm_root(rocm_root) -> str | None:
    """The offline ROCm root for learners' servers: ``rocm_root`` (which every user must be able to read:
    HubError with the fix otherwise), else ROCMLAB_ROCM_ROOT or this user's root when nobody can read it too,
    else None (learners' HIP cells then say the root is missing and how to provide it)."""
    from rocmlab.hip.toolchain import READY_STAMP

    cand = Path(rocm_root) if rocm_root else paths.rocm_root()
    r = subprocess.run(["/bin/sh", "-c", f'test -x "$1/usr/bin/hipcc" && test -f "$1/{READY_STAMP}"', "sh",
                        str(cand)], cwd="/", capture_output=True, preexec_fn=_as_nobody, env={"PATH": os.defpath})
    if r.returncode == 0:
        return str(cand)
    if rocm_root:
        raise HubError(f"learners cannot read the offline ROCm root {cand} (every user needs it to compile): "
                       "build it where all can read it: sudo ROCMLAB_ROCM_ROOT=/opt/rocmlab/rocm-7.2.4 bash "
                       "scripts/setup/20-rocm-root.sh, and pass that folder")
    return None


def _instructor_material(folder: Path) -> None:
    """The instructor's grading seed (``rocmlab grade --seed "$(cat grading-seed)"``) and a copy of each
    exercise's reference solution, in a folder only root reads."""
    from rocmlab.grader.spec import EXERCISES_DIR

    seed = folder / "grading-seed"
    if not seed.exists():
        seed.write_text(f"{secrets.randbelow(2**31)}\n")
        os.chmod(seed, 0o600)
    refs = folder / "references"
    refs.mkdir(mode=0o700, exist_ok=True)
    for sol in sorted(EXERCISES_DIR.glob("*/solution.hip")):
        dest = refs / f"{sol.parent.name}.hip"
        if not dest.exists():
            shutil.copyfile(sol, dest)
            os.chmod(dest, 0o600)


def _remove_created(hub: Hub) -> None:
    """Remove the Unix users this hub created (each after all their processes ended), their home file systems
    and the hub's cgroups. Raises HubError naming what could not be removed, after trying all of it."""
    from rocmlab.workshop.hubconfig import Cgroups, remove_unix_user, unmount_home_disk

    f = hub.state / "created-users"
    names = f.read_text().split() if f.exists() else []
    failed = Cgroups(f"rocmlab-hub-{hub.port}").remove()       # kills what is left in them first
    for name in names:
        learner = name[len(hub.user_prefix):] if name.startswith(hub.user_prefix) else name
        try:
            if hub.disk:
                subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
                unmount_home_disk(hub.home(learner), hub.disk[0] / f"{name}.img")
                unmount_home_disk(hub.exchange / "inbound" / learner, hub.disk[0] / f"{name}-inbound.img")
            remove_unix_user(name)
        except (RuntimeError, OSError) as exc:
            failed.append(f"user {name}: {exc}")
    if failed:
        raise HubError("clean-up left behind: " + "; ".join(failed))


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
