"""The MFMA builtin the course uses (__builtin_amdgcn_mfma_f32_16x16x16f16: mfma-gemm and Lab 07) on the wave64
simulator, with CDNA's lane layout, against a CPU reference on fresh random matrices."""

from __future__ import annotations

import numpy as np
import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

PROGRAM = """#include <hip/hip_runtime.h>
#include <cstdio>
typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef float floatx4 __attribute__((ext_vector_type(4)));
__device__ const float A[256] = {AVALS};
__device__ const float B[256] = {BVALS};
__device__ const float C[256] = {CVALS};
__global__ void one_mfma(float* D) {
    const int l = threadIdx.x;   // A: row l % 16, k 4 (l / 16) + e; B: col l % 16, same k; C/D: row 4 (l / 16) + e, col l % 16
    half4 a, b;
    floatx4 c;
    for (int e = 0; e < 4; ++e) {
        a[e] = static_cast<_Float16>(A[(l % 16) * 16 + 4 * (l / 16) + e]);
        b[e] = static_cast<_Float16>(B[(4 * (l / 16) + e) * 16 + l % 16]);
        c[e] = C[(4 * (l / 16) + e) * 16 + l % 16];
    }
    floatx4 d = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
    for (int e = 0; e < 4; ++e) D[(4 * (l / 16) + e) * 16 + l % 16] = d[e];
}
int main() {
    float* d;
    if (hipMalloc(&d, 256 * sizeof(float)) != hipSuccess) return 1;
    one_mfma<<<1, 64>>>(d);
    float h[256];
    if (hipMemcpy(h, d, sizeof h, hipMemcpyDeviceToHost) != hipSuccess) return 1;
    for (int i = 0; i < 256; ++i) std::printf("%.9g\\n", h[i]);
    return 0;
}
"""


def _vals(m: np.ndarray) -> str:
    return ", ".join(f"{float(v):.9e}f" for v in m.ravel())   # always a floating literal ("1f" is not C)


def test_mfma_f32_16x16x16f16_matches_a_cpu_reference():
    rng = np.random.default_rng()
    a = rng.uniform(-2, 2, (16, 16)).astype(np.float16)
    b = rng.uniform(-2, 2, (16, 16)).astype(np.float16)
    c = rng.uniform(-4, 4, (16, 16)).astype(np.float32)
    src = PROGRAM.replace("AVALS", _vals(a)).replace("BVALS", _vals(b)).replace("CVALS", _vals(c))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res)
    assert done.returncode == 0, done.stderr
    got = np.array([float(x) for x in done.stdout.split()], dtype=np.float64).reshape(16, 16)
    want = a.astype(np.float64) @ b.astype(np.float64) + c
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), np.abs(got - want).max()
    wrong_layout = a.astype(np.float64) @ b.astype(np.float64).T + c      # the control: B read transposed
    assert not np.allclose(got, wrong_layout, rtol=1e-5, atol=1e-5)
    assert simulate.findings(done.stderr) == []


def test_other_mfma_builtins_are_still_refused_with_the_line():
    src = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n" \
          "  auto d = __builtin_amdgcn_mfma_f32_32x32x8f16(x, x, x, 0, 0, 0);\n}\nint main() { return 0; }\n"
    res = build.compile(src, toolchain=simulate.KIND)
    assert not res.ok and res.errors[0].line == 3 and "not simulated" in res.errors[0].message
