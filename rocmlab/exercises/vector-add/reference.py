"""Reference for vector-add: c = a + b (float32)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    return {"a": rng.standard_normal(n, dtype=np.float32), "b": rng.standard_normal(n, dtype=np.float32)}


def reference(inputs: dict) -> dict:
    return {"c": inputs["a"] + inputs["b"]}
