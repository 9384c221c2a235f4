"""Every %%hip / %%cuda cell of the labs builds without a compiler warning (a cell meant to fail may fail).

A learner copies these cells. A warning under a cell pushes its result below the fold and teaches that warnings
are noise: ROCm 7 declares ``hipError_t`` ``[[nodiscard]]``, so an unchecked HIP call warns (check it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmlab.course import magics

LABS = Path(__file__).resolve().parents[2] / "labs"


def hip_cells() -> list[tuple[str, int, str]]:
    out = []
    for nb in sorted([*LABS.glob("*.ipynb"), *LABS.glob("exercises/*.ipynb")]):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and src.startswith(("%%hip", "%%cuda")):
                out.append((nb.name, i, src))
    return out


def warnings_of(src: str) -> tuple[bool, list[str]]:
    """(built, the warnings) of a cell's build, not run."""
    line, cell = src.split("\n", 1)
    magic, _, options = line.partition(" ")
    res = magics.run_cell(magic.removeprefix("%%"), f"{options} --no-run", cell, {}, display=lambda *_: None)
    return res.ok, [str(d) for d in res.diagnostics if d.severity == "warning"]


def test_the_labs_have_hip_cells():
    assert len(hip_cells()) >= 3


@pytest.mark.parametrize("nb, index, src", hip_cells(), ids=[f"{n}#{i}" for n, i, _ in hip_cells()])
def test_a_lab_hip_cell_builds_without_warnings(nb, index, src):
    built, warnings = warnings_of(src)
    assert not (built and warnings), f"{nb} cell {index} builds with warnings: {warnings[:3]}"


def test_the_check_sees_an_unchecked_hip_call():
    """The control: the same check on a cell with an unchecked hipMalloc finds the warning."""
    src = ("%%hip\n#include <hip/hip_runtime.h>\nint main() {\n  float* p;\n  hipMalloc(&p, 4);\n"
           "  return 0;\n}\n")
    built, warnings = warnings_of(src)
    assert built and any("nodiscard" in w or "unused" in w for w in warnings), warnings
