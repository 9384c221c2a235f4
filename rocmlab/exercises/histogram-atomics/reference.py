"""Reference for histogram-atomics: counts of values % 256 (uint32)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    # skewed on purpose: a peak, a spread and a few hot bins, so that lost or doubled counts show
    peak = np.clip(rng.normal(128, 30, n // 2), 0, 255)
    spread = rng.integers(0, 1 << 20, n - n // 2 - n // 16)
    hot = rng.choice([7, 200, 255], n // 16)
    v = np.concatenate([peak, spread, hot]).astype(np.uint32)
    rng.shuffle(v)
    return {"values": v}


def reference(inputs: dict) -> dict:
    return {"bins": np.bincount(inputs["values"] % 256, minlength=256).astype(np.uint32)}
