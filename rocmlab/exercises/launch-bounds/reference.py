"""Reference for tile_gemm: C = A @ B in float64 (the kernel sums in fp32)."""

import numpy as np


def make_inputs(rng, sizes):
    n, k = int(sizes["n"]), int(sizes["k"])
    a = rng.uniform(-1.0, 1.0, size=(n, k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(k, n)).astype(np.float32)
    return {"a": a.ravel(), "b": b.ravel(), "dims": np.array([n, k], dtype=np.int32)}


def _mats(inputs):
    n, k = (int(v) for v in inputs["dims"])
    return inputs["a"].astype(np.float64).reshape(n, k), inputs["b"].astype(np.float64).reshape(k, n)


def reference(inputs):
    a, b = _mats(inputs)
    return {"c": (a @ b).ravel()}


def scale(inputs):
    a, b = _mats(inputs)
    return {"c": (np.abs(a) @ np.abs(b)).ravel()}


def work(inputs):
    n, k = (int(v) for v in inputs["dims"])
    return {"flops": 2.0 * n * n * k, "bytes": 4.0 * (2 * n * k + n * n)}
