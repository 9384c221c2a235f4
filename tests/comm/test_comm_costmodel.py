"""The alpha-beta model, its cited defaults, the vLLM table and the tuning recommendations."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rocmlab.comm import torch_codec as C
from rocmlab.comm import costmodel as M
from rocmlab.comm import tuning

ROOT = Path(__file__).resolve().parents[2]


def test_every_default_has_a_source():
    for s in M.systems().values():
        assert s.source and s.link_gbs > 0 and s.alpha_us > 0
        assert "assumption" in s.note      # alpha is ours, and says so
    assert M.system("MI300X").out_bandwidth(8) == 7 * 64e9
    assert M.system("H200").out_bandwidth(2) == M.system("H200").out_bandwidth(8) == 450e9


def test_alpha_beta_arithmetic():
    # 2 x MI300X, 64 MB FP: two phases of alpha + half the message over one 64 GB/s link
    r = M.latency("fp", 64 << 20, "MI300X", 2, alpha_us=0.0)
    assert r["codec_s"] == 0 and r["comm_s"] == pytest.approx(2 * (32 << 20) / 64e9)
    q4 = M.latency("q4", 64 << 20, "MI300X", 2, alpha_us=0.0, overlap="fused")
    assert q4["comm_s"] == pytest.approx(r["comm_s"] * 2.25 / 8)     # the wire shrinks by 8/2.25
    with pytest.raises(ValueError, match="world size 16"):
        M.latency("q4", 1 << 20, "MI300X", 16)
    with pytest.raises(ValueError, match="overlap"):
        M.latency("q4", 1 << 20, overlap="sometimes")


def test_model_is_in_the_range_of_quickreduce_published_figures():
    pub = {p["impl"]: float(p["latency_us"]) for p in M.published() if p["gpus"] == "2"}
    for codec, impl in (("fp", "RCCL"), ("q6", "QuickReduce Q6"), ("q4", "QuickReduce Q4")):
        t = M.latency(codec, 64 << 20, "MI300X", 2)["total_s"] * 1e6
        assert 0.5 < t / pub[impl] < 1.5, (codec, t, pub[impl])
    # the published ordering holds in the model
    t = {c: M.latency(c, 64 << 20, "MI300X", 2)["total_s"] for c in ("fp", "q8", "q6", "q4")}
    assert t["q4"] < t["q6"] < t["q8"] < t["fp"]


def test_crossovers_and_vllm_table():
    serial = M.crossovers("MI300X", 8, overlap="serial")
    fused = M.crossovers("MI300X", 8, overlap="fused")
    for c in ("q8", "q6", "q4"):
        assert fused[c] <= serial[c]
    assert serial["q4"] < serial["q6"] < serial["q8"]          # the smaller wire pays back sooner
    assert M.vllm_min_sizes(8) == {"FP": 16, "INT8": 4, "INT6": 4, "INT4": 2, "INT3": 2}
    assert M.vllm_min_sizes(2, "bfloat16")["INT4"] == 8
    assert 1 < M.fitted_kernel_us() < 50


def test_recommendations():
    errs = {"INT3": 0.3, "INT8": 0.013, "INT6": 0.048, "INT4": 0.13}
    r = tuning.recommend(8, "bfloat16", 0.06, errors=errs)
    assert r["env"] == {"VLLM_ROCM_QUICK_REDUCE_QUANTIZATION": "INT6", "VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16": "1"}
    assert r["sglang_env"]["ROCM_QUICK_REDUCE_QUANTIZATION"] == "INT6" and r["min_size_mb"] == 4
    assert tuning.recommend(4, "float16", 0.2, errors=errs)["env"] == {"VLLM_ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"}
    assert tuning.recommend(2, "float16", 0.02, errors=errs)["codec"] == "q8"
    # nothing within the budget: FP QuickReduce (unquantized), never a codec over budget
    fp = tuning.recommend(2, "float16", 0.001, errors=errs)
    assert fp["regime"] == "FP" and fp["codec"] == "fp" and fp["min_size_mb"] == 1
    # INT3 only at TP 2, even when it fits the budget
    assert tuning.recommend(2, "float16", 0.5, errors=errs)["regime"] == "INT3"
    r8 = tuning.recommend(8, "float16", 0.5, errors=errs)
    assert r8["regime"] == "INT4" and any("TP 2 only" in why for why in r8["reasons"])
    assert tuning.recommend(3)["env"]["VLLM_ROCM_QUICK_REDUCE_QUANTIZATION"] == "NONE"
    assert tuning.recommend(8, "float32")["env"]["VLLM_ROCM_QUICK_REDUCE_QUANTIZATION"] == "NONE"
    assert "export VLLM_ROCM_QUICK_REDUCE_QUANTIZATION=INT6" in tuning.format_env(r["env"])
    assert any(f"from vLLM {tuning.VLLM_VERSION}" in why for why in r["reasons"])
    with pytest.raises(ValueError, match="keys"):
        tuning.recommend(8, errors={"q4": 0.1})


def test_regimes_match_the_pinned_vllm_when_it_is_installed():
    """vLLM's own list of QUICK_REDUCE_QUANTIZATION values, read from its envs.py where vLLM is installed."""
    import importlib.util
    import re
    from rocmlab import settings
    py = settings.env("ROCMLAB_VLLM_PYTHON", ".venv-vllm/bin/python")
    spec = importlib.util.find_spec("vllm")
    files = [Path(spec.origin).parent / "envs.py"] if spec and spec.origin else []
    files += list((ROOT / Path(py).parent.parent / "lib").glob("python3*/site-packages/vllm/envs.py"))
    if not files:
        pytest.skip("vLLM is not installed here")
    text = files[0].read_text()
    m = re.search(r'"VLLM_ROCM_QUICK_REDUCE_QUANTIZATION",\s*"NONE",\s*\[([^\]]*)\]', text)
    assert m, "vLLM's envs.py no longer lists QuickReduce's regimes where this test looks"
    assert set(re.findall(r'"(\w+)"', m.group(1))) == set(tuning.ALLOWED)
    for var in (tuning.ENV_MIN, tuning.ENV_QMIN, tuning.ENV_MAX, tuning.ENV_CAST):
        assert var in text


def test_integer_roundtrip_equals_the_packed_codecs():
    x = C.activations("outliers", 4096, seed=int.from_bytes(os.urandom(4), "little"))
    for bits, name in ((4, "q4"), (6, "q6"), (8, "q8")):
        assert torch.equal(C.integer_roundtrip(x, bits), C.decode_reference(C.encode_reference(x, name), torch.float32))
    e = tuning.codec_errors(seed=1)
    assert e["INT8"] < e["INT6"] < e["INT4"] < e["INT3"]
    assert not torch.equal(C.integer_roundtrip(x, 3), C.integer_roundtrip(x, 4))


def test_the_sweep_says_why_it_cannot_run_here():
    ok, why = tuning.can_sweep()
    if ok:
        pytest.skip("this machine can run the vLLM sweep")
    assert why and ("ROCm" in why or "GPU" in why or "vLLM" in why)
    with pytest.raises(RuntimeError):
        tuning.sweep_vllm()


def test_allreduce_sweep_script_smoke_on_gloo(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks/allreduce_sweep.py"), "--backend", "gloo",
                          "--world", "2", "--sizes-kb", "32", "--reps", "1", "--warmup", "0",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "NCCL_NVLS_ENABLE=0" in res.stdout and (tmp_path / "allreduce_sweep.json").exists()
