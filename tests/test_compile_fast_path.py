"""The fast path (``check``: device code compiled and host code checked at the same time, no link) gives the
same verdict, diagnostics and resources as the full build, for every kernel in rocmlab/hip/kernels/ and every
exercise solution; and a host-code error is still reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmlab import paths
from rocmlab.grader import exercises
from rocmlab.grader.checks import include_dir
from rocmlab.grader.libs import flags as lib_flags
from rocmlab.hip import build
from rocmlab.hip import compile as driver

pytestmark = pytest.mark.skipif(driver.available("gfx942") != "", reason="no AMD compiler here (gfx942)")


def sources():
    out = [(p.name, p.read_text(), ()) for p in sorted(paths.kernels_dir().glob("*.hip"))]
    for ex in exercises():
        extra, missing = lib_flags(ex.libraries, False)
        if missing:
            continue
        out.append((f"{ex.id}/solution.hip", (ex.folder / "solution.hip").read_text(), ("-I", include_dir(), *extra)))
    return out


def _same(fast, full):
    assert fast.ok == full.ok, (fast.summary(), full.summary())
    assert sorted(map(str, fast.diagnostics)) == sorted(map(str, full.diagnostics))
    assert [(k.name, k.vgprs, k.sgprs, k.agprs, k.lds_bytes, k.scratch_bytes, k.occupancy) for k in fast.kernels()] == \
        [(k.name, k.vgprs, k.sgprs, k.agprs, k.lds_bytes, k.scratch_bytes, k.occupancy) for k in full.kernels()]


SOURCES = sources()


@pytest.mark.parametrize("name,src,flags", SOURCES, ids=[s[0] for s in SOURCES])
def test_fast_path_equals_full_build(name, src, flags):
    fast = build.compile(src, target="gfx942", flags=flags)
    full = build.compile(src, target="gfx942", flags=flags, link=True)
    if not build._can_run(driver.find_toolchain("offline") or driver.find_toolchain("rocm"), "gfx942", "exe",
                          driver.resolve_platform(None))[0]:
        assert fast.binary is None
        assert not fast.ok or "no program was linked" in fast.cannot_run_reason
    assert not full.ok or (full.binary and Path(full.binary).exists())
    if "__global__" in src and full.ok:
        assert fast.kernels(), f"{name}: no kernel resources in the fast build's log"
    _same(fast, full)


def test_host_error_is_reported_by_the_fast_path():
    src = (paths.kernels_dir() / "reduce.hip").read_text()
    assert "int main" in src
    bad = src.replace("int main(", "int main_(int) { return undefined_host_thing; }\nint main(", 1)
    fast = build.compile(bad, target="gfx942")
    full = build.compile(bad, target="gfx942", link=True)
    assert not fast.ok and any("undefined_host_thing" in d.message for d in fast.errors)
    _same(fast, full)
