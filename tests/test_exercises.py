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
from rocmlab.hip.toolchain import discover_offline

EXERCISES = grader.exercises()
IDS = [e.id for e in EXERCISES]
README_SECTIONS = ("## Description", "## Application flow", "## Key APIs and Concepts", "## Demonstrated API Calls")


def test_at_least_ten_exercises_with_the_same_shape():
    assert len(EXERCISES) >= 10
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
    return ex.id, target, build.compile(ex.solution, lang="hip", target=target, flags=flags, toolchain="offline")


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
    report = grader.check(ex.id, ex.solution)
    failed = [c for c in report.checks if c.status == "failed"]
    assert not failed, report.to_text()
    assert report.earned == report.available > 0
    from rocmlab.platform import current

    if not current().is_gpu:   # on a CPU the program cannot reach the GPU: run checks say so
        runs = report.check("runs")
        assert runs.status == "skipped" and ("no GPU" in runs.message or "cannot start here" in runs.message)
