"""Lab 07 task's reference answer (the VGPR budget for a number of waves per SIMD). Withheld from learners in a
workshop (:mod:`rocmlab.workshop.references`); the grade never needs it: it checks an answer with the occupancy
calculator, forward (the budget gets the waves, one VGPR more does not)."""

from rocmlab import settings
from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references


def vgpr_budget(r, waves: int) -> int:
    """Registers: a wave may be allocated ``512 // waves`` per lane, in granules of 8; with AGPRs the
    architectural VGPRs are rounded up to 4 before the AGPRs are added. The other limits (SGPRs, LDS, whole
    workgroups) do not depend on the VGPRs: if one of them is below ``waves``, no budget gets there (0)."""
    from rocmlab.hip import occupancy as occ

    cu = occ.compute_unit(settings.DEFAULT_TARGET)   # the task's target (MI300X) and its facts
    others = occ.occupancy(1, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, settings.DEFAULT_TARGET).limits
    if min(v for k, v in others.items() if k != "VGPRs") < waves:
        return 0
    per_wave = cu.vgprs_per_simd // waves // cu.vgpr_granule * cu.vgpr_granule   # the allocation that still fits
    budget = per_wave - r.agprs if r.agprs else per_wave
    if r.agprs:
        budget = budget // 4 * 4                                    # VGPRs rounded up to 4 before the AGPRs
    budget = min(budget, cu.addressable_arch_vgprs)
    return budget if budget >= 1 else 0
