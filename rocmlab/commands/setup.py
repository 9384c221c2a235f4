"""``rocmlab setup PART``: build or install one optional part of the course with the set-up script the package
carries (a checkout's ``scripts/setup``, a wheel's ``rocmlab/_setup``): the same script ``./go setup`` runs, so a
wheel user needs no checkout.

=============  =========================  ======================================================================
part           script                     what it gives
=============  =========================  ======================================================================
``rocm-root``  ``20-rocm-root.sh``        the offline ROCm 7.2.4 root: HIP compiles for gfx942 on a machine with
                                          no AMD compiler (as root; Debian's archive over the network)
=============  =========================  ======================================================================
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from rocmlab import paths

#: part -> (script, what it is for)
PARTS = {"rocm-root": ("20-rocm-root.sh", "the offline ROCm root: compile HIP for AMD targets without an AMD "
                                          "compiler installed (needs root, debootstrap and bubblewrap)")}


def add_parser(sub):
    p = sub.add_parser("setup", help="build an optional part of the course (rocm-root: the offline AMD compiler)")
    p.add_argument("part", choices=sorted(PARTS), help="; ".join(f"{k}: {v[1]}" for k, v in PARTS.items()))
    p.add_argument("--needed", action="store_true", help="only say whether this machine needs it (exit 0: needed)")
    p.set_defaults(func=run)


def command(part: str, needed: bool = False) -> list[str]:
    """The command line ``rocmlab setup PART`` runs."""
    script = paths.setup_dir() / PARTS[part][0]
    return [shutil.which("bash") or "bash", str(script), *(["--needed"] if needed else [])]


def run(args) -> int:
    argv = command(args.part, args.needed)
    if not os.path.isfile(argv[1]):
        print(f"error: the set-up script {argv[1]} is missing from this installation: reinstall rocmlab",
              file=sys.stderr)
        return 2
    env = dict(os.environ, PYTHON=sys.executable)     # the script asks this Python which compilers rocmlab finds
    return subprocess.run(argv, env=env).returncode
