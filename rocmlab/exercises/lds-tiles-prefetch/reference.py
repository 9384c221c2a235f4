"""Reference for lds-tiles-prefetch: y[i] = sum_k w[k] * x[i + k - 8], zero outside the array."""
import numpy as np

R = 8


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    w = rng.uniform(0.1, 1.0, 2 * R + 1)
    return {"x": rng.standard_normal(size["n"], dtype=np.float32), "w": (w / w.sum()).astype(np.float32)}


def reference(inputs: dict) -> dict:
    x, w = inputs["x"].astype(np.float64), inputs["w"].astype(np.float64)
    # y[i] = sum_k w[k] x[i + k - R]: a correlation, i.e. a convolution with the reversed weights
    y = np.convolve(x, w[::-1], mode="full")[R: R + x.size]
    return {"y": y.astype(np.float32)}


def work(inputs: dict) -> dict:
    return {"bytes": 8 * inputs["x"].size}
