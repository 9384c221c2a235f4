"""rocmlab preflight: run every lab headless with quick parameters.

Exit status: 0 every lab passed, 1 some lab failed (summary.md names the error and the cell),
2 bad input (no labs folder, no notebooks, a bad --timeout).
"""

from __future__ import annotations

import sys
from pathlib import Path

from rocmlab import settings


def add_parser(sub):
    p = sub.add_parser("preflight", help="run every lab headless and summarise (the instructor's check)")
    p.add_argument("--labs", default=None, help="folder of notebooks (default: the course's labs/)")
    p.add_argument("--out", default="preflight-out", help="where executed notebooks and the summary go")
    p.add_argument("--full", action="store_true", help="full sizes instead of quick=True")
    p.add_argument("--only", default=None, help="run only notebooks whose name contains this")
    p.add_argument("--timeout", type=settings.time_limit_arg("--timeout", maximum=settings.PREFLIGHT_MAX_CELL_TIME_S),
                   default=settings.PREFLIGHT_CELL_TIME_LIMIT_S, metavar="S",
                   help=f"seconds per cell before a lab is failed (default {settings.PREFLIGHT_CELL_TIME_LIMIT_S:g})")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab import preflight
    from rocmlab.paths import labs_dir

    labs = args.labs or labs_dir()
    try:
        results = preflight.run(labs, args.out, quick=not args.full, timeout_s=args.timeout, only=args.only)
    except preflight.PreflightError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print((Path(args.out) / "summary.md").read_text())
    print(f"executed notebooks and summary.json/.md/.html in {args.out}/")
    failed = [r for r in results if r.status == "failed"]
    for r in failed:
        print(f"FAILED {r.lab} ({r.where()}): {r.error}", file=sys.stderr)
    return 1 if failed else 0
