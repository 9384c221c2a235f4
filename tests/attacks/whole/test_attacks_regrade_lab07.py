"""Issue 56, part B.2: a graded task's answer is never one call of a function in the learner's toolkit. Lab 07
asked for waves per SIMD, which ``rocmlab.hip.occupancy.occupancy`` computes: one call of it earned 10/10. The
task now asks the inverse, the VGPR budget for a number of waves (what ``__launch_bounds__`` and
``amdgpu_waves_per_eu`` ask the compiler), which the toolkit does not compute; the grade checks an answer forward
with the calculator and holds no reference. The old one-call answer, handed in, earns 0; the control, an honest
closed-form budget handed in the same way, earns every point (the compiler's three kernels included where the
offline toolchain is here)."""

from __future__ import annotations

import random
import textwrap

from rocmlab.course.labs.lab07_matrix_cores import task as lab07
from rocmlab.grader.pyanswer import Answer

ONE_CALL = textwrap.dedent('''
    from rocmlab.hip.occupancy import occupancy

    def vgpr_budget(r, waves):
        return occupancy(r.vgprs, r.agprs, r.sgprs, r.lds_bytes, r.workgroup_size, "gfx942").waves_per_simd
''')

HONEST = textwrap.dedent('''
    def vgpr_budget(r, waves):
        lds_waves = 8
        if r.lds_bytes:
            groups = 65536 // r.lds_bytes
            wg_waves = -(-r.workgroup_size // 64)
            slots = 16 if wg_waves > 1 else 32
            lds_waves = min(8, -(-min(groups, slots) * wg_waves // 4)) if groups else 0
        wg_waves = -(-r.workgroup_size // 64)
        groups = 32 if wg_waves == 1 else min(32 // wg_waves, 16)
        others = min(lds_waves, min(8, -(-groups * wg_waves // 4)), 10 if r.sgprs <= 80 else 9 if r.sgprs <= 88
                     else 8 if r.sgprs <= 100 else 7)
        if others < waves:
            return 0
        per_wave = 512 // waves // 8 * 8
        budget = (per_wave - r.agprs) // 4 * 4 if r.agprs else per_wave
        budget = min(budget, 256)
        return budget if budget >= 1 else 0
''')


def test_one_call_of_the_toolkit_earns_nothing_and_an_honest_budget_earns_every_point():
    seed = random.randrange(1 << 30)
    attack = lab07.grade(Answer(ONE_CALL, "vgpr_budget"), seed=seed, record=False)
    assert attack.earned == 0, attack.to_text()
    control = lab07.grade(Answer(HONEST, "vgpr_budget"), seed=seed, record=False)
    assert control.full_marks and control.earned == control.available >= 5, control.to_text()
