"""Lab 08's Triton kernel: the XCD remap of the program id, as MI300X GEMM kernels do it. Import after
:func:`rocmlab.course.puzzles.setup` (Triton's interpreter must be chosen before triton is imported)."""


from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
import torch  # noqa: E402 - after the guard
import triton  # noqa: E402 - after the guard
import triton.language as tl  # noqa: E402 - after the guard

from rocmlab.course.puzzles import device  # noqa: E402 - after the guard


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
    return run_remap(remap_kernel, n, xcds)


# --- two wrong remaps: the graded task (rocmlab.course.labs.lab08_mi300x_package.task) must catch both ---------------

@triton.jit
def remap_identity_kernel(out_ptr, n, XCDS: tl.constexpr):
    """No remap: program p computes tile p, so neighbouring tiles land on eight different XCDs."""
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid)


@triton.jit
def remap_floor_kernel(out_ptr, n, XCDS: tl.constexpr):
    """The remap with ``n // XCDS`` tiles per XCD: right only when n is a multiple of XCDS."""
    pid = tl.program_id(0)
    per = n // XCDS
    tl.store(out_ptr + pid, (pid % XCDS) * per + pid // XCDS)


def run_remap(kernel, n: int, xcds: int = 8) -> list[int]:
    """Run a remap kernel ``kernel[(n,)](out, n, XCDS=xcds)`` and return what each program stored
    (-1 where a program stored nothing)."""
    out = torch.full((n,), -1, dtype=torch.int32, device=device())
    kernel[(n,)](out, n, XCDS=xcds)
    if device() == "cuda":
        torch.cuda.synchronize()
    return out.cpu().tolist()
