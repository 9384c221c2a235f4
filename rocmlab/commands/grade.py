"""rocmlab grade: grade a folder of HIP submissions in parallel; resumable; gradebook CSVs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rocmlab import settings


def _workers(text: str) -> int:
    """--workers: a whole number from 1 to 64 (argparse turns the ValueError into exit 2 with this message)."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give 1 to 64") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"{n} workers: give 1 to 64 (1 grades one hand-in at a time)")
    return n


def _check_out(out: str) -> str:
    """'' when --out can hold the results (a folder, or a path that can become one), else the problem."""
    p = Path(out)
    for q in (p, *p.parents):
        if q.exists() or q.is_symlink():
            if not q.is_dir():
                return f"--out {out}: {q} is not a folder (a file is in the way): give a folder for the results"
            return ""
    return ""


#: rocmlab grade's own --out default; with --exchange an unset --out means EXCHANGE/grades instead.
GRADE_OUT_DEFAULT = "grades-out"


def add_parser(sub):
    p = sub.add_parser("grade", help="grade a folder of submissions (grades.csv + per-learner feedback)")
    p.add_argument("submissions", nargs="?", help="folder with LEARNER.hip or LEARNER/EXERCISE.hip")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--exercise", help="the graded item: an exercise id, or LAB/TASK for a lab task, a puzzle or a "
                   "question (rocmlab grade --list shows them all)")
    g.add_argument("--assignment", help="YAML file: name: NAME, exercises: [ID, ...]")
    g.add_argument("--list", action="store_true", help="list every graded item (exercises, lab tasks, puzzles, "
                   "questions) and exit")
    p.add_argument("--out", default=GRADE_OUT_DEFAULT, help="where results/, feedback/ and the CSVs go")
    p.add_argument("--workers", type=_workers, default=max(1, min(4, os.cpu_count() or 1)),
                   help="parallel graders (default: CPU cores, at most 4)")
    p.add_argument("--seed", type=int, default=None, help="fixed input seed (default: a fresh secret one each)")
    p.add_argument("--seed-file", default=None, help="read the fixed seed from this file (mode 600): unlike --seed it "
                   "stays off the command line, which every user of the machine can read in /proc")
    p.add_argument("--time-limit", type=settings.time_limit_arg("--time-limit"), default=None,
                   help="seconds per program run (default: the exercise spec's timeout_s, else "
                        f"{settings.RUN_TIME_LIMIT_S:g})")
    p.add_argument("--no-progress", action="store_true")
    # workshop: collect the latest hand-ins from an exchange, grade them, return feedback (rocmlab.workshop)
    p.add_argument("--exchange", default=None, help="a workshop exchange folder to grade instead of SUBMISSIONS "
                   "(latest hand-in per learner; feedback to outbound/feedback/; --out defaults to DIR/grades)")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.grader import batch
    from rocmlab.grader import items
    from rocmlab.grader.spec import ExerciseError
    from rocmlab.sandbox import Terminated

    if args.list:
        for it in items.all_items().values():
            print(f"{it.id:<44} {it.kind:<9} {it.suffix:<6} {it.possible:>4g} points  {it.title}")
        return 0
    if getattr(args, "seed_file", None):
        from rocmlab.workshop.grading import SeedFileError, read_seed_file

        try:
            args.seed = read_seed_file(args.seed_file, args.seed)
        except SeedFileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    problem = _check_out(args.out) if args.out else ""
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.exchange:
        try:
            os.stat(args.exchange)
        except OSError as exc:        # a name too long for the file system, a folder that cannot be entered ...
            if not isinstance(exc, FileNotFoundError):
                shown = args.exchange if len(args.exchange) <= 120 else args.exchange[:60] + "..." + args.exchange[-20:]
                print(f"error: --exchange {shown}: {exc.strerror}: give the exchange folder's path", file=sys.stderr)
                return 2
        return _run_exchange(args)
    if not args.submissions:
        print("error: give the SUBMISSIONS folder (or --exchange DIR)", file=sys.stderr)
        return 2
    try:
        if args.assignment:
            name, ids = batch.load_assignment(args.assignment)
        else:
            name, ids = args.exercise, [args.exercise]
        counts = batch.grade_folder(args.submissions, ids, args.out, assignment=name, workers=args.workers,
                                    seed=args.seed, time_limit_s=args.time_limit, progress=not args.no_progress)
    except (batch.BatchError, ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc} ({exc.filename or args.out}): check --out and the submissions folder",
              file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        done = len(list((Path(args.out) / "results").glob("*.json")))
        print(f"interrupted: every program was stopped; {done} finished result(s) kept in {args.out}/results. "
              "Run the same command again to grade only what is missing.", file=sys.stderr)
        return 130 if isinstance(exc, KeyboardInterrupt) else 143
    print(f"{counts['submissions']} submissions: {counts['graded']} graded now, {counts['skipped']} already graded")
    if counts.get("not_graded"):
        print(f"{counts['not_graded']} not graded because of a fault of this machine (see their feedback): fix it "
              "and run the same command again to grade them", file=sys.stderr)
    print(f"grades: {args.out}/grades.csv (nbgrader columns), {args.out}/grades_by_check.csv (per check); "
          f"feedback: {args.out}/feedback/LEARNER/EXERCISE.txt")
    return 0


def _run_exchange(args) -> int:
    """``rocmlab grade --exchange DIR``: collect the latest hand-ins, grade them, return the feedback
    (:func:`rocmlab.workshop.exchange.grade_exchange`), and say what was done."""
    from rocmlab.grader import batch
    from rocmlab.grader.spec import ExerciseError
    from rocmlab.workshop import exchange

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
    for r in c.get("refused", []):
        print(f"not graded: {r.learner}'s {r.exercise} hand-in {r.name}: {r.reason}")
    print(f"grades: {c['out']}/grades.csv (nbgrader columns); feedback: {args.exchange}/outbound/feedback/LEARNER/")
    return 0
