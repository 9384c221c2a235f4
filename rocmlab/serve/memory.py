"""Memory planner: does a model fit on a GPU, and how many sequences at a context length?

Per GPU, vLLM splits memory like this (the figures its log prints at start)::

    total x gpu_memory_utilization = weights + activation peak + non-torch memory + KV cache

This module computes each term from a model's ``config.json`` (layers, hidden size, heads,
KV heads, head dim, vocabulary) and a tensor-parallel degree, against the GPU memory in
``datasets/hardware.csv``:

- weights: parameter count per part (embedding, attention, MLP, norms, LM head) times the
  bytes of its dtype. FP8/INT8/INT4 quantization applies to the linear layers; embeddings,
  LM head and norms stay 16-bit, as in published FP8 checkpoints. Under TP the linear
  layers, embedding and LM head are split; norms are replicated, and so are KV heads when
  TP exceeds their number (vLLM keeps at least one per GPU).
- KV cache per token: ``2 (K and V) x layers x KV heads per GPU x head_dim x bytes``.
- activation peak and non-torch memory: an **estimate** (see :func:`activation_bytes`);
  vLLM measures them at start, so check its log on your machine.

The marketed memory sizes are read as GiB: MI300X devices report 192 GiB, H100 79.6 GiB and
H200 140.4 GiB, within 1% of the marketed 192/80/141.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from rocmlab.machine import hardware
from rocmlab.paths import datasets_dir

GIB = 1024**3

DTYPE_BYTES = {
    "float32": 4, "fp32": 4,
    "float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
    "int4": 0.5,
}
QUANTIZED = {"fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4"}

_REQUIRED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")


def dtype_bytes(name: str) -> float:
    key = str(name).lower()
    if key not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}: use one of {', '.join(sorted(DTYPE_BYTES))}")
    return DTYPE_BYTES[key]


def model_configs_dir() -> Path:
    return datasets_dir() / "model_configs"


def known_models() -> list[str]:
    return sorted(p.stem for p in model_configs_dir().glob("*.json"))


_ALIASES = {"llama-3-8b": "llama-3.1-8b", "llama-3-70b": "llama-3.1-70b", "llama-3.3-70b": "llama-3.1-70b",
            "llama-3-405b": "llama-3.1-405b"}


#: A Hugging Face config.json is a few KB; anything far bigger is not one.
MAX_CONFIG_BYTES = 1 << 20


def _read_config(path: Path) -> dict:
    """The JSON object in a model's ``config.json``; ValueError naming the file and the fix otherwise."""
    fix = ("give a model's Hugging Face config.json (or its folder), or a shipped name: "
           + ", ".join(known_models()))
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path} is {size} bytes, not a model config (a config.json is a few KB): {fix}")
    try:
        d = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a model config (not UTF-8 text): {fix}") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(f"{path} is not a model config (not JSON{where}): {fix}") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} holds a JSON {type(d).__name__}, not a model config's object: {fix}")
    return d


@dataclass(frozen=True)
class ModelConfig:
    name: str
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 0
    source: str = ""

    @classmethod
    def from_dict(cls, d: dict, name: str = "model") -> ModelConfig:
        missing = [k for k in _REQUIRED if k not in d]
        if missing:
            raise ValueError(f"model config {name!r} lacks {', '.join(missing)}: pass a Hugging Face config.json "
                             "of a decoder-only transformer (Llama, Mistral, Qwen ...)")
        for k in (*_REQUIRED, "head_dim", "num_key_value_heads", "max_position_embeddings"):
            v = d.get(k)
            if (v is not None or k in _REQUIRED) and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"model config {name!r}: {k} is {v!r}, not a whole number >= 1; fix the "
                                 "config.json (a Hugging Face config of a decoder-only transformer)")
        heads = d["num_attention_heads"]
        head_dim = d.get("head_dim") or d["hidden_size"] // heads
        cfg = cls(name=str(d.get("_name", name)), num_hidden_layers=d["num_hidden_layers"],
                  hidden_size=d["hidden_size"], intermediate_size=d["intermediate_size"],
                  num_attention_heads=heads, num_key_value_heads=d.get("num_key_value_heads") or heads,
                  head_dim=head_dim, vocab_size=d["vocab_size"],
                  tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
                  max_position_embeddings=d.get("max_position_embeddings") or 0, source=str(d.get("_source", "")))
        if head_dim < 1:
            raise ValueError(f"model config {name!r}: hidden_size {d['hidden_size']} is smaller than its {heads} "
                             "attention heads and no head_dim is given; fix the config.json")
        if heads % cfg.num_key_value_heads:
            raise ValueError(f"model config {name!r}: {heads} attention heads is not a multiple of "
                             f"{cfg.num_key_value_heads} KV heads")
        return cfg

    @classmethod
    def load(cls, name_or_path: str | Path) -> ModelConfig:
        """A shipped config by name (``llama-3.1-70b``; see :func:`known_models`), or a path to a
        ``config.json`` or a model folder holding one."""
        p = Path(name_or_path)
        if p.is_dir():
            p = p / "config.json"
        if p.is_file():
            return cls.from_dict(_read_config(p), name=p.parent.name if p.name == "config.json" else p.stem)
        key = _ALIASES.get(str(name_or_path).lower(), str(name_or_path).lower())
        f = model_configs_dir() / f"{key}.json"
        if not f.is_file():
            raise FileNotFoundError(f"unknown model {str(name_or_path)!r}: pass a path to a config.json, "
                                    f"or one of {', '.join(known_models())}")
        return cls.from_dict(_read_config(f), name=key)

    def kv_heads_per_gpu(self, tp: int = 1) -> int:
        check_tp(self, tp)
        return max(1, self.num_key_value_heads // tp)

    def params(self) -> dict[str, int]:
        """Parameter count per part (whole model, no TP)."""
        h, d, L = self.hidden_size, self.head_dim, self.num_hidden_layers
        attn = L * (h * self.num_attention_heads * d * 2 + h * self.num_key_value_heads * d * 2)  # q, o + k, v
        return {
            "embedding": self.vocab_size * h,
            "attention": attn,
            "mlp": L * 3 * h * self.intermediate_size,  # gate, up, down
            "norms": L * 2 * h + h,
            "lm_head": 0 if self.tie_word_embeddings else self.vocab_size * h,
        }

    @property
    def total_params(self) -> int:
        return sum(self.params().values())


def check_tp(cfg: ModelConfig, tp: int) -> None:
    if tp < 1 or int(tp) != tp:
        raise ValueError(f"tensor-parallel size must be a positive integer, got {tp!r}")
    if cfg.num_attention_heads % tp:
        raise ValueError(f"{cfg.name}: {cfg.num_attention_heads} attention heads do not split over TP={tp}; "
                         "use a TP that divides the head count (1, 2, 4, 8)")
    if tp < cfg.num_key_value_heads and cfg.num_key_value_heads % tp:
        raise ValueError(f"{cfg.name}: {cfg.num_key_value_heads} KV heads do not split over TP={tp}")


def weight_bytes(cfg: ModelConfig, weights: str = "bf16", tp: int = 1) -> float:
    """Weight bytes held by one GPU."""
    check_tp(cfg, tp)
    w = dtype_bytes(weights)
    dense = 2 if weights.lower() in QUANTIZED else w   # embeddings, LM head, norms stay 16-bit when quantized
    h, d, L = cfg.hidden_size, cfg.head_dim, cfg.num_hidden_layers
    q_o = L * h * cfg.num_attention_heads * d * 2 / tp
    k_v = L * h * cfg.kv_heads_per_gpu(tp) * d * 2
    mlp = L * 3 * h * cfg.intermediate_size / tp
    p = cfg.params()
    return (q_o + k_v + mlp) * w + (p["embedding"] + p["lm_head"]) / tp * dense + p["norms"] * dense


def kv_bytes_per_token(cfg: ModelConfig, kv_cache_dtype: str = "bf16", tp: int = 1) -> float:
    """KV-cache bytes one token takes on one GPU: K and V for every layer."""
    return 2 * cfg.num_hidden_layers * cfg.kv_heads_per_gpu(tp) * cfg.head_dim * dtype_bytes(kv_cache_dtype)


def activation_bytes(cfg: ModelConfig, tp: int = 1, max_num_batched_tokens: int = 8192, max_num_seqs: int = 256,
                     non_torch_gib: float = 1.0) -> float:
    """An ESTIMATE of the activation peak plus non-torch memory on one GPU.

    vLLM profiles a forward pass of ``max_num_batched_tokens`` tokens; its peak is dominated by the
    MLP's gate/up output and the QKV output (16-bit), plus fp32 logits for ``max_num_seqs``
    sequences. ``non_torch_gib`` covers the runtime context, communication buffers and graphs.
    """
    per_token = (2 * cfg.intermediate_size + (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim) / tp
    per_token += 4 * cfg.hidden_size
    return max_num_batched_tokens * per_token * 2 + max_num_seqs * cfg.vocab_size / tp * 4 + non_torch_gib * GIB


def gpu_memory_gib(gpu: str) -> float:
    specs = hardware.specs()
    spec = specs.get(gpu) or hardware.lookup(gpu)
    if spec is None:
        raise ValueError(f"unknown GPU {gpu!r}: use one of {', '.join(specs)} (datasets/hardware.csv)")
    return float(spec["memory_gb"])


@dataclass(frozen=True)
class Plan:
    model: str
    gpu: str
    tp: int
    weights: str
    kv_cache_dtype: str
    context_len: int
    gpu_memory_gib: float
    usable_gib: float            # x gpu_memory_utilization
    weights_gib: float           # per GPU
    reserve_gib: float           # activation peak + non-torch (estimate)
    kv_budget_gib: float         # per GPU
    kv_per_token_kib: float      # per GPU
    max_cached_tokens: int
    max_concurrent_seqs: int     # at context_len
    params_b: float

    @property
    def fits(self) -> bool:
        """At least one sequence of ``context_len`` tokens fits beside the weights."""
        return self.max_concurrent_seqs >= 1

    def as_row(self) -> dict:
        row = asdict(self)
        row["fits"] = self.fits
        return row

    def __str__(self) -> str:
        verdict = f"fits: {self.max_concurrent_seqs} sequences of {self.context_len} tokens" if self.fits else \
            f"does NOT fit: no room for one sequence of {self.context_len} tokens"
        return (f"{self.model} {self.weights} weights, {self.kv_cache_dtype} KV, TP={self.tp} on {self.gpu}: "
                f"{self.weights_gib:.1f} GiB weights + {self.reserve_gib:.1f} GiB reserve of {self.usable_gib:.1f} GiB "
                f"usable -> {self.kv_budget_gib:.1f} GiB KV at {self.kv_per_token_kib:.0f} KiB/token -> {verdict}")


def plan(model: str | ModelConfig, gpu: str = "MI300X", weights: str = "bf16", kv_cache_dtype: str = "auto",
         tp: int = 1, context_len: int = 8192, gpu_memory_utilization: float = 0.9,
         max_num_batched_tokens: int = 8192, max_num_seqs: int = 256, reserve_gib: float | None = None) -> Plan:
    """Plan one deployment. ``kv_cache_dtype="auto"`` means the weights' dtype, or bf16 for
    quantized weights (as vLLM's ``--kv-cache-dtype auto``)."""
    cfg = model if isinstance(model, ModelConfig) else ModelConfig.load(model)
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    if context_len < 1:
        raise ValueError(f"context_len must be positive, got {context_len}")
    kv = kv_cache_dtype
    if kv == "auto":
        kv = "bf16" if weights.lower() in QUANTIZED else weights
    total = gpu_memory_gib(gpu)
    usable = total * gpu_memory_utilization
    w = weight_bytes(cfg, weights, tp) / GIB
    reserve = reserve_gib if reserve_gib is not None else \
        activation_bytes(cfg, tp, max_num_batched_tokens, max_num_seqs) / GIB
    budget = usable - w - reserve
    per_tok = kv_bytes_per_token(cfg, kv, tp)
    tokens = max(0, int(budget * GIB // per_tok)) if budget > 0 else 0
    return Plan(model=cfg.name, gpu=gpu, tp=tp, weights=weights, kv_cache_dtype=kv, context_len=context_len,
                gpu_memory_gib=total, usable_gib=usable, weights_gib=w, reserve_gib=reserve,
                kv_budget_gib=budget, kv_per_token_kib=per_tok / 1024, max_cached_tokens=tokens,
                max_concurrent_seqs=tokens // context_len, params_b=cfg.total_params / 1e9)


def min_tp(model: str | ModelConfig, gpu: str, weights: str = "bf16", kv_cache_dtype: str = "auto",
           context_len: int = 8192, candidates=(1, 2, 4, 8), **kw) -> int | None:
    """The smallest TP (from ``candidates``) at which one sequence of ``context_len`` fits, else None."""
    for tp in candidates:
        try:
            if plan(model, gpu, weights, kv_cache_dtype, tp, context_len, **kw).fits:
                return tp
        except ValueError:
            continue
    return None


PRECISIONS = {"FP16": ("fp16", "fp16"), "FP8": ("fp8", "fp8")}   # label -> (weights, KV cache)


def table(models=("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"), gpus=("MI300X", "H100 SXM", "H200"),
          precisions=("FP16", "FP8"), context_len: int = 8192, tp: int = 1, **kw):
    """One row per model x precision x GPU: weights, KV per token, max sequences at
    ``context_len`` on ``tp`` GPUs, and the smallest TP that fits one sequence."""
    import pandas as pd

    rows = []
    for m in models:
        for prec in precisions:
            w, kv = PRECISIONS[prec]
            for g in gpus:
                p = plan(m, g, w, kv, tp, context_len, **kw)
                rows.append({
                    "model": p.model, "precision": prec, "gpu": g, "tp": tp, "params (B)": round(p.params_b, 2),
                    "weights/GPU (GiB)": round(p.weights_gib, 1), "usable (GiB)": round(p.usable_gib, 1),
                    "KV/token (KiB)": round(p.kv_per_token_kib, 1), "KV budget (GiB)": round(p.kv_budget_gib, 1),
                    f"max seqs @ {context_len}": p.max_concurrent_seqs, "fits": p.fits,
                    "min TP": min_tp(m, g, w, kv, context_len, **kw) or "none of 1-8",
                })
    return pd.DataFrame(rows)


def max_concurrent_seqs(model, gpu: str, context_len: int, **kw) -> int:
    return plan(model, gpu, context_len=context_len, **kw).max_concurrent_seqs

