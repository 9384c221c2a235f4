"""``rocmlab grade --exchange DIR``: the command-line side of :func:`rocmlab.workshop.exchange.grade_exchange`."""

from __future__ import annotations

import sys

from rocmlab.workshop import exchange

#: rocmlab grade's own --out default; with --exchange an unset --out means EXCHANGE/grades instead.
GRADE_OUT_DEFAULT = "grades-out"


def run_exchange(args) -> int:
    from rocmlab.grader import batch
    from rocmlab.grader.spec import ExerciseError

    if args.submissions:
        print("error: give either SUBMISSIONS or --exchange DIR, not both", file=sys.stderr)
        return 2
    out = None if args.out in (None, GRADE_OUT_DEFAULT) else args.out
    try:
        if args.assignment:
            name, ids = batch.load_assignment(args.assignment)
        else:
            name, ids = args.exercise, [args.exercise]
        c = exchange.grade_exchange(args.exchange, ids, out, assignment=name, workers=args.workers, seed=args.seed,
                                    time_limit_s=args.time_limit, progress=not args.no_progress)
    except (exchange.ExchangeError, batch.BatchError, ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{c['learners']} learners, {c['handins']} hand-ins: {c['submissions']} latest collected, "
          f"{c['graded']} graded now, {c['skipped']} already graded, {c['returned']} feedback returned")
    print(f"grades: {c['out']}/grades.csv (nbgrader columns); feedback: {args.exchange}/outbound/feedback/LEARNER/")
    return 0
