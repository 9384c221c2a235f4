"""The fidelity table (benchmarks/sim_fidelity.py --compare): rows from two machines' table.txt, the verdicts side by
side, a difference by design named with its reason and any other difference said as 'not examined'."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("sim_fidelity", ROOT / "benchmarks" / "sim_fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_puts_each_case_side_by_side_with_the_reason_for_a_difference():
    f = _module()
    pts = random.randint(5, 9)
    cpu = f"""[cpu: wave64 simulator]
vector-add             {pts}/10   compiles=passed runs=passed correct=passed              grade   3.2 s, program 0.57 s
block-reduction         9/11   compiles=passed runs=passed correct=passed              grade   0.8 s
{'hard-coded warp of 32':<40} {'block-reduction':<16} no-warp-assumptions=failed   correct=failed   output sum differs
{'segfault':<40} {'vector-add':<16} runs=failed   correct=not run  not run: nothing to compare
ballot-32-bit          ballot-32-bit: got 6548, expected 13099: FAILED  (MI300X: FAILED: lanes 32-63)
sanitizer race: no barrier between waves          | reported: initcheck,racecheck | result: WRONG
"""
    gpu = f"""[cuda: NVIDIA H200]
vector-add             {pts}/10   compiles=passed runs=passed correct=passed              grade   2.2 s, program 0.29 s
block-reduction        11/11   compiles=passed runs=passed correct=failed              grade   2.4 s
{'hard-coded warp of 32':<40} {'block-reduction':<16} no-warp-assumptions=failed   correct=passed   matches
{'segfault':<40} {'vector-add':<16} runs=failed   correct=not run  not run: nothing to compare
ballot-32-bit          ballot-32-bit: got 13099, expected 13099: PASSED  (MI300X: FAILED: lanes 32-63)
"""
    table = f.compare(cpu, gpu, "NVIDIA H200")
    rows = {r.split(" | ")[0].strip("| "): r for r in table.splitlines()[2:]}
    assert f"| {pts}/10, compiles=passed" in rows["solution `vector-add`"] and "| yes |" in rows["solution `vector-add`"]
    assert "| no | not examined |" in rows["solution `block-reduction`"]              # control: an unexplained one
    assert "| no | warps of 32 on NVIDIA" in rows["wrong: hard-coded warp of 32"]
    assert "correct=not run | runs=failed correct=not run | yes |" in rows["wrong: segfault"]
    assert "| FAILED | PASSED | no | a 32-bit ballot" in rows["wave64 trap: ballot-32-bit (MI300X: FAILED)"]
    san = rows["sanitizer: race: no barrier between waves"]
    assert "initcheck,racecheck reported; program: WRONG | not in this run" in san
    assert table.splitlines()[0].startswith("| case | [cpu: wave64 simulator] | NVIDIA H200 [cuda: NVIDIA H200] |")
