"""Lab 01's first run from a fresh home: the CPU simulator's runtime is built once, ahead, in the background
(rocmlab.course.labs.lab01_hip_programming_model.lab.prepare_simulator), and a HIP cell that needs it meanwhile waits for that build instead of
starting a second one. The compiler is replaced by a slow fake here: the test is about who builds and when."""

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from rocmlab.course.labs.lab01_hip_programming_model import lab as lab01
from rocmlab.hip import compile as hip_compile, simulate


@pytest.fixture
def fake_build(monkeypatch, tmp_path):
    """A fresh course cache, a simulator toolchain, and a compile_file that takes 0.4 s and counts its calls."""
    monkeypatch.setenv("ROCMLAB_HOME", str(tmp_path / "home"))
    tc = simulate.discover()
    if tc is None:
        pytest.skip("no offline ROCm root here (the simulator's toolchain): ./go setup")
    calls = []

    class Done:
        ok, log = True, ""

    def slow_compile(tc_, source, obj, **kw):
        calls.append((threading.current_thread().name, Path(obj)))
        time.sleep(0.4)
        Path(obj).parent.mkdir(parents=True, exist_ok=True)
        Path(obj).write_bytes(b"\x7fELF fake runtime")
        return Done()

    monkeypatch.setattr(hip_compile, "compile_file", slow_compile)
    monkeypatch.setattr(lab01.os.path, "exists", lambda p, real=lab01.os.path.exists:
                        False if p in ("/dev/kfd", "/dev/nvidia0") else real(p))
    return tc, calls


def test_the_runtime_is_built_once_ahead_and_a_cell_waits_for_it(fake_build):
    tc, calls = fake_build
    worker = lab01.prepare_simulator()
    assert worker is not None and worker.is_alive()
    time.sleep(0.1)                                   # the background build is under way
    t0 = time.monotonic()
    obj = hip_compile.simulator_runtime(tc)           # what the first HIP cell asks for
    waited = time.monotonic() - t0
    worker.join(timeout=10)
    assert Path(obj).is_file() and len(calls) == 1, calls          # one build, not two
    assert calls[0][0] == "rocmlab-simulator-runtime"               # and it was the background one
    assert 0.1 < waited < 5, waited                                  # the cell waited for it
    # nothing left to build: a second lab start builds nothing
    again = lab01.prepare_simulator()
    again.join(timeout=10)
    assert not again.is_alive() and len(calls) == 1, calls


def test_control_another_runtime_version_is_built_again(fake_build):
    tc, calls = fake_build
    lab01.prepare_simulator().join(timeout=10)
    other = dataclasses.replace(tc, version=tc.version + "-changed")
    hip_compile.simulator_runtime(other)
    assert len(calls) == 2 and calls[0][1] != calls[1][1], calls


def test_a_machine_with_a_gpu_device_builds_nothing_ahead(fake_build, monkeypatch):
    tc, calls = fake_build
    monkeypatch.setattr(lab01.os.path, "exists", lambda p: p == "/dev/kfd")
    assert lab01.prepare_simulator() is None and calls == []
