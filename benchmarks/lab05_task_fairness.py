"""Lab 05's graded task (a codec and block size per message): does the right method always earn every point, is
every typical wrong answer caught, and how often is a block size really asked? Simulated over many grades.

An option's error differs from one sample of data to the next. The grade measures every option on its own
fresh samples and accepts any choice that a learner measuring on a sample of their own could make (see
``rocmlab/course/labs/lab05_quickreduce_tuning/task.py``; its measurements are in ``reference.py``). To simulate
many grades quickly, every option's exact error is first measured on POOL independent samples per kind (once,
about 0.05 s a sample); each simulated grade then draws the grader's samples and the learner's own sample from
those pools, independently, and judges the learner's choice (the fastest option within the budget on the learner's
sample) and the wrong answers with the task's own draw, zones and cost model.

    python benchmarks/lab05_task_fairness.py [--pool 2000] [--grades 20000] [--seed 0]

Prints the grades in which the right method lost points (must be 0), the wrong answers not caught (must be 0),
and the share of scenarios in which some codec's block 256 fails while a smaller block of it passes (a block size
asked).
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab.course.labs.lab05_quickreduce_tuning import reference as ref  # noqa: E402
from rocmlab.course.labs.lab05_quickreduce_tuning import scenario as sc  # noqa: E402
from rocmlab.course.labs.lab05_quickreduce_tuning import task as t  # noqa: E402


def pools(n: int) -> dict[str, list[dict]]:
    """Every option's exact error on ``n`` independent samples of each kind."""
    import torch

    torch.set_num_threads(1)      # small tensors: one thread is fastest, and stays fast on a busy machine
    out = {}
    for kind in sc.KINDS:
        started = time.monotonic()
        out[kind] = [ref.errors(kind, 1_000_000 + i) for i in range(n)]
        print(f"{kind}: {n} samples in {time.monotonic() - started:.0f} s", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=int, default=2000, help="samples per kind measured once")
    ap.add_argument("--grades", type=int, default=20000, help="simulated grades (4 scenarios each)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    pool = pools(args.pool)
    rng = random.Random(args.seed)

    sc.time_us = functools.cache(sc.time_us)     # the same few (option, scenario) pairs, timed many times

    def accepted(s, samples, answer):
        return ref.judge(s, samples, answer).verdict == "right"

    def drawn_samples(kind, seeds):        # the grader's samples, from the pool instead of measured again
        rows = [pool[kind][rng.randrange(args.pool)] for _ in seeds]
        return {o: tuple(r[o] for r in rows) for o in sc.options()}

    ref.spread = drawn_samples
    lost = scenarios = asked = 0
    missed = dict.fromkeys(t.wrong_answers(), 0)
    for seed in range(args.seed, args.seed + args.grades):
        drawn, samples = t.draw(seed)
        own = {k: pool[k][rng.randrange(args.pool)] for k in sc.KINDS}     # the learner's sample, independent
        caught = dict.fromkeys(missed, False)
        for s in drawn:
            mine = samples[s.kind]
            lost += not accepted(s, mine, ref.best(s, own[s.kind])[0])
            for name, wrong in t.wrong_answers().items():
                caught[name] |= not accepted(s, mine, wrong(s))
            asked += any(not accepted(s, mine, (c, 256)) and any(accepted(s, mine, (c, b))
                                                                 for b in sc.C.BLOCK_SIZES if b < 256)
                         for c in sc.C.QUANTIZED)
            scenarios += 1
        for name, ok in caught.items():
            missed[name] += not ok
    print(f"{args.grades} grades ({scenarios} scenarios), pools of {args.pool} samples per kind:")
    print(f"  scenarios where the right method lost points: {lost}")
    for name, n in missed.items():
        print(f"  grades where '{name}' was not caught: {n}")
    print(f"  scenarios where a block size below 256 is asked: {asked} ({asked / scenarios:.1%})")
    return 1 if lost or any(missed.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
