"""Lab 04's graded task: choose client settings that meet a serving target on the live server.

:func:`draw` states a target relative to what the server does one request at a time: serve ``n``
fresh random prompts with an **output throughput** at least ``k`` times the one-at-a-time throughput,
while the **median TTFT** stays within ``m`` times the one-at-a-time median TTFT. The learner chooses
``{"max_concurrency": c}`` and/or ``{"request_rate": r}`` (requests per second, Poisson arrivals). Any
settings that meet both are right: with ``n`` requests, every ``max_concurrency`` from the knee up to
``n`` (all at once) may be.

:func:`grade` measures against the real server, in rounds: each round runs the baseline (max
concurrency 1) and the learner's settings back to back, on the same fresh random prompts, the order
alternating from round to round (``rocmlab.serve.bench``, vLLM's metric definitions). Each round gives
**paired ratios** (learner / baseline, same moment of the machine), so a slow or busy stretch moves
both sides of a pair together. A check is decided when the rounds agree (:func:`_decide`): all of the
first 3, or else at least 4 of 5, 5 of 7 or 6 of 9 (:data:`MAX_ROUNDS`): a busy machine that throws
one round in three off still gets a verdict, for a right answer as for a wrong one. Where either timing
check is still split after :data:`MAX_ROUNDS`, the machine is too noisy to judge: **no timing check is
scored** (neither for nor against the learner) and the grade is not recorded, so a wrong answer is never
scored where a right one could not be. Every figure in a verdict is what the server measured in this
grade. Where no server answers, every check is skipped and says so: nothing is awarded, nothing is held
against the learner.

The task is a graded item (``04-vllm-on-rocm/meet-a-serving-target``, :mod:`rocmlab.course.items`): the
learner hands in the settings as JSON (``{"max_concurrency": 4}``), and :func:`regrade` measures them
again on the instructor's server (``ROCMLAB_SERVE_URL`` in the grader's environment) against a target drawn
from the grader's fresh seed. No learner code runs: the answer is a value. Where the grader has no server,
or its machine is too noisy to decide, the re-grade is a fault of the machine (report status "error": not
scored, not cached; the next ``rocmlab grade --exchange`` grades it again).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from dataclasses import dataclass

import torch

from rocmlab.course import tasks as T

LAB, TASK = "04-vllm-on-rocm", "meet-a-serving-target"
NO_CODE = "none needed: the answer is a value (settings), no learner code runs"
ITEM = f"{LAB}/{TASK}"    # the graded item's id: rocmlab handin 04-vllm-on-rocm/meet-a-serving-target FILE.json
TITLE = "Lab 04 task: client settings that meet a throughput and latency target, on the live server"
KEYS = ("max_concurrency", "request_rate")
MIN_ROUNDS = 3      # rounds (baseline + the learner's settings) always run; all agreeing decides
MAX_ROUNDS = 9      # at most this many rounds, two more at a time while the rounds are split (_decide)
#: The wall-clock bound of one grade (every round included): no round starts that could not end within it, and a
#: grade that met it undecided ends with the machine's verdict (not scored).
GRADE_WALL_S = 600.0


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
        return None, f"no server is running here, so the settings could not be measured: nothing awarded. {START_SERVER}"
    from rocmlab.serve import bench
    try:
        bench.check_server(url)
    except Exception as exc:   # noqa: BLE001 - any failure to reach it is the machine's, not the learner's
        return None, (f"the server at {url} does not answer ({type(exc).__name__}), so the settings could not be "
                      f"measured (it is stopped: the lab's last cell stops it; or it died): nothing awarded. {START_SERVER}")
    return url, ""


#: How to get a server to grade against, said wherever none answers.
START_SERVER = ("To grade it: run the first code cell of section 3 again (it starts the server and waits until it "
                "answers), then this cell")


def agree_needed(rounds: int) -> int:
    """How many of ``rounds`` (odd, >= MIN_ROUNDS) must agree to decide: 3 of 3, 4 of 5, 5 of 7, 6 of 9."""
    return (rounds + 3) // 2


def _decide(ok: list[bool]) -> bool | None:
    """True/False when the rounds agree (:func:`agree_needed` of them, counted after 3, 5, 7 and 9 rounds);
    None while split."""
    n, yes = len(ok), sum(ok)
    if n < MIN_ROUNDS or n % 2 == 0:
        return None
    if yes >= agree_needed(n):
        return True
    if n - yes >= agree_needed(n):
        return False
    return None


def _ratios(pairs: list[tuple[dict, dict]]) -> tuple[list[float], list[float]]:
    thr = [m["output_throughput"] / max(b["output_throughput"], 1e-9) for b, m in pairs]
    ttft = [m["median_ttft_ms"] / max(b["median_ttft_ms"], 1e-9) for b, m in pairs]
    return thr, ttft


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
        return T.finish(LAB, TASK, TITLE, checks, "no server", "none", seed, started, False)
    shown = {k: v for k, v in chosen.items() if v is not None and v != math.inf}
    pairs: list[tuple[dict, dict]] = []
    failed_reqs = 0
    thr_ok = ttft_ok = None     # each check's verdict, kept once its rounds agree (later rounds serve the other)
    thr_n = ttft_n = 0          # the rounds that decided it
    try:
        reqs = bench.random_requests(url, target.n, target.input_len, target.output_len, seed=seed % (2**31))
        # the last of n requests arrives at n / request_rate s (Poisson arrivals scaled to that span: serve.load)
        span = target.n / chosen["request_rate"]
        slowest = 0.0          # the longest run so far, to see whether another round fits in GRADE_WALL_S
        while len(pairs) < MAX_ROUNDS:
            i = len(pairs)
            if i and time.monotonic() - started + 2 * max(slowest, span) > GRADE_WALL_S:
                break          # another round would pass the grade's bound: decide with the rounds there are
            runs = {}
            # alternate the order: neither side always runs first, after the other has warmed the server
            for side in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
                kw = {"max_concurrency": 1} if side == "base" else chosen
                base_s = runs["base"].get("duration") if "base" in runs else None
                if side == "mine" and base_s is not None and span > 2 * base_s:
                    return _too_slow_to_arrive(target, shown, span, runs["base"], url, seed, started, record)
                if side == "mine" and time.monotonic() - started + span > GRADE_WALL_S:
                    return _too_slow_to_arrive(target, shown, span, None, url, seed, started, record)
                runs[side] = bench.run(url, reqs, progress=False, test_request=(i == 0 and not runs),
                                       seed=seed + i, **kw)
                slowest = max(slowest, runs[side].get("duration", 0.0))
            failed_reqs = max(failed_reqs, runs["mine"]["failed"])
            pairs.append((runs["base"], runs["mine"]))
            if failed_reqs or runs["base"]["failed"]:
                break
            thr, ttft = _ratios(pairs)
            if thr_ok is None:
                thr_ok, thr_n = _decide([r >= target.throughput_x for r in thr]), len(pairs)
            if ttft_ok is None:
                ttft_ok, ttft_n = _decide([r <= target.ttft_x for r in ttft]), len(pairs)
            if thr_ok is not None and ttft_ok is not None:
                break
    except Exception as exc:   # noqa: BLE001 - the server died or stopped answering: the machine's fault
        checks = [T.passed("settings", "static", 2, f"valid: {shown}")]
        checks += [T.skipped(c, t, p, f"the server stopped answering during the grade ({type(exc).__name__}: "
                             f"{exc}): not scored") for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, False)
    base_failed = max(b["failed"] for b, _ in pairs)
    if base_failed:
        why = (f"{base_failed} of {target.n} requests failed one at a time (the baseline), so the server, not your "
               f"settings, is in trouble: not scored ({pairs[-1][0].get('errors', [''])[0][:160]})")
        checks = [T.passed("settings", "static", 2, f"valid: {shown}")]
        checks += [T.skipped(c, t, p, why) for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, False)
    thr, ttft = _ratios(pairs)
    b_thr = statistics.median(b["output_throughput"] for b, _ in pairs)
    b_ttft = statistics.median(b["median_ttft_ms"] for b, _ in pairs)
    m_thr = statistics.median(m["output_throughput"] for _, m in pairs)
    m_ttft = statistics.median(m["median_ttft_ms"] for _, m in pairs)
    where = f"[measured on {url}, {target.n} requests, {len(pairs)} paired rounds]"
    listed = (f"paired ratios yours / one at a time, throughput: {', '.join(f'{r:.2f}' for r in thr)}; "
              f"median TTFT: {', '.join(f'{r:.2f}' for r in ttft)}")
    if failed_reqs:
        checks = [T.failed("settings", "static", 2, f"{failed_reqs} of {target.n} requests failed with {shown}",
                           "lower the concurrency or the rate")]
        checks += [T.failed(c, t, p, f"not met: requests failed {where}", "lower the concurrency or the rate")
                   for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)
    if (thr_ok is None or ttft_ok is None) and len(pairs) < MAX_ROUNDS:
        why = (f"not decided within the grade's wall-clock bound of {GRADE_WALL_S:.0f} s ({len(pairs)} paired "
               f"rounds: {listed}): a slow or busy machine; neither timing check is scored and the grade is not "
               "recorded: grade again when it is quieter")
        checks = [T.passed("settings", "static", 2, f"valid, and all {target.n} requests completed: {shown}")]
        checks += [T.skipped(c, t, p, why) for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, False)
    if thr_ok is None or ttft_ok is None:
        why = (f"too noisy to judge on this machine: the paired rounds disagree ({listed}; targets: throughput "
               f">= {target.throughput_x:g}x, TTFT <= {target.ttft_x:g}x), a busy machine; neither timing check is "
               "scored and the grade is not recorded: grade again when it is quieter")
        checks = [T.passed("settings", "static", 2, f"valid, and all {target.n} requests completed: {shown}")]
        checks += [T.skipped(c, t, p, why) for c, t, p in ids[1:]]
        return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, False)
    ratio_thr, ratio_ttft = statistics.median(thr[:thr_n]), statistics.median(ttft[:ttft_n])
    checks = [T.passed("settings", "static", 2, f"valid, and all {target.n} requests completed: {shown}")]
    thr_txt = (f"{target.throughput_x:g}x one at a time: yours {m_thr:.1f}, one at a time {b_thr:.1f} tok/s, "
               f"paired ratio {ratio_thr:.2f} (median of the {thr_n} rounds that decided it) {where}")
    ttft_txt = (f"{target.ttft_x:g}x one at a time: yours {m_ttft:.0f} ms, one at a time {b_ttft:.0f} ms, "
                f"paired ratio {ratio_ttft:.2f} (median of the {ttft_n} rounds that decided it) {where}")
    checks.append(T.verdict(thr_ok, "throughput", "run", 4, f"output tok/s >= {thr_txt}", f"output tok/s < {thr_txt}",
                            "more requests in flight let the server batch them: raise max_concurrency"))
    checks.append(T.verdict(ttft_ok, "ttft", "run", 4, f"median TTFT <= {ttft_txt}", f"median TTFT > {ttft_txt}",
                            "requests queue behind each other: cap max_concurrency"))
    return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)


def _too_slow_to_arrive(target: Target, shown: dict, span: float, base: dict | None, url, seed, started, record):
    """The verdict, without running them, of settings whose requests cannot all even arrive in time: at
    ``request_rate`` the last of the n requests is sent ``span`` s after the first. Over twice the one-at-a-time run
    ``base``, that proves the throughput target (1.5x or more) missed, whatever the other rounds measure; without
    one, the span passes the grade's wall-clock bound. Either way the learner's settings, scored: TTFT is not measured."""
    if base is not None:
        why = (f"at request_rate {shown.get('request_rate', 0):g}/s the last of {target.n} requests is sent "
               f"{span:.3g} s after the first, so your run lasts at least that long: over twice the one-at-a-time "
               f"run's {base['duration']:.1f} s ({base['output_throughput']:.1f} tok/s, measured on {url}), so its "
               f"throughput is under half of that, and the target is {target.throughput_x:g}x")
    else:
        why = (f"at request_rate {shown.get('request_rate', 0):g}/s the last of {target.n} requests would be sent "
               f"{span:.3g} s after the first: past the grade's wall-clock bound of {GRADE_WALL_S:.0f} s")
    hint = "raise request_rate (or leave it out: all at once) and cap max_concurrency instead"
    checks = [T.passed("settings", "static", 2, f"valid: {shown}"),
              T.failed("throughput", "run", 4, f"output tok/s target not met: {why}", hint),
              T.not_run("ttft", "run", 4, "not measured: the throughput target already fails at this rate")]
    return T.finish(LAB, TASK, TITLE, checks, "live server", url, seed, started, record)


# ----------------------------------------------------------------------------- the instructor's re-grade

def answer_settings(source: str):
    """The settings of a handed-in ``.json`` answer (``{"max_concurrency": 4}``), or a message naming the
    problem and the fix (a str)."""
    try:
        value = json.loads(source)
    except ValueError:
        return 'not JSON: hand in a file holding your settings, e.g. {"max_concurrency": 4}'
    if not isinstance(value, dict):
        return ('give an object with max_concurrency and/or request_rate, e.g. {"max_concurrency": 4}; '
                f"got {value!r:.80}")
    return value


def regrade(source: str, seed: int, time_limit_s=None, url: str | None = None):
    """The instructor's grade of handed-in settings: measured again on the grader's server (``url``, else
    ``ROCMLAB_SERVE_URL``) against the target the grader's ``seed`` draws, nothing recorded. Bad settings
    are the learner's (scored); no server, a server that stops answering or fails one at a time, and a
    machine too noisy to decide are the machine's: the report's status is "error" (never scored or cached)."""
    from rocmlab.course.headline import resolve_quick

    started = time.monotonic()
    value = answer_settings(source)
    target = draw(seed, quick=resolve_quick(None))
    if isinstance(value, str):
        checks = [T.not_run("settings", "static", 2, value)]
        checks += [T.not_run(c, "run", 4, "not measured: no settings") for c in ("throughput", "ttft")]
        rep = T.finish(LAB, TASK, TITLE, checks, "none", "none (re-grade)", seed, started, record=False)
    else:
        url = url or os.environ.get("ROCMLAB_SERVE_URL") or None
        rep = grade(target, value, url, record=False, seed=seed)
        rep.device = f"{rep.device} (re-grade on the grader's server)"
    rep.isolation = NO_CODE
    skipped = [c for c in rep.checks if c.status == "skipped"]
    if skipped:
        rep.status = "error"
        rep.error = (skipped[-1].message if url else
                     "the re-grade measures the settings on a live server and the grader has none: start one (the "
                     "course's model, as Lab 04 does) and set ROCMLAB_SERVE_URL=http://HOST:PORT in the grader's "
                     "environment, then run rocmlab grade --exchange again")
    return rep
