"""The two-shot all-reduce on 2 and 4 gloo ranks, and the launcher's behaviour on bad input,
a rank that raises, a rank that dies mid-collective and a hang (each ends with a clear error)."""

from __future__ import annotations

import os
import time

import pytest
import torch

from rocmlab.comm import allreduce as AR
from rocmlab.comm import torch_codec as C
from rocmlab.comm import workers as W
from rocmlab.comm.launch import LaunchError, RankFailed, RankTimeout, launch


@pytest.mark.parametrize("world", [2, 4])
def test_two_shot_equals_exact_within_the_codec_bound(world):
    seed = int.from_bytes(os.urandom(4), "little")
    t0 = time.monotonic()
    job = launch(W.accuracy, world, seed, 2048 * world, kind="outliers", timeout_s=120)
    assert time.monotonic() - t0 < 10, "launch() must return at once"
    res = job.result()[0]
    assert res["exact_matches_local_sum"]
    for name in C.CODECS:
        r = res[name]
        assert r["within_bound"], f"{name} world {world} seed {seed}: err/bound {r['max_err_over_bound']:.3f}"
        assert r["ranks_identical"], f"{name}: ranks disagree"
        if name != "fp":   # the bound is close to what happens, so a wrong codec would break it
            assert r["max_err_over_bound"] > 0.2, (name, r)
    # compression costs accuracy in the expected order
    assert res["q8"]["rel_l2"] < res["q6"]["rel_l2"] < res["q4"]["rel_l2"]
    assert res["fp"]["rel_l2"] < 1e-3


@pytest.mark.parametrize("cast", [False, True])
def test_two_shot_bfloat16_with_and_without_the_cast(cast):
    seed = int.from_bytes(os.urandom(4), "little")
    res = launch(W.accuracy, 2, seed, 4096, codecs=("q6", "q4"), dtype="bfloat16", kind="heavy-tailed",
                 cast_bf16_to_fp16=cast, timeout_s=120).result()[0]
    for name in ("q6", "q4"):
        assert res[name]["within_bound"] and res[name]["ranks_identical"], (name, cast, seed, res[name])
        assert res[name]["output"].dtype == torch.bfloat16


def test_the_error_bound_rejects_a_coarser_codec():
    xs = [C.activations("normal", 4096, seed=s) for s in range(2)]
    exact = torch.stack([x.double() for x in xs]).sum(0)
    q4ish = sum(C.decode_reference(C.encode_reference(x, "q4"), torch.float32) for x in xs)
    assert not bool(((q4ish.double() - exact).abs() <= AR.two_shot_error_bound(xs, "q8")).all())


def test_bad_inputs_give_clear_errors_without_entering_a_collective():
    msgs = launch(W.bad_inputs, 3, timeout_s=60).result()[0]
    assert "unsupported dtype torch.float32" in msgs["float32"] and "float16 or bfloat16" in msgs["float32"]
    assert "integer" in msgs["int64"]
    assert "not a multiple of" in msgs["size"] and "pad the tensor with" in msgs["size"].lower()
    assert "world size 3 is not supported" in msgs["world"] and "2, 4 or 8" in msgs["world"]


def test_collective_checks_without_processes():
    codec = C.get_codec("q4")
    with pytest.raises(C.CodecError, match="not a multiple of world_size x block_size = 4 x 32 = 128"):
        AR.check_collective(torch.zeros(96, dtype=torch.float16), codec, 4)
    with pytest.raises(C.CodecError, match="world size 6"):
        AR.check_collective(torch.zeros(6 * 32, dtype=torch.float16), codec, 6)
    AR.check_collective(torch.zeros(8 * 32, dtype=torch.float16), codec, 8)
    assert AR.wire_bytes_per_rank("q4", 4096, 2) == 2 * 1 * C.wire_bytes("q4", 2048)


def test_a_rank_dying_mid_collective_stops_all_ranks_quickly():
    t0 = time.monotonic()
    job = launch(W.die_mid_collective, 2, timeout_s=60)
    with pytest.raises(RankFailed, match="rank 1 of 2 exited with status 3"):
        job.result()
    assert time.monotonic() - t0 < 45
    assert all(not p.is_alive() for p in job.procs)


def test_a_rank_raising_brings_its_message_back():
    job = launch(W.raise_on, 2, bad_rank=0, timeout_s=60)
    with pytest.raises(RankFailed, match="a learner's bug on rank 0"):
        job.result()
    assert all(not p.is_alive() for p in job.procs)


def test_a_hang_ends_at_the_deadline():
    t0 = time.monotonic()
    job = launch(W.hang, 2, timeout_s=4)
    assert not job.done() and job.status().startswith("running")
    with pytest.raises(RankTimeout, match="did not finish within 4 s"):
        job.result()
    assert time.monotonic() - t0 < 20 and all(not p.is_alive() for p in job.procs)


def test_launch_refuses_what_cannot_reach_a_process():
    with pytest.raises(LaunchError, match="top level of an importable module"):
        launch(lambda r, w: None, 2)
    with pytest.raises(LaunchError, match="one GPU per rank"):
        if torch.cuda.is_available() and torch.cuda.device_count() >= 64:
            pytest.skip("too many GPUs for this check")
        launch(W.hang, 64, backend="nccl")
    with pytest.raises(LaunchError, match="backend"):
        launch(W.hang, 2, backend="mpi")
