"""A real JupyterHub: learners' servers get distinct GPU seats (HIP_VISIBLE_DEVICES), a learner past the last
seat gets the hub's clear error, the instructor gets the exchange and no seat, a learner hands in from a kernel
of their own server, and nothing is left running afterwards (also when the hub cannot start)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rocmlab.workshop import seats
from rocmlab.workshop.hub import HubError, jupyterhub

LEARNERS = ["learner01", "learner02", "learner03"]


@pytest.fixture(scope="module")
def hub(needs_proxy, no_leftovers, tmp_path_factory):
    t0 = time.monotonic()
    with jupyterhub(tmp_path_factory.mktemp("hub"), LEARNERS, n_gpus=2) as h:
        print(f"hub healthy in {time.monotonic() - t0:.1f} s")
        yield h
        no_leftovers |= h.remember_pids()


def test_each_learner_gets_their_own_seat_and_the_last_one_a_clear_error(hub):
    got = {}
    with ThreadPoolExecutor(3) as pool:             # two learners and the instructor log in at once
        list(pool.map(hub.spawn, [*LEARNERS[:2], "instructor"]))
    for name in LEARNERS[:2]:
        env = hub.server_env(name)
        got[name] = env["HIP_VISIBLE_DEVICES"]
        assert env["ROCMLAB_WORKSHOP_GPU"] == got[name] and env["ROCMLAB_EXCHANGE"] == str(hub.exchange)
        assert (hub.exchange / "inbound" / name).is_dir()
    assert sorted(got.values()) == ["0", "1"], got
    with pytest.raises(HubError, match=r"all 2 GPUs on this node are assigned \(0: learner0\d, 1: learner0\d\)"):
        hub.spawn(LEARNERS[2])
    # an admin frees a seat (stopping a server keeps it: a learner keeps their GPU for the workshop)
    hub.stop_server(LEARNERS[0])
    assert seats.GpuAssigner(hub.workdir / "gpu-seats.json", 2).release(LEARNERS[0])
    hub.spawn(LEARNERS[2])
    assert hub.server_env(LEARNERS[2])["HIP_VISIBLE_DEVICES"] == got[LEARNERS[0]]


def test_the_instructor_takes_no_seat_and_sees_the_exchange(hub):
    hub.spawn("instructor")                         # already running: returns at once
    env = hub.server_env("instructor")
    assert "HIP_VISIBLE_DEVICES" not in env and env["ROCMLAB_EXCHANGE"] == str(hub.exchange)


def test_a_learner_hands_in_from_a_kernel_in_their_server(hub):
    name = LEARNERS[1]
    code = ("import pathlib\nfrom rocmlab.grader.spec import load\nfrom rocmlab.workshop import exchange\n"
            "pathlib.Path('vector_add.hip').write_text(load('vector-add').solution)\n"
            "print(exchange.handin('vector-add', 'vector_add.hip'))\n")
    out = hub.execute(name, code).strip()
    assert out.startswith(str(hub.exchange / "inbound" / name / "vector-add")), out
    assert (hub.home(name) / "vector_add.hip").is_file()
    with pytest.raises(HubError, match="ExchangeError"):               # the control: an empty file is refused
        hub.execute(name, "open('e.hip', 'w').close()\nfrom rocmlab.workshop import exchange\n"
                          "exchange.handin('vector-add', 'e.hip')")


def test_a_hub_that_cannot_start_says_why_and_leaves_nothing(needs_proxy, tmp_path):
    from labharness import descendants

    before = {p.pid for p in descendants(os.getpid())}
    with pytest.raises(HubError, match=r"(?s)JupyterHub exited with status 1 before it was healthy.*Port out of range"):
        with jupyterhub(tmp_path, ["x"], port=70000, timeout_s=60):
            pass
    time.sleep(0.5)
    left = [p for p in descendants(os.getpid()) if p.pid not in before and p.status() != "zombie"]
    assert not left, left


KILLED_PARENT = """
import os, signal, sys
from rocmlab.workshop.hub import jupyterhub
with jupyterhub(sys.argv[1], ["x"], n_gpus=1) as hub:
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
