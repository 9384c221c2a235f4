"""Lab 05's graded task: choose a QuickReduce codec and block size for each message.

Each grade draws four fresh scenarios: a float16 message of some size, an error budget (relative L2
error of one encode/decode), the kind of data, and the link (MI300X's xGMI mesh or H200's NVSwitch, 2 to
8 GPUs). The learner's ``choose(s)`` returns ``(codec, block_size)`` for a scenario ``s``. A choice is
right when

- its **exact** error, measured here by :mod:`rocmlab.comm.torch_codec` on fresh data of that kind
  (samples the learner never saw), is within the budget, and
- its two-shot time in the cost model (:mod:`rocmlab.comm.costmodel`) is within 1 % of the fastest
  choice that meets the budget (``fp``, no codec, always does: its error is 0).

An option's error is itself random: it changes from one sample of a kind to the next, little on
``normal`` data (over 2000 samples of 32768 values, within 0.96x to 1.04x of its median) and a lot on
``heavy-tailed`` and ``outliers`` data (0.54x to 1.69x: one huge value, or the outlier channels' gains,
move it). So the grader measures every option's error on :data:`SAMPLES` independent fresh samples of the
kind, and widens their range on each side by the kind's :data:`MARGINS` (8 % for normal data, 50 % for the
other two): the option's **zone**, the errors a sample of the learner's own (``1 << 15`` values, any seed) can
show. Then a choice is

- **over the budget** only when its whole zone is (every sample a learner could draw says so), and
- **the fastest** when no option whose whole zone is within the budget is faster (by 1 %).

An option whose zone straddles the budget may be chosen or passed over: which way a learner's own sample
points is luck, not method. So the learner who measures every option on a sample of their own and takes the
fastest within the budget earns every point, and block sizes are still asked where the noise allows (on
``normal`` data block 16's zone and block 256's are apart for q4, q6 and q8). Measured with errors drawn from those 2000
samples per kind, the learner's sample independent of the grader's: see ``benchmarks/results/README.md``
(Lab 05's task). Budgets are drawn freely; two roles keep the wrong answers caught: one scenario's budget is
below every Q4 zone, and the largest message's is above them all. Everything here runs on a CPU: the grade
is the same on any machine.

The grader's measurements and rule (every option's error on fresh samples, the fastest within the budget) are the
task's answer, so they live in :mod:`.reference`, which a workshop withholds from learners as it does Labs 03 and
07's: this module holds the scenario, the zones, the cost model's time and the grade's wording. Where the reference
is withheld (a learner's server, ``ROCMLAB_REFERENCES=off``) a grade is a preview: it checks that every answer is a
codec and block size (2 points), shows each choice's error on one fresh sample, and says that the four choices
(8 points) are judged by the instructor's grader; the scenarios' budgets are drawn freely there.

    s = Scenario(...)                       # what the learner's function receives
    grade(choose)                           # a Report; points recorded for 05-quickreduce-tuning
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from rocmlab.comm import costmodel as CM
from rocmlab.comm import torch_codec as C
from rocmlab.course import tasks as T
from rocmlab.grader import pyanswer
from rocmlab.withheld import MESSAGE
from rocmlab.workshop.references import ReferencesWithheld

LAB, TASK = "05-quickreduce-tuning", "codec-per-message"
TITLE = "Lab 05 task: a codec and block size per message size"
KINDS = ("normal", "heavy-tailed", "outliers")
SYSTEMS = ("MI300X", "H200")
#: message size ranges (bytes) of the four scenarios, smallest first
SIZE_RANGES = ((16 << 10, 512 << 10), (1 << 20, 16 << 20), (32 << 20, 256 << 20), (256 << 20, 1 << 30))
BUDGET_RANGE = (0.004, 0.3)
#: An option's zone, per kind of data: this far below its smallest and above its largest error on the grader's
#: samples. From 2000 samples per kind: normal data stays within 0.96x-1.04x of its median (8 % covers a learner's
#: sample however the grader's four fall); heavy-tailed and outliers data move 0.54x-1.69x (50 %: in 120 000
#: simulated scenarios no right choice fell outside; 30 % let one through).
MARGINS = {"normal": 0.08, "heavy-tailed": 0.50, "outliers": 0.50}
FAST_TOL = 0.01      # "fastest": within 1 % of the best time
SAMPLE = 1 << 15     # values per error measurement
SAMPLES = 4          # independent fresh samples per kind on which the grader measures every option's error


@dataclass(frozen=True)
class Scenario:
    """What ``choose`` receives. ``message_bytes``: a float16 all-reduce message; ``budget``: the largest
    relative L2 error of one encode/decode you may accept; ``kind``: the data (as
    ``torch_codec.activations(kind, ...)`` draws it); ``system``, ``world``: the link (``costmodel.latency``)."""
    message_bytes: int
    budget: float
    kind: str
    system: str
    world: int

    def label(self) -> str:
        return (f"{_size(self.message_bytes)}, {self.kind}, budget {self.budget:.3g}, "
                f"{self.world} x {self.system}")


def options() -> list[tuple[str, int]]:
    """Every (codec, block size) pair: fp once (it has no blocks), each quantized codec at each block."""
    return [("fp", 32)] + [(c, b) for c in C.QUANTIZED for b in C.BLOCK_SIZES]


def _size(n: int) -> str:
    return f"{n / 2**20:.3g} MB" if n >= 2**20 else f"{n / 2**10:.3g} KB"


def zone(errs: tuple[float, ...], kind: str) -> tuple[float, float]:
    """The errors a learner's own sample of ``kind`` can show for one option: :data:`MARGINS` beyond the smallest
    and the largest of the grader's samples."""
    m = MARGINS[kind]
    return min(errs) * (1 - m), max(errs) * (1 + m)


def time_us(choice: tuple[str, int], s: Scenario) -> float:
    name, block = choice
    return CM.latency(C.get_codec(name, block), s.message_bytes, s.system, s.world)["total_s"] * 1e6


@dataclass(frozen=True)
class Judged:
    """How the grade sees one answer: ``verdict`` is "over" (over the budget on any sample), "slower" (an option
    within the budget on any sample is faster by more than :data:`FAST_TOL`) or "right"; ``near``: the answer's zone
    straddles the budget; ``fastest``, ``fastest_us``: the fastest option within the budget on any sample."""
    verdict: str
    near: bool
    mine_us: float
    fastest: tuple[str, int]
    fastest_us: float


def _rule():
    """The grader's measurements and rule (:mod:`.reference`): ``ReferencesWithheld`` where the instructor holds
    them (a workshop learner's server, ``ROCMLAB_REFERENCES=off``; its file locked, if the setting was cleared)."""
    try:
        from rocmlab.course.labs.lab05_quickreduce_tuning import reference
    except PermissionError:
        raise ReferencesWithheld(MESSAGE.format(what=f"{__package__}.reference")) from None
    return reference


def _log_uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return math.exp(math.log(lo) + float(torch.rand(1, generator=g)) * (math.log(hi) - math.log(lo)))


def _scenarios(seed: int, q4_zones=None) -> list[Scenario]:
    """The four scenarios of a grade with ``seed``. ``q4_zones(kinds)``: per kind drawn, the Q4 options' zones on the
    grader's samples, which give two budgets their roles (:func:`draw`); without it every budget is drawn freely
    from :data:`BUDGET_RANGE` (the same messages, kinds and links)."""
    g = torch.Generator().manual_seed(seed)
    kinds = [KINDS[int(torch.randint(0, len(KINDS), (1,), generator=g))] for _ in SIZE_RANGES]
    zones = q4_zones(kinds) if q4_zones is not None else None
    tight = int(torch.randint(0, len(SIZE_RANGES) - 1, (1,), generator=g))
    out = []
    for i, (lo, hi) in enumerate(SIZE_RANGES):
        nbytes = int(_log_uniform(g, lo, hi)) // C.QR_ATOM_BYTES * C.QR_ATOM_BYTES
        if zones is None:
            b = _log_uniform(g, *BUDGET_RANGE)
        elif i == tight:
            b = _log_uniform(g, BUDGET_RANGE[0], min(z[0] for z in zones[kinds[i]]))
        elif i == len(SIZE_RANGES) - 1:
            top = max(z[1] for z in zones[kinds[i]])
            b = _log_uniform(g, top, max(BUDGET_RANGE[1], top * 1.5))
        else:
            b = _log_uniform(g, *BUDGET_RANGE)
        system = SYSTEMS[int(torch.randint(0, 2, (1,), generator=g))]
        world = int((2, 4, 8)[int(torch.randint(0, 3, (1,), generator=g))])
        if i == len(SIZE_RANGES) - 1:
            system = "MI300X"      # a quantized codec wins there at every world size (the loose role)
        way = "near" if zones is None else "down" if i == tight else "up" if i == len(SIZE_RANGES) - 1 else "near"
        out.append(Scenario(nbytes, _readable(b, way), kinds[i], system, world))
    return out


def draw(seed: int) -> tuple[list[Scenario], dict[str, dict]]:
    """Four scenarios and, per kind, the grader's exact errors of every option on its own :data:`SAMPLES` fresh
    samples (``{kind: {option: (error on sample 1, ...)}}``): :func:`.reference.draw`, held by the instructor in a
    workshop (``ReferencesWithheld`` there).

    Roles make the task honest: one scenario's budget is below every Q4 option's zone (a codec chosen without
    looking at the budget fails), and the largest message's is above them all (always sending fp16 fails)."""
    return _rule().draw(seed)


def scenarios(seed: int) -> list[Scenario]:
    """The four scenarios a grade with ``seed`` asks. Where the grader's measurements are held by the instructor
    (a workshop learner's server), the same messages, kinds and links with every budget drawn freely."""
    try:
        return draw(seed)[0]
    except ReferencesWithheld:
        return _scenarios(seed)


def _readable(b: float, way: str) -> float:
    """``b`` to 4 significant digits (what the learner reads), rounded toward its role's side: "down" for the tight
    budget, "up" for the loose one, "near" otherwise."""
    unit = 10.0 ** (math.floor(math.log10(b)) - 3)
    return round({"down": math.floor, "up": math.ceil, "near": round}[way](b / unit) * unit, 12)


def _parse(answer) -> tuple[str, int]:
    """A (codec, block) the codec library accepts, or ValueError naming the problem."""
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise ValueError(f"return a pair (codec, block_size), e.g. ('q4', 32); got {answer!r}")
    name, block = answer
    codec = C.get_codec(name, int(block))      # CodecError (a ValueError) names the codecs and blocks allowed
    return codec.name, (32 if not codec.quantized else codec.block_size)


def grade(choose, seed: int | None = None, record: bool = True):
    """Grade ``choose(scenario) -> (codec, block_size)`` on four fresh scenarios."""
    started = time.monotonic()
    seed = T.draw_seed(seed)
    try:
        scenarios, samples = draw(seed)
    except ReferencesWithheld:          # a learner's preview in a workshop: the rule is the instructor's
        scenarios, samples = _scenarios(seed), None
    answers, problems = [], []
    for s, (value, err) in zip(scenarios, pyanswer.answers(choose, scenarios), strict=True):
        try:
            if err:
                raise RuntimeError(err)
            answers.append(_parse(value))
        except Exception as exc:   # noqa: BLE001 - a learner's function can fail in many ways: report it
            answers.append(None)
            problems.append(f"{s.label()}: {exc}" if err else f"{s.label()}: {type(exc).__name__}: {exc}")
    checks = [T.verdict(not problems, "answers", "static", 2,
                        f"{len(scenarios)} answers, each a codec and block size the codec library accepts",
                        "; ".join(problems), "return e.g. ('q6', 64) or ('fp', 32); codecs: "
                        + ", ".join(C.CODECS) + f"; blocks: {C.BLOCK_SIZES}")]
    for i, (s, a) in enumerate(zip(scenarios, answers, strict=True), 1):
        cid = f"message-{i}"
        if a is None:
            checks.append(T.not_run(cid, "compare", 2, f"{s.label()}: no valid answer"))
            continue
        if samples is None:
            checks.append(T.skipped(cid, "compare", 2, f"{s.label()}: you chose {a[0]} block {a[1]}, error "
                                    f"{_one_error(s, a, seed + i):.4f} on one fresh sample of this kind. {HELD}"))
            continue
        j = _rule().judge(s, samples[s.kind], a)
        err = sum(samples[s.kind][a]) / SAMPLES
        what = f"{s.label()}: you chose {a[0]} block {a[1]}"
        if j.verdict == "over":
            checks.append(T.failed(cid, "compare", 2, f"{what}: exact error {err:.4f} (mean of {SAMPLES} fresh "
                                   f"samples) is over the budget {s.budget:.4g} on any sample of this size",
                                   "measure each codec's error on data of this kind "
                                   "(torch_codec.error_metrics); smaller blocks err less"))
        elif j.verdict == "slower":
            (bname, bblock) = j.fastest
            checks.append(T.failed(cid, "compare", 2, f"{what}: error {err:.4f} vs budget {s.budget:.4g}, "
                                   f"but {j.mine_us:.1f} us; {bname} block {bblock} takes {j.fastest_us:.1f} us in the "
                                   "cost model and is within the budget on any sample", "time every option within "
                                   "the budget with costmodel.latency; larger blocks send fewer scale bytes"))
        else:
            near = " (its error is within the samples' noise of the budget: accepted either way)" if j.near else ""
            checks.append(T.passed(cid, "compare", 2, f"{what}: error {err:.4f} vs budget {s.budget:.4g} and "
                                   f"{j.mine_us:.1f} us, the fastest within the budget{near}"))
    backend = "cpu (exact codec errors and the cost model)" if samples is not None else \
        "cpu (a preview: the answers only; the instructor's grader judges the choices)"
    return T.finish(LAB, TASK, TITLE, checks, backend, "any machine: the same grade everywhere", seed, started,
                    record)


#: What a learner's preview says for each choice where the grader's measurements are held by the instructor.
HELD = ("Not checked here: within the budget, and the fastest such choice? The instructor's grader decides: it "
        "measures every option on fresh samples, the task's answer, which this hub holds with the instructor. "
        "Hand in to have it graded")


def _one_error(s: Scenario, answer: tuple[str, int], seed: int) -> float:
    """The exact error of ``answer`` alone on one fresh sample of ``s.kind`` (what a preview can say)."""
    x = C.activations(s.kind, SAMPLE, seed=seed)
    return C.error_metrics(x, C.decode_reference(C.encode_reference(x, C.get_codec(*answer)))).rel_l2


def reference_choose(s: Scenario, seed: int = 12345) -> tuple[str, int]:
    """The reference answer (:func:`.reference.choose`: withheld from learners in a workshop)."""
    return _rule().choose(s, seed)


def wrong_answers() -> dict:
    """Typical wrong answers, each caught by the grade."""
    return {"always q4 block 32 (ignores the budget)": lambda s: ("q4", 32),
            "always fp (ignores the link and the size)": lambda s: ("fp", 32),
            "q8 at block 16 whenever fp16 is too big (ignores the cost model)":
                lambda s: ("fp", 32) if s.message_bytes < (1 << 20) else ("q8", 16)}
