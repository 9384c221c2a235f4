"""Reference for saxpy-events: z = a * x + y (float32); the program also reports its kernel time."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    n = size["n"]
    a = np.float32(rng.uniform(0.5, 3.0) * rng.choice([-1, 1]))
    return {"a": np.array([a], dtype=np.float32), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32)}


def reference(inputs: dict) -> dict:
    return {"z": inputs["a"][0] * inputs["x"] + inputs["y"]}


def work(inputs: dict) -> dict:
    """Bytes moved by one kernel: read x and y, write z."""
    return {"bytes": 12 * inputs["x"].size}
