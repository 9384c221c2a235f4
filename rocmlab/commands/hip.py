"""rocmlab hip build|inspect|translate FILE: the %%hip magic's work from a terminal.

Exit status: 0 ok, 1 the build or the run failed, 2 bad input (a missing file, a file that is
not UTF-8 text, a bad option such as ``--timeout nan``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from rocmlab import safe_read, settings


class SourceError(ValueError):
    """A source file that cannot be read as text; the message names the fix."""


def _not_regular(path: Path, mode: int) -> SourceError:
    return SourceError(f"{path} is a {safe_read.kind(mode)}, not a source file: give the path of a .hip or .cu text file")


def read_source(path: Path, max_bytes: int = settings.SOURCE_MAX_BYTES) -> str:
    """The text of a HIP/CUDA source file: UTF-8 (a BOM is dropped), or SourceError naming the bad
    byte's line and the fix (a latin-1 file: convert it with iconv). A FIFO, a device or a socket is refused
    before it is opened (reading one could block forever), and a file over ``max_bytes`` before it is read (its
    size from fstat): :func:`rocmlab.safe_read.read_capped`, links followed (a path typed on the command line)."""
    try:
        data = safe_read.read_capped(path, max_bytes, follow_links=True, look_first=True)
    except safe_read.ReadRefused as exc:
        if exc.why == safe_read.NOT_REGULAR:      # at the look, or replaced between the look and the open
            raise _not_regular(path, exc.mode) from None
        if exc.why == safe_read.TOO_BIG:
            raise SourceError(f"{path} is {exc.size / 2**20:.0f} MB: a HIP/CUDA source may be at most "
                              f"{max_bytes >> 20} MB here (is it the right file?)") from None
        if exc.why == safe_read.GREW:
            raise SourceError(f"{path} grew past {max_bytes >> 20} MB while it was read: give a source file") from None
        raise SourceError(f"{path} cannot be read ({exc.strerror or exc.error}): check its permissions") from None
    except OSError as exc:
        raise SourceError(f"{path} cannot be read ({exc.strerror or exc}): check its permissions") from None
    if b"\0" in data:
        raise SourceError(f"{path} is a binary file (it has NUL bytes), not a HIP/CUDA source: give the .hip or .cu "
                          "text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SourceError(f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}; a latin-1 or "
                          f"Windows-1252 file?): convert it, e.g. iconv -f latin1 -t utf-8 {path} > fixed.hip "
                          "and give fixed.hip") from None


def join_flag_values(args: list[str]) -> list[str]:
    """``-f "-O2"`` as ``--flags=-O2``: a flags value that starts with '-' (as the README writes it), which argparse
    would take for an option. Arguments after ``--`` (the program's) are left as they are."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return out + args[i:]
        if a in ("-f", "--flags") and i + 1 < len(args) and args[i + 1].startswith("-") and args[i + 1] != "--":
            out.append(f"--flags={args[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


class _VerbParser(argparse.ArgumentParser):
    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(None if args is None else join_flag_values(list(args)), namespace)


def add_parser(sub):
    p = sub.add_parser("hip", help="build, run, inspect or translate a HIP/CUDA source file")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_VerbParser)
    for name, text in (("build", "build (cached), and run where a GPU can"),
                       ("inspect", "registers, LDS, occupancy per kernel (and --isa: the listing)"),
                       ("translate", "print the CUDA source the HIP->CUDA path compiles")):
        v = verbs.add_parser(name, help=text)
        v.add_argument("file")
        if name != "translate":
            v.add_argument("-t", "--target", default=None, help="gfx942, gfx90a, sm_90, ... (default: the GPU here)")
            v.add_argument("--lang", choices=("hip", "cuda"), default=None, help="default: from the file suffix")
            v.add_argument("-f", "--flags", default="", help="extra compiler flags, quoted")
        if name == "build":
            v.add_argument("--no-run", action="store_true")
            v.add_argument("--host-only", action="store_true", help="run an offline build's host code anyway")
            v.add_argument("--timeout", type=settings.time_limit_arg("--timeout"), default=settings.RUN_TIME_LIMIT_S,
                           metavar="S", help=f"seconds the program may run (default {settings.RUN_TIME_LIMIT_S:g}, "
                                             f"at most {settings.MAX_TIME_LIMIT_S:g})")
            v.add_argument("args", nargs="*", help="program arguments (after --)")
        if name == "inspect":
            v.add_argument("--isa", action="store_true", help="print the highlighted ISA listing")
            v.add_argument("--json", action="store_true")
        v.set_defaults(func=run)
    add_hipify(verbs)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def run(args) -> int:
    from rocmlab.hip import build, hipcuda, occupancy
    from rocmlab.hip import inspector as insp
    from rocmlab.machine.detect import current

    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path} is not a file: give the path of a .hip or .cu source", file=sys.stderr)
        return 2
    if args.verb != "translate":
        from rocmlab.paths import HomeError, cache_dir

        try:
            cache_dir()                   # builds are cached there: a ROCMLAB_HOME that is a file is said now
        except HomeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        src = read_source(path)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.verb == "translate":
        from rocmlab.cuda2hip.hipify import looks_like

        if looks_like(src) == "cuda":
            print(f"error: {path} looks like CUDA already (CUDA API names, no HIP ones): 'translate' goes HIP -> "
                  f"CUDA. To port CUDA to HIP run: rocmlab hip hipify {path}", file=sys.stderr)
            return 2
        t = hipcuda.translate(src)
        print(t.cuda_source, end="")
        for n in t.notes:
            print(f"note: {n}", file=sys.stderr)
        if t.unknown_names:
            print(f"warning: {t.explain()}", file=sys.stderr)
        return 0
    lang = args.lang or ("cuda" if path.suffix in (".cu", ".cuh") else "hip")
    try:
        if args.verb == "inspect":
            ins = insp.inspect(src, args.target, lang=lang, flags=args.flags)
        else:
            res = build.compile(src, lang=lang, target=args.target, flags=args.flags)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    plat = current()
    if args.verb == "inspect":
        if not ins.ok:
            for d in ins.diagnostics:
                print(d, file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps([asdict(k) for k in ins.kernels], indent=1))
            return 0
        print(f"{ins.target} with {ins.toolchain}; listing: {ins.listing}  [compiled on {plat.label}]")
        for k in ins.kernels:
            print(f"\n{k.name}")
            for name, value in k.rows():
                print(f"  {name:24s} {value}")
            if k.is_amd and k.target.split(':')[0] in occupancy.known():
                print(f"  {'calculator':24s} {occupancy.from_kernel(k).explain()}")
        if args.isa:
            for k in ins.isa:
                print(f"\n== {k.name}  highlighted: {k.counts}")
                for ln in k.lines:
                    print(f"{'[' + ln.category + ']' if ln.category else '':10s}{ln.text}")
        return 0
    from rocmlab.course.magics import report_build, report_run

    print(report_build(res))
    if not res.ok:
        return 1
    if args.no_run:
        return 0
    if not (res.can_run or args.host_only):
        print(f"not run: {res.cannot_run_reason}")
        return 0
    done = report_run(res, args.args, args.timeout, args.host_only)
    return 0 if done is not None and done.ok else 1


# --- rocmlab hip hipify FILE|DIR: CUDA -> HIP with the trap report (rocmlab.port's translation and scanner) ---
def add_hipify(verbs):
    v = verbs.add_parser("hipify", help="port a CUDA file or folder to HIP and report its traps (CUDA -> HIP)")
    v.add_argument("path", metavar="FILE|DIR", help="a CUDA source file, or a folder of them")
    v.add_argument("-o", "--out", default=None, help="write the HIP file (FILE) or folder (DIR) here; "
                                                      "default: print a file's HIP to stdout")
    v.add_argument("--engine", choices=("torch", "perl"), default="torch",
                   help="torch.utils.hipify (default) or ROCm's hipify-perl")
    v.add_argument("-t", "--target", default=None, help="the AMD target the traps are judged for (default gfx942)")
    v.add_argument("--json", action="store_true", help="print the traps as JSON")
    v.set_defaults(func=run_hipify)


def run_hipify(args) -> int:
    """Exit status: 0 no error-level trap, 1 error-level traps found, 2 bad input."""
    from rocmlab.cuda2hip import hipify

    path = Path(args.path)
    target = args.target or settings.DEFAULT_TARGET
    if target not in settings.AMD_TARGETS:
        print(f"error: unknown --target {target}: choose one of {', '.join(settings.AMD_TARGETS)}", file=sys.stderr)
        return 2
    if not path.exists():
        print(f"error: {path} does not exist: give a CUDA file (.cu) or a folder of them", file=sys.stderr)
        return 2
    try:
        if path.is_dir():
            if args.out is None:
                print("error: hipify of a folder needs --out DIR (a new folder for the HIP files)", file=sys.stderr)
                return 2
            ports = hipify.hipify_folder(path, args.out, tool=args.engine)
        else:
            text = read_source(path)
            if hipify.looks_like(text) == "hip":
                print(f"error: {path} looks like HIP already (HIP API names, no CUDA ones): 'hipify' goes CUDA -> "
                      f"HIP. To see the CUDA the HIP->CUDA path compiles run: rocmlab hip translate {path}",
                      file=sys.stderr)
                return 2
            ports = {path.name: hipify.hipify_file(path, args.out, tool=args.engine)}
    except (hipify.HipifyError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    traps = [(name, t) for name, port in ports.items() for t in port.traps]
    if args.json:
        print(json.dumps([{"file": n, **asdict(t)} for n, t in traps], indent=1))
    else:
        if path.is_file() and args.out is None:
            print(ports[path.name].hip, end="")
        for name, port in ports.items():
            print(port.report().replace(port.name, name, 1), file=sys.stderr)
        if args.out:
            print(f"wrote {args.out}", file=sys.stderr)
    return 1 if any(t.severity == "error" for _, t in traps) else 0
