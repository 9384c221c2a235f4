"""A time-out on a machine too busy to run the program is the machine's fault, never the learner's.

The sandbox reads the scheduler's account of the run's threads when the time limit ends it (time on a CPU, time
waiting for one). A run that waited far longer than it ran was starved: graders raise a machine fault (not scored,
never cached) instead of "time limit reached". A program that hangs asleep, or spins on a CPU it has, stays the
learner's. The busy machine is made for real: the test and N busy competitors pinned to one CPU.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from rocmlab import sandbox, settings
from rocmlab.grader import checks, items
from rocmlab.grader.report import CheckResult

PY = "/usr/bin/python3"          # the system python: visible inside the sandbox (a venv under /root or /home is not)
SPIN = [PY, "-c", "while True: pass"]
SLEEP = ["/bin/sleep", "600"]    # a hang from its first instruction (an interpreter starting up would run, and wait, first)

needs_account = pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat"),
                                   reason="this kernel keeps no per-thread scheduler account (schedstat)")


@contextmanager
def busy_cpu(competitors: int = 4, seconds: float = 3.5):
    """This thread and ``competitors`` sandboxed busy loops (each a run of its own, in its own cgroup where the
    sandbox makes one, as concurrent gradings are) pinned to one CPU for ``seconds``; a run started inside the
    block inherits the pinning."""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    before = os.sched_getaffinity(0)
    spin = [PY, "-c", f"import time\nt = time.time() + {seconds}\nwhile time.time() < t: pass"]
    os.sched_setaffinity(0, {cpu})
    threads = [threading.Thread(target=sandbox.run, args=(spin,), kwargs={"limits": sandbox.Limits(wall_s=30)})
               for _ in range(competitors)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.3)
        yield
    finally:
        os.sched_setaffinity(0, before)
        for t in threads:
            t.join()


@pytest.mark.parametrize("run_s, wait_s, duration, want", [
    (0.5, 1.5, 2.0, True),          # waited 3x as long as it ran, 75% of the time: starved
    (0.5, 0.9, 2.0, False),         # waited less than twice as long as it ran: a busy loop on a busy machine
    (0.1, 0.3, 2.0, False),         # waited 3x as long, but only 15% of the time: a short hang among sleeps
    (0.0, 0.0, 2.0, False),         # asleep: a deadlock, a GPU kernel that never ends
    (None, None, 2.0, False),       # no account kept: the time-out stays as it was
])
def test_the_rule(run_s, wait_s, duration, want):
    assert sandbox.starved(True, run_s, wait_s, duration) is want
    assert sandbox.starved(False, run_s, wait_s, duration) is False     # only a time-out can be starved


@needs_account
def test_a_starved_run_is_the_machines_fault_and_noted():
    with busy_cpu(), sandbox.machine_faults() as faults:
        done = sandbox.run(SPIN, limits=sandbox.Limits(wall_s=2))
    assert done.timed_out and done.cpu_run_s is not None
    assert done.cpu_wait_s >= settings.SANDBOX_STARVED_WAIT_RATIO * done.cpu_run_s, (done.cpu_run_s, done.cpu_wait_s)
    assert done.starved
    assert "too busy" in done.explain() and "not scored" in done.explain()
    assert len(faults) == 1 and "too busy" in faults[0]
    with pytest.raises(checks.MachineFault, match="too busy"):
        checks._verdict({"done": done})


@needs_account
def test_a_hang_asleep_stays_the_learners_on_a_busy_machine():
    with busy_cpu(), sandbox.machine_faults() as faults:
        done = sandbox.run(SLEEP, limits=sandbox.Limits(wall_s=1.5))
    assert done.timed_out and not done.starved and faults == []
    assert done.cpu_wait_s is not None and done.cpu_wait_s < 0.25 * done.duration_s
    status, msg = checks._verdict({"done": done})
    assert status == "failed" and "time limit was reached" in msg


def test_a_run_that_ends_by_itself_has_no_account():
    done = sandbox.run([PY, "-c", "print(6 * 7)"], limits=sandbox.Limits(wall_s=30))
    assert done.ok and done.cpu_run_s is None and not done.starved


@needs_account
def test_a_regrade_that_met_a_starved_run_is_not_scored_whatever_it_caught():
    """An item's own code swallows every exception and scores the run a failure; items.grade voids it."""
    def regrade(source, seed, time_limit_s, cmd=SPIN):
        started = time.monotonic()
        try:
            done = sandbox.run(cmd, limits=sandbox.Limits(wall_s=1.5))
            ok = done.ok
        except Exception:   # noqa: BLE001 - as a task's "a learner's function can fail in many ways"
            ok = False
        item = items.get("test-starved/spin")
        return items.report(item, [CheckResult("answer", "compare", "passed" if ok else "failed", 0.0, 1.0,
                                               "timed out")], "cpu", seed, started)

    items.register(items.Item("test-starved/spin", "task", "test-starved", "spin", 1.0, "spin", "f", regrade))
    items.register(items.Item("test-starved/sleep", "task", "test-starved", "sleep", 1.0, "sleep", "f",
                              lambda s, seed, t: regrade(s, seed, t, SLEEP)))
    try:
        with busy_cpu():
            starved = items.grade("test-starved/spin", "x", seed=1)
            hung = items.grade("test-starved/sleep", "x", seed=1)
    finally:
        items._REGISTERED.pop("test-starved/spin", None)
        items._REGISTERED.pop("test-starved/sleep", None)
    assert starved.status == "error" and "too busy" in starved.error and starved.earned == 0.0
    assert "not scored" in starved.checks[0].message
    assert hung.status == "graded" and hung.checks[0].status == "failed"     # the control: a real hang is scored


def _macro_heavy(n: int = 400_000) -> str:
    return "#include <hip/hip_runtime.h>\n" + "".join(f"constexpr int K{i} = 32;\n" for i in range(n // 24))


@needs_account
@pytest.mark.parametrize("program, starved", [(SPIN, True), (SLEEP, False)], ids=["spinning", "asleep"])
def test_the_static_analysis_time_out_asks_whether_the_machine_starved_it(program, starved):
    """The grader's static analysis runs in a forked child with a time limit; at the time-out it asks the same
    question of that child (static._starved_or_not). A child that was ready to run but starved is the machine's
    fault (MachineBusy, not scored); a child asleep under the same load is the file's ("make the file smaller")."""
    from rocmlab.grader import static

    with busy_cpu():
        child = subprocess.Popen(program)          # this thread is pinned: so is the child
        try:
            time.sleep(1.5)
            if starved:
                with pytest.raises(sandbox.MachineBusy, match="too busy"):
                    static._starved_or_not(child.pid, 1.5, "the static analysis")
            else:
                static._starved_or_not(child.pid, 1.5, "the static analysis")    # returns: the file's time-out
        finally:
            child.kill()
            child.wait()


@pytest.fixture
def scanner_only(tmp_path, monkeypatch):
    """No AMD compiler for this test (the analysis is the forked scanner alone, not clang's preprocessor first);
    the toolchain cache is emptied again after it."""
    from rocmlab.hip.compile import forget_toolchains

    monkeypatch.setenv("ROCMLAB_ROCM_ROOT", str(tmp_path / "no-rocm-root"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-opt-rocm"))
    forget_toolchains()
    yield
    monkeypatch.undo()
    forget_toolchains()


def test_a_static_analysis_that_runs_out_of_time_on_a_free_cpu_is_the_files(scanner_only):
    """The analysis end to end: a file it cannot finish in the limit, on a CPU it has, is refused as too large."""
    from rocmlab import sandbox
    from rocmlab.grader import static

    busy = []
    for _ in range(3):        # a loaded suite can starve even 0.2 s: then the verdict is the machine's, rightly
        try:
            static.analyze(_macro_heavy(), time_limit_s=0.2)
        except sandbox.MachineBusy as exc:
            busy.append(str(exc))
            continue
        except static.AnalysisError as exc:
            assert "did not finish" in str(exc), exc
            return
        pytest.fail("a file the analysis cannot finish in 0.2 s was accepted")
    pytest.skip(f"the machine starved all three tries (each rightly not the file's fault): {busy[-1]}")
