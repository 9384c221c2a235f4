"""Lab 08's graded task: write the XCD-aware remap of the program id, in Triton.

An MI300X hands workgroup ``p`` to XCD ``p % 8`` (round-robin). The remap gives program ``p`` a tile
index such that each XCD computes one contiguous range of tiles, so neighbouring tiles (which share A
and B panels) meet in the same L2. The learner writes

    @triton.jit
    def xcd_remap_kernel(tile_ptr, n, XCDS: tl.constexpr):   # store the tile index of program_id(0)

Each grade runs it on fresh grid sizes (one not a multiple of XCDS), on the GPU when there is one and in
Triton's CPU interpreter otherwise, and checks:

- every program stored a tile (``runs``);
- every tile 0..n-1 is computed exactly once (``every-tile-once``);
- the tiles of each XCD, in the order its programs are dispatched, are one contiguous range
  (``contiguous-per-xcd``);
- in the package model (:func:`rocmlab.machine.topology.gemm_l2_traffic`) a GEMM of a fresh shape,
  grouped ordering on top of the remap, makes the XCDs' L2s fetch no more than the reference remap does
  (``l2-model``).

The last two judge a tiling: a remap that skips or repeats tiles fails them without being judged (a skipped
tile fetches nothing, so the model alone would reward a remap such as ``n // XCDS`` tiles per XCD). A
handed-in kernel (:class:`rocmlab.grader.pyanswer.Answer`) runs in the sandbox, in Triton's CPU interpreter.

No check needs an MI300X: the model is the MI300X's, and an H200 or a CPU runs the kernel all the same.
Call :func:`rocmlab.course.puzzles.setup` before importing triton (a CPU: the interpreter).
"""

from __future__ import annotations

import time
from collections import Counter

import torch

from rocmlab.course import tasks as T
from rocmlab.course.puzzles import device
from rocmlab.machine import topology as topo

LAB, TASK = "08-mi300x-package", "xcd-remap"
TITLE = "Lab 08 task: the XCD-aware remap of the program id"
L2_TOL = 0.02        # the learner's L2 fill may exceed the reference remap's by 2 %


def _ri(g, lo, hi) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


def draw(seed: int, xcds: int = 8) -> dict:
    """Fresh sizes: a grid not a multiple of ``xcds``, one that is, and a GEMM (256 x 256 tiles) of
    more than one wave of programs."""
    g = torch.Generator().manual_seed(seed)
    odd = _ri(g, 9, 400)
    if odd % xcds == 0:
        odd += _ri(g, 1, xcds - 1)
    even = xcds * _ri(g, 8, 64)
    # a GEMM where the remap matters in the package model (for some shapes no remap does as well: those would
    # grade nothing), drawn again until the XCD remap saves at least 10 % of the L2 fill
    pkg = topo.package()
    for _ in range(50):
        M, N = 256 * _ri(g, 8, 32), 256 * _ri(g, 8, 32)
        plain = topo.gemm_l2_traffic(M, N, 4096, mapping="grouped", pkg=pkg).l2_fill_bytes
        if plain > 1.1 * topo.gemm_l2_traffic(M, N, 4096, mapping="xcd-remap+grouped", pkg=pkg).l2_fill_bytes:
            break
    return dict(grids=[odd, even], gemm=(M, N, 4096))


def _placement(tiles: list[int], n: int) -> str:
    c = Counter(tiles)
    twice = sorted(t for t, k in c.items() if k > 1 and 0 <= t < n)
    outside = sorted(t for t in c if not 0 <= t < n)
    missing = sorted(set(range(n)) - set(c))
    parts = []
    if twice:
        parts.append(f"tiles {twice[:4]}{'...' if len(twice) > 4 else ''} computed more than once")
    if outside:
        parts.append(f"tiles {outside[:4]} are outside 0..{n - 1}")
    if missing:
        parts.append(f"tiles {missing[:4]}{'...' if len(missing) > 4 else ''} by no program")
    return "; ".join(parts)


def _not_contiguous(tiles: list[int], xcds: int) -> str:
    for x in range(xcds):
        mine = tiles[x::xcds]
        for j in range(1, len(mine)):
            if mine[j] != mine[j - 1] + 1:
                return (f"XCD {x}'s programs {x + xcds * (j - 1)} and {x + xcds * j} compute tiles {mine[j - 1]} and "
                        f"{mine[j]}: not one contiguous range")
    return ""


def _run_all(kernel, sizes: list[int], xcds: int) -> dict[int, list[int]]:
    """{n: the tile each of n programs stored (-1: none)}: here, or for a handed-in
    :class:`~rocmlab.grader.pyanswer.Answer` in one sandbox run (Triton's CPU interpreter there)."""
    from rocmlab.course.labs.lab08_mi300x_package.kernels import run_remap   # imports triton: after puzzles.setup()
    from rocmlab.grader.pyanswer import Answer, AnswerError

    if not isinstance(kernel, Answer):
        from rocmlab.course.puzzles import not_a_triton_kernel

        why = not_a_triton_kernel(kernel)
        if why:
            raise TypeError(why)
        return {n: run_remap(kernel, n, xcds) for n in sizes}
    outs = [torch.full((n,), -1, dtype=torch.int32) for n in sizes]
    res = kernel.tensor_calls([{"op": "launch", "args": [o, n], "grid": [n], "meta": {"XCDS": xcds}}
                               for o, n in zip(outs, sizes, strict=True)])
    runs = {}
    for n, (value, err) in zip(sizes, res, strict=True):
        if err:
            raise AnswerError(err)
        back = value[0] if isinstance(value, list) and value else None
        if not isinstance(back, torch.Tensor) or back.dtype != torch.int32 or tuple(back.shape) != (n,):
            raise AnswerError("the kernel's output did not come back as it was given")
        runs[n] = back.tolist()
    return runs


def grade(kernel, seed: int | None = None, xcds: int = 8, record: bool = True):
    """Grade a Triton remap kernel on fresh sizes (see the module's docstring)."""
    started = time.monotonic()
    seed = T.draw_seed(seed)
    d = draw(seed, xcds)
    M, N, K = d["gemm"]
    gm, gn = -(-M // 256), -(-N // 256)
    sizes = d["grids"] + [gm * gn]
    from rocmlab.grader.pyanswer import Answer

    sandboxed = isinstance(kernel, Answer)
    where = "on the GPU" if device() == "cuda" and not sandboxed else "in Triton's CPU interpreter"
    backend = "gpu" if device() == "cuda" and not sandboxed else "cpu (Triton interpreter)"
    runs = {}
    try:
        runs = _run_all(kernel, sizes, xcds)
    except Exception as exc:   # noqa: BLE001 - a learner's kernel can fail in many ways: report it
        msg = (str(exc).strip().splitlines() or [""])[-1]
        checks = [T.not_run("runs", "run", 1, f"the kernel did not run {where}: {type(exc).__name__}: {msg}",
                            "the signature is xcd_remap_kernel(tile_ptr, n, XCDS: tl.constexpr); "
                            "tl.store(tile_ptr + pid, tile)")]
        checks += [T.not_run(c, "compare", 3, "the kernel did not run") for c in
                   ("every-tile-once", "contiguous-per-xcd", "l2-model")]
        return T.finish(LAB, TASK, TITLE, checks, backend, device(), seed, started, record)
    silent = {n: sum(1 for t in v if t == -1) for n, v in runs.items()}
    checks = [T.verdict(not any(silent.values()), "runs", "run", 1,
                        f"ran {where} for grids of {sizes} programs; every program stored a tile",
                        "; ".join(f"n = {n}: {k} programs stored nothing" for n, k in silent.items() if k),
                        "store once per program: tl.store(tile_ptr + tl.program_id(0), tile)")]
    bad = {n: _placement(v, n) for n, v in runs.items()}
    bad = {n: b for n, b in bad.items() if b}
    checks.append(T.verdict(not bad, "every-tile-once", "compare", 3,
                            f"every tile computed exactly once for n = {sizes}",
                            "; ".join(f"n = {n}: {b}" for n, b in bad.items()),
                            "when n is not a multiple of XCDS, the first n % XCDS XCDs get cdiv(n, XCDS) "
                            "tiles and the others one fewer"))
    if bad:      # a remap that skips or repeats tiles is not a tiling: the model checks have nothing to judge
        why = "not checked: the remap must first compute every tile exactly once (see every-tile-once)"
        checks += [T.failed("contiguous-per-xcd", "compare", 3, why, "fix the tiling first"),
                   T.failed("l2-model", "compare", 3, why, "a skipped tile fetches nothing, so the model cannot "
                            "judge a remap that skips tiles")]
        return T.finish(LAB, TASK, TITLE, checks, backend, device(), seed, started, record)
    split = {n: _not_contiguous(v, xcds) for n, v in runs.items()}
    split = {n: s for n, s in split.items() if s}
    checks.append(T.verdict(not split, "contiguous-per-xcd", "compare", 3,
                            f"each of the {xcds} XCDs computes one contiguous range of tiles",
                            "; ".join(f"n = {n}: {s}" for n, s in list(split.items())[:2]),
                            "program p runs on XCD p % XCDS as its (p // XCDS)-th program there: give it "
                            "tile start(XCD) + p // XCDS"))
    pkg = topo.package()
    mine = topo.gemm_l2_traffic(M, N, K, mapping="grouped", pkg=pkg, remap=runs[gm * gn]) if not bad.get(gm * gn) \
        else None
    ref = topo.gemm_l2_traffic(M, N, K, mapping="xcd-remap+grouped", pkg=pkg)
    plain = topo.gemm_l2_traffic(M, N, K, mapping="grouped", pkg=pkg)
    shape = f"{M} x {N} x {K} GEMM ({gm * gn} tiles of 256 x 256, grouped ordering)"
    if mine is None:
        checks.append(T.failed("l2-model", "compare", 3, f"{shape}: not modelled, since tiles are computed twice "
                               "or never"))
    else:
        gb = 1e9
        checks.append(T.verdict(mine.l2_fill_bytes <= ref.l2_fill_bytes * (1 + L2_TOL), "l2-model", "compare", 3,
                                f"{shape}: the L2s fetch {mine.l2_fill_bytes / gb:.2f} GB with your remap, "
                                f"{plain.l2_fill_bytes / gb:.2f} GB without one  [MI300X package model]",
                                f"{shape}: the L2s fetch {mine.l2_fill_bytes / gb:.2f} GB with your remap, but "
                                f"{ref.l2_fill_bytes / gb:.2f} GB with the XCD remap  [MI300X package model]",
                                "contiguous tiles per XCD keep each XCD's panels in its own L2"))
    return T.finish(LAB, TASK, TITLE, checks, backend, device(), seed, started, record)
