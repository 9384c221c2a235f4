"""Lab 07's graded task: how many waves per SIMD does a kernel get on MI300X (gfx942)?

The learner writes ``waves_per_simd(r)`` for a kernel's resources ``r`` (:class:`Resources`: the
architectural VGPRs and the AGPRs per lane, SGPRs per wave, LDS bytes per workgroup, threads per
workgroup), the figure the compiler prints as ``Occupancy [waves/SIMD]``. Each grade:

- ``compiler``: compiles three freshly drawn MFMA kernels (random accumulator tiles, LDS buffer and
  ``__launch_bounds__``) for gfx942 with the offline ROCm toolchain and compares the answer with the
  compiler's own figure. Without that toolchain the check is skipped (it needs ``rocmlab setup``'s
  ROCm root), and says so;
- ``register-file``, ``lds-and-workgroup``: fresh random resources, compared with
  :func:`rocmlab.hip.occupancy.occupancy`, the calculator Lab 07 shows agreeing with the compiler.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from rocmlab.course import tasks as T
from rocmlab.grader import pyanswer
from rocmlab.hip import occupancy as occ

LAB, TASK = "07-matrix-cores", "waves-per-simd"
TITLE = "Lab 07 task: waves per SIMD from a kernel's registers and LDS (gfx942)"
TARGET = "gfx942"


@dataclass(frozen=True)
class Resources:
    """What the compiler reports for one kernel (``-Rpass-analysis=kernel-resource-usage``)."""
    vgprs: int            # architectural VGPRs per lane
    agprs: int            # accumulation VGPRs per lane
    sgprs: int            # scalar registers per wave
    lds_bytes: int        # LDS per workgroup
    workgroup_size: int   # threads per workgroup (__launch_bounds__)


_KERNEL = r'''
extern "C" __global__ __launch_bounds__({wg}) void {name}(const _Float16* A, const _Float16* B, float* C, int n, int K) {{
    __shared__ float stage[{lds_floats}];
    const int l = threadIdx.x, r16 = l % 16, k4 = 4 * ((l % 64) / 16);
    floatx4 acc[{ti}][{tj}];
    for (int i = 0; i < {ti}; ++i) for (int j = 0; j < {tj}; ++j) acc[i][j] = floatx4{{0, 0, 0, 0}};
    for (int k0 = 0; k0 < K; k0 += 16) {{
        half4 a[{ti}], b[{tj}];
        for (int i = 0; i < {ti}; ++i) for (int e = 0; e < 4; ++e) a[i][e] = A[(size_t)(16 * i + r16) * K + k0 + k4 + e];
        for (int j = 0; j < {tj}; ++j) for (int e = 0; e < 4; ++e) b[j][e] = B[(size_t)(k0 + k4 + e) * n + 16 * j + r16];
        for (int i = 0; i < {ti}; ++i) for (int j = 0; j < {tj}; ++j)
            acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x16f16(a[i], b[j], acc[i][j], 0, 0, 0);
    }}
    stage[l % {lds_floats}] = acc[0][0][0];
    __syncthreads();
    for (int i = 0; i < {ti}; ++i) for (int j = 0; j < {tj}; ++j) for (int e = 0; e < 4; ++e)
        C[(size_t)(16 * i + k4 + e) * n + 16 * j + r16] = acc[i][j][e] + stage[(l + 1) % {lds_floats}];
}}
'''
_HEAD = ("#include <hip/hip_runtime.h>\ntypedef _Float16 half4 __attribute__((ext_vector_type(4)));\n"
         "typedef float floatx4 __attribute__((ext_vector_type(4)));\n")


def _ri(g, lo, hi) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


def _pick(g, seq):
    return seq[_ri(g, 0, len(seq) - 1)]


def draw_kernels(seed: int, count: int = 3) -> tuple[str, list[dict]]:
    """HIP source with ``count`` fresh MFMA kernels: accumulator tiles TI x TJ, an LDS buffer and a
    workgroup size, each drawn at random."""
    g = torch.Generator().manual_seed(seed)
    variants = []
    for i in range(count):
        variants.append(dict(name=f"task_kernel_{i}", ti=_ri(g, 1, 8), tj=_ri(g, 1, 8),
                             lds_floats=256 * _ri(g, 1, 40), wg=_pick(g, (64, 128, 256, 512))))
    return _HEAD + "".join(_KERNEL.format(**v) for v in variants), variants


def draw_resources(seed: int, count: int, lds: bool) -> list[Resources]:
    """Random resources: register pressure only (``lds=False``), or LDS and workgroup size too."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        v = _ri(g, 1, 256)
        a = _pick(g, (0, 0, _ri(g, 1, 256)))
        if lds:
            wg = _pick(g, (64, 128, 192, 256, 512, 1024))
            out.append(Resources(v, a, _ri(g, 10, 100), 512 * _ri(g, 1, 128), wg))
        else:
            out.append(Resources(v, a, _ri(g, 10, 100), 0, 256))
    return out


def expected(r: Resources) -> int:
    return occ.occupancy(r.vgprs, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, TARGET).waves_per_simd


def _compare(fn, cases: list[tuple[Resources, int]]) -> tuple[int, str]:
    """(wrong answers, the first one described). A handed-in answer runs in the sandbox (one run)."""
    wrong, first = 0, ""
    asked = pyanswer.answers(fn, [r for r, _ in cases])
    for (r, want), (got, err) in zip(cases, asked, strict=True):
        if err or got != want:
            wrong += 1
            first = first or (f"{r}: you said {got if not err else err}, the answer is {want}")
    return wrong, first


def _toolchain():
    from rocmlab.hip import build
    tc = build.find_toolchain("offline")
    return tc if tc is not None and tc.supports(TARGET) else None


def grade(waves_per_simd, seed: int | None = None, record: bool = True):
    """Grade ``waves_per_simd(Resources) -> int`` (see the module's docstring)."""
    started = time.monotonic()
    seed = T.draw_seed(seed)
    checks = []
    tc = _toolchain()
    if tc is None:
        checks.append(T.skipped("compiler", "compile", 5, "needs the offline ROCm toolchain for gfx942 (rocmlab "
                                "setup builds it) to compile fresh kernels; not scored here"))
    else:
        from rocmlab.hip import inspector
        src, variants = draw_kernels(seed)
        rep = inspector.inspect(src, TARGET)
        if not rep.ok:
            checks.append(T.skipped("compiler", "compile", 5, "the offline compile failed (a fault of this "
                                    f"machine, not scored): {'; '.join(str(d) for d in rep.diagnostics[:2])}"))
        else:
            cases = []
            for v in variants:
                k = rep.kernel(v["name"])
                cases.append((Resources(k.vgprs or 0, k.agprs or 0, k.sgprs or 0, k.lds_bytes or 0, v["wg"]),
                              int(k.occupancy)))
            wrong, first = _compare(waves_per_simd, cases)
            desc = ", ".join(f"{v['ti']}x{v['tj']} tiles/{v['wg']} threads: {w}" for v, (_, w) in
                             zip(variants, cases, strict=True))
            checks.append(T.verdict(wrong == 0, "compiler", "compile", 5,
                                    f"matches the compiler on 3 fresh kernels ({desc} waves/SIMD)  [{tc.label}]",
                                    f"{wrong} of 3 fresh kernels differ from the compiler: {first}",
                                    "take the smallest of three limits: registers (VGPRs and AGPRs share 512 per "
                                    "SIMD lane, in granules of 8), LDS (64 KiB per CU) and the waves of whole "
                                    "workgroups over the CU's 4 SIMDs"))
    for cid, pts, lds, hint in (("register-file", 3, False, "waves = min(8, 512 // allocated), allocated = "
                                 "align(align(vgprs, 4) + agprs, 8) when there are AGPRs"),
                                ("lds-and-workgroup", 2, True, "a CU has 64 KiB of LDS and 4 SIMDs: count the "
                                 "workgroups that fit, their waves, and share them over the 4 SIMDs")):
        cases = [(r, expected(r)) for r in draw_resources(seed + len(cid), 12, lds)]
        wrong, first = _compare(waves_per_simd, cases)
        checks.append(T.verdict(wrong == 0, cid, "compare", pts, "all 12 fresh resource sets right",
                                f"{wrong} of 12 fresh resource sets wrong; first: {first}", hint))
    return T.finish(LAB, TASK, TITLE, checks, "cpu (offline gfx942 compile)" if tc else "cpu", TARGET, seed,
                    started, record)


def reference(r: Resources) -> int:
    return expected(r)


def wrong_answers() -> dict:
    """Typical wrong answers, each caught by the grade."""
    def no_agprs(r):                     # forgets that AGPRs share the register file
        return min(8, 512 // max(8, -(-r.vgprs // 8) * 8))

    def no_lds(r):                       # registers right, LDS and workgroup size ignored
        return occ.waves_from_vgprs(r.vgprs, r.agprs, TARGET)[0]

    def no_granule(r):                   # registers counted one by one, not in granules of 8
        return max(1, min(8, 512 // max(1, r.vgprs + r.agprs)))
    return {"ignores AGPRs": no_agprs, "ignores LDS and workgroup size": no_lds, "no allocation granule": no_granule}
