"""Lab 07 task's reference answer (the VGPR budget for a number of waves per SIMD). Withheld from learners in a
workshop (:mod:`rocmlab.workshop.references`); the grade never needs it: it checks an answer with the occupancy
calculator, forward (the budget gets the waves, one VGPR more does not)."""

from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references

SIMD_REGISTERS, GRANULE, ADDRESSABLE = 512, 8, 256


def vgpr_budget(r, waves: int) -> int:
    """Registers: a wave may be allocated ``512 // waves`` per lane, in granules of 8; with AGPRs the
    architectural VGPRs are rounded up to 4 before the AGPRs are added. The other limits (SGPRs, LDS, whole
    workgroups) do not depend on the VGPRs: if one of them is below ``waves``, no budget gets there (0)."""
    from rocmlab.hip import occupancy as occ

    others = occ.occupancy(1, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, "gfx942").limits
    if min(v for k, v in others.items() if k != "VGPRs") < waves:
        return 0
    per_wave = SIMD_REGISTERS // waves // GRANULE * GRANULE        # the allocation that still fits
    budget = per_wave - r.agprs if r.agprs else per_wave
    if r.agprs:
        budget = budget // 4 * 4                                    # VGPRs rounded up to 4 before the AGPRs
    budget = min(budget, ADDRESSABLE)
    return budget if budget >= 1 else 0
