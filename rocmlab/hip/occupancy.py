"""Occupancy calculator for AMD CDNA2 (MI200, gfx90a), CDNA3 (MI300X, gfx942) and CDNA4 (MI355X, gfx950).

Occupancy is how many wavefronts each SIMD keeps resident; more waves hide more memory
latency. A CU has 4 SIMDs. A wave's limit is the smallest of:

- **VGPRs.** The register file is unified: each SIMD has 512 VGPRs per lane, shared by
  architectural VGPRs and AGPRs (accumulation registers for MFMA). A wave uses
  ``align(arch VGPRs, 4) + AGPRs`` (or ``max(arch, AGPRs)`` when it has no AGPRs), rounded
  up to the allocation granule of 8. Waves per SIMD = ``512 // that``, at most 8.
  (Sources: AMD, "AMD Instinct MI300 Instruction Set Architecture" (CDNA3) and "AMD Instinct
  MI200 ISA" (CDNA2) reference guides, on VGPRs and the accumulation VGPRs; LLVM's AMDGPUUsage
  documentation (unified VGPR file on GFX90A/GFX942); LLVM ``AMDGPUBaseInfo.cpp``:
  ``getVGPRAllocGranule`` = 8 and
  ``getTotalNumVGPRs`` = 512 for GFX90A-class targets, ``getMaxWavesPerEU`` = 8 for
  GFX90A-class targets; ``SIProgramInfo`` ``getTotalNumVGPRs(GFX90A, AGPRs, ArchVGPRs)``.)
- **SGPRs.** 800 SGPRs per SIMD on GFX9: up to 80 SGPRs allow 10 waves, 88 allow 9,
  100 allow 8, more allow 7 (LLVM ``GCNSubtarget::getOccupancyWithNumSGPRs``, GFX9 branch);
  then clamped to 8, so SGPRs rarely limit CDNA.
- **LDS.** 64 KiB per CU on CDNA2/CDNA3 (the CDNA3 ISA guide and white paper;
  ``datasets/hardware.csv``); **160 KiB per CU on CDNA4 (gfx950)**: LLVM's AMDGPU back end gives
  gfx950 an addressable local memory of 163840 bytes (its CodeGen tests: "GFX950 supports up to
  160 KB LDS memory", and "local memory (163844) exceeds limit (163840)"), and the ROCm 7.2
  compiler's occupancy remarks agree (a 40 KiB, 256-thread kernel: 1 wave/SIMD on gfx942, 4 on
  gfx950; ``benchmarks/results/toolchain_compare.md``). The VGPR, SGPR and workgroup rules of
  gfx950 are those of gfx942 (checked against the same compiler for every kernel of
  ``rocmlab/hip/kernels/pressure.hip``, ``tests/hip/whole/test_hip_inspect.py``).
  Workgroups per CU = ``LDS per CU // LDS per workgroup``, also capped by the workgroup-slot
  limit; waves per SIMD = ``ceil(workgroups * waves per workgroup / 4)`` (LLVM
  ``AMDGPUSubtarget::getOccupancyWithLocalMemSize``).
- **Workgroup size.** A workgroup's waves live on one CU. Workgroups per CU are limited to 16
  for multi-wave workgroups (barrier resources) or 32 (8 waves x 4 SIMDs) for single-wave
  ones (LLVM ``getMaxWorkGroupsPerCU``).

``compiler_view=True`` (the default) reproduces what clang reports as ``Occupancy
[waves/SIMD]``: it uses the kernel's *maximum* workgroup size (1024 unless
``__launch_bounds__`` says otherwise) for the LDS limit, as the compiler must. Pass the real
launch's workgroup size to see the occupancy of that launch.

The numbers (512 VGPRs, the granule of 8, 64 or 160 KiB of LDS, ...) are each target's record in
:mod:`rocmlab.targets` (its :class:`~rocmlab.targets.ComputeUnit`); this module holds the rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmlab import targets
from rocmlab.settings import DEFAULT_TARGET


def known() -> tuple[str, ...]:
    """The targets the calculator has facts for: each record of :mod:`rocmlab.targets` with a compute unit."""
    return tuple(t.name for t in targets.with_compute_unit())


def compute_unit(target: str) -> targets.ComputeUnit:
    """The facts the calculator counts with for ``target`` (its record's :class:`rocmlab.targets.ComputeUnit`);
    raises ValueError for a target it has none for."""
    t = targets.find(target)
    if t is None or t.cu is None:
        raise ValueError(f"target {target!r} is not a CDNA2/CDNA3/CDNA4 target: use one of {', '.join(sorted(known()))}")
    return t.cu


def _wave(target: str) -> int:
    return targets.get(target).wave


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass(frozen=True)
class Occupancy:
    target: str
    waves_per_simd: int
    limits: dict[str, int]         # resource -> waves per SIMD it alone allows
    limiting: str                  # the resource that sets the occupancy (ties: the first in LIMIT_ORDER)
    vgprs_allocated: int           # per lane, after the AGPR split and the granule
    workgroups_per_cu: int         # resident workgroups of this size per CU
    waves_per_cu: int
    notes: tuple[str, ...] = ()

    @property
    def max_waves(self) -> int:
        return compute_unit(self.target).max_waves_per_simd

    @property
    def fraction(self) -> float:
        return self.waves_per_simd / self.max_waves

    def explain(self) -> str:
        lim = ", ".join(f"{k} {v}" for k, v in self.limits.items())
        return (f"{self.waves_per_simd} of {self.max_waves} waves per SIMD on {self.target}, limited by "
                f"{self.limiting} (limits: {lim})")


LIMIT_ORDER = ("VGPRs", "SGPRs", "LDS", "workgroup size")


def waves_from_vgprs(arch_vgprs: int, agprs: int = 0, target: str = DEFAULT_TARGET) -> tuple[int, int]:
    """(waves per SIMD, VGPRs allocated per lane) for a kernel's register use."""
    a = compute_unit(target)
    arch_vgprs, agprs = max(0, arch_vgprs), max(0, agprs)
    total = _align(arch_vgprs, 4) + agprs if agprs else arch_vgprs
    if total < a.vgpr_granule:
        return a.max_waves_per_simd, a.vgpr_granule if total else 0
    alloc = _align(total, a.vgpr_granule)
    return min(a.max_waves_per_simd, max(1, a.vgprs_per_simd // alloc)), alloc


def waves_from_sgprs(sgprs: int, target: str = DEFAULT_TARGET) -> int:
    a = compute_unit(target)
    if sgprs <= 80:
        w = 10
    elif sgprs <= 88:
        w = 9
    elif sgprs <= 100:
        w = 8
    else:
        w = 7
    return min(w, a.max_waves_per_simd)


def max_workgroups_per_cu(workgroup_size: int, target: str = DEFAULT_TARGET) -> int:
    a = compute_unit(target)
    waves = -(-workgroup_size // _wave(target))
    slots = a.max_waves_per_simd * a.simds_per_cu
    if waves == 1:
        return slots
    return min(slots // waves, 16)


def waves_from_lds(lds_bytes: int, workgroup_size: int, target: str = DEFAULT_TARGET) -> int:
    a = compute_unit(target)
    groups = a.lds_per_cu // (lds_bytes or 1)
    if groups == 0:
        return 0
    groups = min(groups, max_workgroups_per_cu(workgroup_size, target))
    waves = groups * -(-workgroup_size // _wave(target))
    return min(-(-waves // a.simds_per_cu), a.max_waves_per_simd)


def occupancy(vgprs: int, agprs: int = 0, sgprs: int = 16, lds_bytes: int = 0, workgroup_size: int = 1024,
              target: str = DEFAULT_TARGET) -> Occupancy:
    """Waves per SIMD for one kernel, and the resource that limits it.

    ``vgprs``: architectural VGPRs per lane; ``agprs``: AGPRs per lane; ``sgprs``: SGPRs per wave
    as the compiler counts them; ``lds_bytes``: LDS per workgroup; ``workgroup_size``: threads per
    workgroup (the compiler assumes the maximum, 1024, without ``__launch_bounds__``).
    """
    a = compute_unit(target)
    for label, v, hi in (("vgprs", vgprs, a.max_arch_vgprs), ("agprs", agprs, a.max_agprs),
                         ("sgprs", sgprs, 112), ("lds_bytes", lds_bytes, 1 << 30)):
        if not isinstance(v, int) or v < 0 or v > hi:
            raise ValueError(f"{label}={v!r} is out of range: it must be an integer from 0 to {hi}")
    if not isinstance(workgroup_size, int) or not 1 <= workgroup_size <= a.max_workgroup:
        raise ValueError(f"workgroup_size={workgroup_size!r} must be 1..{a.max_workgroup} threads")
    notes = []
    if vgprs > a.addressable_arch_vgprs:
        notes.append(f"a wave addresses at most {a.addressable_arch_vgprs} arch VGPRs; beyond that the compiler "
                     "uses AGPRs or spills to scratch")
    if lds_bytes > a.lds_per_cu:
        notes.append(f"{lds_bytes} B of LDS is more than the {a.lds_per_cu} B a CU has: the launch fails")
    w_v, alloc = waves_from_vgprs(vgprs, agprs, target)
    limits = {"VGPRs": w_v, "SGPRs": waves_from_sgprs(sgprs, target),
              "LDS": waves_from_lds(lds_bytes, workgroup_size, target) if lds_bytes else a.max_waves_per_simd}
    wg_waves = -(-workgroup_size // _wave(target))
    slots = a.max_waves_per_simd * a.simds_per_cu
    limits["workgroup size"] = min(a.max_waves_per_simd,
                                   -(-max_workgroups_per_cu(workgroup_size, target) * wg_waves // a.simds_per_cu))
    waves = min(limits.values())
    limiting = next(k for k in LIMIT_ORDER if limits[k] == waves)
    if waves == a.max_waves_per_simd:
        limiting = "the hardware maximum (nothing else limits it)"
    # whole workgroups per CU at this occupancy
    wgs = (waves * a.simds_per_cu) // wg_waves if wg_waves <= slots else 0
    if lds_bytes:
        wgs = min(wgs, a.lds_per_cu // lds_bytes)
    return Occupancy(target, waves, limits, limiting, alloc, wgs, wgs * wg_waves, tuple(notes))


def from_kernel(k, workgroup_size: int | None = None, target: str | None = None) -> Occupancy:
    """The calculator applied to a :class:`rocmlab.hip.resources.KernelResources` (compiler's view:
    its maximum workgroup size, unless ``workgroup_size`` is given)."""
    target = target or k.target.split(":")[0]
    return occupancy(k.vgprs or 0, k.agprs or 0, k.sgprs or 0, k.lds_bytes or 0,
                     workgroup_size or k.max_workgroup_size or 1024, target)


def vgpr_curve(agprs: int = 0, target: str = DEFAULT_TARGET, max_vgprs: int = 256) -> tuple[list[int], list[int]]:
    """(VGPR counts, waves per SIMD) for a plot of the register cliff."""
    xs = list(range(1, max_vgprs + 1))
    return xs, [waves_from_vgprs(x, agprs, target)[0] for x in xs]
