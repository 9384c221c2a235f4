"""rocmlab lab: open JupyterLab on the course's labs/ folder, with the course's JupyterLab settings.

The settings live in the package (``rocmlab/jupyter/``) and reach JupyterLab through its own search paths,
so nothing is written into the learner's settings (they can still change everything):

- ``labextensions/rocmlab-hip-highlight``: ``.hip``, ``.cu`` and ``.cuh`` files open in the editor with C++
  highlighting (a tiny prebuilt extension, no build step);
- ``labconfig/default_setting_overrides.d/rocmlab.json``: no news pop-up and no update check on the first
  start (``@jupyterlab/apputils-extension:notification``).

A wheel installs the same two folders under ``share/jupyter`` and ``etc/jupyter``, so a plain ``jupyter lab``
(a JupyterHub's single-user servers) gets them too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

#: The course's JupyterLab data and config folder (labextensions/, labconfig/).
JUPYTER_DIR = Path(__file__).resolve().parents[1] / "jupyter"


def add_parser(sub):
    p = sub.add_parser("lab", help="start JupyterLab on labs/ (extra arguments go to jupyter lab)")
    p.add_argument("--labs", default=None, help="folder of notebooks (default: the checkout's labs/; from an "
                   "installed wheel, ~/rocmlab-labs, where the labs are copied first)")
    p.add_argument("jupyter_args", nargs="*", help="passed to jupyter lab, after --")
    p.set_defaults(func=run)


def command(labs: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={labs}", *extra]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")   # jupyter refuses root without it (containers run as root)
    return cmd


def jupyter_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's) with the course's folder first on JUPYTER_PATH (its labextensions/)
    and JUPYTER_CONFIG_PATH (its labconfig/): what ``rocmlab lab`` and the browser tests start JupyterLab with."""
    env = dict(os.environ if env is None else env)
    for var in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH"):
        rest = [p for p in env.get(var, "").split(os.pathsep) if p and p != str(JUPYTER_DIR)]
        env[var] = os.pathsep.join([str(JUPYTER_DIR), *rest])
    return env


def run(args) -> int:
    from rocmlab import catalog
    from rocmlab.paths import labs_dir

    labs = args.labs
    if labs is None and catalog.from_checkout():
        labs = str(labs_dir())
    elif labs is None:
        # installed from a wheel: the notebooks inside the package are the course's copy, not the learner's
        dest = catalog.default_dest()
        try:
            copied, kept = catalog.copy_labs(dest)
        except catalog.LabsCopyError as exc:
            print(f"error: {exc}; or pass --labs DIR", file=sys.stderr)
            return 2
        print(f"rocmlab: the labs are in {dest} ({len(copied)} files copied now, {len(kept)} of yours kept)")
        labs = str(dest)
    if not os.path.isdir(labs):
        print(f"error: labs folder '{labs}' does not exist; pass --labs DIR", file=sys.stderr)
        return 2
    if shutil.which("jupyter") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "jupyter")):
        print("error: JupyterLab is not installed here; run ./go setup (or pip install jupyterlab)", file=sys.stderr)
        return 2
    cmd = command(labs, args.jupyter_args)
    os.execve(cmd[0], cmd, jupyter_env())
