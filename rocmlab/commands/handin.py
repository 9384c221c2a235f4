"""rocmlab handin: hand in any graded item to the workshop's exchange, and read the feedback that comes back."""

from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub):
    p = sub.add_parser("handin", help="hand in a graded item to the workshop exchange (or read its feedback)",
                       description="Hand in FILE for ITEM: it goes to $ROCMLAB_EXCHANGE/inbound/LEARNER/ITEM/ "
                                   "(the hub sets ROCMLAB_EXCHANGE and JUPYTERHUB_USER). ITEM is an exercise id "
                                   "(vector-add: a .hip file) or LAB/TASK for a lab task or a puzzle (a .py file "
                                   "with your function or @triton.jit kernel) or a question (a .json file such as "
                                   '{"line": 19}); `rocmlab grade --list` lists them. Hand in as often as you '
                                   "like: the latest is graded, by the instructor's grader, in a sandbox.")
    p.add_argument("exercise", nargs="?", metavar="ITEM", help="the graded item's id (rocmlab grade --list)")
    p.add_argument("file", nargs="?", help="your answer file (.hip, .py or .json, as the item takes)")
    p.add_argument("--feedback", action="store_true", help="print the instructor's feedback for ITEM instead")
    p.add_argument("--learner", default=None, help="your name (default: $JUPYTERHUB_USER)")
    p.add_argument("--exchange", default=None, help="the exchange folder (default: $ROCMLAB_EXCHANGE)")
    p.add_argument("--prepare", metavar="LEARNER", nargs="+", default=None,
                   help="instructor: make these learners' folders in the exchange (the hub does it on spawn)")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.course.handin import no_exchange, self_study_text
    from rocmlab.grader import items
    from rocmlab.grader.spec import ExerciseError
    from rocmlab.workshop import exchange

    try:
        if args.prepare:
            root = exchange.exchange_dir(args.exchange)
            for name in args.prepare:
                print(f"ready: {exchange.prepare_learner(root, name)}")
            return 0
        if not args.exercise:
            print("error: name the ITEM (rocmlab grade --list shows them)", file=sys.stderr)
            return 2
        item = items.get(args.exercise)
        if args.feedback:
            fb = exchange.feedback(item.id, args.learner, args.exchange)
            print(f"{item.id}: {fb.info.get('earned', 0):g} / {fb.info.get('possible', 0):g} points "
                  f"(instructor-graded) for hand-in {fb.info.get('handin')}")
            print(fb.text)
            return 0
        if not args.file:
            print(f"error: name the FILE to hand in: rocmlab handin {item.id} FILE{item.suffix}", file=sys.stderr)
            return 2
        suffix = Path(args.file).suffix
        if not item.accepts(suffix):
            given = suffix or "a file without a suffix"
            print(f"error: {item.id} ({item.kind}) takes a {item.suffix} file, not {given}: hand in your answer "
                  f"as {items.flat(item.id)}{item.suffix}", file=sys.stderr)
            return 2
        if no_exchange(args.exchange):
            print(f"not handed in: {self_study_text(item.id)}", file=sys.stderr)
            return 2
        path = exchange.handin(item.id, args.file, args.learner, args.exchange)
    except (exchange.ExchangeError, ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:                  # the exchange folder itself: gone, full, not writable
        print(f"error: {exc.strerror or exc} ({exc.filename or 'the exchange'}): check the exchange folder "
              "($ROCMLAB_EXCHANGE) and ask the instructor", file=sys.stderr)
        return 2
    print(f"handed in {args.file} as {path.name} ({item.id}); the latest hand-in is the one the instructor grades")
    return 0
