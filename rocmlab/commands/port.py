"""rocmlab port: hipify a whole CUDA project, fix what hipify leaves broken, compile it, report.

Exit status: 0 when every translation unit compiled (and, with --run, every program ran and matched what it
was compared with), 1 when some did not (the report says why), 2 for bad input (the message names the fix).
"""

from __future__ import annotations

import json
import sys

from rocmlab import settings


def add_parser(sub):
    p = sub.add_parser("port", help="port a CUDA project folder to HIP, compile it for AMD targets, write a report")
    p.add_argument("src", metavar="SRC_DIR", help="the CUDA project's folder (only read, never written)")
    p.add_argument("--out", required=True, metavar="OUT_DIR", help="where the HIP port goes (a folder outside SRC)")
    p.add_argument("--target", default=settings.DEFAULT_TARGET,
                   help=f"AMD target(s): {', '.join(settings.AMD_TARGETS)} (comma-separated for several)")
    p.add_argument("--report", default=None, metavar="report.html",
                   help="HTML report path (JSON beside it); default OUT_DIR/rocmlab-port.html")
    p.add_argument("-j", "--workers", type=int, default=None, help="parallel compiles (default: all cores)")
    p.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                   help="an include folder (repeatable): inside SRC, or outside it, relative to SRC (-I ../../Common) "
                        "or absolute; headers from outside are read, never written, and ported into OUT/external/")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]",
                   help="a macro for the build and the trap scan (repeatable), as nvcc -D")
    p.add_argument("--run", action="store_true",
                   help="build each program, run it (on the AMD GPU here, else the wave64 CPU simulator) under the "
                        "sandbox, and compare with the CUDA original: run here with nvcc on an NVIDIA machine, else "
                        "the outputs recorded in the manifest")
    p.add_argument("--manifest", default=None, metavar="RUNS.json",
                   help="the runs: arguments, input files, recorded CUDA outputs and tolerance per program "
                        "(default SRC/rocmlab-port-run.json; format in rocmlab.port.run_compare)")
    p.add_argument("--engine", choices=("torch", "perl"), default="torch",
                   help="the renaming engine: torch.utils.hipify (default) or ROCm's hipify-perl")
    p.add_argument("--no-compat", action="store_true",
                   help="accepted and ignored: there is no compatibility header any more (ROCm 7.2's own headers have "
                        "the warp-sync builtins)")
    p.add_argument("--no-compile", action="store_true", help="translate, fix and scan only")
    p.add_argument("--toolchain", choices=("auto", "rocm", "offline"), default="auto")
    p.add_argument("--force", action="store_true", help="replace the contents of a non-empty OUT_DIR")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    p.set_defaults(func=run)


def run(args) -> int:
    from rocmlab.port import PortInputError, PortRequest, port_project

    if args.workers is not None and args.workers < 1:
        print("error: --workers must be 1 or more", file=sys.stderr)
        return 2

    def progress(u):
        if not args.json:
            print(f"  {u.status:7s} {u.path}" + (f"  [{u.category}]" if u.status != "ok" else ""), flush=True)

    try:
        result = port_project(PortRequest(
            args.src, args.out, args.target, workers=args.workers, compat=not args.no_compat,
            compile=not args.no_compile, include=args.include, report=args.report, toolchain=args.toolchain,
            force=args.force, progress=progress, engine=args.engine, defines=args.define, run=args.run,
            manifest=args.manifest))
    except PortInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.to_json(), indent=1) if args.json else result.text())
    if result.compiled and result.n_compiled < result.n_units:
        return 1
    if result.ran and any(not r.runs or r.matches is False for r in result.runs):
        return 1
    return 0
