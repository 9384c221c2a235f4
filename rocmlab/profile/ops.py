"""The two workloads every roofline needs, with their bytes and FLOPs counted: a device copy and a
matrix product (GEMM) in each precision the hardware has (FP32, TF32, BF16, FP16, FP8).

Each ``*_case`` returns a :class:`Case`: the function, the rotated input sets and the counts, ready for
:func:`rocmlab.profile.bench`. Inputs are fresh random data (never zeros: zeros can run faster).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from rocmlab.machine.detect import current
from rocmlab.profile.timing import BenchResult, bench, rotation_count

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
SPEC_FIGURE = {"fp32": "fp32_vector_tflops", "tf32": "tf32_dense_tflops", "bf16": "bf16_dense_tflops",
               "fp16": "fp16_dense_tflops", "fp8": "fp8_dense_tflops"}


class Unsupported(RuntimeError):
    """This precision or operation does not run on this device; the message says why."""


@dataclass
class Case:
    name: str
    fn: object
    inputs: list
    bytes: float
    flops: float
    context: object = contextlib.nullcontext

    def run(self, **kw) -> BenchResult:
        with self.context():
            return bench(self.fn, inputs=self.inputs, bytes=self.bytes, flops=self.flops, name=self.name, **kw)


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def copy_case(nbytes: int, device: str | None = None, rotate: bool = True) -> Case:
    """dst.copy_(src) over ``nbytes``: counts 2 x nbytes (each byte read once and written once)."""
    import torch

    device = device or default_device()
    n = max(1, int(nbytes) // 4)
    sets = rotation_count(2 * 4 * n, factor=4.0) if rotate else 1     # a copy is the most cache-sensitive
    inputs = [(torch.empty(n, dtype=torch.float32, device=device),
               torch.rand(n, dtype=torch.float32, device=device)) for _ in range(sets)]

    def copy(dst, src):
        return dst.copy_(src)

    return Case(f"copy {fmt_bytes(4 * n)}", copy, inputs, bytes=2.0 * 4 * n, flops=0.0)


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fp8_dtype(device: str | None = None):
    """The FP8 (e4m3) type this GPU computes in: ``float8_e4m3fnuz`` on MI300X (gfx942), the OCP
    ``float8_e4m3fn`` on NVIDIA and on gfx950."""
    import torch

    device = device or default_device()
    if device.startswith("cuda") and getattr(torch.version, "hip", None):
        arch = torch.cuda.get_device_properties(0).gcnArchName
        if arch.startswith("gfx94"):
            return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


#: On ROCm, PyTorch runs float32 GEMMs as TF32 (MI300X's XF32) only when this is 1 *and* allow_tf32 is
#: set (PyTorch's test_linalg ``_hip_allow_tf32``; datasets/sources.csv ``hipblaslt-tf32``).
HIPBLASLT_TF32_ENV = "HIPBLASLT_ALLOW_TF32"


def _tf32_context(enabled: bool):
    import torch

    @contextlib.contextmanager
    def ctx():
        old = torch.backends.cuda.matmul.allow_tf32
        old_env = os.environ.get(HIPBLASLT_TF32_ENV)
        torch.backends.cuda.matmul.allow_tf32 = enabled
        if torch.version.hip and enabled:   # allow_tf32 alone is ignored by PyTorch's ROCm build
            os.environ[HIPBLASLT_TF32_ENV] = "1"
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
            if torch.version.hip and enabled:
                if old_env is None:
                    os.environ.pop(HIPBLASLT_TF32_ENV, None)
                else:
                    os.environ[HIPBLASLT_TF32_ENV] = old_env
    return ctx


def gemm_case(n: int, dtype: str = "bf16", device: str | None = None, rotate: bool = True) -> Case:
    """C = A @ B with n x n matrices: 2n^3 FLOPs, 3 n^2 elements of traffic (A, B read, C written).

    Raises :class:`Unsupported` when the precision does not run here (TF32 on a CPU, FP8 without
    FP8 matrix units)."""
    import torch

    device = device or default_device()
    if dtype not in DTYPES:
        raise ValueError(f"unknown precision {dtype!r}: use one of {', '.join(DTYPES)}")
    on_gpu = device.startswith("cuda")
    flops = 2.0 * n ** 3
    if dtype == "tf32" and not on_gpu:
        raise Unsupported("TF32 is a GPU matrix-unit mode (NVIDIA tensor cores, MI300X XF32); a CPU has none")
    if dtype == "fp8":
        return _fp8_case(n, device, rotate)
    tdt = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    esize = torch.empty((), dtype=tdt).element_size()
    per_set = 3 * n * n * esize
    sets = rotation_count(per_set) if rotate else 1
    inputs = [(torch.randn(n, n, device=device, dtype=tdt),
               torch.randn(n, n, device=device, dtype=tdt)) for _ in range(sets)]

    def gemm(a, b):
        return a @ b

    ctx = _tf32_context(dtype == "tf32") if on_gpu else contextlib.nullcontext
    return Case(f"gemm {dtype} {n}", gemm, inputs, bytes=float(per_set), flops=flops, context=ctx)


def _fp8_case(n: int, device: str, rotate: bool) -> Case:
    import torch

    if not device.startswith("cuda"):
        raise Unsupported("FP8 GEMM needs FP8 matrix units (MI300X gfx942, H100/H200 sm_90, sm_89); "
                          "this is a CPU")
    if not hasattr(torch, "_scaled_mm"):
        raise Unsupported(f"torch {torch.__version__} has no torch._scaled_mm (FP8 GEMM)")
    f8 = fp8_dtype(device)
    one = torch.ones((), device=device)

    def make():
        a = torch.randn(n, n, device=device).to(f8)
        b = torch.randn(n, n, device=device).to(f8).t()     # _scaled_mm wants B column-major
        return a, b

    def gemm_fp8(a, b):
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    try:
        a, b = make()
        gemm_fp8(a, b)
        torch.cuda.synchronize()
    except Exception as exc:   # an older GPU, or a build without FP8 kernels
        raise Unsupported(f"FP8 GEMM ({f8}) does not run on this GPU: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:160]}") from exc
    per_set = 2 * n * n + 2 * n * n    # fp8 A and B in, bf16 C out
    sets = rotation_count(per_set) if rotate else 1
    inputs = [(a, b)] + [make() for _ in range(sets - 1)]
    return Case(f"gemm fp8 {n}", gemm_fp8, inputs, bytes=float(per_set), flops=2.0 * n ** 3)


def gemm_sweep(sizes, dtypes=DTYPES, reps: int = 10, max_time_s: float = 3.0, plat=None):
    """GEMM TFLOP/s per precision and size, next to the spec peak. Returns (DataFrame, results);
    precisions that do not run here get a row with the reason instead of a figure."""
    import pandas as pd

    plat = plat or current()
    spec = plat.device.spec if plat.device else None
    rows, results = [], []
    for d in dtypes:
        peak = spec[SPEC_FIGURE[d]] if spec else None
        for n in sizes:
            try:
                case = gemm_case(n, d)
            except Unsupported as exc:
                rows.append({"dtype": d, "n": n, "TFLOP/s": None, "spec TFLOP/s": peak, "of spec": None,
                             "median_ms": None, "spread_pct": None, "note": str(exc)})
                break
            r = case.run(reps=reps, max_time_s=max_time_s, label=plat.label)
            del case
            results.append(r)
            rows.append({"dtype": d, "n": n, "TFLOP/s": r.tflops, "spec TFLOP/s": peak,
                         "of spec": r.tflops / peak if peak else None, "median_ms": r.median_s * 1e3,
                         "spread_pct": 100 * r.spread, "note": ""})
    return pd.DataFrame(rows), results


def bandwidth_sweep(sizes_bytes, reps: int = 10, plat=None):
    """Copy bandwidth per size, with and without rotated buffers (a single buffer that fits in the
    cache measures the cache, not HBM). Returns (DataFrame, results of the rotated runs)."""
    import pandas as pd

    plat = plat or current()
    spec = plat.device.spec if plat.device else None
    peak = spec["bandwidth_tbs"] if spec else None
    rows, results = [], []
    for nbytes in sizes_bytes:
        for rotate in (False, True):
            case = copy_case(nbytes, rotate=rotate)
            r = case.run(reps=reps, max_time_s=3.0, label=plat.label)
            rows.append({"bytes": nbytes, "size": fmt_bytes(nbytes), "rotated sets": r.rotation,
                         "TB/s": r.bandwidth_tbs, "spec TB/s": peak,
                         "of spec": r.bandwidth_tbs / peak if peak else None, "median_ms": r.median_s * 1e3})
            if rotate:
                results.append(r)
            del case
    return pd.DataFrame(rows), results


def axpb_case(n: int, device: str | None = None) -> Case:
    """y = a*x + b over n FP32 values: 2 FLOPs and 8 bytes per element (x read, y written)."""
    import torch

    device = device or default_device()
    sets = rotation_count(8 * n)
    inputs = [torch.randn(n, device=device) for _ in range(sets)]

    def axpb(x):
        return x * 1.5 + 0.5

    return Case(f"axpb fp32 {fmt_bytes(4 * n)}", axpb, inputs, bytes=8.0 * n, flops=2.0 * n)


def gelu_bias_mul(x, b, y):
    """The fusion example: three elementwise kernels in eager mode, one after torch.compile."""
    import torch

    return torch.nn.functional.gelu(x + b) * y


def blas_libraries() -> dict:
    """What the GEMM library switch means on this build: the names behind 'cublas' and 'cublaslt'."""
    import torch

    if getattr(torch.version, "hip", None):
        return {"cublas": "rocBLAS (hipBLAS)", "cublaslt": "hipBLASLt"}
    return {"cublas": "cuBLAS", "cublaslt": "cuBLASLt"}


def blas_ab(n: int = 4096, dtype: str = "bf16", reps: int = 10, plat=None):
    """Time the same GEMM with each BLAS library PyTorch can prefer (torch.backends.cuda.
    preferred_blas_library), restoring the original choice. Returns a DataFrame; GPU only."""
    import pandas as pd
    import torch

    plat = plat or current()
    if not torch.cuda.is_available():
        raise Unsupported("the BLAS library switch picks among GPU libraries (rocBLAS/hipBLASLt, "
                          "cuBLAS/cuBLASLt); this machine has no GPU")
    names = blas_libraries()
    before = torch.backends.cuda.preferred_blas_library()
    rows = []
    try:
        for lib in ("cublas", "cublaslt"):
            torch.backends.cuda.preferred_blas_library(lib)
            case = gemm_case(n, dtype)
            r = case.run(reps=reps, max_time_s=3.0, label=plat.label)
            rows.append({"library": names[lib], "preferred_blas_library": lib, "TFLOP/s": r.tflops,
                         "median_ms": r.median_s * 1e3, "spread_pct": 100 * r.spread})
            del case
    finally:
        torch.backends.cuda.preferred_blas_library(before)
    return pd.DataFrame(rows)
