"""rocmlab port against plain hipify (hipify-perl or torch.utils.hipify) on the same CUDA programs
(offline compile and link, no GPU needed).

Without ``--samples`` it ports Lab 02's sample code bases and the test projects in tests/data/port/. With ``--samples DIR``
every project folder under DIR is ported (the top-most folder holding a source file; ``--only``
picks some by path), each with the ``-I`` folders given (relative to the project, e.g.
``-I ../../../Common`` for a Samples/<category>/<name>/ layout, or absolute). For each project it
compiles every translation unit for the target and links every file with a ``main`` (a program),
once after ``rocmlab port`` and once after plain hipify (``--baseline perl``: ROCm's hipify-perl,
the default; ``torch``: torch.utils.hipify), with the same compiler, flags, include folders and
libraries, in the same run. It prints programs and units for both, the first error of every
failure, and the trap counts by severity. A program whose sources need a library ROCm does not
have (MPI, OpenACC, OpenGL/GLUT, nvblas, NVTX ...) is listed as out of scope, not counted.

    python benchmarks/port_compile_rate.py [--target gfx942] [--json results.json]
    python benchmarks/port_compile_rate.py --samples ~/cuda-samples/Samples -I ../../../Common \\
        --only 0_Introduction/vectorAdd --json results.json [--engine torch|perl] [--baseline perl|torch|none]
    python benchmarks/port_compile_rate.py --samples ~/professional-cuda-c-programming/examples --one-project

Nothing is cached between runs: each port and each baseline compiles from scratch.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TEST_DATA = ROOT / "tests" / "data" / "port"
#: Lab 02's sample code bases, shipped in the package
LAB02_SAMPLES = ROOT / "rocmlab" / "course" / "labs" / "lab02_porting_cuda_to_hip" / "samples"
SOURCE = (".cu", ".cpp", ".cc", ".c")
#: what a program needs that ROCm does not have: (pattern over its sources, reason)
NOT_IN_ROCM = (
    (r"#\s*include\s*[<\"]mpi\.h[>\"]", "MPI (not part of ROCm)"),
    (r"#\s*include\s*[<\"]openacc\.h[>\"]|#\s*pragma\s+acc\b", "OpenACC (not part of ROCm's compilers)"),
    (r"#\s*include\s*[<\"](?:GL/|GLFW/|cuda_gl_interop|glut)", "OpenGL/GLUT display"),
    (r"#\s*include\s*[<\"]nvblas\.h[>\"]|\bnvblas\b|\b[sdcz](?:gemm|gemv|axpy|dot|scal|trsm)_\s*\(",
     "a host BLAS (Fortran sgemm_ & co., NVIDIA's nvblas drop-in): not part of ROCm"),
    (r"#\s*include\s*[<\"](?:nvToolsExt\.h|nvtx3/)", "NVTX (ROCm has roctx, not in the offline root)"),
    (r"#\s*include\s*[<\"](?:nvrtc\.h|cudnn\.h|nvml\.h|cuda_egl|EGL/|npp)", "an NVIDIA-only library"),
)


def projects(samples: Path | None, only: list[str] | None) -> list[Path]:
    if samples is None:
        return sorted(p for d in (LAB02_SAMPLES, TEST_DATA) for p in d.iterdir() if p.is_dir() and p.name != "traps")
    found = sorted({p.parent for p in samples.rglob("*") if p.suffix in SOURCE and p.is_file()})
    # a project is the top-most folder holding sources (its sub-folders are part of it)
    tops = [p for p in found if not any(q in p.parents for q in found)]
    if only:
        by_name = {str(p.relative_to(samples)): p for p in tops} | {p.name: p for p in tops}
        missing = [n for n in only if n not in by_name]
        if missing:
            raise SystemExit(f"--only: no project named {', '.join(missing)} under {samples}")
        tops = [by_name[n] for n in only]
    return tops


def out_of_scope(project: Path, main_rel: str) -> str:
    """Why the program with ``main_rel`` needs what ROCm lacks ('' when it does not)."""
    text = (project / main_rel).read_text(errors="replace")
    for pattern, why in NOT_IN_ROCM:
        if re.search(pattern, text):
            return why
    return ""


def _first_errors(units, links) -> dict[str, str]:
    """{main: first error} for each program that did not link (its own unit's error, else the link's)."""
    by_path = {u.path: u for u in units}
    out = {}
    for link in links:
        if link.status == "ok":
            continue
        u = by_path.get(link.main)
        out[link.main] = (u.error if u is not None and u.status != "ok" else link.error)[:220]
    return out


def main(argv=None) -> int:
    from rocmlab import settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=settings.DEFAULT_TARGET, choices=settings.AMD_TARGETS)
    ap.add_argument("--samples", type=Path, default=None, help="a tree of CUDA projects (default: Lab 02's samples and tests/data/port)")
    ap.add_argument("--one-project", action="store_true",
                    help="port --samples DIR as ONE project (its files include each other across folders)")
    ap.add_argument("--only", default=None, help="comma-separated project folders (paths under --samples, or names)")
    ap.add_argument("-I", "--include", action="append", default=[], help="-I folder, relative to each project")
    ap.add_argument("--engine", default="torch", choices=("torch", "perl"), help="the port's renaming engine")
    ap.add_argument("--baseline", default="perl", choices=("perl", "torch", "none"),
                    help="plain hipify to compare with: hipify-perl (default), torch.utils.hipify, or none")
    ap.add_argument("--no-baseline", action="store_true", help="same as --baseline none")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    baseline = "none" if args.no_baseline else args.baseline

    from rocmlab.machine.detect import current
    from rocmlab.port import port
    from rocmlab.port.baseline import plain_hipify
    from rocmlab.port.diagnose import LIBRARIES

    plat = current()
    device = plat.device.name if plat.device else "cpu"
    only = [n.strip() for n in args.only.split(",")] if args.only else None
    samples = args.samples.expanduser().resolve() if args.samples else None
    bases = [samples] if args.one_project and samples else projects(samples, only)
    out = {"backend": plat.backend, "device": device, "target": args.target, "engine": args.engine,
           "baseline": baseline, "samples": str(args.samples or "lab02 samples + tests/data/port"), "include": args.include,
           "projects": {}}
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocmlab-port-bench-") as tmp:
        for n, cb in enumerate(bases):
            name = (str(cb.relative_to(samples)) or cb.name) if samples else cb.name
            name = cb.name if name == "." else name
            r = port(cb, Path(tmp) / f"{n}-port", args.target, workers=args.workers, include=args.include,
                     engine=args.engine)
            libs = [LIBRARIES[k][3] for k in r.libraries if LIBRARIES[k][3].startswith("-")]
            src_of = {u.path: u.source for u in r.units}
            scope = {link.main: out_of_scope(cb, src_of.get(link.main, link.main)) for link in r.links}
            rec = {"units": r.n_units, "port_ok": r.n_compiled,
                   "programs": len(r.links), "port_programs_ok": sum(x.status == "ok" for x in r.links),
                   "out_of_scope": {src_of.get(m, m): why for m, why in scope.items() if why},
                   "port_failures": {src_of.get(m, m): e for m, e in _first_errors(r.units, r.links).items()},
                   "port_unit_failures": {u.source: u.error[:220] for u in r.units if u.status != "ok"},
                   "first_blocker": next((u.category for u in r.units if u.status != "ok"), ""),
                   "traps_own": r.traps_by_severity("own"), "traps_included": r.traps_by_severity("included"),
                   "errors_never_compiled": sum(t.severity == "error" and not t.compiled for t in r.traps),
                   "fixes": len(r.fixes), "libraries": r.libraries,
                   "implicit_headers": sorted({f.after.strip() for f in r.fixes if f.kind == "implicit-header"}),
                   "texture_traps": sum(t.kind == "texture" and t.severity == "error" for t in r.traps)}
            if baseline != "none":
                b = plain_hipify(cb, Path(tmp) / f"{n}-plain", (args.target,), workers=args.workers,
                                 include=args.include, engine=baseline, libs=libs)
                bsrc = {u.path: u.source for u in b.units}
                rec["plain_ok"] = b.n_compiled
                rec["plain_units"] = len(b.units)
                rec["plain_programs_ok"] = sum(x.status == "ok" for x in b.links)
                rec["plain_failures"] = {bsrc.get(m, m): e for m, e in _first_errors(b.units, b.links).items()}
            out["projects"][name] = rec
            print(f"  {name}: port {rec['port_programs_ok']}/{rec['programs']} programs {r.n_compiled}/{r.n_units} "
                  f"units" + (f"; plain {rec['plain_programs_ok']}/{rec['programs']} programs {rec['plain_ok']}/"
                              f"{rec['plain_units']} units" if "plain_ok" in rec else ""), flush=True)
    rows = out["projects"]
    print(f"\nrocmlab port ({args.engine} hipify) vs plain {baseline} hipify, compiled and linked for {args.target}  "
          f"[{plat.backend}: {device}]")
    print(f"{'project':40s} {'programs port/plain/all':>24s} {'units port/plain/all':>21s}  own traps e/w/i")
    for name, rec in rows.items():
        o = rec["traps_own"]
        print(f"{name[:40]:40s} {rec['port_programs_ok']:>8d}/{rec.get('plain_programs_ok', '-')!s:>5s}/"
              f"{rec['programs']:<8d} {rec['port_ok']:>7d}/{rec.get('plain_ok', '-')!s:>5s}/{rec['units']:<6d}  "
              f"{o['error']}/{o['warning']}/{o['info']}")
    tot = {k: sum(r.get(k, 0) for r in rows.values()) for k in
           ("units", "port_ok", "plain_ok", "programs", "port_programs_ok", "plain_programs_ok")}
    scoped_out = {f"{p}/{m}": why for p, r in rows.items() for m, why in r["out_of_scope"].items()}
    in_scope = tot["programs"] - len(scoped_out)
    port_in = tot["port_programs_ok"] - sum(1 for p, r in rows.items() for m in r["out_of_scope"]
                                            if m not in r["port_failures"])
    out["total"] = {**tot, "projects": len(rows), "programs_in_scope": in_scope, "port_programs_ok_in_scope": port_in,
                    "out_of_scope": scoped_out,
                    "errors_never_compiled": sum(r["errors_never_compiled"] for r in rows.values()),
                    "wall_s": round(time.monotonic() - t_all, 1)}
    print(f"\nprograms compiling and linking with no hand edit after rocmlab port: {tot['port_programs_ok']}/"
          f"{tot['programs']}; of the programs whose libraries exist in ROCm: {port_in}/{in_scope}"
          + (f" ({100 * port_in / in_scope:.0f}%)" if in_scope else ""))
    print(f"translation units after rocmlab port: {tot['port_ok']}/{tot['units']}")
    if baseline != "none":
        plain_in = tot["plain_programs_ok"] - sum(1 for p, r in rows.items() for m in r["out_of_scope"]
                                                  if m not in r.get("plain_failures", {}))
        out["total"]["plain_programs_ok_in_scope"] = plain_in
        out["total"]["ratio_programs"] = tot["port_programs_ok"] / tot["plain_programs_ok"] \
            if tot["plain_programs_ok"] else None
        out["total"]["ratio_units"] = tot["port_ok"] / tot["plain_ok"] if tot["plain_ok"] else None
        print(f"plain {baseline} hipify (same compiler, flags, libraries, same run): {tot['plain_programs_ok']}/"
              f"{tot['programs']} programs ({plain_in}/{in_scope} in scope), {tot['plain_ok']}/{tot['units']} units")
        rp, ru = out["total"]["ratio_programs"], out["total"]["ratio_units"]
        print(f"ratio rocmlab port / plain {baseline}: "
              f"{f'{rp:.2f}x' if rp else 'inf'} programs, {f'{ru:.2f}x' if ru else 'inf'} units")
    print("\nfirst error of every failure (port | plain):")
    for name, rec in rows.items():
        for m, e in rec["port_failures"].items():
            print(f"  PORT  {name}/{m}: {e}" + (f"  [out of scope: {rec['out_of_scope'][m]}]"
                                               if m in rec["out_of_scope"] else ""))
        for u, e in rec["port_unit_failures"].items():
            if u not in rec["port_failures"]:
                print(f"  PORT  {name}/{u} (unit): {e}")
        for m, e in rec.get("plain_failures", {}).items():
            print(f"  PLAIN {name}/{m}: {e}" + (f"  [out of scope: {rec['out_of_scope'][m]}]"
                                               if m in rec["out_of_scope"] else ""))
    for s_ in scoped_out.items():
        print(f"  out of scope: {s_[0]}: {s_[1]}")
    print(f"error-level traps in code never compiled for {args.target}: {out['total']['errors_never_compiled']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
