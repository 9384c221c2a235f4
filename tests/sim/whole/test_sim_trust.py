"""The CPU simulator cannot be told apart from the gfx942 device pass, and the static checks judge what the
compiler and assembler really see (issue 38's attacks, each with its control)."""

from __future__ import annotations

import random

import pytest

from rocmlab import grader
from rocmlab.grader import static
from rocmlab.grader.spec import load
from rocmlab.hip import build, simulate
from rocmlab.machine.detect import current

BR = load("block-reduction").solution
VA = load("vector-add").solution
LABEL = "[cpu: wave64 simulator]"
LANE = "const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;"
LOOP = "for (int offset = warpSize / 2; offset > 0; offset /= 2)"


def _fresh(src: str) -> str:
    return f"// {random.getrandbits(64):x}\n" + src       # uncached: really built and run


def _needs_sim():
    if simulate.problem() or current().backend != "cpu":
        pytest.skip("needs the CPU simulator and no GPU")


def _earned(r) -> tuple[float, float]:
    return r.earned, r.available


@pytest.mark.parametrize("probe", ["__HIP_DEVICE_COMPILE__", "__gfx942__", "__AMDGCN__", "__HIP__"])
def test_learner_code_sees_the_device_pass_macros_and_no_simulator_macro(probe):
    if simulate.problem():
        pytest.skip(simulate.problem())
    src = (f"// {random.getrandbits(64):x}\n#include <hip/hip_runtime.h>\n#include <cstdio>\n"
           f"#if defined(__HIPSIM__) || !defined({probe})\n#error told apart\n#endif\n"
           "__global__ void k(int* p) { p[threadIdx.x] = 1; }\nint main() { std::puts(\"same\"); return 0; }\n")
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    told = build.compile(src.replace(f"!defined({probe})", f"defined({probe})"), toolchain=simulate.KIND)
    assert not told.ok and "told apart" in told.summary()          # the control: the test can fail


def test_a_simulator_only_branch_earns_what_the_trap_earns():
    """The wave-32 trap only where __HIP_DEVICE_COMPILE__ is set, a correct branch elsewhere: 9/9 when the
    simulator took the other branch; now exactly what the trap without the #if earns (the control)."""
    _needs_sim()
    trap_lane = "const int lane = threadIdx.x % 32, wave = threadIdx.x / 32;"
    trap_loop = "for (int offset = 16; offset > 0; offset /= 2)"
    assert LANE in BR and LOOP in BR
    wrapped = BR.replace(LANE, f"\n#if __HIP_DEVICE_COMPILE__\n    {trap_lane}\n#else\n    {LANE}\n#endif\n") \
        .replace(LOOP, f"\n#if __HIP_DEVICE_COMPILE__\n    {trap_loop}\n#else\n    {LOOP}\n#endif\n")
    plain = BR.replace(LANE, trap_lane).replace(LOOP, trap_loop)
    r, control = (grader.check("block-reduction", _fresh(src)) for src in (wrapped, plain))
    for g in (r, control):
        assert g.check("correct").status == "failed", g.to_text()
        assert g.check("no-warp-assumptions").status == "failed", g.to_text()
    assert _earned(r) == _earned(control) and r.earned <= 5.0 and r.available == 9.0, (r.to_text(), control.to_text())


def test_a_construct_only_the_simulator_refuses_is_the_learners_failure_not_a_skip(monkeypatch):
    _needs_sim()
    asm_src = VA.replace("int main(", "__device__ void nop() { asm volatile(\"s_nop 0\"); }\nint main(", 1)
    r = grader.check("vector-add", _fresh(asm_src), only=("compile", "run", "compare"))
    assert r.check("compiles").status == "passed", r.to_text()                 # it does compile for gfx942
    run = r.check("runs")
    assert run.status == "failed" and run.points == 0 and "inline GPU assembly" in run.message, run.message
    assert not r.full_marks
    # the control: where the exercise's own solution could not be simulated either, the same program is skipped
    # (the machine's limit). Every exercise runs on the simulator now, so the solution is made one that cannot.
    from rocmlab.grader.spec import Exercise

    monkeypatch.setattr(Exercise, "solution", property(lambda self: "#include <rocblas/rocblas.h>\n"))
    m = grader.check("vector-add", _fresh(asm_src), only=("compile", "run"))
    assert m.check("runs").status == "skipped" and "inline GPU assembly" in m.check("runs").message, m.to_text()


def test_a_host_build_error_only_the_simulator_sees_fails_the_run_check():
    _needs_sim()
    src = VA.replace("    xio::usage_if(argc, argv);\n",
                     "    xio::usage_if(argc, argv);\n    HIP_CHECK(hipDeviceSetCacheConfig(hipFuncCachePreferShared));\n",
                     1)
    assert src != VA
    r = grader.check("vector-add", _fresh(src), only=("compile", "run", "compare"))
    assert r.check("compiles").status == "passed", r.to_text()
    run = r.check("runs")
    assert run.status == "failed" and "cannot build it" in run.message and "hipFuncCachePreferShared" in run.message
    assert r.check("correct").status == "not run" and not r.full_marks
    ok = grader.check("vector-add", _fresh(VA), only=("compile", "run", "compare"))     # the control
    assert ok.check("runs").status == "passed" and ok.full_marks, ok.to_text()


@pytest.mark.parametrize("spelling", [r'"\x2eincbin \"/etc/passwd\""', r'"\056incbin \"/etc/passwd\""',
                                      r'".inc" "\x62in \"/etc/passwd\""'])
def test_an_incbin_spelled_with_c_escapes_is_refused(spelling):
    evil = VA.replace("int main(", f"#define A(x) asm(x)\nstatic void leak() {{ A({spelling}); }}\nint main(", 1)
    r = grader.check("vector-add", evil, only=("static", "compile"))
    c = r.check("compiles")
    assert c.status == "failed" and ".incbin" in c.message and "did not compile" in c.message, c.message
    assert grader.check("vector-add", VA, only=("static", "compile")).check("compiles").status == "passed"


def test_an_incbin_built_by_a_stringizing_macro_is_refused_from_the_preprocessed_view():
    evil = VA.replace("int main(", "#define S(x) #x\n#define A(x) asm(S(x))\n"
                      "static void leak() { A(\\x2eincbin \"/etc/passwd\"); }\nint main(", 1)
    c = grader.check("vector-add", evil, only=("static", "compile")).check("compiles")
    assert c.status == "failed" and "escape processing" in c.message, c.message


def test_c_unescape_reads_strings_as_the_compiler_stores_them():
    assert static.c_unescape(r"\x2eincbin \056x \u0062\n\\") == ".incbin .x b\n\\"
    assert static.c_unescape("plain") == "plain"


@pytest.mark.parametrize("discard", ["(void)hipMemcpy(", "(void)(hipMemcpy(", "static_cast<void>(hipMemcpy(",
                                     "QUIET(hipMemcpy("])
def test_a_discarded_status_is_not_an_error_check(discard):
    assert "HIP_CHECK(hipMemcpy(" in VA
    src = VA.replace("#define HIP_CHECK", "#define QUIET(x) (void)(x)\n#define HIP_CHECK", 1) \
        .replace("HIP_CHECK(hipMemcpy(", discard)
    c = grader.check("vector-add", src, only=("static",)).check("errors-checked")
    assert c.status == "failed" and "hipMemcpy" in c.message, c.message
    control = grader.check("vector-add", VA, only=("static",)).check("errors-checked")
    assert control.status == "passed"


def test_a_ballot_popcount_of_32_bits_loses_the_compare_points():
    """`__builtin_popcount(__ballot(p))` counts lanes 0-31 only: the inputs' signs make that matter; the
    64-bit count (the control) passes."""
    _needs_sim()
    keep = "v = wave_sum(v);\n    if (lane == 0) partial[wave] = v;"
    assert keep in BR
    guard = "if (__builtin_popcount(__ballot(v > 0.f)) == 0) v = 0.f;\n    "
    bad = BR.replace(keep, guard + keep)
    good = BR.replace(keep, guard.replace("__builtin_popcount(", "__builtin_popcountll(") + keep)
    r = grader.check("block-reduction", _fresh(bad), only=("compile", "run", "compare"))
    assert r.check("correct").status == "failed", r.to_text()
    ok = grader.check("block-reduction", _fresh(good), only=("compile", "run", "compare"))
    assert ok.check("correct").status == "passed", ok.to_text()
