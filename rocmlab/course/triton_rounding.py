"""Make Triton's CPU interpreter round to narrow float types as the GPUs do (Labs 06 and 10).

Standalone on purpose (standard library, numpy, torch and triton only): :func:`rocmlab.course.puzzles.setup`
uses it in a notebook, and the sandboxed re-grade (:mod:`rocmlab.grader.pyanswer`) copies this file beside
the learner's answer, where rocmlab itself is not installed.
"""

import torch


#: Narrow float types whose conversion from float32/float16 the interpreter gets wrong (see round_like_the_gpu).
_NARROW = {"bf16": torch.bfloat16, "fp8e4b8": torch.float8_e4m3fnuz, "fp8e4nv": torch.float8_e4m3fn,
           "fp8e5": torch.float8_e5m2}


def round_like_the_gpu() -> bool:
    """Make Triton's CPU interpreter round float32/float16 -> bfloat16 and FP8 to nearest even, as the GPUs do.

    Triton 3.x's interpreter converts these in numpy bit by bit: bfloat16 is truncated, and a rounding up that
    carries into the exponent is lost for FP8 (63.5 becomes 32 in e4m3fnuz, half the right value). Lab 10's
    FP8 checks would fail the correct kernel on those values. This routes exactly those conversions through
    torch's casts (round to nearest even, with the carry; explicit round-toward-zero requests are left alone).
    Returns False where the interpreter is not the one this was written against (nothing is changed)."""
    try:
        import numpy as np
        from triton.runtime import interpreter as interp
    except ImportError:   # pragma: no cover - triton is a course dependency
        return False
    orig = getattr(interp, "_convert_float", None)
    if orig is None or not hasattr(interp, "_ir"):
        return False
    if getattr(orig, "_rocmlab_rounding", False):
        return True
    rtz = getattr(interp._ir.ROUNDING_MODE, "RTZ", None)

    def convert(input, input_dtype, output_dtype, rounding_mode):
        name = getattr(output_dtype, "name", "")
        if (name in _NARROW and getattr(input_dtype, "name", "") in ("fp32", "fp16")
                and (rounding_mode is None or rounding_mode != rtz)):
            t = torch.from_numpy(np.ascontiguousarray(input, dtype=np.float32).reshape(-1).copy()).to(_NARROW[name])
            bits = t.view(torch.int16).numpy().view(np.uint16) if name == "bf16" else t.view(torch.uint8).numpy()
            return bits.reshape(np.shape(input))
        return orig(input, input_dtype, output_dtype, rounding_mode)

    convert._rocmlab_rounding = True
    interp._convert_float = convert
    return True
