"""Lab 11's graded exercises: offline (gfx942 ISA/resources) the checks tell slow from fixed, a wrong fix fails,
and the speedup check grades the ratio to the slow starter (skipped without a GPU)."""

from types import SimpleNamespace

import pytest

from rocmlab import grader
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.grader import speedup
from rocmlab.grader.spec import CheckSpec
from rocmlab.hip.toolchain import discover_offline

needs_gfx942 = pytest.mark.skipif(discover_offline() is None or "gfx942" not in discover_offline().targets,
                                  reason="no offline HIP toolchain with gfx942 (run ./go setup)")
LAB11 = (*lab11.SLOW_KERNELS, lab11.RACE)


def _edit(eid, old, new):
    src = grader.load(eid).solution
    assert old in src, f"{eid}: {old!r} not in the solution"
    return src.replace(old, new)


# (exercise, a wrong fix, the check that must fail)
WRONG = {
    # coalesced, but one 4-byte float per lane: the ISA shows no 16-byte access (the exercise asks for float4)
    "coalesce/scalar-row-mapping": ("lab11-coalesce", lambda: _edit(
        "lab11-coalesce", "reinterpret_cast<float4*>(out)[t] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);",
        "(void)v; if (t < static_cast<size_t>(rows) * cols / 4) out[t] = in[t] * w[t / cols];"),
        "wide-loads-gfx942"),
    "lds-banks/plus-one": ("lab11-lds-banks", lambda: _edit("lab11-lds-banks", "tile[KT][kThreads + 4]", "tile[KT][kThreads + 1]"),
                           "conflict-free-layout"),
    "occupancy/big-tile-kept": ("lab11-occupancy", lambda: _edit(
        "lab11-occupancy", "__shared__ float tile[kThreads + 2 * R];", "__shared__ float tile[12 * 1024];"),
        "occupancy-gfx942"),
    "race/no-barrier": ("lab11-race", lambda: _edit(
        "lab11-race", "    __syncthreads();                             // every write to tile lands before any read of it\n", ""),
        "barrier-gfx942"),
}


def test_lab11_exercises_come_after_the_porting_set_with_their_own_orders():
    ids = [e.id for e in grader.exercises()]
    assert ids.index("mfma-gemm") < min(ids.index(e) for e in LAB11)
    for eid in LAB11:
        types = {c.type for c in grader.load(eid).checks}
        assert {"static", "compile", "isa", "run", "compare"} <= types
    for eid in lab11.SLOW_KERNELS:
        assert "speedup" in {c.type for c in grader.load(eid).checks}


@needs_gfx942
@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_fix_fails_offline(name):
    eid, make, check_id = WRONG[name]
    report = grader.check(eid, make(), only=("compiles", check_id, "no-cuda-left", "conflict-free-layout"))
    c = report.check(check_id)
    assert c.status == "failed" and c.points == 0, report.to_text()


@needs_gfx942
@pytest.mark.parametrize("eid", LAB11)
def test_the_starter_port_fails_and_the_solution_passes_the_offline_cause_check(eid):
    cause = [c.id for c in grader.load(eid).checks if c.type == "isa" or c.id == "conflict-free-layout"]
    slow = grader.check(eid, lab11.starter_port(eid), only=cause)
    fixed = grader.check(eid, grader.load(eid).solution, only=cause)
    assert any(c.status == "failed" for c in slow.checks), slow.to_text()
    assert all(c.status == "passed" for c in fixed.checks), fixed.to_text()


@needs_gfx942
def test_offline_rows_show_each_cause():
    co = lab11.offline_rows("lab11-coalesce")
    assert "global_load_dwordx4" not in co[0][1] and "global_load_dwordx4" in co[1][1]
    oc = lab11.offline_rows("lab11-occupancy")
    assert oc[0][3] == 49152 and oc[0][5].startswith("1 ") and oc[1][5].startswith("8 ")


def test_bank_map_model():
    assert lab11.bank_map(256)["conflict_degree"] == 8      # the starter's tile[8][256]
    assert lab11.bank_map(257)["conflict_degree"] == 4      # the usual +1 is not enough here
    assert lab11.bank_map(260)["conflict_degree"] == 1      # the fix


# --- the speedup check's arithmetic (a GPU run is faked here; the benchmark measures the real one) -------

def _ctx(can_run=True):
    ex = grader.load("lab11-coalesce")
    return SimpleNamespace(exercise=ex, build=SimpleNamespace(ok=True, can_run=can_run, cannot_run_reason="no GPU here"),
                           build_skip="", run={"status": "passed"}, plat=SimpleNamespace(backend="cuda", device_name="X"))


@pytest.mark.parametrize("slow_ms, mine_ms, status", [(3.0, 1.0, "passed"), (1.1, 1.0, "failed"), (1.0, 1.0, "failed")])
def test_speedup_grades_the_ratio_to_the_starter(monkeypatch, slow_ms, mine_ms, status):
    monkeypatch.setattr(speedup, "execute", lambda ctx, size, salt, t: {"done": None})
    monkeypatch.setattr(speedup, "_run_verdict", lambda r: ("passed", "ok"))
    monkeypatch.setattr(speedup, "compare_outputs", lambda ctx, r: (True, "", {}))
    monkeypatch.setattr(speedup, "_time_ms", lambda ctx, r: mine_ms)
    monkeypatch.setattr(speedup, "_baseline", lambda ctx, t: slow_ms)
    res = speedup.check_speedup(_ctx(), CheckSpec("faster", "speedup", 2.0, {"min_speedup": 2.0}))
    assert res.status == status and res.points == (2.0 if status == "passed" else 0.0)
    assert f"{slow_ms / mine_ms:.2f}x" in res.message


def test_speedup_is_skipped_without_a_gpu_and_wrong_results_fail(monkeypatch):
    res = speedup.check_speedup(_ctx(can_run=False), CheckSpec("faster", "speedup", 2.0, {}))
    assert res.status == "skipped" and "needs a GPU" in res.message
    monkeypatch.setattr(speedup, "execute", lambda ctx, size, salt, t: {"done": None})
    monkeypatch.setattr(speedup, "_run_verdict", lambda r: ("passed", "ok"))
    monkeypatch.setattr(speedup, "compare_outputs", lambda ctx, r: (False, "output out: 3 differ", {}))
    res = speedup.check_speedup(_ctx(), CheckSpec("faster", "speedup", 2.0, {}))
    assert res.status == "failed" and "wrong in the timed run" in res.message


# --- time_pair's plumbing (the GPU script and the notebook use it): a fake GPU run writes the outputs ------

def test_time_pair_checks_both_results_and_reports_the_ratio(monkeypatch):
    import numpy as np

    from rocmlab.grader import rlx
    from rocmlab.hip import build

    eid = "lab11-coalesce"
    ex = grader.load(eid)
    names = list(ex.reference_module().make_inputs(np.random.default_rng(0), ex.sizes["run"]))
    fake_builds = {"slow": SimpleNamespace(tag="slow"), "fixed": SimpleNamespace(tag="fixed")}
    monkeypatch.setattr(lab11, "build_pair", lambda e, plat=None: fake_builds)

    def fake_run(res, args, timeout_s=0, scratch=None, **kw):
        inputs = dict(zip(names, rlx.read_arrays(args[0]), strict=True))
        out = ex.reference_module().reference(inputs)["out"].astype(np.float32)
        if res.tag == "slow":
            out[7] += 1.0            # a wrong element: time_pair must see it
        rlx.write_arrays(args[1], [out, np.array([2.0 if res.tag == "slow" else 0.5], dtype=np.float32)])
        return SimpleNamespace(returncode=0, stderr="", explain=lambda: "ok")

    monkeypatch.setattr(build, "run", fake_run)
    plat = SimpleNamespace(backend="cuda", device_name="fake GPU")
    r = lab11.time_pair(eid, "run", plat)
    assert r["slow_ms"] == 2.0 and r["fixed_ms"] == 0.5 and r["ratio"] == 4.0
    assert r["correct"] == {"slow": False, "fixed": True}
    assert r["backend"] == "cuda" and r["device"] == "fake GPU"


# --- the lab's timing sizes (lab11.DEMO_SIZES): large enough that the occupancy fix can show ---------------------

def test_demo_sizes_fill_an_mi300x_where_the_run_sizes_do_not():
    """The occupancy fix buys resident blocks: it can only show when the launch has more blocks than one per CU.
    MI300X has 304 CUs and takes 8 of the fixed kernel's 256-thread blocks per CU; the demo size must keep them all
    busy, and (the control) the exercise's run size must not, or the demo sizes would be needless."""
    cus, blocks_per_cu = 304, 8
    demo = lab11.size_of("lab11-occupancy", "demo")
    run = lab11.size_of("lab11-occupancy", "run")
    assert demo == lab11.DEMO_SIZES["lab11-occupancy"] and run == dict(grader.load("lab11-occupancy").sizes["run"])
    assert demo["n"] // lab11.BLOCK >= cus * blocks_per_cu
    assert not run["n"] // lab11.BLOCK >= cus * blocks_per_cu
    banks = lab11.size_of("lab11-lds-banks", "demo")
    assert banks["rows"] // lab11.BLOCK >= cus and banks["cols"] % 8 == 0   # a block per CU; whole KT steps
    assert lab11.size_of("lab11-lds-banks", {"rows": 4, "cols": 8}) == {"rows": 4, "cols": 8}
    with pytest.raises(KeyError):
        lab11.size_of("lab11-race", "demo")              # the race has no timing demo
