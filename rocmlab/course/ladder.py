"""What the speed ladders of Labs 09 and 10 share.

A speed ladder goes from a lab's puzzle solution to a fast kernel one step at a time: one Triton kernel whose
``tl.constexpr`` switches each turn on one step, so that a step's gain is measured by changing one flag. Each lab's
ladder (``rocmlab.course.labs.lab09_attention_on_mi300x.ladder``, ``rocmlab.course.labs.lab10_fp8_gemm.ladder``)
checks every step against a float64 reference, compiles it offline for AMD targets and times it on the GPU here.
"""

from __future__ import annotations

import torch


def descriptor_memory() -> None:
    """Device-side tensor descriptors (a ladder's ``DESC`` step) need scratch memory on NVIDIA GPUs: give Triton
    torch's allocator once."""
    import triton

    if torch.cuda.is_available() and not getattr(descriptor_memory, "done", False):
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        descriptor_memory.done = True


_ZEROED: dict = {}


def zeroed(device, n: int, dtype=torch.int32) -> torch.Tensor:
    """A buffer of at least ``n`` zeros of ``dtype`` on ``device``, one per (device, dtype), kept for the next call:
    the ladders' split steps count in on its elements (tile counters) or add into it (a stream-K workspace) and
    leave it at zero again (the last program of a tile resets what it used). Grown when a launch needs more; two
    such launches must not run at once on two streams of one device."""
    key = (str(device), dtype)
    buf = _ZEROED.get(key)
    if buf is None or buf.numel() < n:
        buf = _ZEROED[key] = torch.zeros(max(n, 4096), dtype=dtype, device=device)
    return buf
