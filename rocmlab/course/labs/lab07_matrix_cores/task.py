"""Lab 07's graded task: how many VGPRs can a matrix-core kernel afford for a given occupancy on MI300X (gfx942)?

The learner writes ``vgpr_budget(r, waves)``: for a kernel's other resources ``r`` (:class:`Resources`: the AGPRs
per lane, SGPRs per wave, LDS bytes per workgroup, threads per workgroup; ``r.vgprs`` is what it uses now), the
most architectural VGPRs per lane it may use and still get ``waves`` waves per SIMD, at most 256 (the VGPRs a wave
addresses); 0 when no VGPR count gets there (the AGPRs, SGPRs, LDS or whole workgroups keep it below). It is
the question ``__launch_bounds__`` and ``amdgpu_waves_per_eu`` put to the compiler, and the inverse of what the
toolkit's calculator (:mod:`rocmlab.hip.occupancy`: resources to waves) computes, so no call of the toolkit answers
it. Each grade:

- ``compiler``: compiles three freshly drawn MFMA kernels (random accumulator tiles, LDS buffer and
  ``__launch_bounds__``) for gfx942 with the offline ROCm toolchain, and asks each kernel's budget (with the
  compiler's AGPRs, SGPRs and LDS) for the occupancy the compiler reports for it and for one wave more. Without
  that toolchain the check is skipped (it needs ``rocmlab setup``'s ROCm root), and says so;
- ``register-file``, ``lds-and-workgroup``: fresh random resources and waves.

An answer is right when the calculator, which Lab 07 shows agreeing with the compiler, gives the budget those
waves and one VGPR more fewer (or, for 0, one VGPR already fewer): the grade checks forward and holds no
reference answer (that is :mod:`.reference`, withheld from learners in a workshop).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from rocmlab import settings
from rocmlab.course import tasks as T
from rocmlab.grader import pyanswer
from rocmlab.hip import occupancy as occ

LAB, TASK = "07-matrix-cores", "waves-per-simd"
#: The target the task is about: MI300X; its facts (rocmlab.targets) are those the hints state.
TARGET = settings.DEFAULT_TARGET
CU = occ.compute_unit(TARGET)
TITLE = f"Lab 07 task: the VGPR budget for a number of waves per SIMD ({TARGET})"


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


#: The most architectural VGPRs a wave addresses: a budget is at most this.
MAX_BUDGET = CU.addressable_arch_vgprs


def _waves(r: Resources, vgprs: int) -> int:
    return occ.occupancy(vgprs, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, TARGET).waves_per_simd


def right(r: Resources, waves: int, budget) -> bool:
    """Checked forward with the calculator: ``budget`` VGPRs get ``waves`` and one more does not (at most
    :data:`MAX_BUDGET`); 0 when even one VGPR does not get there."""
    if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_BUDGET:
        return False
    if budget == 0:
        return _waves(r, 1) < waves
    return _waves(r, budget) >= waves and (budget == MAX_BUDGET or _waves(r, budget + 1) < waves)


def _compare(fn, cases: list[tuple[Resources, int]]) -> tuple[int, str]:
    """(wrong answers, the first one described). A handed-in answer runs in the sandbox (one run)."""
    wrong, first = 0, ""
    asked = pyanswer.answers(fn, cases, spread=True)
    for (r, w), (got, err) in zip(cases, asked, strict=True):
        if err or not right(r, w, got):
            wrong += 1
            why = err or ("it does not get them" if isinstance(got, int) and got and _waves(r, got) < w else
                          "one VGPR more still gets them" if isinstance(got, int) and got < MAX_BUDGET else
                          f"not a whole number of VGPRs from 0 to {MAX_BUDGET}")
            first = first or f"{r} for {w} waves/SIMD: you said {got if not err else '(error)'}: {why}"
    return wrong, first


def _toolchain():
    from rocmlab.hip import build
    tc = build.find_toolchain("offline")
    return tc if tc is not None and tc.supports(TARGET) else None


def draw_waves(seed: int, rs: list[Resources]) -> list[int]:
    """Waves to ask for each resource set: from 1 to one more than its other limits (SGPRs, LDS, workgroups)
    allow, so that some answers are 0 and most are not."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for r in rs:
        others = occ.occupancy(1, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, TARGET).limits
        cap = min(v for k, v in others.items() if k != "VGPRs")
        out.append(_ri(g, 1, min(8, cap + 1)))
    return out


def grade(vgpr_budget, seed: int | None = None, record: bool = True):
    """Grade ``vgpr_budget(Resources, waves) -> int`` (see the module's docstring)."""
    started = time.monotonic()
    seed = T.draw_seed(seed)
    checks = []
    tc = _toolchain()
    if tc is None:
        checks.append(T.skipped("compiler", "compile", 5, f"needs the offline ROCm toolchain for {TARGET} (rocmlab "
                                "setup builds it) to compile fresh kernels; not scored here"))
    else:
        from rocmlab.hip import inspector
        src, variants = draw_kernels(seed)
        rep = inspector.inspect(src, TARGET)
        if not rep.ok:
            checks.append(T.skipped("compiler", "compile", 5, "the offline compile failed (a fault of this "
                                    f"machine, not scored): {'; '.join(str(d) for d in rep.diagnostics[:2])}"))
        else:
            cases, kernels = [], []
            for v in variants:
                k = rep.kernel(v["name"])
                r = Resources(k.vgprs or 0, k.agprs or 0, k.sgprs or 0, k.lds_bytes or 0, v["wg"])
                kernels.append((r, int(k.occupancy)))
                cases += [(r, int(k.occupancy))] + ([(r, int(k.occupancy) + 1)] if k.occupancy < 8 else [])
            wrong, first = _compare(vgpr_budget, cases)
            desc = ", ".join(f"{v['ti']}x{v['tj']} tiles/{v['wg']} threads: {r.vgprs} VGPRs, {r.agprs} AGPRs, "
                             f"{w} waves" for v, (r, w) in zip(variants, kernels, strict=True))
            checks.append(T.verdict(wrong == 0, "compiler", "compile", 5,
                                    f"right for 3 fresh kernels at the compiler's occupancy and one wave more "
                                    f"({desc})  [{tc.label}]",
                                    f"{wrong} of {len(cases)} budgets wrong for the compiler's kernels: {first}",
                                    f"registers: {CU.vgprs_per_simd} per SIMD lane shared by VGPRs and AGPRs, "
                                    f"allocated in granules of {CU.vgpr_granule}, VGPRs rounded up to 4 before the "
                                    "AGPRs; LDS and whole workgroups cap the waves whatever the VGPRs"))
    for cid, pts, lds, hint in (("register-file", 3, False, f"a wave may be allocated {CU.vgprs_per_simd} // waves "
                                 f"registers per lane, rounded down to the granule of {CU.vgpr_granule}; with "
                                 f"AGPRs, align(vgprs, 4) + agprs must fit it; at most {MAX_BUDGET} VGPRs"),
                                ("lds-and-workgroup", 2, True, f"a CU has {CU.lds_per_cu // 1024} KiB of LDS and "
                                 f"{CU.simds_per_cu} SIMDs: when the workgroups that fit give fewer waves than asked, "
                                 "no VGPR budget helps (0)")):
        rs = draw_resources(seed + len(cid), 12, lds)
        cases = list(zip(rs, draw_waves(seed + 7 * len(cid), rs), strict=True))
        wrong, first = _compare(vgpr_budget, cases)
        checks.append(T.verdict(wrong == 0, cid, "compare", pts, "all 12 fresh resource sets right",
                                f"{wrong} of 12 fresh resource sets wrong; first: {first}", hint))
    return T.finish(LAB, TASK, TITLE, checks, f"cpu (offline {TARGET} compile)" if tc else "cpu", TARGET, seed,
                    started, record)


def reference(r: Resources, waves: int) -> int:
    """The reference answer (:mod:`.reference`: withheld from learners in a workshop)."""
    from rocmlab.course.labs.lab07_matrix_cores import reference as ref

    return ref.vgpr_budget(r, waves)


def wrong_answers() -> dict:
    """Typical wrong answers, each caught by the grade."""
    def no_agprs(r, waves):              # forgets that AGPRs share the register file
        return min(256, 512 // waves // 8 * 8)

    def no_lds(r, waves):                # registers right, LDS and workgroups ignored (never 0)
        per = 512 // waves // 8 * 8
        return max(1, min(256, (per - r.agprs) // 4 * 4 if r.agprs else per))

    def no_granule(r, waves):            # registers counted one by one, not in granules of 8
        return max(0, min(256, 512 // waves - r.agprs))
    return {"ignores AGPRs": no_agprs, "ignores LDS and workgroups": no_lds, "no allocation granule": no_granule}
