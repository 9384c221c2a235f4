"""``rocmlab grade --exchange DIR``: the command-line side of :func:`rocmlab.workshop.exchange.grade_exchange`."""

from __future__ import annotations

import sys

from rocmlab.workshop import exchange

class SeedFileError(ValueError):
    """--seed-file cannot be used: the message says why and the fix."""


def read_seed_file(path, seed_arg: int | None = None) -> int:
    """The grading seed from ``path``: a file only its owner may read (0600 or stricter), holding one integer.
    A seed in a file stays off every command line (``/proc/PID/cmdline`` is world-readable unless /proc is
    mounted with hidepid)."""
    import os
    import stat

    if seed_arg is not None:
        raise SeedFileError("give --seed-file or --seed, not both (--seed-file keeps the seed off the command line)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SeedFileError(f"--seed-file {path}: {exc.strerror}: give the instructor's seed file (the hub writes "
                            "WORK/instructor/grading-seed, mode 600)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SeedFileError(f"--seed-file {path} is not a regular file: give the seed file")
        if st.st_mode & 0o077:
            raise SeedFileError(f"--seed-file {path} is readable by others (mode {st.st_mode & 0o777:o}): "
                                f"chmod 600 {path}, and pick a new seed if learners could read it")
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    try:
        return int(text)
    except ValueError:
        raise SeedFileError(f"--seed-file {path} does not hold one integer: write a number into it, e.g. "
                            f"python3 -c 'import secrets; print(secrets.randbelow(2**31))' > {path}") from None


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
    for r in c.get("refused", []):
        print(f"not graded: {r.learner}'s {r.exercise} hand-in {r.name}: {r.reason}")
    print(f"grades: {c['out']}/grades.csv (nbgrader columns); feedback: {args.exchange}/outbound/feedback/LEARNER/")
    return 0
