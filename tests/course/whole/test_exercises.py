"""Consistency of every exercise: shape, starter compiles as CUDA (nvcc), solution compiles and links
offline for gfx942, gfx950 and gfx90a, and the solution scores full marks on every check this backend runs."""

import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rocmlab import grader
from rocmlab.grader import checks, libs
from rocmlab.hip import build
from rocmlab.grader import load
from rocmlab.hip.toolchain import discover_offline
from tests.helpers.busy import grade_until_scored

EXERCISES = grader.exercises()
IDS = [e.id for e in EXERCISES]
README_SECTIONS = ("## Description", "## Application flow", "## Key APIs and Concepts", "## Demonstrated API Calls")


NEW = ("cg-tiles", "fp-atomics", "hip-graphs", "launch-bounds", "mfma-gemm")
RETIRED = ("warp-size-32", "ballot-popcount")   # the same 32-lane lesson as block-reduction


def test_thirteen_exercises_in_a_strict_order_with_the_same_shape():
    assert len(EXERCISES) >= 13
    assert set(NEW) <= set(IDS) and not set(RETIRED) & set(IDS)
    orders = [e.order for e in EXERCISES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders), "give every exercise its own order"
    assert IDS[0] == "vector-add" and IDS.index("mfma-gemm") == 12   # Lab 11's exercises (orders 14-17) come after
    assert orders == list(range(1, len(orders) + 1)), "orders run 1..N without gaps (notebooks NN-<id>.ipynb)"
    for ex in EXERCISES:
        for section in README_SECTIONS:
            assert section in ex.readme, f"{ex.id}: README lacks {section}"
        assert ex.title and ex.goal and ex.sizes.get("run")
        assert 2 <= len(ex.hints) <= 3, f"{ex.id}: needs 2-3 graded hints"
        assert sorted(h.level for h in ex.hints) == list(range(1, len(ex.hints) + 1))
        types = [c.type for c in ex.checks]
        for t in ("static", "compile", "run", "compare"):
            assert t in types, f"{ex.id}: no {t} check"
        assert {h.check for h in ex.hints} <= {c.id for c in ex.checks}


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_reference_inputs_are_fresh_and_never_degenerate(ex):
    ref = ex.reference_module()
    a = ref.make_inputs(np.random.default_rng(1), ex.sizes["run"])
    b = ref.make_inputs(np.random.default_rng(2), ex.sizes["run"])
    for name in a:
        if a[name].size > 16:
            assert np.unique(a[name]).size > 2, f"{name} is degenerate"
            assert not np.array_equal(a[name], b[name]), f"{name} does not depend on the seed"
    out = ref.reference(a)
    assert list(out) == [o for o in ex.outputs if o in out] and list(out) == ex.outputs[: len(out)]


def test_the_starters_are_the_cuda_to_port():
    for ex in EXERCISES:
        assert "cuda_runtime.h" in ex.starter and "hip_runtime.h" not in ex.starter
        assert "hip/hip_runtime.h" in ex.solution and not re.search(r"\bcuda[A-Z]", ex.solution)


def _nvcc_starter(ex):
    flags = ["-I", str(grader.spec.COMMON_DIR)]
    if ex.libraries:
        extra, missing = libs.flags(ex.libraries, nvidia=True)
        if missing:
            return ex.id, None, missing
        flags += list(extra)
    res = build.compile(ex.starter, lang="cuda", target="sm_90", flags=tuple(flags), mode="obj")
    return ex.id, res, ""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_starter_compiles_as_cuda():
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(_nvcc_starter, EXERCISES))
    skipped = []
    for eid, res, missing in results:
        if res is None:
            skipped.append(f"{eid} ({missing})")
            continue
        assert res.ok, f"{eid} starter does not compile with nvcc:\n{res.summary()}"
    if skipped:  # only the cuBLAS one, where the CUDA toolkit here has no cuBLAS
        assert all(s.startswith("sgemm-hipblas") for s in skipped), skipped


def _offline_solution(args):
    ex, target = args
    ctx = checks.Context(ex, ex.solution, None, 0)
    flags, missing = checks.build_flags(ctx, nvidia=False)
    assert not missing, missing
    return ex.id, target, build.compile(ex.solution, lang="hip", target=target, flags=flags, toolchain="offline",
                                        link=True)


@pytest.mark.skipif(discover_offline() is None, reason="no offline ROCm root (bash scripts/setup/20-rocm-root.sh)")
def test_every_solution_compiles_and_links_offline_for_every_amd_target():
    from rocmlab.settings import AMD_TARGETS

    jobs = [(ex, t) for ex in EXERCISES for t in AMD_TARGETS]
    with ThreadPoolExecutor(2) as pool:
        for eid, target, res in pool.map(_offline_solution, jobs):
            assert res.ok, f"{eid} for {target}:\n{res.summary()}"
            assert res.binary and res.mode == "exe"


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_every_solution_scores_full_marks_on_what_this_backend_runs(ex):
    """One grade of each reference solution serves two checks: full marks on every check this backend runs, and
    on a CPU the simulator's fidelity where it matters (the run and compare checks pass there, named as the
    simulator's, and it never earns perf points; this was tests/sim/whole/test_sim_grader.py's own grade)."""
    from rocmlab.course.exercise import busy_machine
    from rocmlab.hip import simulate

    # a machine that starved the run is never scored: the grade says so, and grading again decides
    report, took = grade_until_scored(lambda: grader.check(ex.id, ex.solution),
                                      lambda r: r.error if busy_machine(r) else "", ex.id)
    failed = [c for c in report.checks if c.status == "failed"]
    assert not failed, report.to_text()
    assert report.earned == report.available > 0
    from rocmlab.machine.detect import current

    if not current().is_gpu:   # on a CPU the run checks come from the wave64 simulator (MFMA and hipBLAS included)
        label = "[cpu: wave64 simulator]"
        run, compare = report.check("runs"), report.check("correct")
        assert run.status == "passed" and run.message.startswith(label), run.message
        assert compare.status == "passed" and compare.message.startswith(label), compare.message
        assert compare.details.get("backend") == simulate.LABEL
        for c in report.checks:
            if c.type == "perf":
                assert c.status == "skipped" and c.points == 0, c.message     # never perf points from the simulator
        assert report.status == "graded" and took < 120, took      # a grade that hangs until its limits is a defect


# --- the new exercises: a wrong variant of each loses points on every backend ------------------------

def _edit(eid, old, new):
    src = load(eid).solution
    assert old in src, f"{eid}: {old!r} not in the solution"
    return src.replace(old, new)


WRONG_VARIANTS = {
    # CAS loop on gfx90a: the learner kept atomicAdd
    "fp-atomics": (lambda: _edit("fp-atomics", "unsafeAtomicAdd(&out", "atomicAdd(&out"), "hw-atomics-gfx90a"),
    # CUDA's (512, 2) kept: 3 waves per SIMD
    "launch-bounds": (lambda: _edit("launch-bounds", "__launch_bounds__(kThreads, kWavesPerSimd)",
                                    "__launch_bounds__(kThreads, 2)").replace("TN = 8;", "TN = 12;"), "occupancy-gfx942"),
    # the right bound, but a 12 x 12 tile: 128 VGPRs are not enough, it spills to scratch
    "launch-bounds/spills": (lambda: _edit("launch-bounds", "TM = 8, TN = 8;", "TM = 12, TN = 12;"), "occupancy-gfx942"),
    # no graph: the step launched directly
    "hip-graphs": (lambda: _edit("hip-graphs", "for (int t = 1; t < kSteps; ++t) HIP_CHECK(hipGraphLaunch(exec, s));",
                                 "for (int t = 1; t < kSteps; ++t) step(y, x, n, s);").replace(
        "HIP_CHECK(hipGraphLaunch(exec, s));                       // step 1", "step(y, x, n, s);  // step 1"),
        "captures-a-graph"),
    # a warp of 32 by hand instead of a tile
    "cg-tiles": (lambda: _edit("cg-tiles", "const int r = static_cast<int>(tile.thread_rank());",
                               "const int r = threadIdx.x % 32;"), "no-warp-assumptions"),
    # a scalar FMA loop instead of the matrix core
    "mfma-gemm": (lambda: _edit("mfma-gemm", "acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x16f16(a[i], b[j], acc[i][j], 0, 0, 0);",
                                "for (int e = 0; e < 4; ++e) acc[i][j][e] += static_cast<float>(a[i][e]) * static_cast<float>(b[j][e]);"),
                  "mfma-in-isa"),
}


@pytest.mark.skipif(discover_offline() is None or "gfx942" not in discover_offline().targets,
                    reason="no offline HIP toolchain with gfx942 (run ./go setup)")
@pytest.mark.parametrize("name", sorted(WRONG_VARIANTS))
def test_a_wrong_variant_of_each_new_exercise_fails_here(name):
    make, fails = WRONG_VARIANTS[name]
    eid = name.split("/")[0]
    report = grader.check(eid, make())
    c = report.check(fails)
    assert c.status == "failed" and c.points == 0, report.to_text()
    assert report.earned < report.available


@pytest.mark.parametrize("eid", NEW)
def test_the_mechanical_port_of_each_new_starter_is_not_full_marks(eid):
    from rocmlab.cuda2hip import hipify

    ex = load(eid)
    report = grader.check(eid, hipify.hipify_source(ex.starter, "starter.cu").hip)
    assert any(c.status == "failed" for c in report.checks), report.to_text()


def test_mfma_run_checks_are_earned_on_the_wave64_simulator_where_no_amd_gpu_is(monkeypatch):
    """MFMA has no NVIDIA path: on an NVIDIA machine (as on a CPU) the program is built for gfx942 and run by the
    wave64 simulator, which runs __builtin_amdgcn_mfma_f32_16x16x16f16 with CDNA's lane layout; labelled so."""
    from rocmlab.hip import simulate
    from rocmlab.machine.detect import detect

    if simulate.problem():
        pytest.skip(simulate.problem())
    monkeypatch.setenv("ROCMLAB_BACKEND", "cuda")
    plat = detect()
    assert plat.backend == "cuda"
    report = grader.check("mfma-gemm", load("mfma-gemm").solution, plat=plat, only=("runs", "correct"))
    for cid in ("runs", "correct"):
        c = report.check(cid)
        assert c.status == "passed" and c.message.startswith("[cpu: wave64 simulator]"), c.message
    assert report.earned == report.available == report.possible == 4


def test_isa_check_skips_when_no_compiler_has_the_target(monkeypatch):
    from rocmlab.grader import isa_check
    from rocmlab.grader.spec import CheckSpec

    ex = load("mfma-gemm")
    ctx = checks.Context(ex, ex.solution, None, 0)
    spec = CheckSpec("x", "isa", 1.0, {"target": "gfx1234", "mnemonic": "^v_mfma"})
    res = isa_check.check_isa(ctx, spec)
    assert res.status in ("skipped", "failed") and res.points == 0
    assert "gfx1234" in res.message
