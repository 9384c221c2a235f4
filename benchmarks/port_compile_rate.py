"""rocmlab port against plain torch.utils.hipify on the same CUDA projects (offline compile, no GPU needed).

Without ``--samples`` it ports the sample code bases in tests/data/port/. With ``--samples DIR``
every project folder under DIR is ported (a folder holding a .cu file; ``--only`` picks some by
name), each with the ``-I`` folders given (relative to the project, e.g. ``-I ../../../Common``
for a Samples/<category>/<name>/ layout, or absolute). For each project it prints: translation
units compiling for the target after ``rocmlab port`` (ok/total) and after plain torch hipify
(same compiler, flags and include folders) in the same run, the first blocker's category, and
the trap counts by severity (error/warning/info) for the project's own files and for the headers
it includes from outside. A project "compiles" when all its translation units do.

    python benchmarks/port_compile_rate.py [--target gfx942] [--json results.json]
    python benchmarks/port_compile_rate.py --samples ~/cuda-samples/Samples -I ../../../Common \\
        --only vectorAdd,reduction --json results.json [--engine torch|perl] [--no-baseline]

Nothing is cached between runs: each port and each baseline compiles from scratch.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TEST_DATA = ROOT / "tests" / "data" / "port"
SOURCE = (".cu", ".cpp", ".cc", ".c")


def projects(samples: Path | None, only: list[str] | None) -> list[Path]:
    if samples is None:
        return sorted(p for p in TEST_DATA.iterdir() if p.is_dir() and p.name != "traps")
    found = sorted({p.parent for p in samples.rglob("*") if p.suffix in SOURCE and p.is_file()})
    # a project is the top-most folder holding sources (its sub-folders are part of it)
    tops = [p for p in found if not any(q in p.parents for q in found)]
    if only:
        by_name = {p.name: p for p in tops}
        missing = [n for n in only if n not in by_name]
        if missing:
            raise SystemExit(f"--only: no project named {', '.join(missing)} under {samples}")
        tops = [by_name[n] for n in only]
    return tops


def main(argv=None) -> int:
    from rocmlab import settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=settings.DEFAULT_TARGET, choices=settings.AMD_TARGETS)
    ap.add_argument("--samples", type=Path, default=None, help="a tree of CUDA projects (default: tests/data/port)")
    ap.add_argument("--only", default=None, help="comma-separated project folder names under --samples")
    ap.add_argument("-I", "--include", action="append", default=[], help="-I folder, relative to each project")
    ap.add_argument("--engine", default="torch", choices=("torch", "perl"))
    ap.add_argument("--no-baseline", action="store_true", help="leave out plain torch hipify")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    from rocmlab.machine.detect import current
    from rocmlab.port import port
    from rocmlab.port.baseline import plain_hipify

    plat = current()
    device = plat.device.name if plat.device else "cpu"
    only = [n.strip() for n in args.only.split(",")] if args.only else None
    bases = projects(args.samples.expanduser().resolve() if args.samples else None, only)
    out = {"backend": plat.backend, "device": device, "target": args.target, "engine": args.engine,
           "samples": str(args.samples or "tests/data/port"), "include": args.include, "projects": {}}
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rocmlab-port-bench-") as tmp:
        for n, cb in enumerate(bases):
            r = port(cb, Path(tmp) / f"{n}-port", args.target, workers=args.workers, include=args.include,
                     engine=args.engine)
            rec = {"units": r.n_units, "port_ok": r.n_compiled,
                   "first_blocker": next((u.category for u in r.units if u.status != "ok"), ""),
                   "first_error": next((u.error[:200] for u in r.units if u.status != "ok"), ""),
                   "linked": sum(x.status == "ok" for x in r.links), "programs": len(r.links),
                   "traps_own": r.traps_by_severity("own"), "traps_included": r.traps_by_severity("included"),
                   "errors_never_compiled": sum(t.severity == "error" and not t.compiled for t in r.traps),
                   "outside_src": len(r.outside_src), "fixes": len(r.fixes), "libraries": r.libraries}
            if not args.no_baseline:
                b = plain_hipify(cb, Path(tmp) / f"{n}-plain", (args.target,), workers=args.workers,
                                 include=args.include)
                rec["plain_ok"] = b.n_compiled
                rec["plain_first_blocker"] = next((u.category for u in b.units if u.status != "ok"), "")
            out["projects"][cb.name] = rec
            print(f"  {cb.name}: port {r.n_compiled}/{r.n_units}"
                  + (f", plain {rec['plain_ok']}/{r.n_units}" if "plain_ok" in rec else "") + f"  {rec['first_error']}",
                  flush=True)
    rows = out["projects"]
    print(f"\nrocmlab port ({args.engine} hipify) vs plain torch.utils.hipify, compiled for {args.target}  "
          f"[{plat.backend}: {device}]")
    head = f"{'project':34s} {'port ok/TUs':>11s} {'plain':>6s}  {'first blocker':18s} {'own e/w/i':>10s} {'incl e/w/i':>11s}"
    print(head)
    for name, rec in rows.items():
        o, i = rec["traps_own"], rec["traps_included"]
        print(f"{name[:34]:34s} {rec['port_ok']:>5d}/{rec['units']:<5d} "
              f"{(str(rec['plain_ok']) if 'plain_ok' in rec else '-'):>6s}  {rec['first_blocker'] or '-':18s} "
              f"{o['error']:>3d}/{o['warning']}/{o['info']:<4d} {i['error']:>3d}/{i['warning']}/{i['info']:<4d}")
    n_proj = len(rows)
    port_proj = sum(r["port_ok"] == r["units"] and r["units"] > 0 for r in rows.values())
    tot_u = sum(r["units"] for r in rows.values())
    tot_p = sum(r["port_ok"] for r in rows.values())
    out["total"] = {"projects": n_proj, "projects_compiling_port": port_proj, "units": tot_u, "port_ok": tot_p,
                    "errors_never_compiled": sum(r["errors_never_compiled"] for r in rows.values()),
                    "wall_s": round(time.monotonic() - t_all, 1)}
    print(f"projects compiling with no manual edit after rocmlab port: {port_proj}/{n_proj}; "
          f"translation units {tot_p}/{tot_u}")
    if not args.no_baseline:
        plain_proj = sum(r["plain_ok"] == r["units"] and r["units"] > 0 for r in rows.values())
        tot_b = sum(r["plain_ok"] for r in rows.values())
        ratio = tot_p / tot_b if tot_b else float("inf")
        out["total"].update(projects_compiling_plain=plain_proj, plain_ok=tot_b, ratio_units=ratio,
                            ratio_projects=port_proj / plain_proj if plain_proj else float("inf"))
        print(f"plain torch.utils.hipify (baseline, same run): {plain_proj}/{n_proj} projects, {tot_b}/{tot_u} "
              f"translation units")
        print(f"ratio rocmlab port / plain hipify: {out['total']['ratio_projects']:.2f}x projects, {ratio:.2f}x "
              "translation units")
    print(f"error-level traps in code never compiled for {args.target}: {out['total']['errors_never_compiled']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
