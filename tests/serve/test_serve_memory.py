"""Memory planner: parameter counts, KV per token, TP splitting and the article's MI300X claim."""

from __future__ import annotations

import json
import random

import pytest

from rocmlab.serve import memory as m


@pytest.mark.parametrize("name,billions", [("llama-3.1-8b", 8.03), ("llama-3.1-70b", 70.55), ("llama-3.1-405b", 405.85)])
def test_parameter_counts_match_the_published_sizes(name, billions):
    assert m.ModelConfig.load(name).total_params / 1e9 == pytest.approx(billions, abs=0.01)


def test_kv_per_token_is_2_layers_kvheads_headdim_bytes():
    c = m.ModelConfig.load("llama-3-70b")
    assert m.kv_bytes_per_token(c, "fp16") == 2 * 80 * 8 * 128 * 2 == 327680
    assert m.kv_bytes_per_token(c, "fp8") == 327680 / 2
    # TP splits KV heads, and replicates them once TP exceeds their number
    assert m.kv_bytes_per_token(c, "fp16", tp=4) == 327680 / 4
    assert m.kv_bytes_per_token(c, "fp16", tp=8) == m.kv_bytes_per_token(c, "fp16", tp=16) * 1 == 327680 / 8


def test_random_config_against_an_independent_count():
    rng = random.Random()
    L, h, heads = rng.randint(1, 40), 64 * rng.randint(1, 64), rng.choice([8, 16, 32])
    kv = rng.choice([k for k in (1, 2, 4, 8) if heads % k == 0])
    inter, vocab, d = rng.randint(100, 20000), rng.randint(1000, 200000), rng.choice([64, 128])
    cfg = m.ModelConfig.from_dict({"num_hidden_layers": L, "hidden_size": h, "intermediate_size": inter,
                                   "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": d,
                                   "vocab_size": vocab})
    expected = L * (2 * h * heads * d + 2 * h * kv * d + 3 * h * inter + 2 * h) + h + 2 * vocab * h
    assert cfg.total_params == expected
    assert m.weight_bytes(cfg, "bf16") == 2 * expected
    # fp8 halves only the linear layers
    linear = L * (2 * h * heads * d + 2 * h * kv * d + 3 * h * inter)
    assert m.weight_bytes(cfg, "fp8") == linear + 2 * (expected - linear)


def test_article_claim_llama3_70b_fp8_fits_one_mi300x_not_one_h100():
    full = 131072   # Llama 3.1's context
    assert m.plan("llama-3-70b", "MI300X", "fp8", "fp8", context_len=full).fits
    assert not m.plan("llama-3-70b", "H100 SXM", "fp8", "fp8", context_len=full).fits
    # at 8K context: dozens of sequences on the MI300X, at most one on the H100
    mi = m.plan("llama-3-70b", "MI300X", "fp8", "fp8", context_len=8192).max_concurrent_seqs
    h1 = m.plan("llama-3-70b", "H100 SXM", "fp8", "fp8", context_len=8192).max_concurrent_seqs
    assert mi >= 50 and h1 <= 1


def test_min_tp_for_fp16():
    assert m.min_tp("llama-3-70b", "H100 SXM", "fp16", "fp16") == 2
    assert m.min_tp("llama-3-70b", "MI300X", "fp16", "fp16") == 1
    assert m.min_tp("llama-3.1-405b", "H100 SXM", "fp16", "fp16") is None   # 8 x 80 GB is not enough


def test_table_has_every_combination():
    t = m.table()
    assert len(t) == 3 * 2 * 3
    row = t[(t.model == "llama-3.1-405b") & (t.precision == "FP8") & (t.gpu == "MI300X")].iloc[0]
    assert not row["fits"] and row["min TP"] == 4


def test_more_memory_never_means_fewer_sequences():
    a = m.plan("llama-3-8b", "MI300X", gpu_memory_utilization=0.8).max_concurrent_seqs
    b = m.plan("llama-3-8b", "MI300X", gpu_memory_utilization=0.95).max_concurrent_seqs
    assert b > a


def test_bad_inputs_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="unknown model 'llama-9'.*llama-3.1-70b"):
        m.ModelConfig.load("llama-9")
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"hidden_size": 64}))
    with pytest.raises(ValueError, match="lacks num_hidden_layers"):
        m.ModelConfig.load(tmp_path)
    with pytest.raises(ValueError, match="do not split over TP=3"):
        m.plan("llama-3-8b", tp=3)
    with pytest.raises(ValueError, match="unknown GPU 'RTX 4090'"):
        m.plan("llama-3-8b", "RTX 4090")
    with pytest.raises(ValueError, match="unknown dtype"):
        m.plan("llama-3-8b", weights="fp7")


GOOD = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
        "vocab_size": 100}


@pytest.mark.parametrize("content, words", [
    (b"this is not json", "not JSON (Expecting value at line 1 column 1)"),
    (b"\xff\xfe\x00garbage", "not UTF-8 text"),
    (b"[1, 2, 3]", "holds a JSON list, not a model config's object"),
    (b"[" * 100000, "not JSON"),
    (json.dumps({**GOOD, "num_hidden_layers": "two"}).encode(), "num_hidden_layers is 'two', not a whole number"),
    (json.dumps({**GOOD, "num_attention_heads": 0}).encode(), "num_attention_heads is 0"),
    (json.dumps({**GOOD, "hidden_size": None}).encode(), "hidden_size is None"),
])
def test_serve_plan_with_a_file_that_is_not_a_model_config_says_which_and_the_fix(tmp_path, capsys, content, words):
    from rocmlab.cli import main
    f = tmp_path / "model.json"
    f.write_bytes(content)
    assert main(["serve", "plan", "--model", str(f)]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err, err
    assert str(f) in err or "model config 'model'" in err, err
    if "not JSON" in words or "UTF-8" in words or "JSON list" in words:
        assert "config.json" in err and "llama-3.1-70b" in err, err     # the fix: what to give instead


def test_serve_plan_control_a_good_config_file_plans(tmp_path, capsys):
    from rocmlab.cli import main
    f = tmp_path / "model.json"
    f.write_text(json.dumps(GOOD))
    assert main(["serve", "plan", "--model", str(f), "--gpu", "MI300X"]) == 0
    assert "model" in capsys.readouterr().out
