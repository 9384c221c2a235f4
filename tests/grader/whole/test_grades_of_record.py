"""The grades of record (issue 38), run in a pytest process of their own: their previews run Triton kernels in
the CPU interpreter in this process, which must be chosen before anything imports triton, and other test
modules of the suite import triton when they are collected. The cases are in tests/helpers/grades_of_record_cases.py."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "helpers" / "grades_of_record_cases.py"


def test_grades_of_record_in_their_own_process():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTEST_XDIST_WORKER",
                                                            "PYTEST_XDIST_WORKER_COUNT")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(CASES)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail and "error" not in tail.lower().split("passed")[-1], tail
