"""The course as a container without user namespaces runs it: one learner's session, scripted.

Run by ``tests/sandbox/whole/test_container_fallback.py`` (as root and as an unprivileged user, with ``ROCMLAB_SANDBOX=no-bwrap``
and the checkout copied under a 0700 folder); it can be run by hand the same way::

    ROCMLAB_SANDBOX=no-bwrap python tests/helpers/container_fallback_scenario.py --out result.json [--preflight]

It prints and writes one row per item: the isolation doctor names, a ``%%hip`` cell compiled and run on the CPU
simulator, a grade of one exercise per check kind (static, compile, run, compare, perf, isa, speedup) with its
points and a compile with ``-I`` naming the package's own include folder (as Lab 11's cells do); or, with
``--preflight``, Lab 01, 02 and 11 run headless. Each row: item, result (ok | failed | error), points, detail.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))   # the checkout (this script runs in a child process)

#: One exercise per check kind: vector-add (static, compile, run, compare), lab11-coalesce (isa, speedup, and the
#: rest again), block-reduction's perf check (with the build and run it needs).
GRADED = (("vector-add", None), ("lab11-coalesce", None), ("block-reduction", ("compile", "run", "perf")))
LABS = ("01-hip", "02-porting", "11-counters")

CELL = r"""#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void square(int* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = i * i;
}
int main() {
    const int n = 300;
    int* d; hipMalloc(&d, n * sizeof(int));
    square<<<(n + 63) / 64, 64>>>(d, n);
    int h[n]; hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost);
    long s = 0; for (int i = 0; i < n; ++i) s += h[i];
    printf("sum=%ld\n", s);
    hipFree(d);
}
"""
CELL_SUM = sum(i * i for i in range(300))


def row(item, result, points="", detail=""):
    return {"item": item, "result": result, "points": points, "detail": str(detail)[:1000]}


def isolation_row():
    from rocmlab import doctor
    from rocmlab.machine.detect import current

    c = doctor.check_isolation(current(), None)
    return row("doctor: isolation", c.status, "", c.message)


def hip_cell_row():
    from rocmlab.course import magics

    shown: list[str] = []
    res = magics.run_cell("hip", "--name fallback_cell", CELL, {}, display=shown.append)
    text = "\n".join(shown)
    ok = res is not None and res.ok and f"sum={CELL_SUM}" in text and "CPU simulator" in text
    return row("%%hip compile + simulator run", "ok" if ok else "failed", "", text[-400:])


def include_row():
    """A cell built with -I naming the package's include folder (Lab 11's FLAGS): the compiler must read it."""
    from rocmlab.hip import build
    from rocmlab.paths import exercises_dir

    common = exercises_dir() / "common"
    src = '#include <hip/hip_runtime.h>\n#include "exercise_io.h"\n__global__ void k(float* p) { p[0] = 1; }\n' \
          "int main() { return 0; }\n"
    res = build.compile(src, flags=[f"-I{common}"], use_cache=False)
    return row("-I <package>/exercises/common", "ok" if res.ok else "failed", "", res.summary()[-400:])


def grade_rows():
    from rocmlab import grader
    from rocmlab.paths import exercises_dir

    out = []
    for ex, only in GRADED:
        source = (exercises_dir() / ex / "solution.hip").read_text()
        rep = grader.check(ex, source, only=only)
        kinds = sorted({c.type for c in rep.checks})
        detail = "; ".join(f"{c.id}:{c.status}" for c in rep.checks) + (f" | {rep.error}" if rep.error else "")
        ok = rep.full_marks
        out.append(row(f"grade {ex} ({', '.join(kinds)})", "ok" if ok else ("error" if rep.status == "error"
                                                                             else "failed"),
                       f"{rep.earned:g}/{rep.available:g} (of {rep.possible:g})", detail))
    return out


def preflight_rows():
    from rocmlab import preflight
    from rocmlab.paths import labs_dir

    out = []
    with tempfile.TemporaryDirectory() as d:
        for lab in LABS:
            [r] = preflight.run(labs_dir(), Path(d), quick=True, only=lab, progress=False)
            out.append(row(f"preflight {r.lab}", "ok" if r.status == "passed" else "failed", "",
                           f"{r.duration_s:.0f} s" + (f"; {r.error} ({r.where()})" if r.error else "")))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="where the rows go (JSON)")
    p.add_argument("--preflight", action="store_true", help="run Lab 01, 02 and 11 headless instead")
    a = p.parse_args(argv)
    rows = []
    steps = [isolation_row] + ([preflight_rows] if a.preflight else [hip_cell_row, include_row, grade_rows])
    for step in steps:
        t0 = time.monotonic()
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                got = step()
        except Exception as exc:  # noqa: BLE001 - a row says what broke; the test asserts on the rows
            got = row(step.__name__, "error", "", f"{type(exc).__name__}: {exc}")
        for r in got if isinstance(got, list) else [got]:
            r["seconds"] = round(time.monotonic() - t0, 1)
            rows.append(r)
            print(f"{r['item']:<55} {r['result']:<7} {r['points']:<9} {r['detail'][:160]}", flush=True)
    Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
