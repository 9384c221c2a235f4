"""rocmlab port against plain torch.utils.hipify on the same CUDA code bases (CPU, offline compile).

For each sample code base in tests/data/port/ it prints the fraction of translation units that
compile for gfx942 after ``rocmlab port`` and after plain ``torch.utils.hipify`` (same compiler,
flags, include folders and warp-sync compatibility header), the ratio, the traps found, and
then the wall time of port + compile of the largest code base with 1 and with 2 workers.

    .venv/bin/python benchmarks/port_compile_rate.py [--arch gfx942] [--json results.json] [--skip-timing]

Nothing is cached between runs: each port and each baseline compiles from scratch.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "port"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="gfx942")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--skip-timing", action="store_true", help="leave out the 1-vs-2-worker timing")
    ap.add_argument("--workers", type=int, default=2, help="workers for the comparison runs")
    args = ap.parse_args(argv)

    from rocmlab.platform import current
    from rocmlab.port import port
    from rocmlab.port.baseline import plain_hipify

    plat = current()
    bases = sorted(p for p in SAMPLES.iterdir() if p.is_dir())
    rows, out = [], {"backend": plat.backend, "device": plat.device.name if plat.device else "cpu",
                     "arch": args.arch, "codebases": {}}
    with tempfile.TemporaryDirectory(prefix="rocmlab-port-bench-") as tmp:
        for cb in bases:
            r = port(cb, Path(tmp) / f"{cb.name}-port", args.arch, workers=args.workers)
            b = plain_hipify(cb, Path(tmp) / f"{cb.name}-plain", (args.arch,), compat=r.compat_used,
                             workers=args.workers)
            lv = r.traps_by_level()
            rec = {"units": r.n_units, "port_compiled": r.n_compiled, "plain_compiled": b.n_compiled,
                   "port_fraction": r.compile_fraction, "plain_fraction": b.compile_fraction,
                   "port_linked": sum(x.status == "ok" for x in r.links), "programs": len(r.links),
                   "fixes": len(r.fixes), "traps": lv,
                   "arch_guards": sum(t.rule == "cuda-arch-guard" for t in r.traps),
                   "port_categories": r.categories(), "plain_categories": b.categories(),
                   "compat_header": r.compat_used}
            out["codebases"][cb.name] = rec
            rows.append((cb.name, rec))
        print(f"rocmlab port vs plain torch.utils.hipify, offline compile for {args.arch}  "
              f"[{plat.backend}: {out['device']}]")
        print(f"{'code base':20s} {'TUs':>4s} {'port':>10s} {'plain':>10s} {'fixes':>6s} "
              f"{'traps e/w/i':>12s} {'#if ARCH':>8s}")
        for name, rec in rows:
            lv = rec["traps"]
            print(f"{name:20s} {rec['units']:4d} {rec['port_compiled']:4d} ({rec['port_fraction']:4.0%}) "
                  f"{rec['plain_compiled']:4d} ({rec['plain_fraction']:4.0%}) {rec['fixes']:6d} "
                  f"{lv['error']:4d}/{lv['warning']}/{lv['info']:<4d} {rec['arch_guards']:8d}")
        tot_u = sum(r["units"] for _, r in rows)
        tot_p = sum(r["port_compiled"] for _, r in rows)
        tot_b = sum(r["plain_compiled"] for _, r in rows)
        out["total"] = {"units": tot_u, "port_compiled": tot_p, "plain_compiled": tot_b}
        print(f"{'all':20s} {tot_u:4d} {tot_p:4d} ({tot_p / tot_u:4.0%}) {tot_b:4d} ({tot_b / tot_u:4.0%})")
        ratio = tot_p / tot_b if tot_b else float("inf")
        out["total"]["ratio"] = ratio
        print(f"ratio, translation units compiling after rocmlab port / after plain torch.utils.hipify: {ratio:.2f}x")
        print("first-error categories after port:", {n: r["port_categories"] for n, r in rows})
        print("first-error categories after plain hipify:", {n: r["plain_categories"] for n, r in rows})

        if not args.skip_timing:
            largest = max(bases, key=lambda p: sum(1 for f in p.rglob("*") if f.suffix in (".cu", ".cpp")))
            times = {}
            for w in (1, 2):
                t0 = time.monotonic()
                r = port(largest, Path(tmp) / f"timing-{w}", args.arch, workers=w)
                times[w] = time.monotonic() - t0
                print(f"port + compile of {largest.name} ({r.n_units} TUs) with {w} worker(s): "
                      f"{times[w]:.1f} s  [{plat.backend}: {out['device']}]")
            print(f"speed-up 1 -> 2 workers: {times[1] / times[2]:.2f}x")
            out["timing"] = {"codebase": largest.name, "workers_1_s": times[1], "workers_2_s": times[2],
                             "speedup": times[1] / times[2]}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
