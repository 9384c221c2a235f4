"""Prove the HIP->CUDA path on an NVIDIA GPU, and collect the reduction kernel's NVIDIA figures.

Run on a machine with an NVIDIA GPU and nvcc (the lead's H200 command is in benchmarks/README.md):

    PYTHONPATH=. python3 benchmarks/h200_hip_cuda.py --out DIR

1. translates rocmlab/hip/kernels/reduce.hip (HIP) to CUDA, builds it with nvcc for the GPU's
   sm_XX through rocmlab.hip.build.compile, runs it on fresh random inputs (a new seed each
   run, printed) of several sizes and block sizes, and checks each sum against numpy (float64);
2. records `nvcc -Xptxas -v` and `cuobjdump -sass` figures for the same kernel (rocmlab.hip.inspector);
3. runs the __ballot/warpSize program, and the bad-input cases: a syntax error (diagnostic on the
   cell's line), a kernel that never ends (stopped by the timeout), a segfaulting host program;
   then checks that the GPU still runs the reduction correctly.

On a machine without an NVIDIA GPU it builds everything and says plainly what it could not run.
Writes results.json and report.txt (and the listings) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocmlab.hip import build, hipcuda, inspector  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402

KERNELS = ROOT / "rocmlab" / "hip" / "kernels"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/results/h200")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    plat = current()
    report: list[str] = []

    def say(s=""):
        print(s, flush=True)
        report.append(s)

    res: dict = {"platform": plat.label, "backend": plat.backend, "summary": plat.summary(),
                 "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    say(f"platform: {plat.summary()}  [{plat.label}]")
    target = build.default_target("hip", plat) if plat.backend == "cuda" else "sm_90"
    src = (KERNELS / "reduce.hip").read_text()

    # 1. translation and build
    tr = hipcuda.translate(src)
    (out / "reduce_translated.cu").write_text(tr.cuda_source)
    res["translation"] = {"unknown_names": tr.unknown_names, "notes": tr.notes, "replaced": tr.replaced}
    say(f"translation: {tr.explain()}; unknown names: {tr.unknown_names or 'none'}")
    b = build.compile(src, lang="hip", target=target, plat=plat)
    res["build"] = {"ok": b.ok, "toolchain": b.toolchain, "target": b.target, "duration_s": b.duration_s,
                    "can_run": b.can_run, "reason": b.cannot_run_reason, "command": b.command}
    say(b.summary())
    if not b.ok:
        say(b.log[-3000:])

    # fresh random inputs, checked against numpy
    checks = []
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    res["seed"] = seed
    say(f"fresh seed {seed}")
    sizes = [1, 1000, (1 << 20) + 3] + ([] if a.quick else [1 << 24, 12_345_679])
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for block in (64, 256, 1024):
                x = rng.standard_normal(n).astype(np.float32) + rng.uniform(-1, 1)
                path = Path(tmp) / "x.f32"
                x.tofile(path)
                ref = float(np.sum(x, dtype=np.float64))
                tol = 1e-5 * float(np.sum(np.abs(x), dtype=np.float64)) + 1e-6
                row = {"n": n, "block": block, "ref": ref, "tol": tol}
                if b.ok and b.can_run:
                    done = build.run(b, [path, n, block], timeout_s=30)
                    got = None
                    for line in done.stdout.splitlines():
                        if line.startswith("sum "):
                            got = float(line.split()[1])
                        if line.startswith("warpSize "):
                            row["warpSize"] = int(line.split()[1])
                    row.update(got=got, ok=bool(done.ok and got is not None and abs(got - ref) <= tol),
                               run=done.explain(), stderr=done.stderr[-300:])
                else:
                    row.update(got=None, ok=None, run=f"not run: {b.cannot_run_reason}")
                checks.append(row)
                say(f"  n={n:>9} block={block:>4}: numpy {ref:.7g}, GPU {row['got']}, "
                    f"{'PASS' if row['ok'] else ('not run' if row['ok'] is None else 'FAIL')} (tol {tol:.2g})")
    res["checks"] = checks
    ran = [c for c in checks if c["ok"] is not None]
    res["all_correct"] = bool(ran) and all(c["ok"] for c in ran)
    say(f"HIP reduction through HIP->CUDA on {plat.label}: "
        f"{sum(bool(c['ok']) for c in ran)}/{len(ran)} correct against numpy" if ran else "reduction not run here")

    # 2. NVIDIA figures for the same kernel
    ins = inspector.inspect(src, target, plat=plat)
    res["inspect"] = {"ok": ins.ok, "listing": ins.listing,
                      "kernels": [{**k.__dict__} for k in ins.kernels],
                      "isa_counts": {k.name: k.counts for k in ins.isa},
                      "isa_mnemonics": {k.name: k.mnemonics() for k in ins.isa}}
    (out / "reduce_ptxas.txt").write_text(ins.log)
    (out / "reduce_listing.txt").write_text("\n\n".join(f"== {k.name}\n" + "\n".join(
        (f"[{ln.category}] " if ln.category else "") + ln.text for ln in k.lines) for k in ins.isa))
    say(f"inspector ({ins.listing}):")
    for k in ins.kernels:
        say(f"  {k.name}: " + "; ".join(f"{n} {v}" for n, v in k.rows()))
    for k in ins.isa:
        say(f"  {k.name} highlighted: {k.counts}; {k.mnemonics()}")

    # 3. ballot, bad input, recovery
    bal = build.compile((KERNELS / "ballot.hip").read_text(), target=target, plat=plat)
    if bal.ok and bal.can_run:
        d = build.run(bal, timeout_s=30)
        res["ballot"] = {"stdout": d.stdout, "explain": d.explain()}
        say("ballot: " + d.stdout.replace("\n", "; "))
    bad_src = src.replace("v += x[i];", "v += x[i]", 1)
    bad = build.compile(bad_src, target=target, plat=plat)
    line_expected = next(i for i, ln in enumerate(bad_src.splitlines(), 1) if "v += x[i]" in ln)
    res["syntax_error"] = {"ok": bad.ok, "diagnostics": [str(d) for d in bad.diagnostics[:3]],
                           "expected_line": line_expected,
                           # clang points at the end of the line; nvcc's front end at the next token
                           "line_matches": any(d.line in (line_expected, line_expected + 1) for d in bad.errors)}
    say(f"syntax error: {bad.diagnostics[0] if bad.diagnostics else 'no diagnostic'} "
        f"(expected line {line_expected})")
    for label, fname, timeout in (("never-ending kernel", "spin.hip", 5.0), ("segfault", "segfault.hip", 10.0)):
        pb = build.compile((KERNELS / fname).read_text(), target=target, plat=plat)
        entry = {"build_ok": pb.ok}
        if pb.ok and (pb.can_run or fname == "segfault.hip"):
            d = build.run(pb, timeout_s=timeout, host_only=True)
            entry.update(timed_out=d.timed_out, returncode=d.returncode, signal=d.signal, explain=d.explain(),
                         duration_s=d.duration_s, stdout=d.stdout[-200:])
            say(f"{label}: {d.explain()}")
        else:
            entry["explain"] = f"not run: {pb.cannot_run_reason}"
            say(f"{label}: not run ({pb.cannot_run_reason})")
        res[label] = entry
    if b.ok and b.can_run:
        with tempfile.TemporaryDirectory() as tmp:
            x = rng.standard_normal(1 << 20).astype(np.float32)
            x.tofile(Path(tmp) / "x.f32")
            d = build.run(b, [Path(tmp) / "x.f32", x.size, 256], timeout_s=30)
            got = float(next(ln.split()[1] for ln in d.stdout.splitlines() if ln.startswith("sum ")))
            ref = float(np.sum(x, dtype=np.float64))
            ok = abs(got - ref) <= 1e-5 * float(np.abs(x).sum(dtype=np.float64)) + 1e-6
            res["after_bad_input"] = {"ok": ok, "got": got, "ref": ref}
            say(f"GPU after the bad-input cases: reduction {'still correct' if ok else 'WRONG'} ({got:.7g} vs {ref:.7g})")
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    (out / "report.txt").write_text("\n".join(report) + "\n")
    return 0 if (res.get("all_correct") or plat.backend != "cuda") else 1


if __name__ == "__main__":
    raise SystemExit(main())
