"""Reference for lab11-lds-banks: y = A x in float64 (the kernel sums in fp32)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    rows, cols = int(size["rows"]), int(size["cols"])
    return {"dims": np.array([rows, cols], dtype=np.int32),
            "a": rng.uniform(-1.0, 1.0, rows * cols).astype(np.float32),
            "x": rng.uniform(-1.0, 1.0, cols).astype(np.float32)}


def _a(inputs):
    rows, cols = (int(v) for v in inputs["dims"])
    return inputs["a"].astype(np.float64).reshape(rows, cols)


def reference(inputs: dict) -> dict:
    return {"y": _a(inputs) @ inputs["x"].astype(np.float64)}


def scale(inputs: dict) -> dict:
    return {"y": np.abs(_a(inputs)) @ np.abs(inputs["x"].astype(np.float64))}


def work(inputs: dict) -> dict:
    return {"bytes": 4.0 * (inputs["a"].size + inputs["x"].size)}
