"""Lab 05 task's reference method and the grader's measurements, which are the same thing: measure every option's
exact error on fresh samples, keep those within the budget, take the fastest in the cost model. Withheld from
learners in a workshop (:mod:`rocmlab.workshop.references`): the modules a learner reads (:mod:`.task`,
:mod:`.scenario`) hold the scenario, the zones, the cost model's time and the grade's wording, not the method that
answers it. The
instructor's grade (and a self-study install) loads this module; a learner's preview grades without it and says so.
"""

from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
from rocmlab.comm import torch_codec as C  # noqa: E402 - after the guard
from rocmlab.course.labs.lab05_quickreduce_tuning import scenario as S  # noqa: E402


def errors(kind: str, seed: int, numel: int = S.SAMPLE) -> dict[tuple[str, int], float]:
    """The exact relative L2 error of every option on one fresh sample of ``kind``."""
    x = C.activations(kind, numel, seed=seed)
    out = {}
    for name, block in S.options():
        codec = C.get_codec(name, block)
        out[(name, block)] = C.error_metrics(x, C.decode_reference(C.encode_reference(x, codec))).rel_l2
    return out


def spread(kind: str, seeds) -> dict[tuple[str, int], tuple[float, ...]]:
    """Every option's exact error on each of several independent fresh samples of ``kind``, one per seed."""
    per_sample = [errors(kind, s) for s in seeds]
    return {o: tuple(e[o] for e in per_sample) for o in S.options()}


def best(s, errs: dict) -> tuple[tuple[str, int], float]:
    """The fastest option within the budget (by the cost model), and its time in us."""
    ok = [o for o in S.options() if errs[o] <= s.budget]
    t = {o: S.time_us(o, s) for o in ok}
    o = min(t, key=t.get)
    return o, t[o]


def judge(s, samples: dict[tuple[str, int], tuple[float, ...]], answer: tuple[str, int]) -> "S.Judged":
    """The grade's rule for ``answer`` on scenario ``s``, given the grader's errors of every option on its samples
    of ``s.kind``: a choice is judged by its :func:`.scenario.zone`."""
    zones = {o: S.zone(v, s.kind) for o, v in samples.items()}
    fastest, fastest_us = best(s, {o: z[1] for o, z in zones.items()})
    lo, hi = zones[answer]
    mine = S.time_us(answer, s)
    verdict = "over" if lo > s.budget else "slower" if mine > fastest_us * (1 + S.FAST_TOL) else "right"
    return S.Judged(verdict, hi > s.budget, mine, fastest, fastest_us)


def draw(seed: int) -> tuple[list, dict[str, dict]]:
    """Four scenarios (:func:`.scenario.draw`, two budgets given their roles by the Q4 zones) and, per kind
    drawn, the grader's exact errors of every option on its own :data:`.scenario.SAMPLES` fresh samples
    (``{kind: {option: (error on sample 1, ...)}}``)."""
    errs = {}

    def q4_zones(kinds):
        for i, k in enumerate(S.KINDS):
            if k in kinds:
                errs[k] = spread(k, [seed + 1 + S.SAMPLES * i + j for j in range(S.SAMPLES)])
        return {k: [S.zone(v, k) for (n, _), v in e.items() if n == "q4"] for k, e in errs.items()}

    return S.draw(seed, q4_zones), errs


def choose(s, seed: int = 12345) -> tuple[str, int]:
    """The right method: measure every option's error on a sample of one's own, keep those within the
    budget, and take the fastest in the cost model."""
    return best(s, errors(s.kind, seed))[0]
