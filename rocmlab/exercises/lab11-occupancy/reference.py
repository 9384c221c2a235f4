"""Reference for lab11-occupancy: a 7-point stencil with zero padding, in float64."""
import numpy as np

W = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05], dtype=np.float32)


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    return {"a": rng.standard_normal(int(size["n"]), dtype=np.float32)}


def reference(inputs: dict) -> dict:
    a = inputs["a"].astype(np.float64)
    return {"out": np.convolve(a, W.astype(np.float64)[::-1], mode="same")}


def scale(inputs: dict) -> dict:
    return {"out": np.convolve(np.abs(inputs["a"].astype(np.float64)), W.astype(np.float64), mode="same")}


def work(inputs: dict) -> dict:
    return {"bytes": 8.0 * inputs["a"].size}
