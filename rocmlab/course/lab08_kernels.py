"""Lab 08's Triton kernel: the XCD remap of the program id, as MI300X GEMM kernels do it. Import after
:func:`rocmlab.course.puzzles.setup` (Triton's interpreter must be chosen before triton is imported)."""

import torch
import triton
import triton.language as tl

from rocmlab.course.puzzles import device


@triton.jit
def remap_kernel(out_ptr, n, XCDS: tl.constexpr):
    pid = tl.program_id(0)
    per = tl.cdiv(n, XCDS)
    tall = n % XCDS
    tall = tl.where(tall == 0, XCDS, tall)
    xcd = pid % XCDS
    local = pid // XCDS
    tile = tl.where(xcd < tall, xcd * per + local, tall * per + (xcd - tall) * (per - 1) + local)
    tl.store(out_ptr + pid, tile)


def remapped_tiles(n: int, xcds: int = 8) -> list[int]:
    """The tile each of ``n`` programs computes after the remap, from the kernel itself."""
    out = torch.full((n,), -1, dtype=torch.int32, device=device())
    remap_kernel[(n,)](out, n, XCDS=xcds)
    return out.cpu().tolist()
