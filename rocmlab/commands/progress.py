"""rocmlab progress: the learner's points per lab task and per exercise (earned, earnable here, possible)."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("progress", help="your points per lab and per exercise: earned, earnable here, possible")
    p.add_argument("--json", action="store_true", help="machine-readable output: an entry per lab (by its "
                   "notebook's file stem, e.g. 03-pytorch-on-rocm) and per exercise")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.course import progress

    summ = progress.summary()
    if args.json:
        print(json.dumps({"record": str(progress.progress_file()), **summ}, indent=1))
        return 0
    rows = progress.table_rows(summ)
    widths = [max(len(str(r[i])) for r in [progress.HEADER, *rows]) for i in range(len(progress.HEADER))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(f"rocmlab progress — {progress.progress_file()}\n")
    print(line.format(*progress.HEADER))
    for r in rows:
        print(line.format(*r))
    print("\n'earnable here' is what this machine could check on your last graded attempt ('-': not tried yet); "
          "'possible' is the task's worth on an MI300X.")
    return 0
