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
