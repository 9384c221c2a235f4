"""An async streaming benchmark client for OpenAI-compatible servers (vLLM, SGLang).

It measures what ``vllm bench serve`` measures, defined exactly as in
``vllm/benchmarks/serve.py`` (``calculate_metrics``) and its request functions:

- **TTFT**: request sent -> first streamed chunk carrying a choice;
- **ITL**: the gaps between successive chunks (one list per request);
- **E2EL** (``latencies``): request sent -> last chunk carrying a choice;
- **TPOT** = (E2EL - TTFT) / (output_tokens - 1), for requests with more than one token
  (output_tokens from the stream's final ``usage`` chunk);
- request, output and total token throughput = completed requests, output tokens and
  (input + output) tokens over the benchmark's wall duration;
- **goodput**: requests per second meeting every SLO given (``{"ttft": ms, "tpot": ms, "e2el": ms}``);
- mean / median / std / percentiles (p99 by default) of each, in ms.

The result dict uses vLLM's key names (``mean_ttft_ms``, ``p99_tpot_ms``, ``output_throughput``,
``request_rate``, ``max_concurrency`` ...), so files from ``vllm bench serve --save-result`` and
from :func:`run` load into one DataFrame (:func:`to_frame`, :func:`load_results`).

Requests arrive all at once (``request_rate=inf``) or as a Poisson process at
``request_rate`` req/s (gamma intervals when ``burstiness != 1``, as vLLM), optionally capped
at ``max_concurrency`` in flight. A request that fails (server died, timeout, malformed
stream, a stream cut before its ``[DONE]``) is marked failed with a clear ``error``; the others
are kept (vLLM's client would count a cut stream as a success). When the server stops
answering, requests not yet sent are marked failed without waiting for their arrival times.
"""

from __future__ import annotations

import asyncio
import codecs
import gc
import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

MS = 1000.0


class ServerUnreachable(ConnectionError):
    pass


@dataclass
class SampleRequest:
    prompt: str
    prompt_len: int
    expected_output_len: int


@dataclass
class RequestOutput:
    generated_text: str = ""
    success: bool = False
    latency: float = 0.0
    output_tokens: int = 0
    ttft: float = 0.0
    itl: list = field(default_factory=list)
    prompt_len: int = 0
    error: str = ""
    start_time: float = 0.0
    client_queue_time: float = 0.0
    chunks: int = 0


# ------------------------------------------------------------------------------ server checks
def check_server(base_url: str, timeout: float = 5.0) -> list[str]:
    """The model ids a server serves (``GET /v1/models``); ServerUnreachable with the fix if it
    does not answer."""
    import httpx

    url = base_url.rstrip("/") + "/v1/models"
    try:
        r = httpx.get(url, timeout=timeout)
    except httpx.ConnectError as exc:
        raise ServerUnreachable(f"cannot reach {base_url} ({_reason(exc)}): is the server running on that host "
                                "and port? Start it with rocmlab.serve (Server.start + wait_healthy) or fix the URL") from None
    except httpx.TimeoutException:
        raise ServerUnreachable(f"{base_url} did not answer within {timeout:.0f} s: the server is hung or the "
                                "address is wrong") from None
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"cannot reach {base_url}: {_reason(exc)}") from None
    if r.status_code != 200:
        raise ServerUnreachable(f"{url} answered HTTP {r.status_code}: not an OpenAI-compatible server?")
    try:
        return [m["id"] for m in r.json()["data"]]
    except (ValueError, KeyError, TypeError):
        raise ServerUnreachable(f"{url} did not return an OpenAI model list: not an OpenAI-compatible server?") from None


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower() or "errno 111" in text.lower():
        return "connection refused"
    return text


# ------------------------------------------------------------------------------ SSE parsing
class MalformedChunk(ValueError):
    pass


class SSEBuffer:
    """Splits a byte stream into server-sent-event messages (separated by a blank line)."""

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")()
        self._buf = ""

    def feed(self, data: bytes) -> list[str]:
        self._buf += self._dec.decode(data).replace("\r\n", "\n")
        out = []
        while "\n\n" in self._buf:
            msg, self._buf = self._buf.split("\n\n", 1)
            msg = msg.strip()
            if msg:
                out.append(msg)
        return out

    def rest(self) -> str:
        return self._buf.strip()


def parse_message(msg: str):
    """A parsed JSON payload, "[DONE]", or None (an SSE comment/ping). MalformedChunk otherwise."""
    if msg.startswith(":"):
        return None
    data = "\n".join(line[5:].lstrip() if line.startswith("data:") else line for line in msg.split("\n")
                     if not line.startswith(("event:", "id:", "retry:")))
    if data == "[DONE]":
        return data
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        raise MalformedChunk(f"malformed SSE chunk from the server (not JSON): {data[:120]!r}; the server or a "
                             "proxy in between broke the stream") from None


# ------------------------------------------------------------------------------ one request
async def request_one(client, base_url: str, model: str, req: SampleRequest, endpoint: str = "completions",
                      ignore_eos: bool = True, temperature: float | None = 0.0, extra_body: dict | None = None,
                      pbar=None) -> RequestOutput:
    """Send one streaming request and time it as vLLM's request functions do."""
    import httpx

    if endpoint == "completions":
        url = base_url.rstrip("/") + "/v1/completions"
        payload = {"model": model, "prompt": req.prompt, "repetition_penalty": 1.0,
                   "max_tokens": req.expected_output_len, "logprobs": None}
    elif endpoint == "chat":
        url = base_url.rstrip("/") + "/v1/chat/completions"
        payload = {"model": model, "messages": [{"role": "user", "content": [{"type": "text", "text": req.prompt}]}],
                   "max_completion_tokens": req.expected_output_len}
    else:
        raise ValueError(f"endpoint must be 'completions' or 'chat', got {endpoint!r}")
    payload.update({"stream": True, "stream_options": {"include_usage": True}})
    if temperature is not None:
        payload["temperature"] = temperature
    if ignore_eos:
        payload["ignore_eos"] = True
    if extra_body:
        payload.update(extra_body)

    out = RequestOutput(prompt_len=req.prompt_len)
    text = []
    st = time.perf_counter()
    out.start_time = st
    last = st
    first = done = False
    try:
        async with client.stream("POST", url, json=payload) as resp:
            if resp.status_code != 200:
                body = (await resp.aread()).decode(errors="replace")
                out.error = f"HTTP {resp.status_code} from {url}: {body[:300]}"
            else:
                buf = SSEBuffer()
                async for data in resp.aiter_bytes():
                    for msg in buf.feed(data):
                        obj = parse_message(msg)
                        if obj == "[DONE]":
                            done = True
                            continue
                        if obj is None:
                            continue
                        if choices := obj.get("choices"):
                            ts = time.perf_counter()
                            if not first:
                                first = True
                                out.ttft = ts - st
                            else:
                                out.itl.append(ts - last)
                            last = ts
                            out.chunks += 1
                            c = choices[0]
                            piece = c.get("text") if endpoint == "completions" else (c.get("delta") or {}).get("content")
                            text.append(piece or "")
                        elif usage := obj.get("usage"):
                            out.output_tokens = usage.get("completion_tokens") or 0
                            if usage.get("prompt_tokens") is not None:
                                out.prompt_len = usage["prompt_tokens"]
                        elif "error" in obj:
                            raise MalformedChunk(f"the server sent an error mid-stream: {str(obj['error'])[:200]}")
                if buf.rest():
                    obj = parse_message(buf.rest())   # a last message without its blank line
                    done = done or obj == "[DONE]"
                    if isinstance(obj, dict) and obj.get("usage"):
                        out.output_tokens = obj["usage"].get("completion_tokens") or 0
                if first and done:
                    out.success = True
                elif first:
                    out.error = (f"the stream ended after {out.chunks} chunks without [DONE]: the server died or "
                                 "closed the connection; the request is marked failed")
                else:
                    out.error = "never received a valid chunk to measure TTFT: the request is marked failed"
    except MalformedChunk as exc:
        out.error = str(exc)
    except httpx.ConnectError as exc:
        out.error = f"cannot connect to {url} ({_reason(exc)}): the server is not running (or died)"
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        out.error = (f"the server closed the connection after {out.chunks} chunks ({type(exc).__name__}): "
                     "did it die or restart?")
    except httpx.TimeoutException as exc:
        out.error = f"timed out waiting for the server ({type(exc).__name__}) after {out.chunks} chunks"
    except httpx.HTTPError as exc:
        out.error = f"HTTP error: {type(exc).__name__}: {exc}"
    out.generated_text = "".join(text)
    out.latency = last - st
    if pbar is not None:
        pbar.update(1)
    return out


# ------------------------------------------------------------------------------ metrics
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


# ------------------------------------------------------------------------------ arrivals
def arrival_delays(n: int, request_rate: float, burstiness: float = 1.0, rng=None) -> list[float]:
    """Cumulative send times (s) of ``n`` requests, as vLLM's ``get_request``: 0 for an infinite
    rate, else gamma intervals (exponential, i.e. Poisson arrivals, at burstiness 1) rescaled so
    the last one lands at n / rate."""
    if n <= 0:
        return []
    if burstiness <= 0:
        raise ValueError(f"burstiness must be positive, got {burstiness}")
    if request_rate <= 0:
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
async def _run(base_url, model, requests, endpoint, request_rate, burstiness, max_concurrency, ignore_eos,
               temperature, request_timeout, progress, seed, extra_body, stop_after_refused):
    import httpx

    limits = httpx.Limits(max_connections=max_concurrency or 1000, max_keepalive_connections=max_concurrency or 1000)
    timeout = httpx.Timeout(connect=10.0, read=request_timeout, write=30.0, pool=None)
    rng = np.random.default_rng(seed)
    delays = arrival_delays(len(requests), request_rate, burstiness, rng)
    sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    pbar = None
    if progress:
        from tqdm.auto import tqdm

        label = f"rate={request_rate:g} conc={max_concurrency or 'inf'}"
        pbar = tqdm(total=len(requests), desc=label, leave=False)
    refused = {"n": 0}

    async def limited(req, arrival):
        if sem is None:
            o = await request_one(client, base_url, model, req, endpoint, ignore_eos, temperature, extra_body, pbar)
        else:
            async with sem:
                if refused["n"] >= stop_after_refused:
                    o = RequestOutput(prompt_len=req.prompt_len, start_time=time.perf_counter(),
                                      error="not sent: the server stopped answering (connection refused)")
                    if pbar is not None:
                        pbar.update(1)
                else:
                    o = await request_one(client, base_url, model, req, endpoint, ignore_eos, temperature,
                                          extra_body, pbar)
        o.client_queue_time = o.start_time - arrival
        if not o.success and "cannot connect" in o.error:
            refused["n"] += 1
        elif o.success:
            refused["n"] = 0
        return o

    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        tasks = []
        t_start = time.perf_counter()
        start_wall = time.time()
        for i, req in enumerate(requests):
            wait = start_wall + delays[i] - time.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if refused["n"] >= stop_after_refused:
                for r in requests[i:]:
                    o = RequestOutput(prompt_len=r.prompt_len, start_time=time.perf_counter(),
                                      error="not sent: the server stopped answering (connection refused)")
                    tasks.append(asyncio.get_running_loop().create_future())
                    tasks[-1].set_result(o)
                    if pbar is not None:
                        pbar.update(1)
                break
            tasks.append(asyncio.create_task(limited(req, time.perf_counter())))
        outputs = await asyncio.gather(*tasks)
        duration = time.perf_counter() - t_start
    if pbar is not None:
        pbar.close()
    return list(outputs), duration


def _run_coro(coro):
    """Run a coroutine from plain code or from inside Jupyter's running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro).result()


def run(base_url: str, requests: list[SampleRequest], model: str | None = None, endpoint: str = "completions",
        request_rate: float = math.inf, burstiness: float = 1.0, max_concurrency: int | None = None,
        ignore_eos: bool = True, temperature: float | None = 0.0, goodput: dict | None = None,
        percentiles=(99,), request_timeout: float = 300.0, progress: bool = True, seed: int = 0,
        test_request: bool = True, label: str = "rocmlab", extra_body: dict | None = None,
        stop_after_refused: int = 3, detailed: bool = True) -> dict:
    """Benchmark ``requests`` against ``base_url``; a dict with vLLM's keys (see the module doc).

    ``test_request`` sends the first prompt once before timing (as vLLM does) and raises if
    it fails, so a wrong model name or endpoint stops here with the server's answer."""
    if not requests:
        raise ValueError("no requests to send: make some with random_requests() or prompt_requests()")
    models = check_server(base_url)
    if model is None:
        model = models[0]
    elif model not in models:
        raise ValueError(f"the server at {base_url} serves {models}, not {model!r}: pass one of those as model=")
    if test_request:
        outs, _ = _run_coro(_run(base_url, model, requests[:1], endpoint, math.inf, 1.0, 1, ignore_eos, temperature,
                                 request_timeout, False, seed, extra_body, stop_after_refused))
        if not outs[0].success:
            raise RuntimeError(f"the initial test request failed: {outs[0].error}")
    gc.collect()
    gc.freeze()     # as vLLM's client: keep the garbage collector off long-lived objects during timing
    try:
        outputs, duration = _run_coro(_run(base_url, model, requests, endpoint, request_rate, burstiness,
                                           max_concurrency, ignore_eos, temperature, request_timeout, progress,
                                           seed, extra_body, stop_after_refused))
    finally:
        gc.unfreeze()
    return make_result(outputs, duration, model=model, endpoint=endpoint, request_rate=request_rate,
                       burstiness=burstiness, max_concurrency=max_concurrency, goodput=goodput,
                       percentiles=percentiles, label=label, detailed=detailed)


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
        })
    return result


# ------------------------------------------------------------------------------ datasets
def prompts_path() -> Path:
    from rocmlab.paths import datasets_dir

    return datasets_dir() / "prompts.jsonl"


def load_prompts(path: str | Path | None = None) -> list[str]:
    p = Path(path) if path else prompts_path()
    out = []
    for i, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line)["prompt"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{p}:{i}: each line must be a JSON object with a 'prompt' string") from None
    return out


def tokenize(base_url: str, model: str, text: str, client=None) -> list[int]:
    """Token ids of ``text`` by the SERVER's tokenizer (vLLM's ``POST /tokenize``), no special tokens."""
    import httpx

    c = client or httpx
    r = c.post(base_url.rstrip("/") + "/tokenize", json={"model": model, "prompt": text, "add_special_tokens": False},
               timeout=30)
    if r.status_code != 200:
        raise RuntimeError(f"{base_url}/tokenize answered HTTP {r.status_code}: the random dataset needs vLLM's "
                           "/tokenize endpoint (SGLang: use prompt_requests)")
    return r.json()["tokens"]


def detokenize(base_url: str, model: str, tokens: list[int], client=None) -> str:
    import httpx

    c = client or httpx
    r = c.post(base_url.rstrip("/") + "/detokenize", json={"model": model, "tokens": list(map(int, tokens))}, timeout=30)
    r.raise_for_status()
    return r.json()["prompt"]


def random_requests(base_url: str, num: int, input_len: int, output_len: int, model: str | None = None,
                    range_ratio: float = 0.0, seed: int = 0) -> list[SampleRequest]:
    """Random prompts of exactly ``input_len`` tokens BY THE SERVER'S TOKENIZER.

    Token ids are drawn (seeded) from the ids the server's tokenizer uses for the shipped
    prompt set, decoded to text, re-encoded and adjusted until the length matches, as vLLM's
    random dataset does with a local tokenizer. Lengths vary by +-``range_ratio``."""
    import httpx

    if input_len < 1 or output_len < 1 or num < 1:
        raise ValueError("num, input_len and output_len must be positive")
    if not 0 <= range_ratio < 1:
        raise ValueError(f"range_ratio must be in [0, 1), got {range_ratio}")
    model = model or check_server(base_url)[0]
    rng = np.random.default_rng(seed)
    with httpx.Client() as client:
        pool = sorted(set(tokenize(base_url, model, "\n".join(load_prompts()), client)))
        lo_i, hi_i = max(1, int(input_len * (1 - range_ratio))), int(input_len * (1 + range_ratio))
        lo_o, hi_o = max(1, int(output_len * (1 - range_ratio))), int(output_len * (1 + range_ratio))
        out = []
        for _ in range(num):
            n_in = int(rng.integers(lo_i, hi_i + 1))
            n_out = int(rng.integers(lo_o, hi_o + 1))
            toks = rng.choice(pool, size=n_in).tolist()
            for _try in range(10):
                text = detokenize(base_url, model, toks, client)
                toks = tokenize(base_url, model, text, client)
                if len(toks) == n_in:
                    break
                toks = toks[:n_in] if len(toks) > n_in else toks + rng.choice(pool, size=n_in - len(toks)).tolist()
            out.append(SampleRequest(text, len(toks), n_out))
    return out


def prompt_requests(num: int | None = None, output_len: int = 64, path: str | Path | None = None,
                    base_url: str | None = None, model: str | None = None) -> list[SampleRequest]:
    """The shipped prompt set (``datasets/prompts.jsonl``, the same file works with
    ``vllm bench serve --dataset-name custom``), cycled to ``num`` requests. With ``base_url``
    the prompt lengths come from the server's tokenizer; otherwise from the server's usage
    reports during the run."""
    prompts = load_prompts(path)
    num = num or len(prompts)
    chosen = [prompts[i % len(prompts)] for i in range(num)]
    if base_url:
        model = model or check_server(base_url)[0]
        import httpx

        with httpx.Client() as client:
            return [SampleRequest(p, len(tokenize(base_url, model, p, client)), output_len) for p in chosen]
    return [SampleRequest(p, 0, output_len) for p in chosen]


# ------------------------------------------------------------------------------ sweeps and frames
def sweep(base_url: str, requests, concurrencies=(None,), request_rates=(math.inf,), out: str | Path | None = None,
          progress: bool = True, **kw) -> list[dict]:
    """Run every (request_rate, max_concurrency) point; returns the results gathered.

    ``requests`` is a list (reused each point) or a callable ``f(rate, concurrency) -> list``.
    With ``out`` each point's result is appended to that JSON-lines file as soon as it is
    done. If the server stops answering, the points left are recorded as skipped (with the
    reason) and what was measured is kept."""
    points = [(r, c) for r in request_rates for c in concurrencies]
    results: list[dict] = []
    outer = None
    if progress:
        from tqdm.auto import tqdm

        outer = tqdm(total=len(points), desc="sweep")
    dead = None
    for rate, conc in points:
        if dead is None:
            try:
                reqs = requests(rate, conc) if callable(requests) else requests
                res = run(base_url, reqs, request_rate=rate, max_concurrency=conc, progress=progress,
                          test_request=not results, **kw)
                if res["completed"] == 0 or any("not sent" in e or "cannot connect" in e for e in res.get("errors", [])):
                    try:
                        check_server(base_url, timeout=3)
                    except ServerUnreachable as exc:
                        dead = str(exc)
            except (ServerUnreachable, RuntimeError) as exc:
                dead = str(exc)
                res = None
        else:
            res = None
        if res is None:
            res = {"request_rate": "inf" if math.isinf(rate) else rate, "max_concurrency": conc, "completed": 0,
                   "failed": 0, "skipped": True, "error": dead, "client": "rocmlab", "label": kw.get("label", "rocmlab")}
        results.append(res)
        if out:
            with open(out, "a") as fh:
                fh.write(json.dumps(res) + "\n")
        if outer is not None:
            outer.update(1)
    if outer is not None:
        outer.close()
    return results


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

