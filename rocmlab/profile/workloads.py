"""Workloads to profile: a tiny causal transformer and the synthetic data it learns.

The data are token sequences from a random sparse Markov chain (each token has two likely successors),
so the loss has a known floor (the chain's entropy) and a model that learns visibly beats ln(vocab)
within a few dozen steps, on any backend. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LMConfig:
    vocab: int = 64
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    seq: int = 32
    batch: int = 32

    @classmethod
    def for_run(cls, quick: bool, gpu: bool) -> LMConfig:
        if quick or not gpu:
            return cls()
        return cls(vocab=1024, d_model=512, heads=8, layers=4, seq=256, batch=64)


def markov_chain(vocab: int, p_first: float = 0.8, seed: int | None = None):
    """A transition table: token i goes to succ[i, 0] with p_first, else to succ[i, 1]."""
    import torch

    g = torch.Generator().manual_seed(seed if seed is not None else int(torch.randint(0, 2 ** 31, ()).item()))
    succ = torch.stack([torch.randperm(vocab, generator=g)[:2] for _ in range(vocab)])
    return succ, p_first


def chain_entropy(p_first: float) -> float:
    """The loss floor in nats: the entropy of one step of the chain."""
    q = 1 - p_first
    return -(p_first * math.log(p_first) + (q * math.log(q) if q > 0 else 0.0))


def sample_tokens(succ, p_first: float, n: int, seq: int, generator=None):
    import torch

    vocab = succ.shape[0]
    x = torch.empty(n, seq + 1, dtype=torch.long)
    x[:, 0] = torch.randint(0, vocab, (n,), generator=generator)
    for t in range(seq):
        pick = (torch.rand(n, generator=generator) >= p_first).long()
        x[:, t + 1] = succ[x[:, t], pick]
    return x[:, :-1].contiguous(), x[:, 1:].contiguous()


def tiny_lm(cfg: LMConfig):
    import torch
    from torch import nn

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = cfg
            self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
            self.pos = nn.Parameter(torch.randn(cfg.seq, cfg.d_model) * 0.02)
            layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.heads, 4 * cfg.d_model, dropout=0.0,
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, cfg.vocab)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(cfg.seq),
                                 persistent=False)

        def forward(self, x):
            h = self.tok(x) + self.pos[: x.shape[1]]
            h = self.blocks(h, mask=self.mask[: x.shape[1], : x.shape[1]], is_causal=True)
            return self.head(self.norm(h))

    return TinyLM()


def matmul_params(model) -> int:
    """Parameters that take part in matrix products (embeddings are lookups, not FLOPs)."""
    return sum(p.numel() for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith("tok"))


def train_flops_per_step(model, cfg: LMConfig) -> float:
    """Approximate FLOPs of one training step: 6 x matmul parameters x tokens (forward 2, backward 4),
    plus attention scores and values (6 x 2 x layers x seq^2 x d_model per sequence)."""
    tokens = cfg.batch * cfg.seq
    attn = 6 * 2 * cfg.layers * cfg.seq * cfg.seq * cfg.d_model * cfg.batch
    return 6.0 * matmul_params(model) * tokens + attn


def make_train_step(model, opt, device: str, amp_dtype=None):
    """One optimisation step on a batch (x, y); returns the loss (a detached tensor).

    amp_dtype: None (full FP32), torch.bfloat16 (autocast; no scaler needed) or torch.float16 (autocast
    with a GradScaler, on a GPU)."""
    import torch

    scaler = None
    if amp_dtype is torch.float16 and device.startswith("cuda"):
        scaler = torch.amp.GradScaler("cuda")
    dev_type = "cuda" if device.startswith("cuda") else "cpu"
    loss_fn = torch.nn.CrossEntropyLoss()

    def train_step(x, y):
        ctx = torch.autocast(dev_type, dtype=amp_dtype) if amp_dtype is not None else contextlib.nullcontext()
        with ctx:
            logits = model(x)
            loss = loss_fn(logits.float().view(-1, logits.shape[-1]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.detach()

    return train_step
