"""When a cell may read the HIP runtime headers from a precompiled header (no compiler needed)."""

from __future__ import annotations

import pytest

from rocmlab.hip import runtime_pch

INC = "#include <hip/hip_runtime.h>\n__global__ void k(float* p) { p[0] = 1; }\n"


@pytest.mark.parametrize("source", [
    INC,
    "// a comment first\n\n" + INC,
    "/* a block\n   comment */\n" + INC,
    '#include "hip/hip_runtime.h"\n',
    "  #  include <hip/hip_runtime.h>  \n",
])
def test_the_runtime_include_first_takes_the_pch(source):
    assert runtime_pch.applies(source)


@pytest.mark.parametrize("source", [
    "#define __HIP_NO_HALF_CONVERSIONS__ 1\n" + INC,      # a macro that changes the header
    "#include <cstdio>\n" + INC,                          # another header first
    "__global__ void k(float* p) { p[0] = 1; }\n",        # no runtime include at all
    "#include <hip/hip_runtime_api.h>\n",
    "#include <hip/hip_runtime.h> // ok\n".replace("<hip/", "<hip2/"),
    "",
])
def test_anything_else_first_takes_no_pch(source):
    assert not runtime_pch.applies(source)


def test_flags_that_move_the_headers_take_no_pch(tmp_path):
    assert runtime_pch.applies(INC, ["-O2", "-DN=4", "-ffast-math"])
    assert runtime_pch.applies(INC, ["-I", str(tmp_path)])          # an include folder without hip/ in it
    assert runtime_pch.applies(INC, [f"-I{tmp_path}"])
    (tmp_path / "hip").mkdir()
    assert not runtime_pch.applies(INC, ["-I", str(tmp_path)])      # its hip/ could hold another runtime header
    assert not runtime_pch.applies(INC, ["-I", "relative"])
    for f in (["-isystem", "/x"], ["-include", "a.h"], ["--rocm-path=/opt/rocm"], ["-nogpuinc"]):
        assert not runtime_pch.applies(INC, f), f


def test_refused_means_clang_refused_the_pch_not_the_source():
    assert runtime_pch.refused("fatal error: malformed or corrupted precompiled file: 'x'")
    assert runtime_pch.refused("error: OptimizationLevel differs in precompiled file 'a.pch' vs. current file\n"
                               "1 error generated when compiling for host.")
    assert not runtime_pch.refused("t.hip:2:2: error: precompiled file\n")     # a learner's own #error
    assert not runtime_pch.refused("t.hip:3:5: error: use of undeclared identifier 'x'")
    assert not runtime_pch.refused("t.hip:1:10: fatal error: 'nothere.h' file not found")


def test_side_must_be_device_or_host():
    with pytest.raises(ValueError, match="device"):
        runtime_pch.pch_for(None, "both", "gfx942", (), build=None)
