"""Rank functions for :func:`rocmlab.comm.launch.launch` (they must live in a module to reach new processes).

Every worker makes every rank's input itself from one seed (rank r uses seed + r), so rank 0 can
also compute the exact reference and the error bound for all ranks.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

from rocmlab.comm import allreduce as AR
from rocmlab.comm import torch_codec as C
from rocmlab.profile.timing import time_once


def _inputs(seed: int, world: int, numel: int, kind: str, dtype, device="cpu") -> list[torch.Tensor]:
    return [C.activations(kind, numel, seed=seed + r, dtype=dtype).to(device) for r in range(world)]


def _device(backend_is_nccl: bool):
    return torch.device("cuda", torch.cuda.current_device()) if backend_is_nccl else torch.device("cpu")


def accuracy(rank: int, world: int, seed: int, numel: int, codecs=C.CODECS,
             dtype: str = "float16", kind: str = "normal", impl: str = "auto", cast_bf16_to_fp16: bool = False) -> dict:
    """Two-shot per codec against the exact sum: rank 0 returns errors, bounds and whether every
    rank ended with the same bits."""
    dt = getattr(torch, dtype)
    dev = _device(dist.get_backend() == "nccl")
    xs = _inputs(seed, world, numel, kind, dt)
    x = xs[rank].to(dev)
    exact = AR.exact_all_reduce(x).cpu()
    out = {"exact_matches_local_sum": bool(torch.equal(exact, torch.stack([t.double() for t in xs]).sum(0)))}
    for name in codecs:
        y = AR.two_shot_all_reduce(x, name, impl=impl, cast_bf16_to_fp16=cast_bf16_to_fp16).cpu()
        digest = torch.tensor([int(y.view(torch.int16).to(torch.int64).mul(
            torch.arange(1, y.numel() + 1) % 65521).sum() % (2 ** 61))], dtype=torch.int64)
        dl = [torch.zeros_like(digest) for _ in range(world)]
        dist.all_gather(dl, digest)
        if rank == 0:
            bound = AR.two_shot_error_bound(xs, name)
            err = (y.double() - exact).abs().float()
            m = C.error_metrics(exact, y)
            out[name] = dict(max_err=float(err.max()), max_err_over_bound=float((err / bound).max()),
                             within_bound=bool((err <= bound).all()), rel_l2=m.rel_l2,
                             vllm_pass=m.vllm_pass, vllm_violations=m.vllm_violations,
                             ranks_identical=len({int(d) for d in dl}) == 1,
                             output=y if numel <= 1 << 16 else None)
    return out if rank == 0 else {}


def bad_inputs(rank: int, world: int) -> dict:
    """The messages each kind of bad input gives on a live process group (no collective is entered)."""
    msgs = {}
    cases = {"float32": torch.randn(64 * world), "int64": torch.arange(64 * world),
             "size": torch.randn(64 * world + 3).half()}
    if world not in AR.SUPPORTED_WORLD_SIZES:
        cases["world"] = torch.randn(64 * world).half()
    for name, x in cases.items():
        try:
            AR.two_shot_all_reduce(x, "q4")
            msgs[name] = None
        except C.CodecError as exc:
            msgs[name] = str(exc)
    return msgs


def die_mid_collective(rank: int, world: int, die_rank: int = 1, numel: int = 4096) -> None:
    x = torch.randn(numel).half()
    AR.two_shot_all_reduce(x, "q4", _die_after_scatter=(rank == die_rank))
    dist.barrier()


def raise_on(rank: int, world: int, bad_rank: int = 0) -> None:
    if rank == bad_rank:
        raise ValueError(f"a learner's bug on rank {rank}")
    dist.barrier()


def hang(rank: int, world: int) -> None:
    """Rank 0 waits for a message nobody sends: only the launcher's deadline ends it."""
    if rank == 0:
        t = torch.zeros(1)
        dist.recv(t, src=1)
    else:
        time.sleep(3600)


def latency(rank: int, world: int, sizes_bytes, codecs=("fp", "q8", "q6", "q4"), reps: int = 5,
            warmup: int = 1, seed: int = 0, dtype: str = "float16", check: bool = True) -> dict:
    """Median latency (s) of the two-shot per codec and of torch.distributed.all_reduce, per size.

    On GPUs (NCCL/RCCL) times with CUDA events; on the CPU (gloo) with a barrier and perf_counter.
    Each size's data is fresh; with ``check`` rank 0 also reports the max error against the exact sum."""
    dt = getattr(torch, dtype)
    gpu = dist.get_backend() == "nccl"
    dev = _device(gpu)
    rows = []
    for size in sizes_bytes:
        n = max(world * 32, (size // 2) // (world * 32) * (world * 32))
        g = torch.Generator(device=dev).manual_seed(seed + 1000 * rank + size % 997)
        x = torch.randn(n, generator=g, device=dev, dtype=torch.float32).to(dt)
        exact = AR.exact_all_reduce(x) if check else None
        for name in ("native",) + tuple(codecs):
            if name == "native":
                fn = lambda x=x: AR.native_all_reduce(x)  # noqa: E731
            else:
                fn = lambda x=x, name=name: AR.two_shot_all_reduce(x, name)  # noqa: E731
            for _ in range(warmup):
                y = fn()
            times = []
            for _ in range(reps):
                dist.barrier()
                t, y = time_once(fn, events=gpu)
                times.append(t)
            tt = torch.tensor(sorted(times)[len(times) // 2], dtype=torch.float64, device=dev)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)     # the slowest rank's median
            row = dict(size_bytes=n * 2, codec=name, median_s=float(tt))
            if check:
                e = (y.double() - exact).abs()
                row["max_err"] = float(e.max())
                row["rel_l2"] = float((y.double() - exact).norm() / exact.norm())
            rows.append(row)
    return {"rows": rows, "world": world, "backend": dist.get_backend()} if rank == 0 else {}
