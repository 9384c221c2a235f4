"""A real JupyterHub (each learner their own Unix user, as a workshop runs it): learners' servers get distinct
GPU seats (HIP_VISIBLE_DEVICES), a hub with more learners than seats refuses to start, a learner past the last
seat gets the hub's clear error, the instructor gets the exchange and no seat, a learner hands in from a kernel
of their own server, the idle culler runs, and nothing is left running afterwards (also when the hub cannot
start). Isolation between learners: test_isolation.py."""

from __future__ import annotations

import os
import pwd
import secrets
import tempfile
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor

import pytest

from rocmlab.workshop import seats
from rocmlab.workshop.hub import HubError, jupyterhub

LEARNERS = ["learner01", "learner02", "learner03"]
PREFIX = f"rl{secrets.token_hex(2)}-"


def workdir() -> Path:
    base = Path(tempfile.mkdtemp(prefix="rocmlab-hub-"))
    os.chmod(base, 0o711)                           # learners pass through to their homes
    return base


@pytest.fixture(scope="module")
def hub(needs_proxy, no_leftovers):
    if os.geteuid() != 0:
        pytest.skip("the workshop hub runs as root (it creates users)")
    t0 = time.monotonic()
    with jupyterhub(workdir(), LEARNERS, n_gpus=2, oversubscribe=True, user_prefix=PREFIX, cull_idle_s=600) as h:
        print(f"hub healthy in {time.monotonic() - t0:.1f} s")
        yield h
        no_leftovers |= h.remember_pids()
    assert not [p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(PREFIX)], "users left behind"


def test_more_learners_than_seats_is_refused_before_the_hub_starts(needs_proxy, tmp_path):
    with pytest.raises(HubError, match=r"3 learners but only 2 GPU seats: .* finer partition mode .*seats plan"):
        with jupyterhub(tmp_path, LEARNERS, n_gpus=2, mode="dry-run"):
            pass
    assert not (tmp_path / "hub").exists()          # refused before anything was made


def test_each_learner_gets_their_own_seat_and_the_last_one_a_clear_error(hub):
    got = {}
    with ThreadPoolExecutor(3) as pool:             # two learners and the instructor log in at once
        list(pool.map(hub.spawn, [*LEARNERS[:2], "instructor"]))
    for name in LEARNERS[:2]:
        env = hub.server_env(name)
        got[name] = env["HIP_VISIBLE_DEVICES"]
        assert env["ROCMLAB_WORKSHOP_GPU"] == got[name] and env["ROCMLAB_EXCHANGE"] == str(hub.exchange)
        inbound = hub.exchange / "inbound" / name
        assert inbound.is_dir() and inbound.stat().st_uid == pwd.getpwnam(f"{PREFIX}{name}").pw_uid
    assert sorted(got.values()) == ["0", "1"], got
    with pytest.raises(HubError, match=r"all 2 GPUs on this node are assigned \(0: learner0\d, 1: learner0\d\)"):
        hub.spawn(LEARNERS[2])
    # an admin frees a seat (stopping a server keeps it: a learner keeps their GPU for the workshop)
    hub.stop_server(LEARNERS[0])
    assert seats.GpuAssigner(hub.seat_state, 2).release(LEARNERS[0])
    hub.spawn(LEARNERS[2])
    assert hub.server_env(LEARNERS[2])["HIP_VISIBLE_DEVICES"] == got[LEARNERS[0]]


def test_the_instructor_takes_no_seat_and_sees_the_exchange(hub):
    hub.spawn("instructor")                         # already running: returns at once
    env = hub.server_env("instructor")
    assert "HIP_VISIBLE_DEVICES" not in env and env["ROCMLAB_EXCHANGE"] == str(hub.exchange)
    assert env["ROCMLAB_GPU_STATE"] == str(hub.seat_state) and hub.server_process("instructor").uids().real == 0


def test_the_idle_culler_runs_as_a_hub_service(hub):
    services = hub.api("services")
    assert "idle-culler" in services, services
    cmd = services["idle-culler"].get("command") or []
    assert "--timeout=600" in cmd and services["idle-culler"].get("pid"), services["idle-culler"]


def test_a_learner_hands_in_from_a_kernel_in_their_server(hub):
    name = LEARNERS[1]
    # the learner's server holds no references (ROCMLAB_REFERENCES=off): the learner's own answer is typed in
    from rocmlab.grader.spec import load
    code = ("import pathlib\nfrom rocmlab.workshop import exchange\n"
            f"pathlib.Path('vector_add.hip').write_text({load('vector-add').solution!r})\n"
            "print(exchange.handin('vector-add', 'vector_add.hip'))\n")
    out = hub.execute(name, code).strip()
    assert out.startswith(str(hub.exchange / "inbound" / name / "vector-add")), out
    made = hub.home(name) / "vector_add.hip"
    assert made.is_file() and made.stat().st_uid == pwd.getpwnam(f"{PREFIX}{name}").pw_uid
    with pytest.raises(HubError, match="ExchangeError"):               # the control: an empty file is refused
        hub.execute(name, "open('e.hip', 'w').close()\nfrom rocmlab.workshop import exchange\n"
                          "exchange.handin('vector-add', 'e.hip')")


def test_a_hub_that_cannot_start_says_why_and_leaves_nothing(needs_proxy, tmp_path):
    from tests.helpers.labharness import descendants

    before = {p.pid for p in descendants(os.getpid())}
    with pytest.raises(HubError, match=r"(?s)JupyterHub exited with status 1 before it was healthy.*Port out of range"):
        with jupyterhub(tmp_path, ["x"], port=70000, timeout_s=60, mode="dry-run"):
            pass
    time.sleep(0.5)
    left = [p for p in descendants(os.getpid()) if p.pid not in before and p.status() != "zombie"]
    assert not left, left


KILLED_PARENT = """
import os, signal, sys
from rocmlab.workshop.hub import jupyterhub
with jupyterhub(sys.argv[1], ["x"], n_gpus=1, mode="dry-run") as hub:
    print(" ".join(map(str, hub.remember_pids())), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)         # the test process dies without running any clean-up
"""


def test_a_killed_parent_still_stops_the_hub_and_its_proxy(needs_proxy, tmp_path):
    import subprocess
    import sys

    import psutil

    r = subprocess.run([sys.executable, "-c", KILLED_PARENT, str(tmp_path)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == -9, r.stderr
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) >= 2, r.stdout                    # the hub and configurable-http-proxy
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in pids):
        time.sleep(0.25)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, [" ".join(psutil.Process(p).cmdline()) for p in alive]


def test_an_error_page_reads_as_its_words():
    """A proxied request that fails gets JupyterHub's HTML error page: the HubError carries its text, not the markup."""
    from rocmlab.workshop.hub import _message

    page = ("<!DOCTYPE HTML>\n<html><head><title>JupyterHub</title><script>var x = '<b>';</script></head>"
            "<body><div class='error'><h1>503 : Service Unavailable</h1><p>Your server at "
            "<a href='/user/a/'>/user/a/</a> is not running &amp; cannot be reached.</p></div>"
            "<button data-dismiss='modal'>OK</button></body></html>")
    assert _message(page) == "503 : Service Unavailable Your server at /user/a/ is not running & cannot be reached. OK"
    assert _message({"message": "no seat"}) == "no seat"
    assert _message("x" * 5000) == "x" * 600               # a long plain answer is cut, not dropped


def test_a_port_taken_before_the_hub_binds_it_is_drawn_again(needs_proxy, tmp_path, monkeypatch):
    """free_port() draws a free port and lets it go; another program (a kernel's ZeroMQ socket, in CI) may bind it
    before the hub does. The hub then exits saying the address is in use, and jupyterhub() starts it again on
    fresh ports. The control: a hub that cannot start for another reason is not started again (the test above)."""
    import socket

    from rocmlab.workshop import hub as hubmod

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real, calls = hubmod.free_port, []

    def draws():                      # the first draw of the hub's own port gets the taken one
        calls.append(1)
        return taken if len(calls) == 2 else real()

    monkeypatch.setattr(hubmod, "free_port", draws)
    try:
        with jupyterhub(tmp_path, ["x"], n_gpus=1, mode="dry-run", timeout_s=60) as h:
            assert h.tries == 2 and h.port != taken
            assert h.request("/hub/health", timeout=10)[0] == 200
    finally:
        squatter.close()


def test_only_a_port_in_use_is_a_reason_to_start_again():
    from rocmlab.workshop.hub import port_taken

    assert port_taken("OSError: [Errno 98] Address already in use")
    assert port_taken("Error: listen EADDRINUSE: address already in use 127.0.0.1:8000")
    assert not port_taken("ValueError: Port out of range 0-65535")
    assert not port_taken("")
