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
move it). So the grader measures every option's error on :data:`.scenario.SAMPLES` independent fresh samples of the
kind, and widens their range on each side by the kind's :data:`.scenario.MARGINS` (8 % for normal data, 50 % for the
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
07's: this module holds the grade's wording and :mod:`.scenario` the scenario, the zones and the cost model's time. Where the reference
is withheld (a learner's server, ``ROCMLAB_REFERENCES=off``) a grade is a preview: it checks that every answer is a
codec and block size (2 points), shows each choice's error on one fresh sample, and says that the four choices
(8 points) are judged by the instructor's grader; the scenarios' budgets are drawn freely there.

    s = Scenario(...)                       # what the learner's function receives
    grade(choose)                           # a Report; points recorded for 05-quickreduce-tuning
"""

from __future__ import annotations

import time

from rocmlab.comm import torch_codec as C
from rocmlab.course import tasks as T
from rocmlab.course.labs.lab05_quickreduce_tuning import scenario as S
from rocmlab.course.labs.lab05_quickreduce_tuning.scenario import Scenario
from rocmlab.grader import pyanswer
from rocmlab.withheld import MESSAGE
from rocmlab.workshop.references import ReferencesWithheld

LAB, TASK = "05-quickreduce-tuning", "codec-per-message"
TITLE = "Lab 05 task: a codec and block size per message size"
def _rule():
    """The grader's measurements and rule (:mod:`.reference`): ``ReferencesWithheld`` where the instructor holds
    them (a workshop learner's server, ``ROCMLAB_REFERENCES=off``; its file locked, if the setting was cleared)."""
    try:
        from rocmlab.course.labs.lab05_quickreduce_tuning import reference
    except PermissionError:
        raise ReferencesWithheld(MESSAGE.format(what=f"{__package__}.reference")) from None
    return reference


def draw(seed: int) -> tuple[list[Scenario], dict[str, dict]]:
    """Four scenarios and, per kind, the grader's exact errors of every option on its own :data:`.scenario.SAMPLES`
    fresh samples (``{kind: {option: (error on sample 1, ...)}}``): :func:`.reference.draw`, held by the instructor in a
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
        return S.draw(seed)


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
        scenarios, samples = S.draw(seed), None
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
        err = sum(samples[s.kind][a]) / S.SAMPLES
        what = f"{s.label()}: you chose {a[0]} block {a[1]}"
        if j.verdict == "over":
            checks.append(T.failed(cid, "compare", 2, f"{what}: exact error {err:.4f} (mean of {S.SAMPLES} fresh "
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
HELD = ("Not checked here: whether it is within the budget and the fastest such choice. The instructor's grader "
        "decides that by measuring every option on fresh samples; that method is this task's answer, so this hub "
        "keeps it with the instructor. Hand in to have it graded")


def _one_error(s: Scenario, answer: tuple[str, int], seed: int) -> float:
    """The exact error of ``answer`` alone on one fresh sample of ``s.kind`` (what a preview can say)."""
    x = C.activations(s.kind, S.SAMPLE, seed=seed)
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
