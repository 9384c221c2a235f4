"""Reference for transpose-lds: the transpose of a rows x cols float32 matrix (row-major)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    rows, cols = size["rows"], size["cols"]
    return {"dims": np.array([rows, cols], dtype=np.int32),
            "a": rng.standard_normal(rows * cols, dtype=np.float32)}


def reference(inputs: dict) -> dict:
    rows, cols = (int(v) for v in inputs["dims"])
    return {"t": np.ascontiguousarray(inputs["a"].reshape(rows, cols).T).ravel()}


def work(inputs: dict) -> dict:
    return {"bytes": 8 * inputs["a"].size}
