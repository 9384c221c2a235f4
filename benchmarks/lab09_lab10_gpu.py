"""Labs 09 and 10 on a GPU, in one go: every puzzle's reference and wrong kernels, attention against torch's SDPA,
the block-scaled FP8 GEMM against torch._scaled_mm and the bf16 GEMM; optionally both labs through preflight.

    python benchmarks/lab09_lab10_gpu.py --out DIR [--seeds 2] [--quick] [--preflight]

1. The puzzle self-test (``rocmlab.course.puzzles.self_test``) of Lab 09 (7 attention puzzles, 13 wrong kernels)
   and Lab 10 (2 FP8 puzzles, 6 wrong kernels; in this GPU's FP8 format: e4m3fn on NVIDIA and gfx950, e4m3fnuz on
   gfx942) on fresh random inputs: each reference must pass, each wrong kernel must fail. A wrong kernel that uses
   the other FP8 format may not compile on this GPU (Triton has no e4m3fnuz on NVIDIA): it then counts as caught,
   with the compiler's message.
2. Lab 09's ``lab.time_attention``: the causal and non-causal FlashAttention solution (a few tiles) and each
   ``scaled_dot_product_attention`` backend torch can run, float16, head dim 128: ms, TFLOP/s, ratio to the best SDPA.
3. Lab 10's ``lab.time_gemm``: the block-scaled FP8 GEMM (1 x 128 and 128 x 128 scales, bf16 out) on gpu-mode's
   DeepSeek-R1 shapes against ``torch._scaled_mm`` (row-wise and per-tensor scales) and the bf16 GEMM: TFLOP/s,
   ratio to bf16, and whether the result is within the lab's error bound at that size.
4. The speed ladders (``ladder`` of each lab's package), FP8 first: every step of the block-scaled FP8 GEMM on the
   first shape and, on the others, the last step of the round before (``PREV_FP8``) and this round's; every step of
   the FlashAttention forward at head dim 128, causal, N = 1,024 and 4,096, and the two rounds' last steps at every
   other shape (head dims 64 and 128, causal and not). Each step's gain over the one before and its ratio to the
   vendor's kernel (best SDPA backend; per-tensor ``torch._scaled_mm`` and bf16), measured in the same run.
5. The ratio table (the issue's): at each of the labs' shapes, the puzzle's solution (before), the round before's
   last step and the ladder's last step (after) against the vendor, same run.
6. ``--preflight``: ``rocmlab preflight --only 09`` and ``--only 10`` (needs papermill and a Jupyter kernel).

``--jobs N`` compiles every kernel variant the run will time first, in N processes (Triton's on-disk cache then
serves the timing process); ``--no-self-test`` skips step 1.

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

from rocmlab.course.labs.lab09_attention_on_mi300x import lab as AL  # noqa: E402
from rocmlab.course.labs.lab09_attention_on_mi300x import puzzles as A  # noqa: E402
from rocmlab.course.labs.lab10_fp8_gemm import lab as FL  # noqa: E402
from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F  # noqa: E402
from rocmlab.course.labs.lab09_attention_on_mi300x import ladder as LD9  # noqa: E402
from rocmlab.course.labs.lab10_fp8_gemm import ladder as LD10  # noqa: E402
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


ATTN_SHAPES = AL.SHAPES + ((4, 16, 4096, 64, True), (4, 16, 4096, 64, False))
LAST_ATTENTION = LD9.ATTENTION_STEPS[-1][0]   # the ratio table's "after": each ladder's last step
LAST_FP8 = LD10.FP8_STEPS[-1][0]
PREV_ATTENTION = "v9 tuned"                   # the last steps of the round before (issue 53's first table)
PREV_FP8 = "v10 tuned"
#: every attention step is timed at the first FULL_LADDERS shapes (head dim 128, causal: short and long)
LADDER_SHAPES = [((4, 16, 1024, 128), True), ((4, 16, 4096, 128), True)]
FULL_LADDERS = 2


def _warm(job) -> str | None:
    """Compile (by running once, on small inputs) one kernel variant; the on-disk cache keeps it."""
    try:
        kind, a1, a2, a3 = job
        dev = "cuda"
        if kind == "attention solution":
            (d, causal), (bm, bn, w, st) = a1, a2
            q = torch.randn(1, 2, 512, d, device=dev, dtype=torch.float16)
            AL.flash_forward(q, q, q, causal, bm, bn, w, st)
        elif kind == "attention ladder":
            (d, causal), sw, tile = a1, a2, a3
            q = torch.randn(1, 2, 512, d, device=dev, dtype=torch.float16)
            LD9.flash(q, q, q, causal, sw, tile)
        else:
            dt = F.TORCH_DTYPES[F.machine_format()]
            a = torch.randn(512, 1024, device=dev).to(dt)       # K = 8 blocks: every split of the tile sets
            sa = torch.rand(512, 8, device=dev)
            sb = torch.rand(4, 8, device=dev)
            if kind == "fp8 solution":
                FL.fp8_gemm(a, a, sa, sb, *a2)
            else:
                LD10.fp8_gemm(a, a, sa, sb, a2, a3)
        torch.cuda.synchronize()
        return None
    except ValueError:
        return None     # a tile the step refuses (shape preconditions): the timing skips it too
    except Exception as exc:   # noqa: BLE001 - reported, the timing then skips or retries it
        return f"{job[0]} {job[1:]}: {type(exc).__name__}: {str(exc)[:200]}"


def precompile(jobs_n: int) -> dict:
    """Every variant the timing will run, compiled in ``jobs_n`` processes first."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, wait

    jobs = [("attention solution", (s[3], s[4]), c, None) for s in ATTN_SHAPES for c in AL.CONFIGS]
    for d in (64, 128):
        for causal in (True, False):
            for name, _, sw, tile in LD9.ATTENTION_STEPS:
                if (d, causal) != (128, True) and name not in (PREV_ATTENTION, LAST_ATTENTION):
                    continue   # the full ladder is causal at head dim 128
                jobs += [("attention ladder", (d, causal), sw, t) for t in LD9.tiles_for(sw, tile)]
    jobs += [("fp8 solution", None, c, None) for c in FL.CONFIGS]
    for _, _, sw, tile in LD10.FP8_STEPS:
        jobs += [("fp8 ladder", None, sw, t) for t in LD10.tiles_for(sw, tile)]
    jobs = list({repr(j): j for j in jobs}.values())
    t0 = time.time()
    ex = ProcessPoolExecutor(jobs_n, mp_context=mp.get_context("spawn"))
    futs = [ex.submit(_warm, j) for j in jobs]
    wait(futs, timeout=240)
    errors = []
    for f in futs:
        try:
            e = f.result(timeout=0)
        except Exception as exc:   # noqa: BLE001 - a crashed or unfinished compile: the timing retries it
            e = f"not compiled: {type(exc).__name__}"
        if e:
            errors.append(e)
    ex.shutdown(wait=False, cancel_futures=True)
    return dict(variants=len(jobs), seconds=round(time.time() - t0, 1), errors=errors)


def ratio_table(attn, gemm, ladders, after_attn) -> list[dict]:
    """The issue's table: per shape, the puzzle solution's best config (before) and the ladder's last step
    (after), each as TFLOP/s and as a ratio to the vendor's kernel measured in the same run."""
    rows = []
    if isinstance(attn, list):
        for b, h, n, d, causal in ATTN_SHAPES:
            mine = [r for r in attn if r["shape"] == (b, h, n, d) and r["causal"] == causal and r.get("ms")]
            sol = [r for r in mine if r["impl"].startswith("triton")]
            sdpa = [r for r in mine if r["impl"].startswith("sdpa")]
            fast = [r for r in after_attn if r.get("shape") == (b, h, n, d) and r.get("causal") == causal
                    and r["step"] == LAST_ATTENTION and r.get("ms")]
            if not (sol and sdpa):
                continue
            best_sol = min(sol, key=lambda r: r["ms"])
            best_sdpa = min(sdpa, key=lambda r: r["ms"])
            row = dict(kernel=f"FlashAttention fwd {(b, h, n, d)} {'causal' if causal else 'non-causal'}",
                       before_TFLOPs=best_sol["TFLOPs"], before_impl=best_sol["impl"],
                       vendor=f"{best_sdpa['impl']} {best_sdpa['TFLOPs']:.1f}",
                       before_ratio=best_sdpa["ms"] / best_sol["ms"])
            if fast:
                row.update(after_TFLOPs=fast[0]["TFLOPs"], after_impl=f"ladder {LAST_ATTENTION} {fast[0].get('tile')}",
                           after_ratio=best_sdpa["ms"] / fast[0]["ms"])
            prev = [r for r in after_attn if r.get("shape") == (b, h, n, d) and r.get("causal") == causal
                    and r["step"] == PREV_ATTENTION and r.get("ms")]
            if prev:
                row.update(prev_TFLOPs=prev[0]["TFLOPs"], prev_ratio=best_sdpa["ms"] / prev[0]["ms"])
            rows.append(row)
    if isinstance(gemm, list):
        for m, n, k in FL.SHAPES:
            mine = [r for r in gemm if (r["M"], r["N"], r["K"]) == (m, n, k) and r.get("ms")]
            sol = [r for r in mine if r["impl"].startswith("triton")]
            pt = [r for r in mine if r["impl"] == "torch._scaled_mm per-tensor"]
            bf = [r for r in mine if r["impl"] == "torch bf16 matmul"]
            fast = [r for r in ladders if r.get("shape") == (m, n, k) and r["step"] == LAST_FP8 and r.get("ms")]
            if not (sol and pt and bf):
                continue
            best_sol = min(sol, key=lambda r: r["ms"])
            row = dict(kernel=f"block-scaled FP8 GEMM {m}x{n}x{k}", before_TFLOPs=best_sol["TFLOPs"],
                       before_impl=best_sol["impl"],
                       vendor=f"_scaled_mm {pt[0]['TFLOPs']:.1f} (bf16 {bf[0]['TFLOPs']:.1f})",
                       before_ratio=pt[0]["ms"] / best_sol["ms"], before_vs_bf16=bf[0]["ms"] / best_sol["ms"])
            if fast:
                row.update(after_TFLOPs=fast[0]["TFLOPs"], after_impl=f"ladder {LAST_FP8} {fast[0].get('tile')}",
                           after_ratio=pt[0]["ms"] / fast[0]["ms"], after_vs_bf16=bf[0]["ms"] / fast[0]["ms"])
            prev = [r for r in ladders if r.get("shape") == (m, n, k) and r["step"] == PREV_FP8 and r.get("ms")]
            if prev:
                row.update(prev_TFLOPs=prev[0]["TFLOPs"], prev_ratio=pt[0]["ms"] / prev[0]["ms"])
            rows.append(row)
    return rows


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
    ap.add_argument("--no-self-test", action="store_true", help="skip the puzzles' self-test (step 1)")
    ap.add_argument("--jobs", type=int, default=0, help="compile every timed variant first in this many processes")
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
    rows = [] if args.no_self_test else self_tests(args.seeds)
    table = puzzle_table(rows)
    t_self = time.time() - t0
    compiled = precompile(args.jobs) if args.jobs > 0 and MODE == "gpu" else "not asked (--jobs)"
    print(f"precompile: {compiled}", flush=True)
    attn = AL.time_attention(ATTN_SHAPES[:2] if args.quick else ATTN_SHAPES)
    print(f"solution vs SDPA timed at {time.time() - t0:.0f} s", flush=True)

    def partial(**parts):   # what is timed so far, should the run be cut short
        (out / "partial.json").write_text(json.dumps(parts, indent=1, default=str))
    partial(attention=attn)
    # FP8 first (the first goal): every step on the first shape; last round's last step and this round's on
    # the others, so that each shape has both in one run
    gemm = FL.time_gemm(FL.SHAPES[:2] if args.quick else FL.SHAPES)
    partial(attention=attn, gemm=gemm)
    ladders = []
    for i, shape in enumerate(FL.SHAPES[:1] if args.quick else FL.SHAPES):
        steps = LD10.time_fp8_steps(shape, steps=None if i == 0 else (PREV_FP8, LAST_FP8))
        ladders += steps if isinstance(steps, list) else []
    print(f"fp8 timed at {time.time() - t0:.0f} s", flush=True)
    partial(attention=attn, gemm=gemm, ladders=ladders)
    for shape, causal in LADDER_SHAPES[:FULL_LADDERS]:    # every step at head dim 128, causal
        steps = LD9.time_steps(causal, shape)
        ladders += steps if isinstance(steps, list) else []
        partial(attention=attn, gemm=gemm, ladders=ladders)
    for b, h, n, d, causal in ATTN_SHAPES:     # last round's last step and this round's at the labs' other shapes
        if ((b, h, n, d), causal) not in LADDER_SHAPES[:FULL_LADDERS] and MODE == "gpu" and not args.quick:
            ladders += LD9.time_steps(causal, (b, h, n, d), steps=(PREV_ATTENTION, LAST_ATTENTION))
            partial(attention=attn, gemm=gemm, ladders=ladders)
    print(f"attention ladders timed at {time.time() - t0:.0f} s", flush=True)
    if not ladders:
        ladders = LD9.time_steps()
    ratios = ratio_table(attn, gemm, ladders, ladders) if MODE == "gpu" else []
    pre = preflight(out) if args.preflight else "not asked (--preflight)"
    result = dict(backend=plat.backend, device=plat.device_name, mode=MODE, fp8_format=F.FORMAT,
                  self_test_seconds=round(t_self, 1), puzzles=table, self_test_rows=rows, attention=attn, gemm=gemm,
                  ladders=ladders, ratios=ratios, precompile=compiled, preflight=pre)
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))

    lines = [f"# Labs 09 and 10 {label}", "", f"puzzles {MODE}, FP8 format {F.FORMAT}, {args.seeds} seed(s), "
             f"{t_self:.1f} s", "", "| lab | puzzle | points | reference passed | wrong kernels caught | missed |",
             "|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['lab']} | {r['puzzle']} {r['key']} | {r['points']:g} | {r['reference_passed']}/{r['runs']} | "
                     f"{r['wrong_caught']}/{r['wrong']} | {', '.join(r['missed']) or '-'} |")
    for title, timed, cols in (("attention vs SDPA", attn, ("shape", "causal", "impl", "ms", "TFLOPs", "vs_best_sdpa")),
                               ("FP8 GEMM", gemm, ("M", "N", "K", "impl", "ms", "TFLOPs", "vs_bf16", "within_bound")),
                               ("speed ladders (gain: over the step before; vs: the vendor's time / ours)", ladders,
                                ("shape", "causal", "step", "tile", "ms", "TFLOPs", "gain", "vs_vendor",
                                 "vs torch._scaled_mm per-tensor", "vs bf16 torch.matmul"))):
        lines += ["", f"## {title} {label}", ""]
        if isinstance(timed, str):
            lines.append(timed)
            continue
        lines += ["| " + " | ".join(cols) + " | note |", "|" + "---|" * (len(cols) + 1)]
        for r in timed:
            cells = [f"{r.get(c):.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols]
            lines.append("| " + " | ".join(cells) + f" | {r.get('note', '')} |")
    if ratios:
        lines += ["", f"## ratio table: before (puzzle solution) and after (ladder's last step), same run {label}", "",
                  f"(round 10's last steps: {PREV_ATTENTION}, {PREV_FP8})", "",
                  "| kernel | before TFLOP/s | round 10 TFLOP/s | after TFLOP/s | vendor TFLOP/s | before ratio | "
                  "round 10 ratio | after ratio | before / bf16 | after / bf16 |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in ratios:
            def f(key, r=r):
                return f"{r[key]:.3g}" if isinstance(r.get(key), float) else "-"
            lines.append(f"| {r['kernel']} | {f('before_TFLOPs')} | {f('prev_TFLOPs')} | {f('after_TFLOPs')} "
                         f"({r.get('after_impl', '')}) | {r['vendor']} | {f('before_ratio')} | {f('prev_ratio')} | "
                         f"{f('after_ratio')} | {f('before_vs_bf16')} | {f('after_vs_bf16')} |")
    if isinstance(pre, list):
        lines += ["", f"## preflight {label}", ""] + [f"- Lab {p['lab']}: exit {p['rc']}, {p['seconds']} s" for p in pre]
    summary = "\n".join(lines)
    (out / "summary.md").write_text(summary + "\n")
    print(summary)
    ok = all(r["reference_passed"] == r["runs"] and r["wrong_caught"] == r["wrong"] for r in table)
    bad_steps = [r for r in ladders if isinstance(r, dict) and (r.get("max_err_vs_sdpa") or 0) > 2.0 ** -9 * 5]
    if bad_steps:
        print(f"ladder steps off the lab's bound: {bad_steps}")
    print(f"\n{label} puzzles: {'all references pass and all wrong kernels are caught' if ok else 'FAILURES above'}; "
          f"full results in {out / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
