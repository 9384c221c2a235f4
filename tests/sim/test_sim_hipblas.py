"""hipBLAS's SGEMM on the wave64 simulator: a host reference GEMM behind <hipblas/hipblas.h> (column-major, as
BLAS), checked against numpy on fresh random sizes and transposes; a row-major mistake fails the grader's compare."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rocmlab import grader
from rocmlab.hip import build, simulate
from rocmlab.machine.detect import current

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

PROGRAM = """#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main() {
    const int m = @M@, n = @N@, k = @K@;
    std::vector<float> a(m * k), b(k * n), c(m * n);
    unsigned s = @SEED@;
    auto rnd = [&] { s = s * 1664525u + 1013904223u; return static_cast<float>(s >> 8) / 16777216.0f - 0.5f; };
    for (auto* v : {&a, &b, &c}) for (float& x : *v) x = rnd();
    float *da, *db, *dc;
    hipMalloc(&da, a.size() * 4); hipMalloc(&db, b.size() * 4); hipMalloc(&dc, c.size() * 4);
    hipMemcpy(da, a.data(), a.size() * 4, hipMemcpyHostToDevice);
    hipMemcpy(db, b.data(), b.size() * 4, hipMemcpyHostToDevice);
    hipMemcpy(dc, c.data(), c.size() * 4, hipMemcpyHostToDevice);
    hipblasHandle_t h;
    if (hipblasCreate(&h) != HIPBLAS_STATUS_SUCCESS) return 1;
    const float alpha = 1.5f, beta = -0.5f;
    if (hipblasSgemm(h, @TA@, @TB@, m, n, k, &alpha, da, @LDA@, db, @LDB@, &beta, dc, m) != HIPBLAS_STATUS_SUCCESS) return 2;
    std::vector<float> out(m * n);
    hipMemcpy(out.data(), dc, out.size() * 4, hipMemcpyDeviceToHost);
    for (float x : a) std::printf("%.9g ", x); std::printf("\\n");
    for (float x : b) std::printf("%.9g ", x); std::printf("\\n");
    for (float x : c) std::printf("%.9g ", x); std::printf("\\n");
    for (float x : out) std::printf("%.9g ", x); std::printf("\\n");
    return hipblasDestroy(h) == HIPBLAS_STATUS_SUCCESS ? 0 : 3;
}
"""


@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T")])
def test_sgemm_matches_numpy_column_major(ta, tb):
    m, n, k = (random.randint(3, 17) for _ in range(3))
    lda, ldb = (m if ta == "N" else k), (k if tb == "N" else n)
    src = PROGRAM
    for key, value in (("@M@", m), ("@N@", n), ("@K@", k), ("@SEED@", random.getrandbits(31)),
                       ("@TA@", f"HIPBLAS_OP_{ta}"), ("@TB@", f"HIPBLAS_OP_{tb}"), ("@LDA@", lda), ("@LDB@", ldb)):
        src = src.replace(key, str(value))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res)
    assert done.returncode == 0 and simulate.findings(done.stderr) == [], done.stderr
    a, b, c, out = (np.array(line.split(), dtype=np.float64) for line in done.stdout.strip().splitlines())
    # column-major storage: element (i, j) with leading dimension ld is at i + j * ld
    A = a.reshape(-1, lda).T
    B = b.reshape(-1, ldb).T
    opA = A[:m, :k] if ta == "N" else A[:k, :m].T
    opB = B[:k, :n] if tb == "N" else B[:n, :k].T
    C = c.reshape(n, m).T
    want = 1.5 * opA @ opB - 0.5 * C
    got = out.reshape(n, m).T
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6), np.abs(got - want).max()
    if ta == tb == "N":     # the control: the same numbers read row-major give another matrix
        row_major = 1.5 * a.reshape(m, k) @ b.reshape(k, n) - 0.5 * c.reshape(m, n)
        assert not np.allclose(got, row_major, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(current().backend != "cpu", reason="the grader simulates only where no GPU is")
def test_a_row_major_mistake_fails_the_compare_check_and_the_solution_passes():
    sol = grader.load("sgemm-hipblas").solution
    call = "HIPBLAS_OP_N, HIPBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, C, M"
    assert call in sol
    wrong = sol.replace(call, "HIPBLAS_OP_T, HIPBLAS_OP_T, M, N, K, &alpha, A, K, B, N, &beta, C, M")
    r = grader.check("sgemm-hipblas", f"// {random.getrandbits(64):x}\n" + wrong, only=("compile", "run", "compare"))
    assert r.check("correct").status == "failed", r.to_text()
    ok = grader.check("sgemm-hipblas", sol, only=("compile", "run", "compare"))
    assert ok.check("correct").status == "passed" and ok.check("runs").message.startswith("[cpu: wave64"), ok.to_text()
