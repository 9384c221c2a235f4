"""rocmlab handin: hand an exercise in to the workshop's exchange, and read the feedback that comes back."""

from __future__ import annotations

import sys


def add_parser(sub):
    p = sub.add_parser("handin", help="hand in an exercise to the workshop exchange (or read its feedback)",
                       description="Hand in FILE for EXERCISE: it goes to $ROCMLAB_EXCHANGE/inbound/LEARNER/"
                                   "EXERCISE/ (the hub sets ROCMLAB_EXCHANGE and JUPYTERHUB_USER). Hand in as "
                                   "often as you like: the latest is graded.")
    p.add_argument("exercise", nargs="?", help="exercise id (rocmlab grade --list shows them)")
    p.add_argument("file", nargs="?", help="your HIP source file")
    p.add_argument("--feedback", action="store_true", help="print the feedback for EXERCISE instead")
    p.add_argument("--learner", default=None, help="your name (default: $JUPYTERHUB_USER)")
    p.add_argument("--exchange", default=None, help="the exchange folder (default: $ROCMLAB_EXCHANGE)")
    p.add_argument("--prepare", metavar="LEARNER", nargs="+", default=None,
                   help="instructor: make these learners' folders in the exchange (the hub does it on spawn)")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.grader.spec import ExerciseError
    from rocmlab.workshop import exchange

    try:
        if args.prepare:
            root = exchange.exchange_dir(args.exchange)
            for name in args.prepare:
                print(f"ready: {exchange.prepare_learner(root, name)}")
            return 0
        if not args.exercise:
            print("error: name the EXERCISE (rocmlab grade --list shows them)", file=sys.stderr)
            return 2
        if args.feedback:
            fb = exchange.feedback(args.exercise, args.learner, args.exchange)
            print(f"{args.exercise}: {fb.info.get('earned', 0):g} / {fb.info.get('possible', 0):g} points "
                  f"for hand-in {fb.info.get('handin')}")
            print(fb.text)
            return 0
        if not args.file:
            print(f"error: name the FILE to hand in: rocmlab handin {args.exercise} FILE", file=sys.stderr)
            return 2
        path = exchange.handin(args.exercise, args.file, args.learner, args.exchange)
    except (exchange.ExchangeError, ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:                  # the exchange folder itself: gone, full, not writable
        print(f"error: {exc.strerror or exc} ({exc.filename or 'the exchange'}): check the exchange folder "
              "($ROCMLAB_EXCHANGE) and ask the instructor", file=sys.stderr)
        return 2
    print(f"handed in {args.file} as {path.name} ({args.exercise}); the latest hand-in is the one graded")
    return 0
