"""rocmlab.hip.faults: the fault messages are recognised (and clean output is not), the faulting
program builds for AMD and NVIDIA, and on a CPU the fault runs on the simulator (or, asked not to, says why not)."""

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


def test_on_a_cpu_the_fault_runs_on_the_simulator_and_says_so():
    """Issue 44: no 'the binary None is gone (cache cleared?)'. On a CPU no program is linked, so the kernel runs
    on the simulator, which names the bad access; the control, simulate=False, runs nothing and says why."""
    if current().backend != "cpu":
        pytest.skip("a GPU is here: tests/gpu/run_course_a.py provokes the real fault")
    r = faults.provoke()
    assert r.ran and r.faulted and r.diagnosis.recognised, r.output[-800:]
    assert "simulator" in r.backend and "simulator" in r.diagnosis.runtime and r.env["AMD_SERIALIZE_KERNEL"] == "3"
    text = r.summary() + r.output
    assert "is gone" not in text and "cache cleared" not in text and "on the host" not in text
    off = faults.provoke(simulate=False)
    assert not off.ran and not off.faulted and "no program was linked" in off.why_not and "no GPU" in off.why_not
    assert "is gone" not in off.why_not and "not run" in off.summary()


def test_a_simulator_line_without_a_bad_access_is_not_a_fault():
    assert not faults.classify("[cpu: wave64 simulator] ran on the CPU simulator, wavefronts of 64\n").recognised
    assert faults.classify("[cpu: wave64 simulator] error: address 0x1 is in no hipMalloc buffer: far out of "
                           "bounds\n").recognised
