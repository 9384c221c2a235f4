"""rocmlab labs DEST: copy the course's notebooks into a folder of your own (the path for an existing
JupyterLab, e.g. AMD Developer Cloud's JupyterLab image, where rocmlab was pip-installed from a wheel)."""

from __future__ import annotations

import sys
from pathlib import Path

from rocmlab import catalog


def add_parser(sub):
    p = sub.add_parser("labs", help="copy the labs into DEST (files you already have there are kept)")
    p.add_argument("dest", help="folder to copy the notebooks into (created if missing)")
    p.set_defaults(func=run)


def run(args) -> int:
    problem = catalog.check_dest_name(args.dest)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    dest = Path(args.dest).expanduser()
    skipped: list[Path] = []
    try:
        copied, kept = catalog.copy_labs(dest, skipped=skipped)
    except catalog.LabsCopyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"copied {len(copied)} files into {dest}" + (f"; kept {len(kept)} you already had there (never overwritten)"
                                                        if kept else ""))
    for s in skipped:
        print(f"skipped {s}: it is a symbolic link inside {dest} (never written through); remove it to get "
              "that part of the labs", file=sys.stderr)
    print(f"open them with: rocmlab lab --labs {dest}   (or in your JupyterLab's file browser)")
    return 0
