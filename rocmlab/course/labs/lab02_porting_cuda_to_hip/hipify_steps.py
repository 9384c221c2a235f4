"""Lab 02's last section: what ROCm 7 says about a mechanically hipified kernel.

:func:`hipified_kernel_steps` hipifies :data:`HIPIFY_ME` (a CUDA warp reduction) and fixes it in two steps,
compiling each version with the real ROCm compiler: the 32-bit mask is a compile error on ROCm 7, and the
32-lane loop compiles but sums half wavefronts (the ISA shows 5 shuffle steps, not 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmlab.hip import hipcuda
from rocmlab.hip.inspector import inspect
from rocmlab.settings import DEFAULT_TARGET, WAVEFRONT_SIZE

HIPIFY_ME = r"""
#include <cuda_runtime.h>
// A warp reduction as CUDA code writes it: 32 lanes, a 32-bit full mask.
__global__ void warp_sum(const float* x, float* out) {
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync(0xffffffff, v, off);
  if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}
""".lstrip()


@dataclass(frozen=True)
class PortStep:
    """One version of the ported kernel and what the ROCm compiler makes of it."""

    title: str
    source: str
    ok: bool
    line: int | None
    message: str
    shuffle_steps: int | None      # cross-lane steps in the ISA (None: it did not compile)
    lanes: int                     # lanes of the target's wavefront

    def __str__(self) -> str:
        if not self.ok:
            return f"{self.title}: does not compile: line {self.line}: {self.message}"
        need = self.lanes.bit_length() - 1
        covered = 1 << (self.shuffle_steps or 0)
        verdict = f"one sum per {self.lanes}-lane wavefront" if self.shuffle_steps == need else (
            f"each sum covers {covered} lanes, as on NVIDIA: a {self.lanes}-lane wavefront needs {need} steps, and "
            f"the code only stays right while every 32 in it agrees")
        return f"{self.title}: compiles; {self.shuffle_steps} shuffle steps in the ISA ({verdict})"


def hipified_kernel_steps(cuda_source: str = HIPIFY_ME, target: str | None = None) -> list[PortStep]:
    """Hipify ``cuda_source`` mechanically, then fix it in two steps, compiling each version for
    ``target`` with the real compiler: the 32-bit mask (a compile error on ROCm 7), then the
    32-lane loop (it compiles, but the ISA shows half-wavefront sums: 5 steps, not 6)."""
    target = target or DEFAULT_TARGET
    lanes = WAVEFRONT_SIZE.get(target, 64)
    hip = hipcuda.hipify(cuda_source).cuda_source
    mask_fixed = hip.replace("0xffffffff,", "0xffffffffffffffffull,")
    loop_fixed = (mask_fixed.replace("int off = 16", "int off = warpSize / 2")
                  .replace("threadIdx.x % 32", "threadIdx.x % warpSize").replace(") / 32]", ") / warpSize]"))
    steps = []
    for title, src in (("1. hipify alone", hip), ("2. a 64-bit mask", mask_fixed), ("3. warpSize, not 32", loop_fixed)):
        r = inspect(src, target)
        errs = [d for d in r.diagnostics if d.severity == "error"]
        n = None
        if r.ok:
            n = r.isa_of("warp_sum").counts.get("shuffle", 0)
        steps.append(PortStep(title, src, r.ok, errs[0].line if errs else None, errs[0].message if errs else "",
                              n, lanes))
    return steps
