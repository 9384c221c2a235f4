"""Checks graded on the compiled AMD ISA, and checks that only an AMD GPU can run.

``isa`` (a check type): compile the submission's device code for an AMD target (``target``, else
:data:`rocmlab.settings.DEFAULT_TARGET`) with :func:`rocmlab.hip.inspector.inspect` and grade what the
compiler made of it. Options, all optional:

- ``kernel``: the kernel's name (default: every kernel must pass);
- ``mnemonic``: a regular expression one of the kernel's instructions must match (e.g. ``^v_mfma``),
  at least ``min_count`` times (default 1);
- ``forbid``: a regular expression no instruction may match (e.g. ``cmpswap``: a compare-and-swap loop);
- ``accumulators: registers``: the matrix accumulators stay in registers: no scratch (private memory)
  and no VGPR spills; the message says whether the compiler put them in AGPRs or VGPRs;
- ``agprs: required``: at least one AGPR is used;
- ``min_occupancy``: the compiler's waves per SIMD must be at least this;
- ``max_scratch``: private bytes per lane allowed (a spill or a dynamically indexed array lands there).

It needs a compiler for the AMD target, which the offline toolchain gives on every backend; where
there is none it is ``skipped`` with the fix, never failed.

``needs: amd-gpu`` (an option on any check): on a machine without an AMD GPU the check is ``skipped``
with the spec's ``why`` (e.g. "not run: MFMA needs an AMD GPU") and earns nothing; an MFMA kernel has no
NVIDIA path. ``needs: amd-target`` on a compile check builds for the AMD target even on an NVIDIA
machine (the HIP->CUDA path cannot translate AMD intrinsics).

:func:`register` adds both to the grader's table of checks (one line in :mod:`rocmlab.grader`, the package).
"""

from __future__ import annotations

import re

from rocmlab import settings
from rocmlab.grader.checks import build_flags, result
from rocmlab.grader.report import CheckResult
from rocmlab.grader.spec import CheckSpec
from rocmlab.hip import build
from rocmlab.hip import inspector as hip_inspect
from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX

NEEDS = ("amd-gpu", "amd-target")


def isa_target(spec: CheckSpec) -> str:
    return str(spec.options.get("target") or settings.DEFAULT_TARGET)


def inspect_submission(ctx, target: str):
    """The submission's device code for ``target`` (cached per context), via rocmlab.hip.inspector."""

    cache = ctx.__dict__.setdefault("_isa", {})
    if target not in cache:
        flags, missing = build_flags(ctx, nvidia=False)
        cache[target] = (None, missing) if missing else (hip_inspect.inspect(ctx.source, target, flags=flags), "")
    return cache[target]


def _kernel_problems(k, isa, opts: dict) -> tuple[list[str], list[str]]:
    """(problems, facts) for one kernel."""
    problems, facts = [], []
    pattern = opts.get("mnemonic")
    if pattern:
        rx = re.compile(str(pattern))
        found = {m: n for m, n in (isa.mnemonics() if isa else {}).items() if rx.search(m)}
        need = int(opts.get("min_count", 1))
        count = sum(found.values())
        if count < need:
            problems.append(f"no instruction matching {pattern!r} in {k.name.split('(')[0]} "
                            f"({count} found, {need} needed)")
        else:
            facts.append(", ".join(f"{n} x {m}" for m, n in sorted(found.items())))
    if opts.get("forbid"):
        rx = re.compile(str(opts["forbid"]))
        bad = {m: n for m, n in (isa.mnemonics() if isa else {}).items() if rx.search(m)}
        if bad:
            problems.append(f"{k.name.split('(')[0]} contains " + ", ".join(f"{n} x {m}" for m, n in sorted(bad.items()))
                            + f" (matching {opts['forbid']!r}, not allowed)")
    scratch = k.scratch_bytes or 0
    spills = k.vgpr_spills or 0
    if opts.get("accumulators") == "registers":
        if scratch or spills:
            problems.append(f"the accumulators do not stay in registers: {scratch} B of scratch per lane, "
                            f"{spills} VGPRs spilled (a local array indexed by a run-time value, or too many "
                            "accumulators, lands in slow private memory)")
        else:
            where = f"{k.agprs} AGPRs" if k.agprs else "VGPRs (no AGPRs)"
            facts.append(f"accumulators in {where}, no scratch")
    if opts.get("agprs") == "required" and not k.agprs:
        problems.append("no AGPRs used: the MFMA accumulators are not in the accumulation registers")
    if "max_scratch" in opts and scratch > int(opts["max_scratch"]):
        problems.append(f"{scratch} B of scratch per lane (at most {int(opts['max_scratch'])} allowed)")
    if "min_occupancy" in opts:
        need = int(opts["min_occupancy"])
        occ = k.occupancy
        if occ is None or occ < need:
            problems.append(f"occupancy {occ} waves/SIMD (VGPRs {k.vgprs}, AGPRs {k.agprs}), needs {need}")
        else:
            facts.append(f"occupancy {occ} waves/SIMD (VGPRs {k.vgprs}, AGPRs {k.agprs})")
    return problems, facts


def check_isa(ctx, spec: CheckSpec) -> CheckResult:
    target = isa_target(spec)
    ins, missing = inspect_submission(ctx, target)
    if ins is None:
        return result(spec, ctx, "skipped", f"cannot compile for {target} here: {missing}")
    if not ins.ok:
        text = " ".join(str(d) for d in ins.diagnostics[:2])
        if "not available offline" in text or not ins.toolchain:
            return result(spec, ctx, "skipped", f"no compiler for {target} here: {text}")
        return result(spec, ctx, "failed", f"does not compile for {target}: {text}")
    want = spec.options.get("kernel")
    kernels = [k for k in ins.kernels if not want or k.name.split("(")[0] == want or k.symbol == want]
    if not kernels:
        names = ", ".join(k.name.split("(")[0] for k in ins.kernels) or "none"
        return result(spec, ctx, "failed", f"no kernel {want!r} in the {target} code (kernels: {names})")
    problems, facts = [], []
    for k in kernels:
        try:
            isa = ins.isa_of(k.symbol)
        except KeyError:
            isa = None
        p, f = _kernel_problems(k, isa, spec.options)
        problems += p
        facts += f
    details = {"target": target, "kernels": [{"name": k.name, "vgprs": k.vgprs, "agprs": k.agprs,
                                             "scratch_bytes": k.scratch_bytes, "occupancy": k.occupancy}
                                            for k in kernels]}
    if problems:
        return result(spec, ctx, "failed", f"{target}: " + "; ".join(problems), details)
    return result(spec, ctx, "passed", f"{target} ({ins.toolchain}): " + "; ".join(facts or ["ok"]), details)


def _no_offline_compiler(target: str) -> str:
    """'' when an offline AMD toolchain here builds for ``target``, else what is missing and the fix."""

    tc = build.find_toolchain("offline")
    if tc is None:
        return "no offline AMD toolchain (" + NO_TOOLCHAIN_FIX["offline"] + ")"
    if not tc.supports(target):
        return f"the offline toolchain has no {target} (it has {', '.join(tc.targets)})"
    return ""


def _needs_amd_gpu(ctx) -> bool:
    return getattr(ctx.plat, "backend", None) == "rocm"


def with_needs(fn):
    """Wrap a check so that its spec's ``needs`` option is honoured."""

    def wrapped(ctx, spec: CheckSpec) -> CheckResult:
        needs = spec.options.get("needs")
        if needs is None:
            return fn(ctx, spec)
        if needs not in NEEDS:
            raise ValueError(f"{ctx.exercise.id}: check {spec.id} has needs {needs!r} (one of {', '.join(NEEDS)})")
        if needs == "amd-gpu" and not _needs_amd_gpu(ctx):
            backend = getattr(ctx.plat, "backend", "?")
            why = spec.options.get("why") or "not run: this program needs an AMD GPU"
            return result(spec, ctx, "skipped", f"{why} (this machine's backend is {backend})")
        if needs == "amd-target" and not ctx.target and getattr(ctx.plat, "backend", None) != "rocm":
            target = isa_target(spec)
            missing = _no_offline_compiler(target)
            if missing:
                return result(spec, ctx, "skipped", f"cannot compile for {target} here: {missing}")
            ctx.target = target
        return fn(ctx, spec)

    wrapped.__name__ = getattr(fn, "__name__", "check")
    wrapped.__wrapped__ = fn
    return wrapped


def register(checks: dict) -> None:
    """Add the ``isa`` check type and the ``needs`` option to the grader's table (in place)."""
    for name in list(checks):
        if not hasattr(checks[name], "__wrapped__"):
            checks[name] = with_needs(checks[name])
    checks["isa"] = with_needs(check_isa)
