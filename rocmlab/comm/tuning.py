"""Tuning QuickReduce in vLLM and SGLang: a sweep where it can run, recommendations everywhere.

Checked against vLLM 0.32.0 (``vllm/envs.py``, ``vllm/distributed/device_communicators/quick_all_reduce.py``),
the release this course pins (``rocmlab.settings.VLLM_VERSION``). vLLM 0.32.0 reads:

- ``VLLM_ROCM_QUICK_REDUCE_QUANTIZATION``: FP, INT8, INT6, INT4, INT3 or NONE (the default: off).
  FP is QuickReduce without quantization; INT3 runs at TP 2 only (vLLM disables QuickReduce for
  INT3 at TP 4 and 8: "poor kernel performance"). INT3 is in vLLM 0.32.0's list; older releases offer
  FP/INT8/INT6/INT4/NONE only and refuse INT3.
- ``VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16`` (default 1): bfloat16 goes through the float16 kernels;
- ``VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB``: the largest message QuickReduce takes;
- ``VLLM_ROCM_QUICK_REDUCE_MIN_SIZE_BYTES_MB`` (from vLLM 0.32.0; older releases ignore it): overrides the
  built-in min-size table (``vllm_qr_min_size.csv``) for every codec;
- ``VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB`` (from vLLM 0.32.0; older releases ignore it): messages
  below it use FP QuickReduce instead of the chosen codec (it does not change which messages QuickReduce takes).

SGLang uses the first three names without the ``VLLM_`` prefix; its support for INT3 and the two
min-size variables was not checked here, so :func:`recommend` gives SGLang only the first three.
QuickReduce runs only on ROCm MI300-series and later GPUs (gfx94x/gfx95x), TP 2, 4 or 8.

:func:`sweep_vllm` times vLLM's own ``QuickAllReduce`` per codec and size on a ROCm machine with
vLLM and at least two GPUs; :func:`can_sweep` says why it cannot run elsewhere. :func:`recommend`
gives the environment for a TP size and dtype from our codec error measurements and vLLM's table.
"""

from __future__ import annotations

import importlib.util
import os

import torch

from rocmlab import settings
from rocmlab.comm import costmodel as M
from rocmlab.comm import torch_codec as C
from rocmlab.comm.launch import launch
from rocmlab.machine.detect import current
from rocmlab.profile.timing import time_once

VLLM_VERSION = settings.VLLM_VERSION
#: vLLM's QuickReduce regimes (VLLM_ROCM_QUICK_REDUCE_QUANTIZATION), NONE aside.
REGIMES = ("FP", "INT8", "INT6", "INT4", "INT3")
#: Every value vLLM {VLLM_VERSION} accepts.
ALLOWED = REGIMES + ("NONE",)
#: The regimes a TP size may use (INT3: TP 2 only).
TP_REGIMES = {2: REGIMES, 4: REGIMES[:4], 8: REGIMES[:4]}
#: The integer regimes, most compressed first, and their bits.
INT_BITS = {"INT3": 3, "INT4": 4, "INT6": 6, "INT8": 8}
ENV_QUANT = "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION"
ENV_CAST = "VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16"
ENV_MAX = "VLLM_ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB"
ENV_MIN = "VLLM_ROCM_QUICK_REDUCE_MIN_SIZE_BYTES_MB"
ENV_QMIN = "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION_MIN_SIZE_KB"
#: Variables SGLang reads too (as ROCM_QUICK_REDUCE_*).
SGLANG_SHARED = (ENV_QUANT, ENV_CAST, ENV_MAX)


def can_sweep(plat=None) -> tuple[bool, str]:
    """(True, '') on a ROCm machine with >= 2 GPUs and vLLM installed; else (False, why)."""

    plat = plat or current()
    if plat.backend != "rocm":
        return False, (f"this is [{plat.label}]: QuickReduce is a ROCm kernel (MI300-series, gfx94x/gfx95x); "
                       "vLLM disables it on CUDA and CPUs, so nothing here can time it")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        return False, f"this ROCm machine has {n} GPU(s): an all-reduce needs at least 2 (TP 2, 4 or 8)"
    if importlib.util.find_spec("vllm") is None:
        return False, "vLLM is not installed here: use the ROCm vLLM image (rocm/vllm) or pip install vllm"
    return True, ""


def codec_errors(numel: int = 1 << 16, seed: int | None = None) -> dict:
    """Relative L2 error of one encode/decode per regime on outlier-heavy activations (the worst of our
    realistic kinds), float16: INT8/INT6/INT4 through the packed codecs, INT3 through the same rule with
    3-bit codes (:func:`rocmlab.comm.torch_codec.integer_roundtrip`; the course has no packed INT3 payload)."""
    x = C.activations("outliers", numel, seed=seed)
    out = {}
    for regime, bits in INT_BITS.items():
        y = C.integer_roundtrip(x, bits)
        out[regime] = C.error_metrics(x, y).rel_l2
    return out


def recommend(tp: int, dtype: str = "bfloat16", max_rel_error: float = 0.06, errors: dict | None = None) -> dict:
    """The QuickReduce environment for a TP size and model dtype, with the reasons.

    The regime is the most compressed of INT3 (TP 2 only), INT4, INT6, INT8 whose single-pass relative
    error on our outlier activations stays within ``max_rel_error`` (the two-shot applies the codec
    twice, so the all-reduce error is about 1.4x this; judge it on your model's accuracy, e.g. with
    lm-eval); FP (QuickReduce unquantized) when none is. ``errors``: {regime: rel L2}, default measured
    here (:func:`codec_errors`)."""
    none = lambda why: dict(env={ENV_QUANT: "NONE"}, sglang_env={"ROCM_QUICK_REDUCE_QUANTIZATION": "NONE"},  # noqa: E731
                            reasons=[why], codec=None, regime="NONE", min_size_mb=None)
    if tp not in TP_REGIMES:
        return none(f"TP {tp}: QuickReduce supports TP 2, 4 and 8 only; leave it off")
    if dtype not in ("float16", "bfloat16"):
        return none(f"dtype {dtype}: QuickReduce takes float16 or bfloat16 only")
    errors = errors or codec_errors(seed=0)
    unknown = set(errors) - set(INT_BITS)
    if unknown:
        raise ValueError(f"errors has keys {sorted(unknown)}: give rel L2 per regime, keys {list(INT_BITS)}")
    allowed = TP_REGIMES[tp]
    choice = "FP"
    for regime in ("INT3", "INT4", "INT6", "INT8"):
        if regime in allowed and regime in errors and errors[regime] <= max_rel_error:
            choice = regime
            break
    reasons = []
    measured = ", ".join(f"{k} {v:.4f}" for k, v in errors.items())
    if choice == "FP":
        reasons.append(f"FP: no codec is within your error budget {max_rel_error:.3f} (one pass on outlier "
                       f"activations: {measured}); FP QuickReduce is still a fast unquantized all-reduce")
    else:
        reasons.append(f"{choice}: the most compressed codec within your error budget {max_rel_error:.3f} "
                       f"(one pass on outlier activations: {measured})")
    if tp != 2 and "INT3" in errors and errors["INT3"] <= max_rel_error:
        reasons.append(f"INT3 would fit the budget but vLLM {VLLM_VERSION} allows it at TP 2 only")
    env = {ENV_QUANT: choice}
    if dtype == "bfloat16":
        env[ENV_CAST] = "1"
        reasons.append("bfloat16 model: keep the cast to float16 on (the default); vLLM's bf16 kernels are slower on "
                       "ROCm, and its bf16 min sizes are far larger (TP 8: 2048 MB, effectively off)")
    mins = M.vllm_min_sizes(tp, "float16")
    reasons.append(f"vLLM uses QuickReduce for messages from {mins[choice]} MB (TP {tp}, float16 table); "
                   f"smaller ones go to its custom all-reduce or RCCL. {ENV_MIN} (from vLLM {VLLM_VERSION}; "
                   "older releases ignore it) overrides that table")
    if choice != "FP":
        reasons.append(f"{ENV_QMIN} (from vLLM {VLLM_VERSION}; older releases ignore it) left unset: set it to keep "
                       "small messages on FP QuickReduce, where the codec's fixed cost does not pay")
    reasons.append(f"{ENV_MAX} left unset: vLLM's own maximum applies; lower it only to keep huge prefill "
                   "messages on RCCL")
    sglang = {k.replace("VLLM_", "", 1): v for k, v in env.items() if k in SGLANG_SHARED}
    if choice == "INT3":
        reasons.append("SGLang: INT3 was not checked against SGLang; use INT4 there")
        sglang["ROCM_QUICK_REDUCE_QUANTIZATION"] = "INT4"
    ours = {"INT4": "q4", "INT6": "q6", "INT8": "q8", "FP": "fp", "INT3": None}[choice]
    return dict(env=env, sglang_env=sglang, reasons=reasons, codec=ours, regime=choice, min_size_mb=mins[choice])


def format_env(env: dict) -> str:
    return "\n".join(f"export {k}={v}" for k, v in env.items())


# --- the sweep through vLLM's own communicator (ROCm, >= 2 GPUs, vLLM) ---------------------

def _vllm_worker(rank: int, world: int, regimes, sizes_bytes, reps: int = 20) -> dict:   # pragma: no cover
    """Runs in each rank (RCCL backend): times vLLM's QuickAllReduce per regime and size."""
    import torch.distributed as dist

    cpu_group = dist.new_group(backend="gloo")
    rows = []
    for regime in regimes:
        os.environ[ENV_QUANT] = regime
        from vllm.distributed.device_communicators.quick_all_reduce import QuickAllReduce

        qr = QuickAllReduce(group=cpu_group, device=torch.cuda.current_device())
        if qr.disabled:
            rows.append(dict(regime=regime, disabled=True))
            continue
        for size in sizes_bytes:
            x = torch.randn(size // 2, device="cuda").half()
            if not qr.should_quick_allreduce(x):
                rows.append(dict(regime=regime, size_bytes=size, skipped="below vLLM's min size or above max"))
                continue
            ref = x.clone()
            dist.all_reduce(ref)
            y = qr.quick_all_reduce(x)
            err = float((y.float() - ref.float()).abs().max())
            times = [time_once(lambda qr=qr, x=x: qr.quick_all_reduce(x), events=True)[0] for _ in range(reps)]
            t0 = sorted(times)[len(times) // 2]
            rccl = []
            for _ in range(reps):
                z = x.clone()
                rccl.append(time_once(lambda z=z: dist.all_reduce(z), events=True)[0])
            rows.append(dict(regime=regime, size_bytes=size, quickreduce_s=t0, rccl_s=sorted(rccl)[reps // 2],
                             max_err_vs_rccl=err))
        qr.close()
    return {"rows": rows} if rank == 0 else {}


def sweep_vllm(world: int = 2, regimes=None, sizes_bytes=None, timeout_s: float = 600):   # pragma: no cover
    """vLLM's QuickAllReduce per regime and size against RCCL, on this ROCm machine. Non-blocking:
    returns the launcher's job; ``job.result()[0]['rows']`` has the figures."""
    ok, why = can_sweep()
    if not ok:
        raise RuntimeError(why)

    regimes = regimes or TP_REGIMES.get(world, REGIMES)
    sizes_bytes = sizes_bytes or [s << 20 for s in (1, 2, 4, 8, 16, 32, 64, 128)]
    return launch(_vllm_worker, world, list(regimes), list(sizes_bytes), backend="nccl", timeout_s=timeout_s)
