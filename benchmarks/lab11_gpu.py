"""Lab 11 on a GPU in one go: slow against fixed for the three kernels, their counters, and the faults as seen.

    PYTHONPATH=. python3 benchmarks/lab11_gpu.py --out DIR [--quick | --size run|perf|demo]

On an NVIDIA GPU (HIP through rocmlab's HIP->CUDA path and nvcc) or an AMD GPU (hipcc):

1. builds the slow starter (its mechanical HIP port) and the fixed solution of lab11-coalesce, lab11-lds-banks and
   lab11-occupancy, runs both on the same fresh random inputs at the exercise's perf size (or --size), checks each result against
   numpy and prints fixed/slow (the ratio of their kernel times, measured in this run: a benchmark, not a test);
2. collects the counters of each diagnosis: Nsight Compute metrics on NVIDIA (`ncu --csv --metrics ...`), rocprofv3
   `--pmc` on AMD; where the driver does not allow counters it says so plainly and the timing stands alone;
3. runs lab11-race's slow and fixed versions on fresh inputs several times and counts wrong results;
4. runs rocmlab/hip/kernels/lab11/oob_write.hip with its stray write made far (OOB_FAR=1) so that it faults,
   serialised (AMD_SERIALIZE_KERNEL=3, HIP_LAUNCH_BLOCKING=1, CUDA_LAUNCH_BLOCKING=1), prints what the runtime said
   and rocmlab.hip.faults' reading of it; then the small overrun and the use after free under compute-sanitizer
   memcheck (NVIDIA) where it is installed.

On a machine without a GPU it builds what it can and says what it could not run. Writes results.json and
report.txt to --out; the table at the end is the summary. Exit status 1, with every reason printed, when a build or
a timed run failed (a machine without a GPU that runs nothing is not a failure); 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11  # noqa: E402
from rocmlab.hip import build, faults  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402
from rocmlab.profile import counters  # noqa: E402
from rocmlab.sandbox import run_limited  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for results.json and report.txt")
    ap.add_argument("--quick", action="store_true", help="the exercises' small run sizes instead of perf sizes")
    ap.add_argument("--size", choices=("run", "perf", "demo"), default=None,
                    help="sizes for the timing: the exercises' run or perf sizes, or demo: the lab's own "
                         "(lab.DEMO_SIZES, what the lab's timing cell runs); default perf (run with --quick)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    plat = current()
    lines: list[str] = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    res: dict = {"platform": plat.label, "backend": plat.backend, "device": plat.device_name,
                 "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "kernels": {}, "faults": {}}
    say(f"platform: {plat.summary()}  [backend: {plat.backend}]")
    size = a.size or ("run" if a.quick else "perf")
    table = []
    failures: list[str] = []

    # 1 + 2. slow against fixed, and the counters of each diagnosis
    for d in counters.DIAGNOSES:
        row = {"cause": d.cause, "mi300x": d.mi300x, "nvidia": d.nvidia, "offline": d.offline}
        if not plat.is_gpu:
            row["timing"] = "not run: no GPU here"
            say(f"{d.exercise}: no GPU here, not run")
            res["kernels"][d.exercise] = row
            table.append([d.exercise, d.cause, "-", "-", "not run (no GPU)", "-"])
            continue
        try:
            t = lab11.time_pair(d.exercise, size, plat, timeout_s=240)
            row.update(t)
            say(f"{d.exercise}: slow {t['slow_ms']:.4f} ms, fixed {t['fixed_ms']:.4f} ms, fixed/slow speed-up "
                f"{t['ratio']:.2f}x, correct {t['correct']} [{plat.backend}: {plat.device_name}] size {t['size']}")
            ratio = f"{t['ratio']:.2f}x"
        except Exception as exc:   # one kernel's trouble must not hide the others
            row["timing_error"] = f"{type(exc).__name__}: {exc}"
            say(f"{d.exercise}: timing failed: {row['timing_error']}")
            failures.append(f"{d.exercise}: timing failed: {row['timing_error']}")
            t, ratio = {}, "failed"
        row["counters"] = (collect_counters(d, plat, say) if t else
                           {"status": "not collected: the build or the timed run failed"})
        if row["counters"].get("status") == "build failed":
            failures.append(f"{d.exercise}: " + "; ".join(v for k, v in row["counters"].items() if k.endswith("_error")))
        res["kernels"][d.exercise] = row
        table.append([d.exercise, d.cause, f"{t.get('slow_ms', float('nan')):.4f}", f"{t.get('fixed_ms', float('nan')):.4f}",
                      ratio, row["counters"].get("status", "-")])

    # 3. the race
    res["race"] = race(plat, say)
    if res["race"].get("summary", "").startswith("failed"):
        failures.append("lab11-race: " + res["race"]["summary"])

    # 4. faults
    res["faults"] = fault_runs(plat, say)
    failures += [f"{k}: {v['summary']}" for k, v in res["faults"].items() if v.get("summary", "").startswith("did not build")]

    say("")
    say(f"{'kernel':18} {'cause':28} {'slow ms':>10} {'fixed ms':>10} {'fixed/slow':>12}  counters")
    for r in table:
        say(f"{r[0]:18} {r[1]:28} {r[2]:>10} {r[3]:>10} {r[4]:>12}  {r[5]}")
    say(f"race: {res['race'].get('summary', '-')}")
    oob = res["faults"].get("oob_far", {})
    say(f"out-of-bounds (far): {oob.get('summary', '-')}")
    for k in ("memcheck_oob", "memcheck_uaf"):
        if k in res["faults"]:
            say(f"{k}: {res['faults'][k].get('summary', '-')}")
    res["failures"] = failures
    for f in failures:
        say(f"FAILED: {f}")
    (out / "results.json").write_text(json.dumps(res, indent=1, default=str))
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    say(f"wrote {out / 'results.json'} and {out / 'report.txt'}")
    return 1 if failures else 0


def collect_counters(d, plat, say) -> dict:
    """The diagnosis's counters for slow and fixed at the run size (small: counters replay kernels)."""
    tool = "rocprofv3" if plat.backend == "rocm" else "ncu"
    if shutil.which(tool) is None:
        say(f"  {d.exercise}: {tool} not on PATH: no counters, the timing stands alone")
        return {"status": f"{tool} missing"}
    folder = tempfile.mkdtemp(prefix="lab11-counters-")
    os.chmod(folder, 0o777)
    inp, _ = lab11.write_inputs(d.exercise, folder, "run")
    got = {"status": "collected"}
    for v, b in lab11.build_pair(d.exercise, plat).items():
        if not b.ok or not b.binary:             # never hand a profiler a program that is not there
            why = b.summary(include_run=False)[-400:] if not b.ok else f"no program: {b.cannot_run_reason}"
            say(f"  {d.exercise} {v}: not profiled, the build failed: {why}")
            got["status"] = "build failed"
            got[f"{v}_error"] = f"{v} did not build: {why}"
            continue
        cmd = [b.binary, inp, os.path.join(folder, f"{v}.bin")]
        try:
            if plat.backend == "rocm":
                df = counters.collect(cmd, d.mi300x)
                df["figure"] = counters.derived(df, d)
            else:
                df = counters.collect_ncu(cmd, d.nvidia)
            got[v] = df.to_dict(orient="records")
            say(f"  {d.exercise} {v} counters ({tool}):\n" + df.to_string(index=False, max_colwidth=40))
        except counters.CountersNotPermitted as exc:
            say(f"  {d.exercise}: counters NOT PERMITTED on this machine: {exc}")
            return {"status": "not permitted (ERR_NVGPUCTRPERM): timed before/after only"}
        except counters.CounterError as exc:
            say(f"  {d.exercise} {v}: counters not collected: {exc}")
            got["status"] = "failed"
            got[f"{v}_error"] = str(exc)
    return got


def race(plat, say, runs: int = 5) -> dict:
    if not plat.is_gpu:
        return {"summary": "not run: no GPU here"}
    wrong = {"slow": 0, "fixed": 0}
    for seed in range(runs):
        try:
            t = lab11.time_pair("lab11-race", "run", plat, seed=seed)
        except Exception as exc:
            return {"summary": f"failed: {type(exc).__name__}: {exc}"}
        for v in wrong:
            wrong[v] += 0 if t["correct"][v] else 1
    s = (f"the missing __syncthreads gave a wrong result in {wrong['slow']} of {runs} runs (fresh inputs each), "
         f"the fixed kernel in {wrong['fixed']} of {runs}")
    say("race: " + s)
    return {"summary": s, "wrong": wrong, "runs": runs}


def fault_runs(plat, say) -> dict:
    out: dict = {}
    src = lab11.fault_source("oob_write")
    b = build.compile(src, plat=plat, flags=("-g",), name="lab11-oob")
    env = dict(os.environ, OOB_FAR="1", AMD_SERIALIZE_KERNEL="3", HIP_LAUNCH_BLOCKING="1",
               CUDA_LAUNCH_BLOCKING="1", AMD_LOG_LEVEL="1")
    if not b.ok:
        out["oob_far"] = {"summary": "did not build: " + b.summary(include_run=False)[-300:]}
        return out
    if not b.can_run:
        out["oob_far"] = {"summary": f"built, not run: {b.cannot_run_reason}"}
        say(f"out-of-bounds: {out['oob_far']['summary']}")
        return out
    done = build.run(b, timeout_s=60, env=env)
    text = (done.stdout or "") + "\n" + (done.stderr or "")
    diag = faults.classify(text)
    how = f"signal {done.signal}" if done.signal else f"exit code {done.returncode}"
    out["oob_far"] = {"output": text[-3000:], "returncode": done.returncode, "signal": done.signal,
                      "recognised": diag.recognised, "runtime": diag.runtime, "matched": diag.line,
                      "summary": f"{how}; " + (f"{diag.runtime}: matched {diag.line.strip()!r}" if diag.recognised
                                                else "no known fault message in the output")}
    say("out-of-bounds kernel fill_ramp, far write, serialised; its output:")
    for line in text.strip().splitlines()[-10:]:
        say("    " + line)
    say("  reading: " + diag.summary().replace("\n", " "))
    sanitizer = shutil.which("compute-sanitizer")
    if plat.backend == "cuda" and sanitizer:
        for key, name in (("memcheck_oob", "oob_write"), ("memcheck_uaf", "use_after_free")):
            bb = build.compile(lab11.fault_source(name), plat=plat, flags=("-g", "-lineinfo"), name=f"lab11-{name}")
            if not bb.ok:
                out[key] = {"summary": "did not build"}
                continue
            r = run_limited([sanitizer, "--tool", "memcheck", bb.binary], timeout_s=120, memory_bytes=None)
            text = (r.stdout or "") + (r.stderr or "")
            first = next((ln for ln in text.splitlines() if "Invalid" in ln or "ERROR SUMMARY" in ln), "no report line")
            kernel = {"oob_write": "fill_ramp", "use_after_free": "scale"}[name]
            named = any(kernel in ln for ln in text.splitlines() if ln.strip().startswith(("at ", "=========")))
            out[key] = {"output": text[-3000:], "names_kernel": named,
                        "summary": f"{first.strip()} (names the kernel {kernel}: {'yes' if named else 'no'})"}
            say(f"compute-sanitizer memcheck {name}: {out[key]['summary']}")
            for line in [ln for ln in text.splitlines() if ln.strip()][:8]:
                say("    " + line)
    elif plat.backend == "cuda":
        say("compute-sanitizer not on PATH: memcheck not run")
    return out


if __name__ == "__main__":
    sys.exit(main())
