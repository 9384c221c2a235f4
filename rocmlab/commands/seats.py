"""rocmlab seats plan|list|release: a workshop node's GPU seats (one logical GPU per learner).

    rocmlab seats plan --gpus 8 --compute CPX --memory NPS4 [--json] [--learners 30]
    rocmlab seats plan --gpus 8 --all                 # every documented mode
    rocmlab seats plan                                # this node's modes, read with amd-smi
    rocmlab seats list|release USER --state FILE      # the hub's assignments (an admin: root or the hub's user)

The seats and the plans are :mod:`rocmlab.workshop.seats`. Exit status: 0 ok; 1 ``release`` freed nothing (the
learner has no seat, or only an admin may change seats); 2 bad input (a plan that cannot be made, more learners
than seats, a state file that is not a seat state file).
"""

from __future__ import annotations

import json
import sys

#: The seat state file of a TLJH hub (binder/tljh/jupyterhub_config.d/rocmlab.py).
STATE_DEFAULT = "/opt/tljh/state/rocmlab-gpus.json"


def add_parser(sub):
    p = sub.add_parser("seats", help="workshop GPU seats: plan them from the partition modes, list or release "
                       "assignments",
                       description="rocmlab workshop GPU seats: plan them from the partition modes, list or release "
                                   "assignments")
    verbs = p.add_subparsers(dest="verb", required=True)
    pl = verbs.add_parser("plan", help="seats a node gives in a partition mode (read from amd-smi, or computed)")
    pl.add_argument("--gpus", type=int, help="physical GPUs on the node (e.g. 8)")
    pl.add_argument("--compute", help="SPX, DPX, QPX or CPX")
    pl.add_argument("--memory", help="NPS1 or NPS4")
    pl.add_argument("--device", default="MI300X", help="the package (datasets/hardware.csv): MI300X, MI325X")
    pl.add_argument("--learners", type=int, help="fail (exit 2) if the plan has fewer seats than this")
    pl.add_argument("--all", action="store_true", help="every documented mode")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=run_plan)
    for name in ("list", "release"):
        sp = verbs.add_parser(name, help=f"{name} GPU seat assignments")
        if name == "release":
            sp.add_argument("user")
        sp.add_argument("--state", default=STATE_DEFAULT)
        sp.set_defaults(func=run)


def run_plan(args) -> int:
    from rocmlab.workshop import seats

    try:
        if args.all:
            plans = seats.every_mode_plan(args.gpus or 8, args.device)
        elif args.compute or args.memory:
            if not (args.compute and args.memory and args.gpus):
                raise seats.PlanError("give --gpus, --compute and --memory together, e.g. --gpus 8 --compute CPX "
                                      "--memory NPS4")
            plans = [seats.plan(args.gpus, args.compute, args.memory, args.device)]
        else:
            parts, why = seats.read_node_partitions()
            if parts is None:
                raise seats.PlanError(f"{why}. Compute a plan instead: --gpus 8 --compute CPX --memory NPS4")
            plans = [seats.plan_from_node(parts, seats.count_gpus(), args.device)]
        if args.learners is not None:
            seats.check_learners(args.learners, plans[-1].seats, f" in {plans[-1].compute}/{plans[-1].memory}")
    except (seats.PlanError, seats.NoFreeGpu) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(plans[0].as_dict() if len(plans) == 1 else [p.as_dict() for p in plans], indent=1))
    else:
        print("\n\n".join(p.text() for p in plans))
    return 0


def run(args) -> int:
    """``list`` and ``release``."""
    from rocmlab.workshop import seats

    try:
        seats.check_state_file(args.state)
        assigner = seats.GpuAssigner(args.state, max(1, seats.count_gpus()))
        if args.verb == "list":
            for user, gpu in sorted(assigner.assignments().items(), key=lambda kv: kv[1]):
                print(f"seat {gpu}: {user}")
            return 0
        released = assigner.release(args.user)
    except seats.StateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(f"error: {exc.filename or args.state}: Permission denied: only an admin (root, or the hub's user) "
              "changes seats", file=sys.stderr)
        return 1
    if not released:
        print(f"{args.user} has no GPU seat")
        return 1
    print(f"released {args.user}'s GPU seat")
    return 0
