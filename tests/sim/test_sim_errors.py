"""Bad kernels on the CPU simulator end with a clear message within the time limit, never a hang or a guess:
barrier deadlocks, divergent wavefront operations, masks that do not match, out-of-bounds accesses, infinite
loops; and what it cannot run fails at build time. Each case has a control that runs cleanly."""

from __future__ import annotations

import re
import time

import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

HEAD = "#include <hip/hip_runtime.h>\n#include <cstdio>\n"
MAIN = """
int main() {
  float* x; hipMalloc(&x, 1000 * sizeof(float)); hipMemset(x, 0, 1000 * sizeof(float));
  LAUNCH;
  hipError_t e = hipDeviceSynchronize();
  float h[4]; hipMemcpy(h, x, sizeof h, hipMemcpyDeviceToHost);
  printf("done %d %g\\n", (int)e, h[0]);
  return 0;
}
"""


def program(kernel: str, launch: str) -> str:
    return HEAD + kernel + MAIN.replace("LAUNCH", launch)


def line_of(src: str, text: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


def sim_run(src: str, timeout_s: float = 20.0):
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    t0 = time.monotonic()
    done = build.run(res, timeout_s=timeout_s)
    return done, time.monotonic() - t0


EARLY_RETURN = """
__global__ void k(float* x) {
  if (threadIdx.x >= 64) return;
  x[threadIdx.x] = 1.f;
  __syncthreads();                       // barrier
  x[threadIdx.x] += 1.f;
}
"""


def test_a_barrier_some_threads_skip_is_a_deadlock_with_its_line():
    src = program(EARLY_RETURN, "k<<<4, 256>>>(x)")
    done, took = sim_run(src)
    msg = simulate.stopped_message(done.stderr)
    want = rf"deadlock: 64 of 256 threads of block \(\d,0,0\) wait at line {line_of(src, '// barrier')}, the others have exited"
    assert re.search(want, msg), done.stderr
    assert done.returncode == simulate.STOPPED_EXIT and took < 15
    # control: every thread reaches the barrier (one block: four blocks would race on x[0..255] between blocks, and
    # the answer would depend on their order)
    ok, _ = sim_run(program(EARLY_RETURN.replace("if (threadIdx.x >= 64) return;", ""), "k<<<1, 256>>>(x)"))
    assert ok.returncode == 0 and "done 0 2" in ok.stdout and "racecheck" not in ok.stderr, ok.stderr


def test_threads_at_different_barriers_are_a_deadlock():
    kernel = """
__global__ void k(float* x) {
  if (threadIdx.x < 128) { x[0] = 1.f; __syncthreads(); }   // first
  else { __syncthreads(); }                                // second
}
"""
    src = program(kernel, "k<<<1, 256>>>(x)")
    done, _ = sim_run(src)
    msg = simulate.stopped_message(done.stderr)
    assert f"128 at line {line_of(src, '// first')}, 128 at line {line_of(src, '// second')}" in msg, done.stderr


def test_divergent_wave_operations_stop_with_both_lines():
    kernel = """
__global__ void k(float* x) {
  float v = threadIdx.x;
  if (__lane_id() < 32) v = __shfl_down(v, 1);   // down
  else v = __shfl_up(v, 1);                     // up
  x[threadIdx.x] = v;
}
"""
    src = program(kernel, "k<<<1, 64>>>(x)")
    done, _ = sim_run(src)
    msg = simulate.stopped_message(done.stderr)
    assert "divergent wavefront operations" in msg and "lanes 0-31" in msg and "lanes 32-63" in msg, done.stderr
    assert f"(line {line_of(src, '// down')})" in msg and f"(line {line_of(src, '// up')})" in msg
    # control: a wave operation inside a branch, all others past it, runs with the partial exec mask
    ctl = kernel.replace("else v = __shfl_up(v, 1);", "")
    ok, _ = sim_run(program(ctl, "k<<<1, 64>>>(x)"))
    assert ok.returncode == 0 and "done 0 1" in ok.stdout, ok.stderr


def test_a_sync_mask_that_names_inactive_lanes_stops():
    kernel = """
__global__ void k(float* x) {
  float v = threadIdx.x;
  v += __shfl_down_sync(MASK, v, 1);   // sync
  x[threadIdx.x] = v;
}
"""
    src = program(kernel.replace("MASK", "0xffffffffull"), "k<<<1, 64>>>(x)")
    done, _ = sim_run(src)
    msg = simulate.stopped_message(done.stderr)
    assert f"line {line_of(src, '// sync')}: __shfl_down_sync" in msg and "lanes 0-31" in msg, done.stderr
    ok, _ = sim_run(program(kernel.replace("MASK", "0xffffffffffffffffull"), "k<<<1, 64>>>(x)"))
    assert ok.returncode == 0 and "done 0 1" in ok.stdout, ok.stderr


def test_a_32_bit_mask_does_not_compile_as_on_rocm_7():
    kernel = "__global__ void k(float* x) { x[threadIdx.x] = __shfl_down_sync(0xffffffff, 1.f, 1); }\n"
    res = build.compile(program(kernel, "k<<<1, 64>>>(x)"), toolchain=simulate.KIND)
    assert not res.ok and "The mask must be a 64-bit integer" in res.summary()


def test_warpsize_is_not_a_compile_time_constant():
    kernel = "constexpr int kW = warpSize;\n__global__ void k(float* x) { x[0] = kW; }\n"
    res = build.compile(program(kernel, "k<<<1, 64>>>(x)"), toolchain=simulate.KIND)
    assert not res.ok and any(d.line == 3 for d in res.errors), res.summary()


def test_an_out_of_bounds_write_names_the_thread_and_the_buffer():
    kernel = """
__global__ void k(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n + 200) x[i] = 1.f;     // off by a lot
}
"""
    src = program(kernel, "k<<<8, 256>>>(x, 1000)")
    done, took = sim_run(src)
    # memcheck stops it at the first access past the end (before any fault), with the line, thread and block
    assert done.returncode == simulate.STOPPED_EXIT and took < 15, done.stderr
    found = [text for tool, text in simulate.findings(done.stderr) if tool == "memcheck"]
    line = line_of(src, "// off by a lot")
    assert found and found[0].startswith(f"line {line}:"), done.stderr
    assert "of a hipMalloc buffer of 4000 bytes: out of bounds (past its end)" in found[0], found
    assert "thread (" in found[0] and "of kernel k (launched at line" in found[0], found
    ok, _ = sim_run(program(kernel.replace("n + 200", "n - 1"), "k<<<8, 256>>>(x, 1000)"))
    assert ok.returncode == 0, ok.stderr


def test_a_null_pointer_in_a_kernel_is_named():
    kernel = "__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
    done, _ = sim_run(program(kernel, "k<<<1, 64>>>((float*)nullptr)"))
    assert done.signal == "SIGSEGV" and "a null pointer" in simulate.stopped_message(done.stderr), done.stderr


def test_an_infinite_loop_ends_at_the_time_limit_with_the_thread_named():
    kernel = """
__global__ void k(float* x) {
  while (*(volatile float*)x == 0.f) { }   // nobody ever writes x[0]
}
"""
    done, took = sim_run(program(kernel, "k<<<2, 64>>>(x)"), timeout_s=3.0)
    assert done.timed_out and took < 8, (done.returncode, done.stderr)
    msg = simulate.stopped_message(done.stderr)
    assert "time limit" in msg and "of kernel k (launched at line" in msg and "infinite loop" in msg, done.stderr


def test_an_invalid_launch_is_an_error_not_a_crash():
    done, _ = sim_run(program("__global__ void k(float* x) { x[0] = 1.f; }\n",
                              "k<<<1, 2048>>>(x); printf(\"launch %d\\n\", (int)hipGetLastError())"))
    assert done.returncode == 0 and "launch 9" in done.stdout and "hipErrorInvalidConfiguration" in done.stderr


@pytest.mark.parametrize("code,what", [
    ("  __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);", "MFMA"),     # the course's 16x16x16 runs
    ("  hipblasHandle_t h; hipblasDgemm(h);", "hipBLAS"),                       # only the course's calls run
    ("  hipTextureObject_t t = 0; (void)t;", "texture"),
    ("  long long t0 = clock64(); (void)t0;", "device clocks"),
])
def test_what_it_cannot_run_fails_at_build_time_with_the_line(code, what):
    src = HEAD + "__global__ void k(float* x) {\n" + code + "\n}\nint main() { return 0; }\n"
    res = build.compile(src, toolchain=simulate.KIND)
    assert not res.ok
    err = res.errors[0]
    assert err.line == 4 and what in err.message and "not simulated" in err.message, res.summary()
    with pytest.raises(build.CannotRun, match="cannot run"):
        build.run(res)
