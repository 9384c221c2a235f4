"""Reference for lab11-race: every block of 256 elements reversed (the last block may be shorter)."""
import numpy as np

BLOCK = 256


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    return {"a": rng.standard_normal(int(size["n"]), dtype=np.float32)}


def reference(inputs: dict) -> dict:
    a = inputs["a"]
    out = np.concatenate([a[i:i + BLOCK][::-1] for i in range(0, a.size, BLOCK)])
    return {"out": out}


def work(inputs: dict) -> dict:
    return {"bytes": 8.0 * inputs["a"].size}
