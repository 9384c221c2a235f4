"""Reference for sgemm-hipblas: C = alpha * A @ B + beta * C, column-major float32 (computed in float64)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    m, n, k = size["m"], size["n"], size["k"]
    return {"dims": np.array([m, n, k], dtype=np.int32),
            "scalars": np.array([rng.uniform(0.5, 2.0), rng.uniform(-1.0, 1.0)], dtype=np.float32),
            "a": rng.standard_normal(m * k, dtype=np.float32), "b": rng.standard_normal(k * n, dtype=np.float32),
            "c": rng.standard_normal(m * n, dtype=np.float32)}


def reference(inputs: dict) -> dict:
    m, n, k = (int(v) for v in inputs["dims"])
    alpha, beta = (float(v) for v in inputs["scalars"])
    a = inputs["a"].astype(np.float64).reshape(k, m).T   # column-major M x K
    b = inputs["b"].astype(np.float64).reshape(n, k).T   # column-major K x N
    c = inputs["c"].astype(np.float64).reshape(n, m).T
    out = alpha * (a @ b) + beta * c
    return {"c": out.T.ravel().astype(np.float32)}       # back to column-major


def work(inputs: dict) -> dict:
    m, n, k = (int(v) for v in inputs["dims"])
    return {"flops": 2 * m * n * k}
