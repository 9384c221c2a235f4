"""Benchmark metrics as vLLM defines them (``calculate_metrics`` in ``vllm/benchmarks/serve.py``),
result dicts with vLLM's keys, and reading/writing result files.

- **TTFT**: request sent -> first streamed chunk carrying a choice;
- **ITL**: the gaps between successive chunks (one list per request);
- **E2EL** (``latencies``): request sent -> last chunk carrying a choice;
- **TPOT** = (E2EL - TTFT) / (output_tokens - 1), for requests with more than one token
  (output_tokens from the stream's final ``usage`` chunk);
- request, output and total token throughput = completed requests, output tokens and
  (input + output) tokens over the benchmark's wall duration;
- **goodput**: requests per second meeting every SLO given (``{"ttft": ms, "tpot": ms, "e2el": ms}``);
- mean / median / std / percentiles (p99 by default) of each, in ms.

Files from ``vllm bench serve --save-result`` and from rocmlab load into one DataFrame
(:func:`to_frame`, :func:`load_results`).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np

from rocmlab.serve.client import RequestOutput

MS = 1000.0


def _stats(name: str, values: list[float], percentiles, into: dict) -> None:
    v = values or 0
    into[f"mean_{name}_ms"] = float(np.mean(v) * MS)
    into[f"median_{name}_ms"] = float(np.median(v) * MS)
    into[f"std_{name}_ms"] = float(np.std(v) * MS)
    for p in percentiles:
        word = str(int(p)) if int(p) == p else str(p)
        into[f"p{word}_{name}_ms"] = float(np.percentile(v, p) * MS)


def calculate_metrics(outputs: list[RequestOutput], duration: float, percentiles=(99,), goodput: dict | None = None,
                      count_tokens=None) -> dict:
    """vLLM's ``calculate_metrics`` over finished requests, as a dict with vLLM's keys.

    ``count_tokens(text) -> int`` counts output tokens when the stream had no ``usage``
    chunk (vLLM uses its tokenizer there); without it the number of chunks is used.
    """
    if duration <= 0:
        raise ValueError(f"duration must be positive, got {duration}")
    lens, ttfts, tpots, all_tpots, itls, e2els = [], [], [], [], [], []
    total_input = completed = good = 0
    for o in outputs:
        if not o.success:
            lens.append(0)
            continue
        n = o.output_tokens
        if not n:
            n = count_tokens(o.generated_text) if count_tokens else max(1, o.chunks)
        lens.append(n)
        total_input += o.prompt_len
        tpot = 0.0
        if n > 1:
            tpot = (o.latency - o.ttft) / (n - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls += o.itl
        ttfts.append(o.ttft)
        e2els.append(o.latency)
        completed += 1
    if goodput:
        unknown = set(goodput) - {"ttft", "tpot", "e2el"}
        if unknown:
            raise ValueError(f"goodput SLOs are ttft, tpot, e2el (ms); unknown: {sorted(unknown)}")
        cols, slos = [], []
        for k, vals in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)):
            if k in goodput:
                cols.append(vals)
                slos.append(goodput[k] / MS)
        good = sum(all(s >= r for s, r in zip(slos, row, strict=True)) for row in zip(*cols, strict=True))

    # peak output tokens per second, as vLLM buckets them
    max_tok_s, max_conc = 0.0, 0
    ok = [o for o in outputs if o.success]
    if ok:
        t0 = min(o.start_time for o in ok)
        t1 = max(o.start_time + o.latency for o in ok)
        nsec = int(np.ceil(t1 - t0)) + 1
        tok = np.zeros(nsec)
        conc = np.zeros(nsec)
        for o in ok:
            t = o.start_time + o.ttft
            times = [t]
            for gap in o.itl:
                t += gap
                times.append(t)
            for ts in times:
                b = int(ts - t0)
                if 0 <= b < nsec:
                    tok[b] += 1
            for s in range(int(o.start_time - t0), int(o.start_time + o.latency - t0) + 1):
                conc[s] += 1
        max_tok_s, max_conc = float(tok.max()), int(conc.max())

    total_out = int(sum(lens))
    m = {
        "duration": duration, "completed": completed, "failed": len(outputs) - completed,
        "total_input_tokens": total_input, "total_output_tokens": total_out,
        "request_throughput": completed / duration,
        "request_goodput": good / duration if goodput else None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_input + total_out) / duration,
        "max_output_tokens_per_s": max_tok_s, "max_concurrent_requests": max_conc,
    }
    for name, vals in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        _stats(name, vals, percentiles, m)
    m["output_lens"] = lens
    return m


def make_result(outputs, duration, model="", endpoint="completions", request_rate=math.inf, burstiness=1.0,
                max_concurrency=None, goodput=None, percentiles=(99,), label="rocmlab", detailed=True) -> dict:
    m = calculate_metrics(outputs, duration, percentiles, goodput)
    result = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"), "endpoint_type": "openai-chat" if endpoint == "chat" else "vllm",
        "backend": "openai-chat" if endpoint == "chat" else "vllm", "label": label, "model_id": model,
        "tokenizer_id": model, "num_prompts": len(outputs),
        "request_rate": "inf" if math.isinf(request_rate) else request_rate,
        "burstiness": burstiness, "max_concurrency": max_concurrency, "client": "rocmlab",
    }
    lens = m.pop("output_lens")
    result.update(m)
    if detailed:
        result.update({
            "input_lens": [o.prompt_len for o in outputs], "output_lens": lens,
            "ttfts": [o.ttft for o in outputs], "itls": [o.itl for o in outputs],
            "latencies": [o.latency for o in outputs], "start_times": [o.start_time for o in outputs],
            "queue_times": [o.client_queue_time for o in outputs],
            "generated_texts": [o.generated_text for o in outputs], "errors": [o.error for o in outputs],
            "bytes_received": [o.bytes_received for o in outputs],
        })
    return result


SCALAR_KEYS = ("label", "client", "backend", "model_id", "num_prompts", "request_rate", "burstiness",
               "max_concurrency", "duration", "completed", "failed", "skipped", "total_input_tokens",
               "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
               "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests")


def to_frame(results):
    """Results (rocmlab's or ``vllm bench serve``'s) as one DataFrame of their scalar keys."""
    import pandas as pd

    rows = []
    for r in results:
        row = {k: v for k, v in r.items() if not isinstance(v, (list, dict))}
        row.setdefault("client", "vllm bench serve" if "client" not in r else r["client"])
        rows.append(row)
    df = pd.DataFrame(rows)
    if "request_rate" in df:
        df["request_rate"] = pd.to_numeric(df["request_rate"].replace("inf", math.inf), errors="coerce")
    return df


def load_results(*paths) -> list[dict]:
    """Result files: one JSON object per file (``vllm bench serve --save-result``) or JSON lines."""
    out = []
    for p in paths:
        text = Path(p).read_text().strip()
        try:
            obj = json.loads(text)
            out.extend(obj if isinstance(obj, list) else [obj])
        except json.JSONDecodeError:
            out.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return out


def save_result(result: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))
    return path


def outputs_from_result(result: dict) -> list[RequestOutput]:
    """Per-request outputs back from a detailed result (for re-computing metrics)."""
    n = len(result["ttfts"])
    return [RequestOutput(success=not result["errors"][i], latency=result["latencies"][i],
                          output_tokens=result["output_lens"][i], ttft=result["ttfts"][i], itl=result["itls"][i],
                          prompt_len=result["input_lens"][i], error=result["errors"][i],
                          start_time=result["start_times"][i]) for i in range(n)]

