"""Lab 04's graded task: choose client settings that meet a serving target on the live server.

:func:`draw` states a target relative to what the server does one request at a time: serve ``n``
fresh random prompts with an **output throughput** at least ``k`` times the one-at-a-time throughput,
while the **median TTFT** stays within ``m`` times the one-at-a-time median TTFT. The learner chooses
``{"max_concurrency": c}`` and/or ``{"request_rate": r}`` (requests per second, Poisson arrivals).

:func:`grade` measures, against the real server, the baseline (max concurrency 1) and the learner's
settings three times each, alternating, on fresh random prompts (``rocmlab.serve.bench``, vLLM's metric
definitions), and compares the medians: a figure is what the server measured in this grade, never an
invented one. Where no server answers, every check is skipped and says so: nothing is awarded, nothing
is held against the learner.

Both sides are timed in the same grade, so a slow machine moves them together. A busy one does not: on
a shared CPU, identical runs of the tiny model were measured 13 to 73 output tokens/s apart. When the
runs of one side differ by more than 2x, the timing checks are skipped with the figures, as a fault
of the machine (neither scored for nor against the learner).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch

from rocmlab.course import tasks as T

LAB, TASK = "04-vllm-on-rocm", "meet-a-serving-target"
TITLE = "Lab 04 task: client settings that meet a throughput and latency target, on the live server"
KEYS = ("max_concurrency", "request_rate")
RUNS = 3            # runs of each side per grade, alternating
MAX_SPREAD = 2.0    # identical runs further apart than this in throughput: too unsteady to grade


@dataclass(frozen=True)
class Target:
    n: int                 # requests per run
    input_len: int
    output_len: int
    throughput_x: float    # output throughput >= this x the one-at-a-time throughput
    ttft_x: float          # median TTFT <= this x the one-at-a-time median TTFT
    seed: int

    def __str__(self) -> str:
        return (f"Serve {self.n} random prompts ({self.input_len} tokens in, {self.output_len} out) with an output "
                f"throughput at least {self.throughput_x:.2g}x the one-at-a-time throughput, and a median TTFT "
                f"at most {self.ttft_x:.2g}x the one-at-a-time median TTFT.")


def draw(seed: int | None = None, quick: bool = True) -> Target:
    seed = T.draw_seed(seed)
    g = torch.Generator().manual_seed(seed)
    k = 1.5 + 0.7 * float(torch.rand(1, generator=g))
    m = 4.0 + 4.0 * float(torch.rand(1, generator=g))
    n, i, o = (8, 32, 16) if quick else (64, 256, 128)
    return Target(n, i, o, round(k, 2), round(m, 1), seed)


def _settings(s) -> dict:
    """The learner's settings, checked: ValueError names the problem and the fix."""
    if not isinstance(s, dict) or not s or set(s) - set(KEYS):
        raise ValueError(f"give a dict with max_concurrency and/or request_rate, e.g. {{'max_concurrency': 4}}; "
                         f"got {s!r}")
    c = s.get("max_concurrency")
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or c < 1):
        raise ValueError(f"max_concurrency must be a whole number >= 1, got {c!r}")
    r = s.get("request_rate", math.inf)
    if not (isinstance(r, (int, float)) and r > 0):
        raise ValueError(f"request_rate must be above 0 requests/s (or math.inf: all at once), got {r!r}")
    return {"max_concurrency": c, "request_rate": float(r)}


def _server(url: str | None) -> tuple[str | None, str]:
    if not url:
        return None, "no server is running here (Lab 04's section 3 starts one): nothing measured, nothing awarded"
    from rocmlab.serve import bench
    try:
        bench.check_server(url)
    except Exception as exc:   # noqa: BLE001 - any failure to reach it is the machine's, not the learner's
        return None, f"the server at {url} does not answer ({type(exc).__name__}: {exc}): nothing measured, nothing awarded"
    return url, ""


def grade(target: Target, settings, url: str | None, record: bool = True, seed: int | None = None):
    """Measure ``settings`` against the server at ``url`` and grade them on ``target``."""
    from rocmlab.serve import bench

    started = time.monotonic()
    seed = T.draw_seed(seed)
    ids = (("settings", "static", 2), ("throughput", "run", 4), ("ttft", "run", 4))
    try:
        chosen = _settings(settings)
    except ValueError as exc:
        checks = [T.failed("settings", "static", 2, str(exc))]
        checks += [T.not_run(c, t, p, "not measured: the settings are not valid") for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url or "none", seed, started, record)
    url, why = _server(url)
    if url is None:
        checks = [T.skipped("settings", "static", 2, f"valid ({chosen}), but {why}")]
        checks += [T.skipped(c, t, p, why) for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "no server", "none", seed, started, record)
    reqs = bench.random_requests(url, target.n, target.input_len, target.output_len, seed=seed % (2**31))
    base, mine = [], []
    try:
        for i in range(RUNS):       # alternate: a busy moment of the machine hits both sides
            base.append(bench.run(url, reqs, max_concurrency=1, progress=False, test_request=(i == 0), seed=seed))
            mine.append(bench.run(url, reqs, progress=False, test_request=False, seed=seed, **chosen))
    except Exception as exc:   # noqa: BLE001 - the server died or stopped answering: the machine's fault
        checks = [T.passed("settings", "static", 2, f"valid: {chosen}")]
        checks += [T.skipped(c, t, p, f"the server stopped answering during the grade ({type(exc).__name__}: "
                             f"{exc}): not scored") for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)
    failed_reqs = max(r["failed"] for r in mine)
    thr_b = [r["output_throughput"] for r in base]
    thr_m = [r["output_throughput"] for r in mine]
    spread = max(max(v) / max(min(v), 1e-9) for v in (thr_b, thr_m))
    b_thr, m_thr = statistics.median(thr_b), statistics.median(thr_m)
    b_ttft = statistics.median(r["median_ttft_ms"] for r in base)
    m_ttft = statistics.median(r["median_ttft_ms"] for r in mine)
    if spread > MAX_SPREAD and failed_reqs == 0:
        why = (f"the server's timings were too unsteady to grade: identical runs differed {spread:.1f}x in throughput "
               f"(one at a time: {', '.join(f'{v:.1f}' for v in thr_b)} tok/s; yours: "
               f"{', '.join(f'{v:.1f}' for v in thr_m)} tok/s), a busy machine; not scored, grade again when it is "
               "quieter")
        checks = [T.passed("settings", "static", 2, f"valid, and all {target.n} requests completed: {chosen}")]
        checks += [T.skipped(c, t, p, why) for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)
    want_thr, want_ttft = target.throughput_x * b_thr, target.ttft_x * b_ttft
    where = f"[measured on {url}, {target.n} requests, median of {RUNS} runs each]"
    checks = [T.verdict(failed_reqs == 0, "settings", "static", 2, f"valid, and all {target.n} requests completed: "
                        f"{ {k: v for k, v in chosen.items() if v is not None and v != math.inf} }",
                        f"{failed_reqs} of {target.n} requests failed with {chosen}",
                        "lower the concurrency or the rate")]
    checks.append(T.verdict(m_thr >= want_thr and failed_reqs == 0, "throughput", "run", 4,
                            f"{m_thr:.1f} output tok/s >= {want_thr:.1f} ({target.throughput_x:g} x {b_thr:.1f} "
                            f"one at a time) {where}",
                            f"{m_thr:.1f} output tok/s < {want_thr:.1f} ({target.throughput_x:g} x {b_thr:.1f} "
                            f"one at a time) {where}",
                            "more requests in flight let the server batch them: raise max_concurrency"))
    checks.append(T.verdict(m_ttft <= want_ttft and failed_reqs == 0, "ttft", "run", 4,
                            f"median TTFT {m_ttft:.0f} ms <= {want_ttft:.0f} ms ({target.ttft_x:g} x {b_ttft:.0f} ms "
                            f"one at a time) {where}",
                            f"median TTFT {m_ttft:.0f} ms > {want_ttft:.0f} ms ({target.ttft_x:g} x {b_ttft:.0f} ms "
                            f"one at a time) {where}",
                            "requests queue behind each other: cap max_concurrency"))
    return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)
