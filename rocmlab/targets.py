"""Every GPU target rocmlab knows, one record each: the only module that writes a target's name or its facts.

A :class:`Target` is one compile target (``gfx942``, ``sm_90``): the products built on it, its family, its
wavefront size, its FP8 format and, for an AMD CDNA target, the :class:`ComputeUnit` the occupancy calculator
(:mod:`rocmlab.hip.occupancy`, whose docstring gives each rule with its source) counts with.
:mod:`rocmlab.settings` derives its tables from these records (``AMD_TARGETS``, ``TARGET_NAMES``,
``WAVEFRONT_SIZE``, ``FP8_FORMATS``) and chooses ``DEFAULT_TARGET`` among them; every other module uses those
tables, :func:`get` or :func:`find`, and never writes a target's name as a literal (``tools/architecture.py``
counts them; ``tests/project/test_architecture.py`` fails on one).

The products are those the course names, as ``datasets/hardware.csv`` has them: gfx942 is MI300X and MI325X (the
same CDNA 3 compute die, ``amd-mi325x-page``; MI300A, the APU, is gfx942 too, and the course has no figures for
it), gfx950 is MI355X (and MI350X), gfx90a the MI200 series (MI250X's row; MI210 and MI250 too). Why these and not
the occupancy calculator's old strings ("MI300X / MI300A / MI325X", "MI210 / MI250 / MI250X"): they are what the
labs print (``settings.TARGET_NAMES``), in outputs the notebooks keep and nbval checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ComputeUnit:
    """One AMD CDNA compute unit, as the occupancy calculator counts it. Sources: AMD's "AMD Instinct MI300
    Instruction Set Architecture" (CDNA3) and "AMD Instinct MI200 ISA" (CDNA2) reference guides, LLVM's
    AMDGPUUsage (the unified VGPR file of GFX90A/GFX942) and ``AMDGPUBaseInfo.cpp``, as the calculator's
    docstring cites them."""

    simds_per_cu: int            # SIMDs per CU (the CDNA2/CDNA3 ISA guides)
    max_waves_per_simd: int      # LLVM getMaxWavesPerEU, GFX90A-class targets
    vgprs_per_simd: int          # per lane, shared by arch VGPRs and AGPRs: LLVM getTotalNumVGPRs, GFX90A-class
    vgpr_granule: int            # registers are allocated in granules of this many: LLVM getVGPRAllocGranule
    max_arch_vgprs: int          # the most arch VGPRs per lane the calculator takes
    max_agprs: int               # AGPRs per lane: a0..a255
    addressable_arch_vgprs: int  # per wave: v0..v255 (and a0..a255 besides)
    max_sgprs: int               # addressable SGPRs per wave on GFX9 (+ VCC etc. in the compiler's count)
    lds_per_cu: int              # bytes of LDS per CU
    max_workgroup: int           # threads per workgroup


@dataclass(frozen=True)
class Target:
    """One GPU compile target and what the course says of it."""

    name: str                    # the compile target (--offload-arch, -arch): gfx942, sm_90
    vendor: str                  # "AMD" or "NVIDIA"
    product: str                 # the products built on it, as the course names them
    family: str                  # its architecture: CDNA3, Hopper
    wave: int                    # lanes per wavefront (an NVIDIA warp has 32)
    fp8: str | None              # the FP8 format its hardware converts to and computes in (None: no FP8)
    fp6_fp4: bool | None = None            # FP6/FP4 in hardware (with ROCm 7.0); None: not stated
    image_instructions: bool | None = None   # texture fetches compile to image instructions; None: not stated
    cu: ComputeUnit | None = None          # AMD CDNA: the compute unit the occupancy calculator counts with

    @property
    def label(self) -> str:
        """``MI300X / MI325X (CDNA3)``: what the target is, in a table or a help text."""
        return f"{self.product} ({self.family})"

    @property
    def is_amd(self) -> bool:
        return self.vendor == "AMD"


#: CDNA2 and CDNA3 compute units (the calculator's sources: see ComputeUnit).
CDNA_CU = ComputeUnit(simds_per_cu=4, max_waves_per_simd=8, vgprs_per_simd=512, vgpr_granule=8, max_arch_vgprs=512,
                      max_agprs=256, addressable_arch_vgprs=256, max_sgprs=102,
                      lds_per_cu=65536,      # 64 KiB: the CDNA3 ISA guide and white paper, datasets/hardware.csv
                      max_workgroup=1024)

# gfx942: e4m3fnuz (max 240) is the FP8 format of its conversions (v_cvt_pk_fp8_f32) and MFMAs; no image
# instructions (ROCm 7.2: "The image/texture API not supported on the device", tests/port/whole/test_port.py);
# FP6/FP4 need gfx950.
GFX942 = Target("gfx942", "AMD", "MI300X / MI325X", "CDNA3", 64, "e4m3fnuz", fp6_fp4=False,
                image_instructions=False, cu=CDNA_CU)
# gfx950: the register, SGPR and workgroup rules of gfx942 (checked against the ROCm 7.2 compiler for every kernel
# of rocmlab/hip/kernels/pressure.hip, tests/hip/whole/test_hip_inspect.py) with 160 KiB of LDS per CU (LLVM's
# AMDGPU CodeGen tests: "GFX950 supports up to 160 KB LDS memory"; datasets/hardware.csv); the OCP e4m3fn (max 448);
# FP6/FP4 with ROCm 7.0 (datasets/rocm_versions.csv).
GFX950 = replace(GFX942, name="gfx950", product="MI355X / MI350X", family="CDNA4", fp8="e4m3fn", fp6_fp4=True,
                 cu=replace(CDNA_CU, lds_per_cu=163840))
# gfx90a: no FP8 (amd-mi250x-page: "no FP8 or TF32"); image instructions, so texture fetches compile.
GFX90A = Target("gfx90a", "AMD", "MI200 series", "CDNA2", 64, None, fp6_fp4=False, image_instructions=True,
                cu=CDNA_CU)
# CDNA3 IDs a device may report: the calculator takes them with gfx942's facts; the course does not teach them.
GFX940 = replace(GFX942, name="gfx940", product="pre-production CDNA3 ID (not MI300X)")
GFX941 = replace(GFX942, name="gfx941", product="pre-production CDNA3 ID")
# sm_90: the OCP e4m3fn (NVIDIA sm_89+); the HIP->CUDA path's target.
SM_90 = Target("sm_90", "NVIDIA", "H100 / H200", "Hopper", 32, "e4m3fn")

#: The AMD targets the course teaches, in the order it presents them.
AMD: tuple[Target, ...] = (GFX942, GFX950, GFX90A)
#: AMD targets known but not taught (the occupancy calculator takes them).
AMD_OTHER: tuple[Target, ...] = (GFX940, GFX941)
#: The NVIDIA targets the course names.
NVIDIA: tuple[Target, ...] = (SM_90,)
#: Every record.
ALL: tuple[Target, ...] = (*AMD, *NVIDIA, *AMD_OTHER)
_BY_NAME = {t.name: t for t in ALL}


def find(name: str | None) -> Target | None:
    """The record of the compile target ``name`` (exactly: ``gfx942``, not ``gfx942:xnack-``), or None."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def get(name: str) -> Target:
    """The record of ``name``; raises ValueError naming the targets rocmlab knows."""
    t = find(name)
    if t is None:
        raise ValueError(f"unknown target {name!r}: rocmlab knows {', '.join(_BY_NAME)}")
    return t


def with_compute_unit() -> tuple[Target, ...]:
    """The targets the occupancy calculator has facts for (AMD CDNA), taught ones first."""
    return tuple(t for t in ALL if t.cu is not None)
