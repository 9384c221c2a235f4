"""rocmlab lab: open JupyterLab on the course's labs/ folder."""

from __future__ import annotations

import os
import shutil
import sys


def add_parser(sub):
    p = sub.add_parser("lab", help="start JupyterLab on labs/ (extra arguments go to jupyter lab)")
    p.add_argument("--labs", default=None, help="folder of notebooks (default: the course's labs/)")
    p.add_argument("jupyter_args", nargs="*", help="passed to jupyter lab, after --")
    p.set_defaults(func=run)


def command(labs: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={labs}", *extra]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")   # jupyter refuses root without it (containers run as root)
    return cmd


def run(args) -> int:
    from rocmlab.paths import labs_dir

    labs = args.labs or str(labs_dir())
    if not os.path.isdir(labs):
        print(f"error: labs folder '{labs}' does not exist; pass --labs DIR", file=sys.stderr)
        return 2
    if shutil.which("jupyter") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "jupyter")):
        print("error: JupyterLab is not installed here; run ./go setup (or pip install jupyterlab)", file=sys.stderr)
        return 2
    cmd = command(labs, args.jupyter_args)
    os.execv(cmd[0], cmd)
