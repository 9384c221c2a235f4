"""Fidelity of the CPU simulator where it matters: grading. (Every exercise solution runs and passes its
compare check on the simulator, MFMA and the course's hipBLAS calls included: tests/course/whole/test_exercises.py,
on the one grade of each reference.) Every wrong
submission scores as on MI300X (the hard-coded-32 reduction gives the wrong sum here; it passes on the
H200), the wave64 traps give MI300X's wrong answers, and the simulator never earns perf points."""

from __future__ import annotations

import re
import time

import pytest

from rocmlab import grader, sandbox
from rocmlab.grader.spec import load
from rocmlab.grader.wrong import wrong_submissions
from rocmlab.hip import build, simulate
from tests.helpers.busy import grade_until_scored
from rocmlab.hip.sim.traps import TRAPS
from rocmlab.machine.detect import current

pytestmark = [pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available"),
              pytest.mark.skipif(current().backend != "cpu", reason="the grader simulates only where no GPU is")]

# Every solution's run and compare on the simulator (MFMA and hipBLAS included), and no perf points from it, are
# checked on the grade of tests/course/whole/test_exercises.py (one grade of each reference serves both)
LABEL = "[cpu: wave64 simulator]"


def test_the_hard_coded_warp_of_32_gives_the_wrong_sum_here():
    w = wrong_submissions()["hard-coded warp of 32"]
    r = grader.check(w.exercise, w.source, only=("compile", "run", "compare"))
    compare = r.check("correct")
    assert compare.status == "failed" and compare.message.startswith(LABEL), compare.message
    got, want = map(float, re.search(r"got ([-\d.e+]+), expected ([-\d.e+]+)", compare.message).groups())
    assert got < 0.75 * want, compare.message        # about half the partial sums are never added


@pytest.mark.parametrize("name", ["wrong index", "only passes on zeros", "printed hard-coded answer"])
def test_wrong_kernels_fail_their_compare_check_here(name):
    w = wrong_submissions()[name]
    r = grader.check(w.exercise, w.source, only=("compile", "run", "compare"))
    assert r.check(w.fails).status == "failed", r.check(w.fails).message


def test_the_32_bit_shuffle_mask_does_not_build_as_on_rocm_7():
    w = wrong_submissions()["mechanical hipify (32-bit shuffle mask)"]
    res = build.compile(w.source, toolchain=simulate.KIND, flags=("-I", str(load(w.exercise).folder.parent / "common")))
    assert not res.ok and "The mask must be a 64-bit integer" in res.summary()


def test_a_host_infinite_loop_times_out_as_before():
    w = wrong_submissions()["infinite loop"]
    # a machine too busy to give the program its 2 s is never scored: grading again decides
    r, _ = grade_until_scored(lambda: grader.check(w.exercise, w.source, only=("compile", "run"), time_limit_s=2),
                              lambda r: r.check("runs").message if sandbox.too_busy(r.check("runs").message) else "",
                              "the infinite loop")
    assert r.check("runs").status == "failed" and "time limit" in r.check("runs").message, r.check("runs").message


@pytest.mark.parametrize("trap", TRAPS, ids=[t.name for t in TRAPS])
def test_wave64_traps_give_mi300x_answers(trap):
    res = build.compile(trap.source, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res)
    assert done.returncode == 0 and trap.name in done.stdout, done.stderr
    verdict = "PASSED" if "PASSED" in done.stdout else "FAILED"
    assert trap.mi300x.startswith(verdict), (trap.name, done.stdout)


def test_the_simulator_build_starts_beside_the_compile_check_and_is_the_one_the_run_uses(monkeypatch):
    """A grade here builds the submission twice (the compile check's build for gfx942, the simulator's build):
    the second starts beside the first, in a thread, and the run check runs that very build (not a third).
    A file the static checks refuse to compile starts neither."""
    import random
    import threading

    calls = []
    real = build.compile

    def recording(source, **kw):
        t0 = time.monotonic()
        out = real(source, **kw)
        calls.append((kw.get("toolchain"), threading.current_thread().name, t0, time.monotonic(), out))
        return out

    monkeypatch.setattr(build, "compile", recording)
    monkeypatch.setattr(build, "simulator_build", lambda *a, **k: pytest.fail("a second simulator build"))
    source = f"// learner {random.getrandbits(64):x}\n" + load("vector-add").solution    # uncached: both really build
    r = grader.check("vector-add", source)
    assert r.check("runs").status == "passed" and r.check("correct").status == "passed", r.to_text()
    sims = [c for c in calls if c[0] == simulate.KIND]
    checks = [c for c in calls if c[0] is None and c[4].source == source]
    assert len(sims) == 1 and len(checks) == 1, [(c[0], c[1]) for c in calls]
    (_, sim_thread, sim_t0, _, sim_out), (_, check_thread, _, check_t1, _) = sims[0], checks[0]
    assert sim_thread.startswith("rocmlab-sim-build") and check_thread != sim_thread
    assert sim_t0 < check_t1, "the simulator build started only after the compile check's build"
    assert sim_out.ok and sim_out.cached is False

    calls.clear()         # the control: refused by the static checks (it reads a file at compile time)
    refused = f'// learner {random.getrandbits(64):x}\n#include "/etc/hostname"\n' + load("vector-add").solution
    r = grader.check("vector-add", refused)
    assert r.check("compiles").status == "failed" and "did not compile" in r.check("compiles").message
    assert calls == [], [(c[0], c[1]) for c in calls]

    calls.clear()         # a grading without run checks (only=...) builds for gfx942 alone: no simulator build
    source = f"// learner {random.getrandbits(64):x}\n" + load("vector-add").solution
    r = grader.check("vector-add", source, only=["static", "compile"])
    assert r.check("compiles").status == "passed" and [c.id for c in r.checks if c.type == "run"] == []
    assert [c[0] for c in calls] == [None], [(c[0], c[1]) for c in calls]


def test_the_compile_check_says_which_halves_it_built_and_reports_a_host_error():
    """Here no program is linked: the compile check says it built device and host code with a link check, and an
    error in host code only (main calls an undeclared function) still fails it, with the line."""
    import random

    sol = load("vector-add").solution
    ok = grader.check("vector-add", f"// {random.getrandbits(64):x}\n" + sol, only=("compile",)).check("compiles")
    assert ok.status == "passed" and "device code and host code, link checked" in ok.message, ok.message
    bad_src = f"// {random.getrandbits(64):x}\n" + sol.replace("int main(", "int main_unused(", 1) \
        + "\nint main() { return not_declared_anywhere(); }\n"
    bad = grader.check("vector-add", bad_src, only=("compile",)).check("compiles")
    assert bad.status == "failed" and "device code and host code" in bad.message, bad.message
    assert "not_declared_anywhere" in bad.message and "line" in bad.message, bad.message
