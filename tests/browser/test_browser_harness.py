"""Bad input for the browser harness: JupyterLab that cannot start (its port is taken) and a notebook cell
that raises must each fail a test with a clear message and leave no process behind.

The failing tests run in a child pytest (so their failure is real, not caught), which writes down the pids of
everything it started; this test then checks that pytest reported the failures with the right messages and
that none of those processes is alive.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
from tests.helpers.labharness import descendants, live_processes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _servers_on(port: int) -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "jupyter" in cmd and f"--ServerApp.port={port}" in cmd:
            out.append(f"{p.info['pid']} {cmd[:100]}")
    return out


INNER = '''
import json, os, socket
from pathlib import Path

from tests.helpers.browser_notebooks import write_raising_notebook
from tests.helpers.labharness import Notebook, chromium, descendants, jupyterlab

PIDS = Path(os.environ["PIDS_FILE"])


def record(pids):
    old = set(json.loads(PIDS.read_text())) if PIDS.exists() else set()
    PIDS.write_text(json.dumps(sorted(old | set(pids))))


def test_port_taken(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); s.listen()
        Path(os.environ["PORT_FILE"]).write_text(str(s.getsockname()[1]))
        with jupyterlab(tmp_path, tmp_path, port=s.getsockname()[1], timeout_s=60) as srv:
            record(srv.remember_pids())


def test_cell_raises(tmp_path):
    root = tmp_path / "notebooks"
    root.mkdir()
    write_raising_notebook(root / "raises.ipynb", os.environ["BOOM"])
    with jupyterlab(root, tmp_path) as srv, chromium(tmp_path) as ctx:
        nb = Notebook.open(ctx, srv, "raises.ipynb")
        # the server, its kernel, the Playwright driver and every Chromium process
        record(srv.remember_pids() | {p.pid for p in descendants(os.getpid())})
        nb.run_all(timeout_s=120)
'''


def test_failing_notebook_and_taken_port_fail_their_tests_and_leave_nothing(tmp_path):
    boom = f"boom-{random.randrange(10**6)}"
    (tmp_path / "test_inner.py").write_text(INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pids_file = tmp_path / "pids.json"
    port_file = tmp_path / "port.txt"
    env = dict(os.environ, BOOM=boom, PIDS_FILE=str(pids_file), PORT_FILE=str(port_file),
               PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT / "tools")]),
               ROCMLAB_TEST_ARTIFACTS=str(tmp_path / "artifacts"))
    before = {p.pid for p in descendants(os.getpid())}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=short", "--rootdir", str(tmp_path),
                        "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_inner.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    (tmp_path / "inner-pytest.txt").write_text(out)
    assert r.returncode == 1, out
    assert "2 failed" in out, out
    port = int(port_file.read_text())
    assert (f"JupyterLabStartError: JupyterLab exited with status 1 before it was ready: port {port} on "
            f"127.0.0.1 is already in use") in out, out
    assert "last lines" in out, out                                  # the server's log tail is in the message
    src = f"raise ValueError({boom!r})"
    assert f"NotebookCellError: raises: cell 2 ({src!r}) shows an error in the browser: ValueError: {boom}" in out, out
    assert "cells that never ran: [3]" in out, out
    assert (tmp_path / "artifacts" / "browser" / "FAILED-raises-error.png").stat().st_size > 0
    pids = json.loads(pids_file.read_text())
    assert len(pids) >= 4, pids         # server, kernel, Playwright's driver, Chromium's processes
    assert live_processes(pids) == [], "processes left behind"
    assert live_processes({p.pid for p in descendants(os.getpid())} - before) == []
    assert _servers_on(port) == [], "the JupyterLab on the taken port is still running"


def test_the_error_scan_sees_only_real_errors():
    """The harness's error patterns: a traceback or a widget that failed to load is an error; a warning is not."""
    import re

    from tests.helpers.labharness import _CELLS_JS
    pats = re.findall(r"/(.+?)/\.test\(t\)", textwrap.dedent(_CELLS_JS))
    assert pats, "error patterns not found"
    js_to_py = [re.compile(p.replace("\\/", "/"), re.M) for p in pats]

    def is_error(text):
        return any(p.search(text) for p in js_to_py)

    assert is_error("Traceback (most recent call last):\n  File ...\nValueError: x")
    assert is_error("---------------------------------------------------------------------------\n"
                    "ValueError                                Traceback (most recent call last)")
    assert is_error("Error displaying widget: model not found")
    assert not is_error("UserWarning: quick mode: small sizes")
    assert not is_error("100%|██████████| 3/3 [00:01<00:00]")


def test_a_drawn_port_taken_before_jupyterlab_binds_it_is_drawn_again(tmp_path, monkeypatch):
    """free_port() lets its port go before JupyterLab binds it; another program may take it first. A port the
    harness drew is then drawn again; a port the caller gave is not (the child test above: that one fails)."""
    import socket

    from tests.helpers import labharness

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken, real, draws = squatter.getsockname()[1], labharness.free_port, []
        monkeypatch.setattr(labharness, "free_port", lambda: draws.append(1) or (taken if len(draws) == 1 else real()))
        with labharness.jupyterlab(tmp_path, tmp_path, timeout_s=60) as srv:
            assert len(draws) == 2 and srv.port != taken
            assert srv.api("status", timeout=10)
        assert (tmp_path / f"jupyterlab-{taken}.log").read_text().count("already in use") >= 1
