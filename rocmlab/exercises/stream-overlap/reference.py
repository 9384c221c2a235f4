"""Reference for stream-overlap: y = x * x + 1 (float32); the program also reports the pipeline time."""
import numpy as np


def make_inputs(rng: np.random.Generator, size: dict) -> dict:
    return {"x": rng.standard_normal(size["n"], dtype=np.float32) * np.float32(3.0)}


def reference(inputs: dict) -> dict:
    x = inputs["x"]
    return {"y": x * x + np.float32(1.0)}
