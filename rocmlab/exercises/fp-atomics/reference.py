"""Reference for scatter_add: out[idx[r], :] += g[r, :] (float64 sums), as in an embedding backward."""

import numpy as np


def make_inputs(rng, sizes):
    rows, dim, vocab = int(sizes["rows"]), int(sizes["dim"]), int(sizes["vocab"])
    idx = rng.integers(0, vocab, size=rows, dtype=np.int32)
    idx[: min(rows, 64)] = 3      # a hot row: many atomics on the same addresses
    g = rng.standard_normal((rows, dim)).astype(np.float32)
    return {"idx": idx, "g": g.ravel(), "dims": np.array([rows, dim, vocab], dtype=np.int32)}


def _sum(inputs, values):
    rows, dim, vocab = (int(v) for v in inputs["dims"])
    out = np.zeros((vocab, dim), dtype=np.float64)
    np.add.at(out, inputs["idx"], values.astype(np.float64).reshape(rows, dim))
    return out.ravel()


def reference(inputs):
    return {"out": _sum(inputs, inputs["g"])}


def scale(inputs):
    return {"out": _sum(inputs, np.abs(inputs["g"])) + 1e-30}


def work(inputs):
    rows, dim, vocab = (int(v) for v in inputs["dims"])
    return {"bytes": 4.0 * (rows * dim * 2 + rows), "flops": float(rows * dim)}
