"""rocmlab progress: the learner's points per lab task and per exercise, self-checked here and instructor-graded,
shown apart."""

from __future__ import annotations

import json
import sys


def add_parser(sub):
    p = sub.add_parser("progress", help="your points per lab and per exercise: self-checked here (a preview) and "
                       "instructor-graded (the grade of record)")
    p.add_argument("--json", action="store_true", help="machine-readable output: an entry per lab (by its "
                   "notebook's file stem, e.g. 03-pytorch-on-rocm) and per exercise")
    p.add_argument("--exchange", default=None, help="the workshop exchange to read instructor grades from "
                   "(default: $ROCMLAB_EXCHANGE; none: self-study)")
    p.add_argument("--learner", default=None, help="whose grades (default: $JUPYTERHUB_USER, else $USER)")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.course import progress

    summ = progress.summary(exchange=args.exchange, learner=args.learner)
    if summ["problem"]:          # the local record is not usable: one message, the file left as it is
        print(f"error: {summ['problem']}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"record": str(progress.progress_file()), **summ}, indent=1))
        return 0
    rows = progress.table_rows(summ)
    widths = [max(len(str(r[i])) for r in [progress.HEADER, *rows]) for i in range(len(progress.HEADER))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(f"rocmlab progress — self-checked record: {progress.progress_file()}")
    print(f"instructor grades: {summ['instructor_source']}\n")
    print(line.format(*progress.HEADER))
    for r in rows:
        print(line.format(*r))
    print("\n" + progress.LEGEND)
    return 0
