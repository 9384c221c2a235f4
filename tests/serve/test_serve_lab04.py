"""Lab 04's "what a crash looks like" section: it kills a server of its own, never the learner's.

The lab's own cell is run (read from the notebook) with a learner's server running in its own process;
the control runs the cell as it was before (it killed ``server``, the learner's), which must kill it.
"""

from __future__ import annotations

import functools

import nbformat

from rocmlab.paths import labs_dir
from rocmlab.serve import bench, fakeserver
from rocmlab.serve.client import Timeouts

# The section as it was: it killed the learner's own server (``server`` from section 3).
OLD_CELL = """
if server:
    import threading
    calls = []
    def make(rate, conc):
        calls.append(conc)
        if len(calls) == 2:      # a long point, killed 0.5 s in: a crash, not a clean stop
            threading.Timer(0.5, server.kill).start()
            return bench.prompt_requests(24, 200)
        return bench.prompt_requests(8, 16)
    crash = bench.sweep(url, make, concurrencies=(4, 2, 1), progress=False, label="killed")
    assert crash[0]["completed"] == 8 and crash[1]["failed"] > 0 and crash[2].get("skipped")
"""


def crash_cell() -> str:
    nb = nbformat.read(labs_dir() / "04-vllm-on-rocm.ipynb", as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "crash = bench.sweep(" in c.source]
    assert len(cells) == 1, "Lab 04 has one crash-demo cell"
    return cells[0]


#: A request to a killed server's port fails at once, unless another test's server (this suite runs in parallel)
#: took the freed port and accepts without answering: then it would wait the default first-token limit (300 s).
#: The cell runs as written, with shorter limits.
SHORT = Timeouts(connect=5, first_token=20, between_tokens=20, total=120)


class _BenchWithShortLimits:
    sweep = staticmethod(functools.partial(bench.sweep, timeouts=SHORT))

    def __getattr__(self, name):
        return getattr(bench, name)


def run_cell(source: str, learner) -> dict:
    ns = {"bench": _BenchWithShortLimits(), "server": learner, "url": learner.url, "display": lambda *a, **k: None}
    exec(compile(source, "lab04-crash-cell", "exec"), ns)      # noqa: S102 - the lab's own cell
    return ns


def test_the_crash_demo_kills_its_own_server_and_leaves_the_learners_alive():
    learner = fakeserver.start_process(gap=0.005)       # the learner's server of section 3
    try:
        ns = run_cell(crash_cell(), learner)
        crash = ns["crash"]
        assert crash[0]["completed"] == 8 and crash[1]["failed"] > 0 and crash[2].get("skipped"), crash
        assert not ns["victim"].alive() and ns["victim"].url != learner.url
        assert learner.alive() and bench.check_server(learner.url) == ["fake-model"]
        after = bench.run(learner.url, bench.prompt_requests(2, 5), progress=False)
        assert after["completed"] == 2, after.get("errors")
    finally:
        learner.stop()


def test_control_the_old_crash_demo_killed_the_learners_server():
    learner = fakeserver.start_process(gap=0.005)
    try:
        run_cell(OLD_CELL, learner)
        assert not learner.alive()
    finally:
        learner.stop()
