"""Lab 01's stack table names the compiler that compiles HIP here, as the compiler driver chooses it (on a CPU
machine the offline hipcc 7.2, never an nvcc that happens to be on PATH). Control: without the driver's answer the
table lists the compilers on PATH, as before."""

from __future__ import annotations

import pytest

from rocmlab.course.labs.lab01_hip_programming_model import lab as lab01
from rocmlab.hip import compile as driver
from rocmlab.machine import stack
from rocmlab.machine.detect import current


def _compiler_row(rows) -> str:
    return next(r[2] for r in rows if r[0] == "Compiler")


def test_the_compiler_row_is_the_one_that_compiles_hip_here():
    plat = current()
    if plat.backend == "cuda":
        pytest.skip("an NVIDIA machine: HIP cells go through nvcc there (the row says so)")
    target = driver.gpu_target("rocm", plat)
    tc, why = driver.choose("hip", target, plat)
    row = _compiler_row(lab01.stack_rows(plat))
    if tc is None:
        assert row == why
        return
    assert row == f"{tc.label} for {target}" and "nvcc" not in row
    if plat.backend == "cpu":
        assert "offline ROCm 7.2" in row and row.startswith("hipcc 7.2")


def test_control_without_the_drivers_answer_the_row_lists_path_compilers():
    plat = current()
    row = _compiler_row(stack.layers(plat))
    on_path = [t for t in ("hipcc", "amdclang++", "clang++-19", "clang++-15", "nvcc") if plat.tools.get(t)]
    assert row == (", ".join(on_path) or "no compiler found")
    assert _compiler_row(stack.layers(plat, compiler="a compiler")) == "a compiler"
