"""What the hardware will do with a kernel: registers, LDS, scratch, spills, occupancy and the ISA.

AMD targets (any machine with the offline or ROCm toolchain): one device-only compile to
assembly (``--cuda-device-only -S``) gives everything. Per kernel the compiler writes a
``; Kernel info:`` block (``NumVgprs``, ``NumAgprs``, ``NumSgprs``, ``ScratchSize``,
``LDSByteSize``, ``Occupancy``: the same figures ``-Rpass-analysis=kernel-resource-usage``
prints) and the code object metadata (``amdhsa.kernels``: ``.wavefront_size``,
``.vgpr_spill_count``, ``.max_flat_workgroup_size``, ...). Both are read here: nothing is
estimated. The parsers are in :mod:`rocmlab.hip.resources` (its :func:`resources_from_log` reads the same
figures from a build's remarks).

NVIDIA targets: ``nvcc -cubin -Xptxas -v`` (registers, barriers, shared memory, stack frame,
spill bytes) and ``cuobjdump -sass`` for the listing, or the PTX (``nvcc -ptx``) where
``cuobjdump`` is not installed (the listing says which). ptxas reports no occupancy.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import sandbox
from rocmlab.hip import build as _build
from rocmlab.hip import compile as driver
from rocmlab.hip.resources import (
    KernelIsa,
    KernelResources,
    parse_amdgcn,
    parse_ptxas,
    parse_sass,
    to_dataframe,
)


@dataclass
class Inspection:
    ok: bool
    target: str
    toolchain: str
    listing: str                   # "AMDGCN assembly" | "SASS (cuobjdump)" | "PTX (no cuobjdump here)"
    kernels: list[KernelResources]
    isa: list[KernelIsa]
    log: str
    diagnostics: list = field(default_factory=list)
    cached: bool = False

    def kernel(self, name: str) -> KernelResources:
        for k in self.kernels:
            if k.name == name or k.symbol == name or k.name.split("(")[0] == name:
                return k
        raise KeyError(f"no kernel {name!r}; kernels: {', '.join(k.name for k in self.kernels) or 'none'}")

    def isa_of(self, name: str) -> KernelIsa:
        for k in self.isa:
            if k.name == name or k.symbol == name or k.name.split("(")[0] == name:
                return k
        raise KeyError(f"no ISA for {name!r}; kernels: {', '.join(k.name for k in self.isa) or 'none'}")

    def dataframe(self):
        return to_dataframe(self.kernels)


def _source_of(source_or_build, lang, flags):
    if isinstance(source_or_build, _build.BuildResult):
        b = source_or_build
        return b.source, b.lang, tuple(b.flags) + tuple(flags), b.target
    if not isinstance(source_or_build, str) or not source_or_build.strip():
        raise ValueError("pass HIP/CUDA source text or a BuildResult from rocmlab.hip.build.compile")
    return source_or_build, lang, tuple(flags), None


def inspect(source_or_build, target: str | None = None, *, lang: str = "hip", flags=(), toolchain=None,
            plat=None, use_cache: bool = True) -> Inspection:
    """Compile device code only and return resources and the ISA listing for every kernel.

    ``target``: the build's, else the GPU here (AMD: its gfx; NVIDIA: its sm), else settings.DEFAULT_TARGET
    (:func:`rocmlab.hip.build.default_target`). With no compiler for the target, the result has ``ok=False`` and a
    diagnostic that names the fix (it never raises)."""
    src, lang, flags, b_target = _source_of(source_or_build, lang, flags)
    plat = driver.resolve_platform(plat)
    target = target or b_target or _build.default_target(lang, plat)
    flags = _build.validate_args(lang, "obj", target, flags)
    base = target.split(":")[0]
    tc, fix = _build.choose_toolchain(lang, base, plat, toolchain)
    if tc is None:
        return Inspection(False, target, "", "", [], [], fix, [driver.Diagnostic(None, None, "error", fix)])
    if tc.kind == "nvcc":
        out = driver.compile_source(src, tc, lang=lang, output_kind="cubin", target=base, flags=flags,
                                    use_cache=use_cache)
        kernels = parse_ptxas(out.log, base) if out.ok else []
        isa, listing = _nvidia_listing(tc, src, lang, base, flags, use_cache) if out.ok else ([], "")
    else:
        out = driver.compile_source(src, tc, lang=lang, output_kind="asm", target=base, flags=flags,
                                    use_cache=use_cache)
        kernels, isa = parse_amdgcn(out.read(), base) if out.ok else ([], [])
        listing = "AMDGCN assembly (clang -S)"
    return Inspection(out.ok, target, tc.label, listing, kernels, isa, out.log, list(out.diagnostics), out.cached)



def inspect_targets(source_or_build, targets, **kw) -> list[Inspection]:
    """:func:`inspect` on each of ``targets`` (the same code, different chips), compiled in parallel, one
    compiler per core: the Inspections in the order of ``targets``, each as ``inspect`` alone returns it."""
    targets = list(dict.fromkeys(targets))
    if not targets:
        raise ValueError("targets is empty: name at least one, e.g. ['gfx942', 'gfx90a']")
    with ThreadPoolExecutor(min(len(targets), os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda t: inspect(source_or_build, t, **kw), targets))

def _nvidia_listing(tc, src: str, lang: str, target: str, flags, use_cache: bool) -> tuple[list[KernelIsa], str]:
    cuobjdump = shutil.which("cuobjdump") or str(Path(tc.compiler).resolve().parent / "cuobjdump")
    if Path(cuobjdump).exists():
        cub = driver.compile_source(src, tc, lang=lang, output_kind="cubin", target=target, flags=flags,
                                    use_cache=use_cache)
        done = sandbox.run_limited([cuobjdump, "-sass", cub.output], timeout_s=60, memory_bytes=None)
        if done.ok:
            return parse_sass(done.stdout), "SASS (cuobjdump -sass)"
    ptx = driver.compile_source(src, tc, lang=lang, output_kind="ptx", target=target, flags=flags, use_cache=use_cache)
    if ptx.ok:
        return parse_sass(ptx.read()), "PTX (cuobjdump is not installed here, so no SASS)"
    return [], "none (cuobjdump missing and nvcc -ptx failed)"


def resources(source_or_build, target: str | None = None, **kw) -> list[KernelResources]:
    """VGPRs, SGPRs, AGPRs, LDS, scratch, spills, wavefront size and the compiler's occupancy for
    each kernel (``target``: the build's, else the GPU here, else settings.DEFAULT_TARGET). Raises :class:`rocmlab.hip.build.HipError` (with the compiler's errors) if it
    does not compile."""
    return _compiled(inspect(source_or_build, target, **kw)).kernels


def isa(source_or_build, target: str | None = None, **kw) -> list[KernelIsa]:
    """The ISA listing of each kernel; raises :class:`rocmlab.hip.build.HipError` if it does not compile."""
    return _compiled(inspect(source_or_build, target, **kw)).isa


def _compiled(r: Inspection) -> Inspection:
    if not r.ok:
        raise _build.HipError("the source does not compile for " + r.target + ":\n" +
                              "\n".join(str(d) for d in r.diagnostics[:10]))
    return r
