"""Lab 11's faults: the graded "name the line" question (a wrong line fails), and the ASan build for
gfx942:xnack+ compiles offline."""

import pytest

from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.hip.toolchain import discover_offline


@pytest.fixture(autouse=True)
def _own_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "progress_file", lambda: tmp_path / "progress.json")


def test_the_faulting_lines_are_found_in_the_sources():
    src = lab11.fault_source("oob_write").splitlines()
    assert "i <= n" in src[lab11.faulting_line("oob_write") - 1]
    assert "hipLaunchKernelGGL(scale" in lab11.fault_source("use_after_free").splitlines()[lab11.faulting_line("use_after_free") - 1]


def test_naming_the_line_right_passes_and_wrong_fails_and_is_recorded(tmp_path):
    right = lab11.faulting_line("oob_write")
    ok, msg = lab11.check_faulting_line("oob_write", right + 1)
    assert not ok and "is not it" in msg
    ok, msg = lab11.check_faulting_line("oob_write", "nine")
    assert not ok and "line number" in msg
    ok, _ = lab11.check_faulting_line("oob_write", str(right))
    assert ok
    rec = progress.load()[lab11.LAB]["oob_write-line"]
    assert rec["earned"] == 1.0 and rec["possible"] == progress.LAB_TASKS[lab11.LAB]["oob_write-line"]


@pytest.mark.skipif(discover_offline() is None or "gfx942" not in discover_offline().targets,
                    reason="no offline HIP toolchain with gfx942 (run ./go setup)")
def test_the_asan_build_for_gfx942_xnack_plus_compiles_offline():
    res = lab11.asan_build("oob_write")
    assert res.ok, res.summary()
    assert "--offload-arch=gfx942:xnack+" in res.command and "-fsanitize=address" in res.command
    assert "-shared-libsan" in res.command


@pytest.mark.skipif(discover_offline() is None or "gfx942" not in discover_offline().targets,
                    reason="no offline HIP toolchain with gfx942 (run ./go setup)")
def test_without_xnack_plus_the_gpu_code_is_not_instrumented():
    plain, xnack = lab11.asan_device_code("gfx942"), lab11.asan_device_code("gfx942:xnack+")
    assert plain["ok"] and "ignoring '-fsanitize=address'" in plain["ignored"] and not plain["instrumented"]
    assert xnack["ok"] and not xnack["ignored"] and xnack["instrumented"]
