"""``rocmlab`` command line: one module per command in :mod:`rocmlab.commands`.

Each command module defines ``add_parser(subparsers)`` that registers its sub-parser
with ``func=run`` (returning the exit status). Add a command by adding its module name
to ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ("doctor", "lab", "labs", "preflight", "setup", "hip", "grade", "port", "serve", "handin", "progress",
            "seats", "references")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocmlab", description="The rocmlab course: CUDA developers on AMD ROCm.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"rocmlab.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`rocmlab doctor --env | head`): not an error of ours, and no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
