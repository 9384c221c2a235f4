"""Reference for lab11-coalesce: each row of a rows x cols float32 matrix scaled by its weight."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    rows, cols = int(size["rows"]), int(size["cols"])
    return {"dims": np.array([rows, cols], dtype=np.int32),
            "a": rng.standard_normal(rows * cols, dtype=np.float32),
            "w": rng.uniform(0.5, 2.0, rows).astype(np.float32)}


def reference(inputs: dict) -> dict:
    rows, cols = (int(v) for v in inputs["dims"])
    return {"out": (inputs["a"].reshape(rows, cols) * inputs["w"][:, None]).ravel()}


def work(inputs: dict) -> dict:
    return {"bytes": 8.0 * inputs["a"].size}
