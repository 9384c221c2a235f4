"""Lab 09's attention puzzles: every reference passes and every typical wrong kernel fails, with the message a
learner sees, on fresh random inputs in Triton's CPU interpreter (a child process: the interpreter must be chosen
before triton is imported); signatures match; the points are in progress.LAB_TASKS; and the solution compiles
offline for gfx942 and gfx950 with the figures the lab prints."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

from rocmlab.course.labs.lab09_attention_on_mi300x import puzzles as A
from rocmlab.course import progress
from rocmlab.course import puzzles as P
from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06

pytest.importorskip("triton")

CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from rocmlab.course import puzzles as P
    from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06
    mode = P.setup()
    import triton, triton.language as tl
    from rocmlab.course.labs.lab09_attention_on_mi300x import puzzles as A
    rows = []
    for seed in map(int, sys.argv[1:]):
        rows += P.self_test(seed, lab=A.LAB)
    @triton.jit
    def empty(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        pass
    starter = P.check("flash-forward", empty)
    ok = P.check("gqa", P.reference_kernel("gqa"))
    graded = P.grade({"causal": P.reference_kernel("causal")}, lab=A.LAB, record=True)
    print(json.dumps(dict(mode=mode, rows=rows, starter=starter.passed, starter_msg=starter.message,
                          html=ok._repr_html_(), graded=[(r.key, r.passed) for r in graded])))
""")

#: phrases of the message each wrong kernel gets (what the learner is told): the message must contain one
EXPECTED = {
    # row-softmax's wrong kernels show as NaN when a block's exps all underflow (0/0) or overflow (inf/inf), which
    # most draws give; a draw where no block does shows the same bug as plain wrong values (seen in a full run)
    "softmax_rows_wrong_first_block_max": ("NaN", "values differ"),
    "softmax_rows_wrong_block_sum": ("NaN", "values differ"),
    "online_softmax_wrong_no_rescale": ("values differ",),
    "online_softmax_wrong_sum_only": ("values differ",),
    "attn_tile_wrong_no_scale": ("values differ",),
    "attn_tile_wrong_pad_keys": ("values differ",),
    "flash_fwd_wrong_no_rescale": ("values differ",),
    "flash_fwd_wrong_pad_keys": ("values differ",),
    "flash_causal_wrong_off_by_one": ("0/0",),
    "flash_causal_wrong_skips_diagonal": ("NaN",),
    "flash_gqa_wrong_interleaved": ("values differ",),
    "paged_decode_wrong_logical_block": ("values differ",),
    "paged_decode_wrong_stale_tail": ("values differ",),
}


def test_references_pass_and_every_wrong_kernel_fails_on_fresh_inputs(tmp_path):
    seeds = [str(int.from_bytes(os.urandom(4), "little")) for _ in range(2)]
    env = dict(os.environ, TRITON_INTERPRET="1", ROCMLAB_HOME=str(tmp_path),
               ROCMLAB_PROGRESS=str(tmp_path / "progress.json"))
    res = subprocess.run([sys.executable, "-c", CHILD, *seeds], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["mode"] == "interpreter"
    assert len(out["rows"]) == 2 * len(A.PUZZLES) == 14
    names = set()
    for r in out["rows"]:
        assert r["reference"], f"reference of {r['key']} failed (seed {r['seed']}): {r['reference_message']}"
        assert "worst use of the bound" in r["reference_message"]
        for w in r["wrongs"]:
            names.add(w["name"])
            assert w["caught"], f"wrong kernel {w['name']} passed (seed {r['seed']})"
            assert any(p in w["message"] for p in EXPECTED[w["name"]]), (w["name"], w["message"])
    assert names == set(EXPECTED)
    assert not out["starter"] and "stored nothing in z" in out["starter_msg"]   # issue 44: not answered, not "N of N NaN"
    assert "yours" in out["html"] and "expected" in out["html"]       # 3-D outputs render as a table
    assert dict(out["graded"]) == {k: k == "causal" for k in A.PUZZLES}
    rec = progress.load(tmp_path / "progress.json")[A.LAB]
    assert rec["causal"]["earned"] == A.POINTS["causal"] and rec["gqa"]["earned"] == 0


def test_signatures_match_and_points_are_in_progress():
    from rocmlab.course.labs.lab09_attention_on_mi300x import kernels as attention_kernels  # noqa: F401 - imports triton; only the source is read below
    src = inspect.getsource(sys.modules["rocmlab.course.labs.lab09_attention_on_mi300x.kernels"])
    defs = {n.name: [a.arg for a in n.args.args] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef)}
    assert len(A.PUZZLES) == 7
    for key, p in A.PUZZLES.items():
        want = [a.arg for a in ast.parse(p.signature + " pass").body[0].args.args]
        assert defs[p.solution] == want, key
        assert p.wrongs and all(defs[w] == want for w in p.wrongs), key
        assert len(p.hints) >= 2 and p.bound is not None and p.bound_text
    assert progress.LAB_TASKS[A.LAB] == A.POINTS and sum(A.POINTS.values()) == 15
    assert set(T06.PUZZLES) & set(A.PUZZLES) == set()            # Lab 06's list is untouched
    with pytest.raises(ValueError, match="already taken"):
        P.register(P.Puzzle("gqa", "", "", "", None, None, None, ()))


def test_attention_bound_is_the_derived_one():
    import torch

    assert A.ATTN_BOUND == 2.0 ** -9
    case = type("C", (), {"inputs": {"v": torch.tensor([[-3.0, 1.0]])}})()
    b = A._attn_bound(case, torch.zeros(2, 2))
    assert torch.equal(b, torch.full((2, 2), 3.0 * 2.0 ** -9))


def test_solution_compiles_for_gfx942_and_gfx950_with_the_lab_figures():
    from rocmlab.course.labs.lab09_attention_on_mi300x import lab as L

    rows = {}
    for t in ("gfx942", "gfx950"):
        rt = L.resource_table(L.tile_reports(t, quick=True))
        rows.update({(r["case"], r["target"]): r for r in rt.to_dict("records")})
    h100, chosen = "H100 tile: 128x128, 3 stages", "chosen: 128x64, 2 stages"
    for t in ("gfx942", "gfx950"):
        c = rows[(chosen, t)]
        assert c["fits LDS"] and c["v_mfma"] > 0 and c["spills"] == 0 and c["waves/SIMD"] >= 1
    assert rows[(h100, "gfx942")]["LDS B"] > 65536 and rows[(h100, "gfx942")]["fits LDS"] is False
    assert rows[(h100, "gfx942")]["waves/SIMD"] == 0                             # 128 KiB of LDS cannot launch
    for (case, t), r in rows.items():
        # VGPRs are the architectural ones (the unified file holds them and the AGPRs, 512 per lane), and the
        # calculator agrees with the compiler's own listing wherever the registers limit it; Triton's LDS is
        # dynamic, which the compiler's figure cannot see, so only LDS may take the calculator lower
        assert r["VGPRs"] <= 256 and r["AGPRs"] is not None, (case, t)
        assert r["compiler's waves/SIMD"] >= 1, (case, t)
        if r["limited by"] == "LDS":
            assert r["waves/SIMD"] <= r["compiler's waves/SIMD"], (case, t)
        else:
            assert r["waves/SIMD"] == r["compiler's waves/SIMD"], (case, t, r["waves/SIMD"])
    assert rows[("128x128, 2 stages", "gfx950")]["fits LDS"]                    # 160 KiB holds it
    assert rows[(chosen, "gfx942")]["LDS limit B"] == 65536 and rows[(chosen, "gfx950")]["LDS limit B"] == 163840
    w2 = rows[("128x64, waves_per_eu 2", "gfx942")]
    assert w2["VGPRs"] <= 256 and w2["spills"] > 0 and w2["scratch B"] > 0       # occupancy bought with spills
    assert "16x16" in rows[("128x64, nonkdim 16", "gfx942")]["MFMA"] and "32x32x8" in rows[(chosen, "gfx942")]["MFMA"]
    assert "32x32x16" in rows[(chosen, "gfx950")]["MFMA"]
    assert rows[(chosen, "gfx950")]["v_mfma"] * 2 == rows[(chosen, "gfx942")]["v_mfma"]   # double K per MFMA


def test_timing_says_why_not_on_a_cpu():
    import torch

    from rocmlab.course.labs.lab09_attention_on_mi300x import lab as L
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: timing runs in benchmarks/lab09_lab10_gpu.py")
    assert L.time_attention().startswith("not timed")
    assert L.attention_flops(1, 1, 4, 2, causal=True) == 4 * 16 * 2 / 2


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_every_puzzle_solution_compiles_offline(target):
    from rocmlab.course.labs.lab09_attention_on_mi300x import lab as L

    reps = L.solution_reports(target)
    assert set(reps) == set(A.PUZZLES)
    for key, r in reps.items():
        assert r.wavefront_size == 64 and r.vgprs and r.fits_lds, key
    for key in ("attention-tile", "flash-forward", "causal", "gqa"):      # tl.dot becomes MFMA
        assert reps[key].mfma(), key
    assert not reps["paged-decode"].mfma()                                   # one query row: no matrix product
