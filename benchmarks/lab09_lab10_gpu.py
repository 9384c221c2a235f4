"""Labs 09 and 10 on a GPU, in one go: every puzzle's reference and wrong kernels, attention against torch's SDPA,
the block-scaled FP8 GEMM against torch._scaled_mm and the bf16 GEMM; optionally both labs through preflight.

    python benchmarks/lab09_lab10_gpu.py --out DIR [--seeds 2] [--quick] [--preflight]

1. The puzzle self-test (``rocmlab.course.puzzles.self_test``) of Lab 09 (7 attention puzzles, 13 wrong kernels)
   and Lab 10 (2 FP8 puzzles, 6 wrong kernels; in this GPU's FP8 format: e4m3fn on NVIDIA and gfx950, e4m3fnuz on
   gfx942) on fresh random inputs: each reference must pass, each wrong kernel must fail. A wrong kernel that uses
   the other FP8 format may not compile on this GPU (Triton has no e4m3fnuz on NVIDIA): it then counts as caught,
   with the compiler's message.
2. ``attention_lab.time_attention``: the causal and non-causal FlashAttention solution (a few tiles) and each
   ``scaled_dot_product_attention`` backend torch can run, float16, head dim 128: ms, TFLOP/s, ratio to the best SDPA.
3. ``fp8_lab.time_gemm``: the block-scaled FP8 GEMM (1 x 128 and 128 x 128 scales, bf16 out) on gpu-mode's
   DeepSeek-R1 shapes against ``torch._scaled_mm`` (row-wise and per-tensor scales) and the bf16 GEMM: TFLOP/s,
   ratio to bf16, and whether the result is within the lab's error bound at that size.
4. ``--preflight``: ``rocmlab preflight --only 09`` and ``--only 10`` (needs papermill and a Jupyter kernel).

Prints a short table at the end; writes ``results.json`` and ``summary.md`` to DIR. On a machine without a GPU the
self-test runs in Triton's CPU interpreter and the timing says it is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocmlab.course import puzzles as P  # noqa: E402

MODE = P.setup()   # before triton is imported anywhere

import torch  # noqa: E402

from rocmlab.course import attention_lab as AL  # noqa: E402
from rocmlab.course import attention_puzzles as A  # noqa: E402
from rocmlab.course import fp8_lab as FL  # noqa: E402
from rocmlab.course import fp8_puzzles as F  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402


def self_tests(seeds: int) -> list[dict]:
    rows = []
    for lab in (A.LAB, F.LAB):
        for _ in range(seeds):
            seed = int.from_bytes(os.urandom(4), "little")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows += [dict(r, lab=lab) for r in P.self_test(seed, lab=lab)]
    return rows


def puzzle_table(rows: list[dict]) -> list[dict]:
    out = {}
    for r in rows:
        o = out.setdefault((r["lab"], r["key"]), dict(lab=r["lab"], puzzle=r["puzzle"], key=r["key"], points=r["points"],
                                                      runs=0, reference_passed=0, wrong=0, wrong_caught=0, missed=[]))
        o["runs"] += 1
        o["reference_passed"] += bool(r["reference"])
        for w in r["wrongs"]:
            o["wrong"] += 1
            o["wrong_caught"] += bool(w["caught"])
            if not w["caught"]:
                o["missed"].append(w["name"])
    return list(out.values())


def preflight(out: Path) -> list[dict]:
    rows = []
    for only in ("09", "10"):
        t = time.time()
        done = subprocess.run([sys.executable, "-m", "rocmlab.cli", "preflight", "--only", only, "--out",
                               str(out / f"preflight-{only}")], capture_output=True, text=True, timeout=900,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
        rows.append(dict(lab=only, rc=done.returncode, seconds=round(time.time() - t, 1),
                         tail=(done.stdout + done.stderr)[-600:]))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for results.json and summary.md")
    ap.add_argument("--seeds", type=int, default=2, help="fresh random draws per puzzle (default 2)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes in the timing")
    ap.add_argument("--preflight", action="store_true", help="also run Labs 09 and 10 through rocmlab preflight")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        print("--seeds must be at least 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plat = current()
    F.use_format(F.machine_format())
    label = f"[{plat.label}]"
    print(f"{label} puzzles run {'on the GPU' if MODE == 'gpu' else 'in the Triton CPU interpreter'}; "
          f"FP8 format {F.FORMAT}; torch {torch.__version__}")

    t0 = time.time()
    rows = self_tests(args.seeds)
    table = puzzle_table(rows)
    t_self = time.time() - t0
    attn = AL.time_attention(AL.SHAPES[:2] if args.quick else AL.SHAPES)
    gemm = FL.time_gemm(FL.SHAPES[:2] if args.quick else FL.SHAPES)
    pre = preflight(out) if args.preflight else "not asked (--preflight)"
    result = dict(backend=plat.backend, device=plat.device_name, mode=MODE, fp8_format=F.FORMAT,
                  self_test_seconds=round(t_self, 1), puzzles=table, self_test_rows=rows, attention=attn, gemm=gemm,
                  preflight=pre)
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))

    lines = [f"# Labs 09 and 10 {label}", "", f"puzzles {MODE}, FP8 format {F.FORMAT}, {args.seeds} seed(s), "
             f"{t_self:.1f} s", "", "| lab | puzzle | points | reference passed | wrong kernels caught | missed |",
             "|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['lab']} | {r['puzzle']} {r['key']} | {r['points']:g} | {r['reference_passed']}/{r['runs']} | "
                     f"{r['wrong_caught']}/{r['wrong']} | {', '.join(r['missed']) or '-'} |")
    for title, timed, cols in (("attention vs SDPA", attn, ("shape", "causal", "impl", "ms", "TFLOPs", "vs_best_sdpa")),
                               ("FP8 GEMM", gemm, ("M", "N", "K", "impl", "ms", "TFLOPs", "vs_bf16", "within_bound"))):
        lines += ["", f"## {title} {label}", ""]
        if isinstance(timed, str):
            lines.append(timed)
            continue
        lines += ["| " + " | ".join(cols) + " | note |", "|" + "---|" * (len(cols) + 1)]
        for r in timed:
            cells = [f"{r.get(c):.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols]
            lines.append("| " + " | ".join(cells) + f" | {r.get('note', '')} |")
    if isinstance(pre, list):
        lines += ["", f"## preflight {label}", ""] + [f"- Lab {p['lab']}: exit {p['rc']}, {p['seconds']} s" for p in pre]
    summary = "\n".join(lines)
    (out / "summary.md").write_text(summary + "\n")
    print(summary)
    ok = all(r["reference_passed"] == r["runs"] and r["wrong_caught"] == r["wrong"] for r in table)
    print(f"\n{label} puzzles: {'all references pass and all wrong kernels are caught' if ok else 'FAILURES above'}; "
          f"full results in {out / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
