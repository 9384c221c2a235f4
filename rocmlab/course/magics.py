"""``%%hip`` and ``%%cuda`` cell magics: write GPU code in a cell, build it, run it, inspect it.

``%load_ext rocmlab``, then::

    %%hip --name vadd --inspect -- 1000000
    #include <hip/hip_runtime.h>
    ...

Options (``%%hip --help``): ``-t/--target`` (gfx942, gfx90a, sm_90; default: the GPU here,
else gfx942), ``--inspect`` (resource table and occupancy), ``--isa`` (the highlighted ISA
listing too), ``--no-run``, ``-n/--name`` (later cells reuse the build: ``%hip_run NAME args``
or ``rocmlab.hip.build.named(NAME)``), ``-f/--flags "..."``, ``--timeout S``, ``--host-only``
(run an offline build's host code anyway), ``--simulate`` (run on the CPU simulator even where a GPU is;
without a GPU that happens by itself, and the cell says so), and program arguments after ``--``.

Nothing here can take the notebook kernel down: compiles and runs are child processes with
limits, and every problem is printed as a message that names the fix.
"""

from __future__ import annotations

import argparse
import shlex

from rocmlab import settings
from rocmlab.course.widgets import inspector
from rocmlab.hip import build as _build
from rocmlab.hip import simulate
from rocmlab.hip.compile import find_toolchain
from rocmlab.hip.inspector import inspect
from rocmlab.machine.detect import current

_LAST: dict[str, _build.BuildResult] = {}


def _parser(lang: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"%%{lang}", add_help=False, exit_on_error=False,
                                description=f"Build (and run) the cell as {lang.upper()} source.")
    p.add_argument("-t", "--target", default=None, help="gfx942 (MI300X), gfx90a (MI200), sm_90 (H100/H200)...")
    p.add_argument("--inspect", action="store_true", help="show registers, LDS, occupancy per kernel")
    p.add_argument("--isa", action="store_true", help="with --inspect: show the highlighted ISA listing")
    p.add_argument("--no-run", action="store_true", help="build only")
    p.add_argument("-n", "--name", default=None, help="name the build so later cells can reuse it")
    p.add_argument("-f", "--flags", default="", help='extra compiler flags, quoted: -f "-O2 -DN=4"')
    p.add_argument("--timeout", type=settings.time_limit_arg("--timeout"), default=settings.RUN_TIME_LIMIT_S,
                   help=f"seconds before the program is stopped (default {settings.RUN_TIME_LIMIT_S:g})")
    p.add_argument("--host-only", action="store_true",
                   help="run an offline build's host code anyway (GPU calls fail without a GPU)")
    p.add_argument("--simulate", action="store_true",
                   help="run on the CPU simulator (wavefronts of 64) even where a GPU is; automatic without one")
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("args", nargs="*", help="program arguments (after --)")
    return p


def _excerpt(source: str, d: _build.Diagnostic) -> str:
    lines = source.splitlines()
    if d.line and 1 <= d.line <= len(lines):
        caret = " " * (max((d.column or 1) - 1, 0)) + "^"
        return f"    {d.line:4d} | {lines[d.line - 1]}\n         | {caret}"
    return ""


def report_build(res: _build.BuildResult) -> str:
    out = []
    if res.ok:
        out.append(res.summary(include_run=False).splitlines()[0])
    else:
        out.append(f"error: build failed for {res.target}" + (f" with {res.toolchain}" if res.toolchain else ""))
    for n in res.notes:
        out.append(f"note: {n}")
    for d in res.diagnostics[:12]:
        out.append(f"{d}")
        ex = _excerpt(res.source, d)
        if ex:
            out.append(ex)
    if len(res.diagnostics) > 12:
        out.append(f"... {len(res.diagnostics) - 12} more (see the build's .log)")
    return "\n".join(out)


def run_cell(lang: str, line: str, cell: str, user_ns: dict | None = None, display=print) -> _build.BuildResult | None:
    """What ``%%hip``/``%%cuda`` do; returns the build (None for --help or bad options)."""
    p = _parser(lang)
    try:
        opts = p.parse_args(shlex.split(line))
    except argparse.ArgumentError as exc:
        display(f"error: bad %%{lang} options: {exc}\n{p.format_usage()}")
        return None
    except SystemExit:
        display(f"error: bad %%{lang} options {line!r}\n{p.format_usage()}")
        return None
    except ValueError as exc:       # shlex: an unclosed quote
        display(f"error: bad %%{lang} options: {exc} in {line!r}: close the quote")
        return None
    if opts.help:
        display(p.format_help())
        return None
    try:
        res = _build.compile(cell, lang=lang, target=opts.target, flags=opts.flags, name=opts.name)
    except ValueError as exc:
        display(f"error: {exc}")
        return None
    display(report_build(res))
    if user_ns is not None:
        user_ns["_hip_build"] = res
    _LAST[lang] = res
    if res.ok and opts.inspect:
        _show_inspection(res, opts.isa)
    if res.ok and not opts.no_run:
        if (res.can_run and not opts.simulate) or opts.host_only:
            report_run(res, opts.args, opts.timeout, opts.host_only, display)
        elif opts.simulate or find_toolchain(simulate.KIND) is not None:
            why = "asked for with --simulate" if opts.simulate else f"not run on a GPU: {res.cannot_run_reason}"
            display(simulate.label(f"running on the CPU simulator, wavefronts of 64 ({why}); times are not measured"))
            report_run(res, opts.args, opts.timeout, display=display, simulate=True)
        else:
            display(f"not run: {res.cannot_run_reason}")
    return res


HIP_RUN_USAGE = "usage: %hip_run NAME [--timeout S] [--host-only] [args...]"


def hip_run(line: str, display=print):
    """What ``%hip_run NAME [--timeout S] [--host-only] [args...]`` does: run a named build again.
    Returns the run (None for bad options, an unknown name or a program that cannot run here)."""
    try:
        parts = shlex.split(line)
    except ValueError as exc:
        display(f"error: bad %hip_run line: {exc} in {line!r}: close the quote\n{HIP_RUN_USAGE}")
        return None
    if not parts or parts[0].startswith("-"):
        display(f"error: %hip_run needs the NAME of a build (%%hip --name NAME) first\n{HIP_RUN_USAGE}")
        return None
    timeout, host_only, args = settings.RUN_TIME_LIMIT_S, False, []
    it = iter(parts[1:])
    for a in it:
        if a == "--":
            args.extend(it)
        elif a == "--timeout" or a.startswith("--timeout="):
            value = a.split("=", 1)[1] if "=" in a else next(it, None)
            if value is None:
                display(f"error: --timeout needs a number of seconds, e.g. --timeout 5\n{HIP_RUN_USAGE}")
                return None
            try:
                timeout = settings.time_limit(value, what="--timeout")
            except ValueError as exc:
                display(f"error: {exc}\n{HIP_RUN_USAGE}")
                return None
        elif a == "--host-only":
            host_only = True
        else:
            args.append(a)
    try:
        res = _build.named(parts[0])
    except KeyError as exc:
        display(f"error: {exc.args[0]}")
        return None
    return report_run(res, args, timeout, host_only, display)


def report_run(res: _build.BuildResult, args, timeout: float, host_only: bool = False, display=print,
               simulate: bool | None = None):
    try:
        done = _build.run(res, args, timeout_s=timeout, host_only=host_only, simulate=simulate)
    except _build.CannotRun as exc:
        display(f"not run: {exc}")
        return None
    if done.stdout:
        display(done.stdout.rstrip("\n"))
    if done.stderr:
        display("[stderr]\n" + done.stderr.rstrip("\n"))
    status = "ok" if done.ok else "error"
    display(f"[{status}] program {done.explain()}")
    return done


def _show_inspection(res: _build.BuildResult, with_isa: bool):
    ins = inspect(res)
    try:
        from IPython.display import HTML, display

        html = inspector.inspection_html(ins, plat_label=f"compiled on {current().label}") if with_isa else (
            inspector.resources_table(ins) if ins.ok else inspector.inspection_html(ins))
        display(HTML(html))
    except ImportError:  # pragma: no cover
        for k in ins.kernels:
            print(k)


def load_ipython_extension(ipython):
    from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

    @magics_class
    class RocmlabMagics(Magics):
        @cell_magic
        def hip(self, line, cell):
            run_cell("hip", line, cell, self.shell.user_ns)

        @cell_magic
        def cuda(self, line, cell):
            run_cell("cuda", line, cell, self.shell.user_ns)

        @line_magic
        def hip_run(self, line):
            """%hip_run NAME [--timeout S] [--host-only] [args...]: run a named build again."""
            hip_run(line)

    ipython.register_magics(RocmlabMagics)
