"""rocmlab.hip.faults: the fault messages are recognised (and clean output is not), the faulting
program builds for AMD and NVIDIA, and on a CPU the fault is reported as not run, with the reason."""

from __future__ import annotations

import shutil

import pytest

from rocmlab.hip import build, faults
from rocmlab.machine.detect import current

ROCM_FAULT = """launching a kernel that writes 1 GiB past its 1 KiB buffer
Memory access fault by GPU node-2 (Agent handle: 0x5591e3c0b2a0) on address 0x7f3a00000000. Reason: Page not present or supervisor privilege.
"""
CUDA_FAULT = "launch: no error; synchronize: an illegal memory access was encountered\n"


def test_rocm_fault_line_is_recognised_with_its_gpu_node():
    d = faults.classify(ROCM_FAULT)
    assert d.recognised and d.runtime.startswith("ROCm") and d.gpu_node == 2
    assert "Memory access fault" in d.line and "mapping" in d.summary()


def test_cuda_fault_is_recognised():
    d = faults.classify(CUDA_FAULT)
    assert d.recognised and d.runtime == "CUDA / HIP" and d.gpu_node is None


@pytest.mark.parametrize("text", ["launch: no error; synchronize: no error\n", "", "Memory access was fine\n"])
def test_clean_output_is_not_a_fault(text):
    assert not faults.classify(text).recognised


def test_every_debug_variable_the_section_names_is_described():
    for name in ("AMD_LOG_LEVEL", "AMD_SERIALIZE_KERNEL", "HIP_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING"):
        assert faults.DEBUG_ENV[name]
    assert "rocgdb" in faults.TOOLS and "memcheck" in faults.TOOLS["compute-sanitizer (NVIDIA)"]


def test_the_faulting_program_compiles_for_amd():
    r = build.compile(faults.OOB_SOURCE, lang="hip", target="gfx942")
    if not r.ok and r.toolchain is None:
        pytest.skip("no HIP compiler here")
    assert r.ok, r.summary()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_faulting_program_compiles_for_nvidia():
    r = build.compile(faults.OOB_SOURCE, lang="hip", target="sm_90")
    assert r.ok, r.summary()


def test_on_a_cpu_the_fault_is_not_run_and_says_why():
    if current().backend != "cpu":
        pytest.skip("a GPU is here: tests/gpu/run_course_a.py provokes the real fault")
    r = faults.provoke()
    assert not r.ran and not r.faulted and "no GPU" in r.why_not
    assert "not run" in r.summary() and r.env["AMD_SERIALIZE_KERNEL"] == "3"
