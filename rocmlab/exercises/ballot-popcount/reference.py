"""Reference for ballot-popcount: per block of 256 elements, the count of x > threshold."""
import numpy as np

BLOCK = 256


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    return {"x": rng.standard_normal(n, dtype=np.float32),
            "threshold": np.array([rng.uniform(-0.5, 0.5)], dtype=np.float32)}


def reference(inputs: dict) -> dict:
    x, t = inputs["x"], inputs["threshold"][0]
    pad = (-x.size) % BLOCK
    above = np.concatenate([x > t, np.zeros(pad, dtype=bool)]).reshape(-1, BLOCK)
    return {"counts": above.sum(axis=1).astype(np.uint32)}
