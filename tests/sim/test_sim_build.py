"""The simulator through the ways a learner reaches it: ``build.run`` and ``%%hip`` on a machine without a GPU
run the cell on the CPU simulator and say so; ``--simulate`` asks for it; ``%hip_run`` follows."""

from __future__ import annotations

import random

import pytest

from rocmlab.course import magics
from rocmlab.hip import build, simulate
from rocmlab.machine.detect import current

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

CELL = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void lanes(int* out) { out[threadIdx.x] = __popcll(__ballot(threadIdx.x % 3 == 0)) * 100 + warpSize; }
int main() {
  int* d; hipMalloc(&d, 256 * sizeof(int));
  lanes<<<1, 100>>>(d);                     // a partial second wavefront of 36 lanes
  int h[256]; hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost);
  printf("TAG wave0 %d wave1 %d\\n", h[0], h[99]);
  return 0;
}
"""


def test_hip_cell_runs_on_the_simulator_without_a_gpu_and_says_so():
    if current().backend != "cpu":
        pytest.skip("automatic only where no GPU is")
    tag = f"t{random.randrange(10**6)}"
    shown = []
    res = magics.run_cell("hip", f"--name {tag}", CELL.replace("TAG", tag), None, shown.append)
    text = "\n".join(shown)
    assert res is not None and res.ok and res.toolchain_kind == "offline", text
    assert "[cpu: wave64 simulator] running on the CPU simulator" in text and "no AMD GPU here" in text, text
    # 22 of lanes 0-63 and 12 of lanes 64-99 are multiples of 3; warpSize is 64 at run time
    assert f"{tag} wave0 2264 wave1 1264" in text, text
    shown.clear()
    done = magics.hip_run(tag, display=shown.append)
    assert done is not None and done.ok and f"{tag} wave0 2264" in done.stdout
    assert done.stderr.startswith("[cpu: wave64 simulator]")


def test_simulate_option_and_its_control():
    tag = f"s{random.randrange(10**6)}"
    shown = []
    magics.run_cell("hip", "--simulate", CELL.replace("TAG", tag), None, shown.append)
    assert "asked for with --simulate" in "\n".join(shown) and f"{tag} wave0 2264" in "\n".join(shown), shown
    shown.clear()
    magics.run_cell("hip", "--no-run", CELL.replace("TAG", tag), None, shown.append)
    assert "wave0" not in "\n".join(shown) and "simulator" not in "\n".join(shown)


def test_simulator_build_is_labelled_and_cached():
    src = CELL.replace("TAG", f"c{random.randrange(10**6)}")
    a = build.compile(src, toolchain=simulate.KIND)
    b = build.compile(src, toolchain=simulate.KIND)
    assert a.ok and b.cached and "(cpu: wave64 simulator)" in a.toolchain and a.can_run
    assert not build.compile(src.replace("__ballot", "__builtin_amdgcn_ballot_w64"), toolchain=simulate.KIND).ok


def test_iostream_and_plain_asm_in_learner_code():
    """A program that prints with <iostream> (whose libstdc++ header holds a file-scope __asm) runs on the
    simulator; inline assembly written in the learner's own code is still refused, with the reason."""
    tag = f"i{random.randrange(10**6)}"
    io = CELL.replace("#include <cstdio>", "#include <iostream>").replace(
        'printf("TAG wave0 %d wave1 %d\\n", h[0], h[99]);', 'std::cout << "TAG wave0 " << h[0] << std::endl;')
    assert "std::cout" in io
    shown = []
    magics.run_cell("hip", "--simulate", io.replace("TAG", tag), None, shown.append)
    assert f"{tag} wave0 2264" in "\n".join(shown), shown
    asm = io.replace("int main() {", "__device__ void nop() { asm volatile(\"s_nop 0\"); }\nint main() {", 1)
    shown.clear()
    magics.run_cell("hip", "--simulate", asm.replace("TAG", tag), None, shown.append)
    text = "\n".join(shown)
    assert "inline GPU assembly" in text and f"{tag} wave0" not in text, text
