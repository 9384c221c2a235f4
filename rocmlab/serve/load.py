"""The load a benchmark sends: prompts, arrival times, one benchmark run, and sweeps of runs.

Requests arrive all at once (``request_rate=inf``) or as a Poisson process at ``request_rate``
req/s (gamma intervals when ``burstiness != 1``, as vLLM's ``get_request``), optionally capped at
``max_concurrency`` in flight. A request that fails is marked failed with its reason (see
:mod:`rocmlab.serve.client`); the others are kept. When the server stops answering, requests not
yet sent are marked failed without waiting for their arrival times, and a sweep records the
points left as skipped: what was measured is kept (and with ``out=``, already on disk).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import math
import time
from pathlib import Path

import numpy as np

from rocmlab.paths import datasets_dir
from rocmlab.serve.client import (
    BadServerAnswer,
    RequestOutput,
    SampleRequest,
    ServerUnreachable,
    Timeouts,
    check_server,
    detokenize,
    request_one,
    tokenize,
)
from rocmlab.serve.http_stream import Connections
from rocmlab.serve.metrics import make_result

NOT_SENT = "not sent: the server stopped answering (connection refused)"


# ------------------------------------------------------------------------------ arrivals
def arrival_delays(n: int, request_rate: float, burstiness: float = 1.0, rng=None) -> list[float]:
    """Cumulative send times (s) of ``n`` requests, as vLLM's ``get_request``: 0 for an infinite
    rate, else gamma intervals (exponential, i.e. Poisson arrivals, at burstiness 1) rescaled so
    the last one lands at n / rate."""
    if n <= 0:
        return []
    if not burstiness > 0:     # also refuses nan
        raise ValueError(f"burstiness must be positive, got {burstiness}")
    if not request_rate > 0:
        raise ValueError(f"request_rate must be positive (or inf), got {request_rate}")
    if math.isinf(request_rate):
        return [0.0] * n
    rng = rng if rng is not None else np.random.default_rng(0)
    if math.isinf(burstiness):
        gaps = np.full(n, 1.0 / request_rate)
    else:
        gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness), size=n)
    t = np.cumsum(gaps)
    if t[-1] > 0:
        t = t * ((n / request_rate) / t[-1])
    return t.tolist()


# ------------------------------------------------------------------------------ a benchmark run
async def run_requests(base_url, model, requests, endpoint="completions", request_rate=math.inf, burstiness=1.0,
               max_concurrency=None, ignore_eos=True, temperature=0.0, timeouts: Timeouts | None = None,
               progress=False, seed=0, extra_body=None, stop_after_refused=3):
    timeouts = timeouts or Timeouts()
    rng = np.random.default_rng(seed)
    delays = arrival_delays(len(requests), request_rate, burstiness, rng)
    sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    pbar = None
    if progress:
        from tqdm.auto import tqdm

        label = f"rate={request_rate:g} conc={max_concurrency or 'inf'}"
        pbar = tqdm(total=len(requests), desc=label, leave=False)
    refused = {"n": 0}

    def not_sent(req):
        if pbar is not None:
            pbar.update(1)
        return RequestOutput(prompt_len=req.prompt_len, start_time=time.perf_counter(), error=NOT_SENT)

    async def one(client, req):
        try:
            return await request_one(client, base_url, model, req, endpoint, ignore_eos, temperature, extra_body,
                                     pbar, timeouts)
        except Exception as exc:   # a bug in this client, not the server's doing: keep the other requests
            return RequestOutput(prompt_len=req.prompt_len, start_time=time.perf_counter(),
                                 error=f"internal error in rocmlab's client ({type(exc).__name__}: {exc}): "
                                       "please report it with the server you used")

    async def limited(client, req, arrival):
        if sem is None:
            o = await one(client, req)
        else:
            async with sem:
                o = not_sent(req) if refused["n"] >= stop_after_refused else await one(client, req)
        o.client_queue_time = o.start_time - arrival
        if not o.success and "cannot connect" in o.error:
            refused["n"] += 1
        elif o.success:
            refused["n"] = 0
        return o

    async with Connections(base_url, timeouts.connect) as client:
        tasks = []
        t_start = time.perf_counter()
        start_wall = time.time()
        for i, req in enumerate(requests):
            wait = start_wall + delays[i] - time.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if refused["n"] >= stop_after_refused:
                for r in requests[i:]:
                    fut = asyncio.get_running_loop().create_future()
                    fut.set_result(not_sent(r))
                    tasks.append(fut)
                break
            tasks.append(asyncio.create_task(limited(client, req, time.perf_counter())))
        outputs = await asyncio.gather(*tasks)
        duration = time.perf_counter() - t_start
    if pbar is not None:
        pbar.close()
    return list(outputs), duration


def run_coroutine(coro):
    """Run a coroutine from plain code or from inside Jupyter's running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)

    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro).result()


class InitialRequestFailed(RuntimeError):
    """The request sent before timing failed: the benchmark cannot run against this server."""


def run(base_url: str, requests: list[SampleRequest], model: str | None = None, endpoint: str = "completions",
        request_rate: float = math.inf, burstiness: float = 1.0, max_concurrency: int | None = None,
        ignore_eos: bool = True, temperature: float | None = 0.0, goodput: dict | None = None,
        percentiles=(99,), timeouts: Timeouts | None = None, progress: bool = True, seed: int = 0,
        test_request: bool = True, label: str = "rocmlab", extra_body: dict | None = None,
        stop_after_refused: int = 3, detailed: bool = True) -> dict:
    """Benchmark ``requests`` against ``base_url``; a dict with vLLM's keys (see :mod:`rocmlab.serve.metrics`).

    ``timeouts`` bounds each request (:class:`rocmlab.serve.client.Timeouts`). ``test_request``
    sends the first prompt once before timing (as vLLM does) and raises InitialRequestFailed if it
    fails, so a wrong model name or endpoint stops here with the server's answer."""
    if not requests:
        raise ValueError("no requests to send: make some with random_requests() or prompt_requests()")
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
                                        or max_concurrency < 1):
        raise ValueError(f"max_concurrency must be a whole number >= 1 (or None for no limit), got {max_concurrency!r}")
    if not (request_rate > 0):      # also refuses nan
        raise ValueError(f"request_rate must be above 0 (or inf: all at once), got {request_rate!r}")
    timeouts = timeouts or Timeouts()
    models = check_server(base_url)
    if model is None:
        model = models[0]
    elif model not in models:
        raise ValueError(f"the server at {base_url} serves {models}, not {model!r}: pass one of those as model=")
    common = dict(endpoint=endpoint, ignore_eos=ignore_eos, temperature=temperature, timeouts=timeouts,
                  extra_body=extra_body, stop_after_refused=stop_after_refused)
    if test_request:
        outs, _ = run_coroutine(run_requests(base_url, model, requests[:1], max_concurrency=1, seed=seed, **common))
        if not outs[0].success:
            raise InitialRequestFailed(f"the initial test request failed: {outs[0].error}")
    gc.collect()
    gc.freeze()     # as vLLM's client: keep the garbage collector off long-lived objects during timing
    try:
        outputs, duration = run_coroutine(run_requests(base_url, model, requests, request_rate=request_rate,
                                           burstiness=burstiness, max_concurrency=max_concurrency, progress=progress,
                                           seed=seed, **common))
    finally:
        gc.unfreeze()
    return make_result(outputs, duration, model=model, endpoint=endpoint, request_rate=request_rate,
                       burstiness=burstiness, max_concurrency=max_concurrency, goodput=goodput,
                       percentiles=percentiles, label=label, detailed=detailed)


# ------------------------------------------------------------------------------ datasets
def prompts_path() -> Path:
    return datasets_dir() / "prompts.jsonl"


def load_prompts(path: str | Path | None = None) -> list[str]:
    p = Path(path) if path else prompts_path()
    out = []
    for i, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            prompt = json.loads(line)["prompt"]
            if not isinstance(prompt, str):
                raise TypeError
            out.append(prompt)
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{p}:{i}: each line must be a JSON object with a 'prompt' string") from None
    return out


def random_requests(base_url: str, num: int, input_len: int, output_len: int, model: str | None = None,
                    range_ratio: float = 0.0, seed: int = 0, timeouts: Timeouts | None = None) -> list[SampleRequest]:
    """Random prompts of exactly ``input_len`` tokens BY THE SERVER'S TOKENIZER.

    Token ids are drawn (seeded) from the ids the server's tokenizer uses for the shipped
    prompt set, decoded to text, re-encoded and adjusted until the length matches, as vLLM's
    random dataset does with a local tokenizer. Lengths vary by +-``range_ratio``. Needs vLLM's
    ``/tokenize``; BadServerAnswer (with the fix) from a server without it."""
    import httpx

    if input_len < 1 or output_len < 1 or num < 1:
        raise ValueError("num, input_len and output_len must be positive")
    if not 0 <= range_ratio < 1:
        raise ValueError(f"range_ratio must be in [0, 1), got {range_ratio}")
    model = model or check_server(base_url)[0]
    rng = np.random.default_rng(seed)
    with httpx.Client() as client:
        pool = sorted(set(tokenize(base_url, model, "\n".join(load_prompts()), client, timeouts)))
        if not pool:
            raise BadServerAnswer(f"{base_url.rstrip('/')}/tokenize gave no tokens for the shipped prompts: "
                                  "use the shipped prompts instead (--dataset prompts)")
        lo_i, hi_i = max(1, int(input_len * (1 - range_ratio))), int(input_len * (1 + range_ratio))
        lo_o, hi_o = max(1, int(output_len * (1 - range_ratio))), int(output_len * (1 + range_ratio))
        out = []
        for _ in range(num):
            n_in = int(rng.integers(lo_i, hi_i + 1))
            n_out = int(rng.integers(lo_o, hi_o + 1))
            toks = rng.choice(pool, size=n_in).tolist()
            for _try in range(10):
                text = detokenize(base_url, model, toks, client, timeouts)
                toks = tokenize(base_url, model, text, client, timeouts)
                if len(toks) == n_in:
                    break
                toks = toks[:n_in] if len(toks) > n_in else toks + rng.choice(pool, size=n_in - len(toks)).tolist()
            out.append(SampleRequest(text, len(toks), n_out))
    return out


def prompt_requests(num: int | None = None, output_len: int = 64, path: str | Path | None = None,
                    base_url: str | None = None, model: str | None = None,
                    timeouts: Timeouts | None = None) -> list[SampleRequest]:
    """The shipped prompt set (``datasets/prompts.jsonl``, the same file works with
    ``vllm bench serve --dataset-name custom``), cycled to ``num`` requests. With ``base_url``
    the prompt lengths come from the server's tokenizer; otherwise from the server's usage
    reports during the run."""
    prompts = load_prompts(path)
    if not prompts:
        raise ValueError(f"{path or prompts_path()} has no prompts: give a JSON-lines file of {{\"prompt\": ...}}")
    num = num or len(prompts)
    chosen = [prompts[i % len(prompts)] for i in range(num)]
    if base_url:
        model = model or check_server(base_url)[0]
        import httpx

        with httpx.Client() as client:
            return [SampleRequest(p, len(tokenize(base_url, model, p, client, timeouts)), output_len) for p in chosen]
    return [SampleRequest(p, 0, output_len) for p in chosen]


# ------------------------------------------------------------------------------ sweeps
def sweep(base_url: str, requests, concurrencies=(None,), request_rates=(math.inf,), out: str | Path | None = None,
          progress: bool = True, **kw) -> list[dict]:
    """Run every (request_rate, max_concurrency) point; returns the results gathered.

    ``requests`` is a list (reused each point) or a callable ``f(rate, concurrency) -> list``;
    ``kw`` goes to :func:`run` (``timeouts=``, ``model=`` ...). With ``out`` each point's result
    is appended to that JSON-lines file as soon as it is done. If the server stops answering
    (or the test request fails), the points left are recorded as skipped with the reason; a
    point that fails for another reason is recorded with its error and the sweep goes on.
    What was measured is always kept."""
    points = [(r, c) for r in request_rates for c in concurrencies]
    results: list[dict] = []
    outer = None
    if progress:
        from tqdm.auto import tqdm

        outer = tqdm(total=len(points), desc="sweep")
    dead = None
    for rate, conc in points:
        res = None
        if dead is None:
            try:
                reqs = requests(rate, conc) if callable(requests) else requests
                res = run(base_url, reqs, request_rate=rate, max_concurrency=conc, progress=progress,
                          test_request=not results, **kw)
                if res["completed"] == 0 or any(NOT_SENT in e or "cannot connect" in e for e in res.get("errors", [])):
                    try:
                        check_server(base_url, timeout=3)
                    except (ServerUnreachable, BadServerAnswer) as exc:
                        dead = str(exc)
            except (ServerUnreachable, BadServerAnswer, InitialRequestFailed) as exc:
                dead = str(exc)
            except ValueError as exc:      # this point's input (e.g. its requests) is wrong: say so, go on
                res = _point(rate, conc, kw, error=str(exc), failed_point=True)
        if res is None:
            res = _point(rate, conc, kw, error=dead, skipped=True)
        results.append(res)
        if out:
            with open(out, "a") as fh:
                fh.write(json.dumps(res) + "\n")
        if outer is not None:
            outer.update(1)
    if outer is not None:
        outer.close()
    return results


def _point(rate, conc, kw, error, skipped=False, failed_point=False) -> dict:
    res = {"request_rate": "inf" if math.isinf(rate) else rate, "max_concurrency": conc, "completed": 0,
           "failed": 0, "error": error, "client": "rocmlab", "label": kw.get("label", "rocmlab")}
    if skipped:
        res["skipped"] = True
    if failed_point:
        res["point_failed"] = True
    return res
