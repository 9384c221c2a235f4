"""Reference for gemm_mfma: C = A @ B with fp16 inputs (held as float32) and exact float64 sums."""

import numpy as np


def make_inputs(rng, sizes):
    m, n, k = int(sizes["m"]), int(sizes["n"]), int(sizes["k"])
    a = rng.uniform(-2.0, 2.0, size=(m, k)).astype(np.float16).astype(np.float32)
    b = rng.uniform(-2.0, 2.0, size=(k, n)).astype(np.float16).astype(np.float32)
    return {"a": a.ravel(), "b": b.ravel(), "dims": np.array([m, n, k], dtype=np.int32)}


def _mats(inputs):
    m, n, k = (int(v) for v in inputs["dims"])
    return inputs["a"].astype(np.float64).reshape(m, k), inputs["b"].astype(np.float64).reshape(k, n)


def reference(inputs):
    a, b = _mats(inputs)
    return {"c": (a @ b).ravel()}


def scale(inputs):
    """fp32 accumulation of exact fp16 products: the error is relative to sum |a| |b|, per element."""
    a, b = _mats(inputs)
    return {"c": (np.abs(a) @ np.abs(b)).ravel()}


def work(inputs):
    m, n, k = (int(v) for v in inputs["dims"])
    return {"flops": 2.0 * m * n * k, "bytes": 4.0 * (m * k + k * n + m * n)}
