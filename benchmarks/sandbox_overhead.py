"""What isolation costs the grader: every exercise solution graded with bubblewrap and without it, in the same
run, interleaved (the order of the two flips every repetition), each grading with a cold build (a run tag in
the source, so nothing comes from the build cache).

"Without" is the runner's named weaker fallback (``ROCMLAB_SANDBOX=no-bwrap``: setpriv + rlimits as root,
rlimits otherwise). Where the toolchain lives in its own root file system (the offline ROCm root on a CPU
machine), only bubblewrap can enter it, so the fallback cannot compile there: the script then says so and
measures the per-run cost directly instead: every sandbox start the grader made (same root, same binds) is
replayed with ``true`` as the program, under bubblewrap and as a direct run, and the difference is the
per-run overhead; overhead share = runs x per-run overhead / grading time.

    python benchmarks/sandbox_overhead.py [--quick] [--reps N] [--out DIR]

Goal (issue 13): the overhead is under 10% of grading time, and under 100 ms per run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab import grader, sandbox  # noqa: E402

QUICK_EXERCISES = ("vector-add", "saxpy-events", "block-reduction")


class Recorder:
    """Counts (and keeps the configuration of) every sandbox.run the grader makes."""

    def __init__(self):
        self.calls: list[dict] = []
        self._real = sandbox.run

    def __enter__(self):
        real = self._real

        def run(cmd, **kw):
            t = time.monotonic()
            try:
                return real(cmd, **kw)
            finally:
                self.calls.append({"root": kw.get("root", "/"), "ro_binds": tuple(kw.get("ro_binds", ())),
                                   "gpu": kw.get("gpu", False), "seconds": time.monotonic() - t,
                                   "program": os.path.basename(str(list(cmd)[0]))})
        sandbox.run = run
        return self

    def __exit__(self, *exc):
        sandbox.run = self._real


def grade_once(ex, level: str | None) -> dict:
    """Grade ``ex``'s solution (a fresh run tag: a cold build); level None = bubblewrap (the default here)."""
    src = f"// sandbox_overhead run {uuid.uuid4().hex}\n" + ex.solution
    with Recorder() as rec:
        t = time.monotonic()
        if level is None:
            r = grader.check(ex.id, src, seed=12345)
        else:
            with sandbox.use(level):
                r = grader.check(ex.id, src, seed=12345)
        wall = time.monotonic() - t
    return {"seconds": wall, "runs": len(rec.calls), "calls": rec.calls, "status": r.status, "earned": r.earned,
            "available": r.available, "error": r.error, "checks": {c.id: c.status for c in r.checks}}


def replay_overhead(calls: list[dict], repeats: int) -> dict:
    """Per-run cost of the sandbox: each recorded configuration started with `true`, bubblewrap vs direct."""
    configs = list({(c["root"], c["ro_binds"], c["gpu"]) for c in calls if all(os.path.exists(b) for b in c["ro_binds"])})
    bw, direct = [], []
    with tempfile.TemporaryDirectory(prefix="rocmlab-overhead-") as scratch:
        os.chmod(scratch, 0o755)
        for _ in range(repeats):
            for root, binds, gpu in configs:
                t = time.monotonic()
                sandbox.run(["true"], root=root, scratch=scratch, ro_binds=binds, gpu=gpu)
                bw.append(time.monotonic() - t)
                with sandbox.use(sandbox.NONE):
                    t = time.monotonic()
                    sandbox.run(["/bin/true"], scratch=scratch)
                    direct.append(time.monotonic() - t)
    return {"configs": len(configs), "bubblewrap_ms": 1e3 * statistics.median(bw),
            "direct_ms": 1e3 * statistics.median(direct),
            "per_run_overhead_ms": 1e3 * (statistics.median(bw) - statistics.median(direct))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"three exercises ({', '.join(QUICK_EXERCISES)}), one repetition")
    ap.add_argument("--reps", type=int, default=None, help="repetitions of the whole interleaved set (default 2; 1 quick)")
    ap.add_argument("--out", default=None, help="write sandbox_overhead[_TAG].json and .md there")
    ap.add_argument("--tag", default="", help="a name for the machine in the file names (cpu, h200)")
    args = ap.parse_args(argv)
    reps = args.reps or (1 if args.quick else 2)

    iso = sandbox.isolation()
    if iso.level != sandbox.BWRAP:
        print(f"bubblewrap does not run here ({iso.reason}); fix: {iso.fix}", file=sys.stderr)
        return 2
    weaker = sandbox.SETPRIV if os.geteuid() == 0 and shutil.which("setpriv") else sandbox.RLIMITS
    from rocmlab.machine.detect import current

    plat = current()
    exs = [e for e in grader.exercises() if e.solution and (not args.quick or e.id in QUICK_EXERCISES)]
    print(f"# sandbox overhead: {len(exs)} solutions x {reps} repetition(s), interleaved; backend {plat.backend} "
          f"({plat.device.name if plat.device else 'no GPU'}); {os.cpu_count()} CPU cores")
    print(f"  isolated: {iso.description}")
    print(f"  without:  {sandbox.detection._describe(weaker, '', '').description}")
    rows: dict[str, dict] = {e.id: {"bubblewrap": [], "fallback": [], "fallback_error": "", "scores": set()} for e in exs}
    all_calls = []
    for rep in range(reps):
        for i, ex in enumerate(exs):
            order = [None, weaker] if (rep + i) % 2 == 0 else [weaker, None]
            for level in order:
                g = grade_once(ex, level)
                row = rows[ex.id]
                if level is None:
                    row["bubblewrap"].append(g)
                    all_calls += g["calls"]
                elif g["status"] == "error":
                    row["fallback_error"] = g["error"]
                else:
                    row["fallback"].append(g)
                if g["status"] == "graded":
                    row["scores"].add((g["earned"], g["available"]))
            b = rows[ex.id]["bubblewrap"][-1]
            f = rows[ex.id]["fallback"][-1] if rows[ex.id]["fallback"] else None
            print(f"  rep {rep + 1} {ex.id:<20} bubblewrap {b['seconds']:6.2f} s ({b['runs']} sandbox runs, "
                  f"{b['earned']:g}/{b['available']:g})   fallback "
                  + (f"{f['seconds']:6.2f} s ({f['earned']:g}/{f['available']:g})" if f else "cannot run here"))
    replay = replay_overhead(all_calls, repeats=3 if args.quick else 5)
    t_bw = sum(g["seconds"] for r in rows.values() for g in r["bubblewrap"])
    n_runs = sum(g["runs"] for r in rows.values() for g in r["bubblewrap"])
    paired = [(statistics.median(g["seconds"] for g in r["bubblewrap"]), statistics.median(g["seconds"] for g in r["fallback"]))
              for r in rows.values() if r["fallback"]]
    result = {"backend": plat.backend, "device": plat.device.name if plat.device else None, "cpus": os.cpu_count(),
              "isolation": iso.description, "fallback": weaker, "solutions": len(exs), "reps": reps,
              "grading_seconds_bubblewrap": t_bw, "sandbox_runs": n_runs,
              "runs_per_grading": n_runs / max(1, sum(len(r["bubblewrap"]) for r in rows.values())), **replay}
    result["overhead_share_from_replay"] = n_runs * replay["per_run_overhead_ms"] / 1e3 / t_bw
    if paired:
        sb, sf = sum(p[0] for p in paired), sum(p[1] for p in paired)
        result["paired_solutions"] = len(paired)
        result["ratio_bubblewrap_over_fallback"] = sb / sf
    no_fallback = sorted({r["fallback_error"].split(" (")[0] for r in rows.values() if r["fallback_error"]})
    result["fallback_errors"] = no_fallback
    scores_same = all(len(r["scores"]) == 1 for r in rows.values())
    result["scores_same_every_run"] = scores_same
    result["scores"] = {k: sorted(v["scores"]) for k, v in rows.items()}
    print()
    print(f"grading time with bubblewrap: {t_bw:.1f} s for {sum(len(r['bubblewrap']) for r in rows.values())} gradings, "
          f"{n_runs} sandbox runs ({result['runs_per_grading']:.1f} per grading: compiles and program runs; the static analysis runs outside)")
    print(f"per-run overhead (replayed {replay['configs']} configurations with `true`): bubblewrap "
          f"{replay['bubblewrap_ms']:.1f} ms vs direct {replay['direct_ms']:.1f} ms = "
          f"{replay['per_run_overhead_ms']:.1f} ms per run (goal < 100 ms)")
    print(f"overhead share of grading time: {100 * result['overhead_share_from_replay']:.2f}% (goal < 10%)")
    if paired:
        print(f"paired gradings (bubblewrap / fallback, {len(paired)} solutions, medians): "
              f"ratio {result['ratio_bubblewrap_over_fallback']:.3f}")
    if no_fallback:
        print(f"fallback could not grade here: {'; '.join(no_fallback)} (only bubblewrap enters a toolchain root)")
    print(f"scores the same in every run and with both runners: {scores_same}")
    if args.out:
        out = Path(args.out)
        stem = "sandbox_overhead" + (f"_{args.tag}" if args.tag else "")
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{stem}.json").write_text(json.dumps(result, indent=1, default=list))
        lines = ["# Sandbox overhead", "", f"`python benchmarks/sandbox_overhead.py{' --quick' if args.quick else ''}"
                 f" --reps {reps}{' --tag ' + args.tag if args.tag else ''} --out DIR` on {plat.backend} ({result['device'] or 'no GPU'}), {os.cpu_count()} CPU cores.", "",
                 f"- isolated: {iso.description}",
                 f"- grading with bubblewrap: {t_bw:.1f} s, {n_runs} sandbox runs",
                 f"- per-run overhead: {replay['per_run_overhead_ms']:.1f} ms (bubblewrap {replay['bubblewrap_ms']:.1f} ms"
                 f" vs direct {replay['direct_ms']:.1f} ms, `true` replayed in {replay['configs']} configurations)",
                 f"- overhead share: {100 * result['overhead_share_from_replay']:.2f}% of grading time",
                 ]
        if paired:
            lines.append(f"- bubblewrap / fallback grading time ratio: {result['ratio_bubblewrap_over_fallback']:.3f}")
        if no_fallback:
            lines.append(f"- the fallback could not grade here: {'; '.join(no_fallback)}")
        lines.append(f"- scores the same in every run: {scores_same}")
        lines += ["", "| solution | bubblewrap s | fallback s | runs | score |", "|---|---|---|---|---|"]
        for k, r in rows.items():
            b = statistics.median(g["seconds"] for g in r["bubblewrap"])
            f = f"{statistics.median(g['seconds'] for g in r['fallback']):.2f}" if r["fallback"] else "n/a"
            sc = ", ".join(f"{e:g}/{a:g}" for e, a in sorted(r["scores"]))
            lines.append(f"| {k} | {b:.2f} | {f} | {r['bubblewrap'][0]['runs']} | {sc} |")
        (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
        print(f"wrote {out}/{stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
