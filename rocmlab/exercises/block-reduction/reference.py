"""Reference for block-reduction: the sum of x, compared relative to sum(|x|)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    # mean 1, spread 2: a kernel that drops lanes 32-63 or a tail is off by far more than rounding
    return {"x": rng.uniform(-1.0, 3.0, n).astype(np.float32)}


def reference(inputs: dict) -> dict:
    return {"sum": np.array([inputs["x"].astype(np.float64).sum()], dtype=np.float32)}


def scale(inputs: dict) -> dict:
    """What the tolerance is relative to (float32 sums of many terms)."""
    return {"sum": float(np.abs(inputs["x"].astype(np.float64)).sum())}


def work(inputs: dict) -> dict:
    return {"bytes": 4 * inputs["x"].size}
