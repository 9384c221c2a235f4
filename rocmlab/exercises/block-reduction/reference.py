"""Reference for block-reduction: the sum of x, compared relative to sum(|x|)."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    # mean 1, spread 2: a kernel that drops lanes 32-63 or a tail is off by far more than rounding
    x = rng.uniform(-1.0, 3.0, n)
    # signs and edge values, so that lane-count bugs show: in each 1024-value stretch (a grid-stride loop over
    # 256-thread blocks of float4 gives each lane values from one place in it: lanes 0-31 of wave w read places
    # 256w..256w+127) the places of lanes 0-31 of one random wave hold only negative values, so a kernel that
    # keeps a wave's sum only when __popc(__ballot(v > 0)) sees a positive lane among lanes 0-31 drops it;
    # and a few exact zeros, negative zeros and large values
    place = np.arange(n) % 1024
    lo = int(rng.integers(0, 4)) * 256
    neg = (place >= lo) & (place < lo + 128)
    x[neg] = -rng.uniform(0.5, 2.0, int(neg.sum()))
    edge = rng.choice(n, size=min(n, 64), replace=False)
    x[edge[:16]] = 0.0
    x[edge[16:32]] = -0.0
    x[edge[32:]] = rng.choice([-1.0, 1.0], edge[32:].size) * rng.uniform(1e3, 1e4, edge[32:].size)
    return {"x": x.astype(np.float32)}


def reference(inputs: dict) -> dict:
    return {"sum": np.array([inputs["x"].astype(np.float64).sum()], dtype=np.float32)}


def scale(inputs: dict) -> dict:
    """What the tolerance is relative to (float32 sums of many terms)."""
    return {"sum": float(np.abs(inputs["x"].astype(np.float64)).sum())}


def work(inputs: dict) -> dict:
    return {"bytes": 4 * inputs["x"].size}
