"""The graded tasks of Labs 03, 05, 07 and 08 on the machine at hand (Lab 04's needs a live server: see
tests/serve/whole/test_serve_live.py). For each task: the reference answer and every typical wrong answer are graded
on fresh inputs; the table says the points and whether each wrong answer was caught. On a GPU, Lab 03's
speed-up check is timed (device events, slow vs fixed step in the same run) and Lab 08's remap kernel runs
on the GPU; on a CPU those say what they cannot do. Exit status 1 when a reference loses a point this
machine can award, or a wrong answer earns full marks.

    PYTHONPATH=. python3 tests/gpu/run_lab_tasks.py --out DIR      # DIR/lab_tasks.json: every report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocmlab.course import puzzles as P  # noqa: E402

MODE = P.setup()   # before triton is imported anywhere

import torch  # noqa: E402

from rocmlab.course.labs.lab08_mi300x_package import kernels as K08  # noqa: E402
from rocmlab.course.labs.lab05_quickreduce_tuning import task as codec_choice  # noqa: E402
from rocmlab.course.labs.lab07_matrix_cores import task as occupancy_task  # noqa: E402
from rocmlab.course.labs.lab03_pytorch_on_rocm import task as slow_step  # noqa: E402
from rocmlab.course.labs.lab08_mi300x_package import task as xcd_remap  # noqa: E402


def tasks():
    return [
        ("03", slow_step, slow_step.reference_scores, slow_step.wrong_answers()),
        ("05", codec_choice, codec_choice.reference_choose, codec_choice.wrong_answers()),
        ("07", occupancy_task, occupancy_task.reference, occupancy_task.wrong_answers()),
        ("08", xcd_remap, K08.remap_kernel, {"no remap": K08.remap_identity_kernel,
                                             "n // XCDS per XCD": K08.remap_floor_kernel}),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="folder for lab_tasks.json (every report, seeds included)")
    args = ap.parse_args(argv)
    dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(f"device: {dev}; Triton mode: {MODE}; torch {torch.__version__}")
    rows, reports, bad = [], [], []
    for lab, mod, right, wrongs in tasks():
        t0 = time.monotonic()
        ref = mod.grade(right, record=False)
        caught = []
        for name, w in wrongs.items():
            rep = mod.grade(w, record=False)
            reports.append(rep.to_json())
            caught.append((name, not rep.full_marks))
            if rep.full_marks:
                bad.append(f"{mod.TASK}: wrong answer '{name}' earned full marks")
        reports.append(ref.to_json())
        if not ref.full_marks:
            bad.append(f"{mod.TASK}: the reference lost points: {ref.score_line()}")
        extra = ""
        if mod is slow_step:
            extra = ref.check("speed-up").message
        rows.append((lab, mod.TASK, f"{ref.earned:g}/{ref.available:g} of {ref.possible:g}",
                     f"{sum(c for _, c in caught)}/{len(caught)}", f"{time.monotonic() - t0:.1f}s", extra))
    print(f"\n{'lab':4} {'task':22} {'reference points':18} {'wrong caught':13} {'time':7} note")
    for r in rows:
        print(f"{r[0]:4} {r[1]:22} {r[2]:18} {r[3]:13} {r[4]:7} {r[5]}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "lab_tasks.json").write_text(json.dumps({"device": dev, "mode": MODE, "rows": rows,
                                                        "reports": reports, "problems": bad}, indent=1))
        print(f"\nfull reports: {out / 'lab_tasks.json'}")
    for b in bad:
        print("PROBLEM:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
