"""The comparison: plain hipify on the same files, compiled and linked the same way.

``engine="torch"``: torch.utils.hipify writes each ported file into a ``hip/`` folder beside the
original (``src/k.cu`` -> ``src/hip/k.hip``) and copies the unported originals along.
``engine="perl"``: ROCm's hipify-perl rewrites every source in place (same names), as
``hipify-perl -inplace`` does. Nothing else is done: the same translation units as the port's
(a ``.cu`` that another file #includes is part of it, not a unit) are compiled with the same
compiler, flags and include folders (those outside SRC as they are), and each main is linked
with the same libraries, so the difference is what ``rocmlab port``'s fixes add.
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
from rocmlab.cuda2hip.translate import hipify_perl_texts, included_sources, torch_hipify_folder


@dataclass
class BaselineResult:
    src: str
    units: list = field(default_factory=list)
    links: list = field(default_factory=list)
    duration_s: float = 0.0
    engine: str = "torch"

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
                 include=(), toolchain: str = "auto", engine: str = "torch", libs=None) -> BaselineResult:
    """Hipify ``src`` with ``engine`` alone ("torch" or "perl") into ``work_dir``, compile its translation
    units, and (when ``libs`` is given, e.g. the port's link flags) link each main."""

    t0 = time.monotonic()
    src_r, work = check_request(src, work_dir)
    proj = collect(src_r)
    tc = unit_build.choose_toolchain(toolchain)
    if work.exists():
        shutil.rmtree(work)
    inc, outside = include_dirs(proj.sources, include, src_r)
    included = included_sources(proj.sources, inc)
    tus = [r for r in proj.translation_units if r not in included]
    if engine == "perl":
        texts = hipify_perl_texts(proj.sources)
        for rel, text in texts.items():
            p = work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        for rel in proj.others:
            p = work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src_r / rel, p)
        units = {rel: rel for rel in tus}
    else:
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
            for rel in tus:
                hip_file = mapping.get((stage / rel).resolve()) or mapping.get(stage / rel)
                target = Path(hip_file) if hip_file else work / rel
                units[os.path.relpath(target, work)] = rel
    mains = {k for k, v in units.items() if diagnose.has_main(proj.sources[v])}
    inc = [*inc, *map(str, outside)]       # plain hipify ports SRC only: -I folders outside it stay as they are
    flags = [f for f in (libs or ()) if not f.startswith("-l")]
    res = unit_build.compile_all(tc, work, units, mains, tuple(targets), inc, False, workers,
                                 build_dir=work / ".rocmlab-baseline", extra_flags=flags)
    links = unit_build.link_all(tc, work, res, list(libs), build_dir=work / ".rocmlab-baseline") \
        if libs is not None else []
    return BaselineResult(str(src_r), res, links, time.monotonic() - t0, engine)
