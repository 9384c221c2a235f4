"""Two-shot quantized all-reduce (FP, Q8, Q6, Q4) against torch.distributed.all_reduce, per size.

    python benchmarks/allreduce_sweep.py --world 2            # NCCL/RCCL, one GPU per rank
    python benchmarks/allreduce_sweep.py --world 4 --out benchmarks/results/sweep-4gpu
    python benchmarks/allreduce_sweep.py --backend gloo --world 2 --sizes-kb 32,256   # CPU smoke run

Sizes default to 32 KB .. 256 MB of float16 (powers of 4). Each rank draws fresh random data per
size; latency is the median over --reps of the slowest rank's CUDA-event time (barrier before each
run); accuracy is the max and relative L2 error against the exact float64 sum. The ratio printed
is torch.distributed.all_reduce's median over each codec's (above 1: the codec is faster).

NVLink multicast stays off in every rank (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1), as the lent multi-GPU machines require. World sizes 2, 4 or 8.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab.comm import launch as L  # noqa: E402

os.environ.update(L.SAFE_ENV)          # before anything can start NCCL in this process

DEFAULT_SIZES_KB = [32 * 4 ** i for i in range(0, 7)] + [256 * 1024]   # 32 KB .. 128 MB, 256 MB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, default=2, choices=(2, 4, 8))
    ap.add_argument("--backend", default=None, help="nccl (default with GPUs) or gloo")
    ap.add_argument("--sizes-kb", default=",".join(map(str, DEFAULT_SIZES_KB)))
    ap.add_argument("--codecs", default="fp,q8,q6,q4")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=540)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import torch

    from rocmlab.comm import workers
    from rocmlab.machine.detect import current

    plat = current()
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl" and torch.cuda.device_count() < args.world:
        print(f"[{plat.label}] {args.world} ranks need {args.world} GPUs, {torch.cuda.device_count()} here: "
              "nothing run (use --backend gloo for a CPU smoke run)")
        return 2
    sizes = [int(s) * 1024 for s in args.sizes_kb.split(",") if s]
    codecs = tuple(c for c in args.codecs.split(",") if c)
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"# allreduce_sweep [{plat.label}] {args.world} {backend} ranks, seed {seed}, "
          f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}", flush=True)
    t0 = time.time()
    job = L.launch(workers.latency, args.world, sizes, codecs, reps=args.reps, warmup=args.warmup, seed=seed,
                   backend=backend, timeout_s=args.timeout)
    res = job.result()[0]
    rows = res["rows"]
    print(f"ran in {time.time() - t0:.1f} s\n")
    native = {r["size_bytes"]: r["median_s"] for r in rows if r["codec"] == "native"}
    print(f"{'size':>10} {'all_reduce us':>13} | " + " | ".join(f"{c:>4} us  x  relL2" for c in codecs))
    for size in sorted(native):
        by = {r["codec"]: r for r in rows if r["size_bytes"] == size}
        print(f"{size / 1024:>8.0f}KB {native[size] * 1e6:>13.1f} | " + " | ".join(
            f"{by[c]['median_s'] * 1e6:7.1f} {native[size] / by[c]['median_s']:4.2f} {by[c].get('rel_l2', 0):.4f}"
            for c in codecs))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = dict(label=plat.label, world=args.world, backend=backend, seed=seed, torch=torch.__version__,
                    env={k: os.environ.get(k) for k in L.SAFE_ENV})
        (out / "allreduce_sweep.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
        with open(out / "allreduce_sweep.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=sorted({k for r in rows for k in r}))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {out}/allreduce_sweep.json and .csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
