"""rocmlab references lock|list: take a workshop's reference answers from learners (issue 38).

    rocmlab references lock [--group GID] [--package DIR]   # as root: the hub's set-up, the image's build
    rocmlab references list [--package DIR]                 # what lock takes

The files and the lock are :mod:`rocmlab.workshop.references`. Exit status: 0 ok; 2 bad input (a folder that is not
the rocmlab package, ``lock`` run by a user other than root).
"""

from __future__ import annotations

from pathlib import Path

#: The group that reads the locked references on Kubernetes (:data:`rocmlab.workshop.references.GRADER_GID`,
#: written here too so that ``rocmlab --help`` imports no toolkit).
GRADER_GID = 2000

DESCRIPTION = ("``rocmlab references lock [--group GID] [--package DIR]``: lock this (or DIR's) rocmlab's reference "
               "files root-only (0600), or root and group GID (0640), and its checkout's git history and tests "
               "(0700, owner kept); ``list`` prints them.")


def add_parser(sub):
    p = sub.add_parser("references", help="workshop: lock the reference answers from learners (as root), or list "
                       "them", description=DESCRIPTION)
    p.add_argument("action", choices=("lock", "list"))
    p.add_argument("--group", type=int, default=None, help=f"the group that may read them (Kubernetes: {GRADER_GID})")
    p.add_argument("--package", type=Path, default=None, help="the rocmlab package folder (default: this one)")
    p.set_defaults(func=run, _parser=p)


def run(args) -> int:
    import os

    from rocmlab.workshop import references as R

    if args.package is not None and not (args.package / "workshop" / "references.py").is_file():
        args._parser.error(f"--package {args.package}: not a rocmlab package folder (no workshop/references.py in it)")
    if args.action == "list":
        print("\n".join(map(str, R.locked_paths(args.package))))
        return 0
    if os.geteuid() != 0:
        args._parser.error("lock changes the files' owner to root: run it as root (the image's build, the hub's "
                           "set-up)")
    R.compile_references(args.package)
    locked = R.lock(R.reference_files(args.package), gid=args.group or 0, group_reads=args.group is not None)
    dirs = R.lock(R.checkout_dirs(args.package), gid=args.group or 0, group_reads=args.group is not None)
    who = f"root and group {args.group} (0640)" if args.group is not None else "root only (0600)"
    print(f"locked {len(locked)} reference files: readable by {who}"
          + (f"; and the checkout's {', '.join(p.name for p in dirs)}" if dirs else ""))
    return 0
