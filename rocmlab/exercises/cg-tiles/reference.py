"""Reference for group_absmax: scale[g] = max |x| over each group of 32 values, / 127 (float32)."""

import numpy as np

GROUP = 32


def make_inputs(rng, sizes):
    groups = int(sizes["groups"])
    x = rng.standard_normal(groups * GROUP).astype(np.float32)
    # one outlier per group in a random lane: a reduction that drops lanes 32-63 or half a tile misses it
    lanes = rng.integers(0, GROUP, size=groups)
    x.reshape(groups, GROUP)[np.arange(groups), lanes] *= np.float32(8.0)
    return {"x": x}


def reference(inputs):
    m = np.abs(inputs["x"].reshape(-1, GROUP)).max(axis=1)
    return {"scale": (m / np.float32(127.0)).astype(np.float32)}


def work(inputs):
    return {"bytes": 4.0 * inputs["x"].size * (1 + 1 / GROUP), "flops": float(inputs["x"].size)}
