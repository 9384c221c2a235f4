"""The comparison: plain torch.utils.hipify on the same files, compiled the same way.

torch.utils.hipify writes each ported file into a ``hip/`` folder beside the original
(``src/k.cu`` -> ``src/hip/k.hip``) and copies the unported originals along. Nothing else is
done: the translation units it produced are compiled with the same compiler, flags, include
folders (those outside SRC as they are: plain hipify does not port them), so the difference
in the compile fraction is what ``rocmlab port``'s fixes add.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import settings
from rocmlab.port import diagnose, unit_build
from rocmlab.port.inputs import check_request, collect
from rocmlab.port.project import include_dirs
from rocmlab.port.translate import torch_hipify_folder


@dataclass
class BaselineResult:
    src: str
    units: list = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def n_compiled(self) -> int:
        return sum(u.status == "ok" for u in self.units)

    @property
    def compile_fraction(self) -> float:
        return self.n_compiled / len(self.units) if self.units else 0.0

    def categories(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in self.units:
            out[u.category] = out.get(u.category, 0) + 1
        return out


def plain_hipify(src, work_dir, targets=(settings.DEFAULT_TARGET,), compat: bool = True, workers: int | None = None,
                 include=(), toolchain: str = "auto") -> BaselineResult:
    """Hipify ``src`` with torch.utils.hipify alone into ``work_dir`` and compile its translation units."""

    t0 = time.monotonic()
    src_r, work = check_request(src, work_dir)
    proj = collect(src_r)
    tc = unit_build.choose_toolchain(toolchain)
    if work.exists():
        shutil.rmtree(work)
    with tempfile.TemporaryDirectory(prefix="rocmlab-baseline-") as tmp:
        stage = Path(tmp) / "src"
        for rel, text in proj.sources.items():     # the same readable files the port gets
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        for rel in proj.others:
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src_r / rel, p)
        mapping = torch_hipify_folder(stage, work)
        units = {}
        for rel in proj.translation_units:
            hip_file = mapping.get((stage / rel).resolve()) or mapping.get(stage / rel)
            target = Path(hip_file) if hip_file else work / rel
            units[os.path.relpath(target, work)] = rel
    mains = {k for k, v in units.items() if diagnose.has_main(proj.sources[v])}
    inc, outside = include_dirs(proj.sources, include, src_r)
    inc = [*inc, *map(str, outside)]       # plain hipify ports SRC only: -I folders outside it stay as they are
    res = unit_build.compile_all(tc, work, units, mains, tuple(targets), inc, False, workers,
                            build_dir=work / ".rocmlab-baseline")
    return BaselineResult(str(src_r), res, time.monotonic() - t0)
