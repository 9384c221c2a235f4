"""Run a server as a background process: start, wait for health, show the log, stop cleanly.

``Server(cmd, port=...)`` never blocks a notebook cell:

- ``start()`` checks the port is free first (a clear error names who holds it), then starts
  the command in its own process group with stdout/stderr in a log file;
- ``wait_healthy(timeout)`` polls ``GET /health`` (then ``/v1/models``) and returns the
  seconds from start to healthy. If the process exits, or the timeout passes, it raises
  ``ServerError`` with the log's last lines, and (on timeout) stops the server;
- ``stop()`` sends SIGTERM to the whole process group, SIGKILL after a grace period, and
  waits until the port is free again. For ``docker run`` it also stops the container.

Servers still running when the Python process exits are stopped (``atexit``).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections import deque
from pathlib import Path

_LIVE: weakref.WeakSet = weakref.WeakSet()


class ServerError(RuntimeError):
    """The server did not come up, or died. ``log_tail`` holds its last log lines."""

    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message + (f"\n--- last lines of the server log ---\n{log_tail}" if log_tail else ""))
        self.log_tail = log_tail


class PortInUse(ServerError):
    pass


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_answers(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def who_listens(port: int) -> str:
    """'pid 123 (python)' for the process listening on ``port``, if psutil can tell."""
    try:
        import psutil

        for c in psutil.net_connections(kind="tcp"):
            if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid:
                try:
                    return f"pid {c.pid} ({psutil.Process(c.pid).name()})"
                except psutil.Error:
                    return f"pid {c.pid}"
    except Exception:
        pass
    return "another process"


def tail(path: str | Path, n: int = 30) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(deque(fh, maxlen=n)).rstrip()
    except FileNotFoundError:
        return ""


class Server:
    def __init__(self, cmd: list[str], port: int, host: str = "127.0.0.1", env: dict | None = None,
                 log_path: str | Path | None = None, cwd: str | None = None, health_path: str = "/health",
                 docker_name: str | None = None, name: str = "server"):
        self.cmd = [str(c) for c in cmd]
        self.port = int(port)
        self.host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        self.env = {k: str(v) for k, v in (env or {}).items()}
        self.cwd = cwd
        self.health_path = health_path
        self.docker_name = docker_name
        self.name = name
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix=f"rocmlab-{name}-{port}-", suffix=".log")
            os.close(fd)
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None
        self.started_at: float | None = None
        self.healthy_after_s: float | None = None

    @classmethod
    def from_spec(cls, spec, docker: bool = False, log_path=None, **docker_kw) -> Server:
        if docker:
            cmd = spec.docker_command(**docker_kw)
            return cls(cmd, spec.port, spec.host, {}, log_path, docker_name=docker_kw.get("name") or spec.container_name,
                       name=spec.engine)
        return cls(spec.local_command(), spec.port, spec.host, spec.env, log_path, name=spec.engine)

    # ---------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> Server:
        if self.alive():
            return self
        if not port_is_free(self.port, self.host) or port_answers(self.port, self.host):
            raise PortInUse(f"port {self.port} on {self.host} is in use by {who_listens(self.port)}: stop that "
                            f"server, or start this one on another port (ServerSpec(port=...), "
                            f"rocmlab.serve.process.free_port())")
        env = dict(os.environ, **self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        log = open(self.log_path, "ab")
        log.write(f"$ {' '.join(self.cmd)}\n".encode())
        log.flush()
        try:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=self.cwd, start_new_session=True)
        except FileNotFoundError as exc:
            raise ServerError(f"cannot start {self.cmd[0]!r}: {exc.strerror}; is it installed?") from exc
        finally:
            log.close()
        self.started_at = time.monotonic()
        self.healthy_after_s = None
        _LIVE.add(self)
        return self

    def log_tail(self, n: int = 30) -> str:
        return tail(self.log_path, n)

    def wait_healthy(self, timeout: float = 180.0, poll: float = 0.5) -> float:
        """Seconds from ``start()`` to a 200 on the health path. Raises ServerError (with the
        log tail) if the process exits first or ``timeout`` passes; on timeout it stops it."""
        import httpx

        if self.proc is None:
            raise ServerError("wait_healthy() before start(): call start() first")
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while True:
                rc = self.proc.poll()
                if rc is not None:
                    raise ServerError(f"{self.name} exited with status {rc} before it was healthy "
                                      f"(log: {self.log_path})", self.log_tail())
                try:
                    r = client.get(self.url + self.health_path)
                    if r.status_code == 200:
                        self.healthy_after_s = time.monotonic() - self.started_at
                        return self.healthy_after_s
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    log = self.log_tail()
                    self.stop()
                    raise ServerError(f"{self.name} was not healthy within {timeout:.0f} s, so it was stopped "
                                      f"(log: {self.log_path}); raise the timeout if it is only slow", log)
                time.sleep(poll)

    def stop(self, grace: float = 15.0) -> int | None:
        """End the process group (SIGTERM, then SIGKILL) and wait until the port is free.
        Returns the exit status (None if it was never started)."""
        if self.docker_name:
            subprocess.run(["docker", "stop", "-t", str(int(grace)), self.docker_name], capture_output=True)
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(10)
        # children that outlived the leader (the group may still hold the port)
        self._signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not port_is_free(self.port, self.host):
            time.sleep(0.1)
        _LIVE.discard(self)
        return self.proc.returncode

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL to the group), as a crash would."""
        if self.alive():
            self._signal(signal.SIGKILL)
            self.proc.wait(10)

    def _signal(self, sig) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.alive() else ("stopped" if self.proc else "not started")
        return f"<Server {self.name} {self.url} {state} pid={self.pid} log={self.log_path}>"


@atexit.register
def _stop_all() -> None:  # pragma: no cover - runs at interpreter exit
    for s in list(_LIVE):
        try:
            s.stop(grace=5)
        except Exception:
            pass
