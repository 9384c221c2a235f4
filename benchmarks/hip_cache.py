"""Cold compile of a HIP cell against a warm cache hit of the same cell, in one run.

    python benchmarks/hip_cache.py [--repeats 20] [--target gfx942] [--out benchmarks/results]

A fresh nonce in the source makes the first compile truly cold (the cache key includes the
source); the same source compiled again must come from the cache. Prints both times and the
ratio, with the backend and toolchain that produced them. The goal: a warm hit >= 30x faster.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab.hip import build  # noqa: E402
from rocmlab.hip import compile as driver  # noqa: E402
from rocmlab.course.headline import headline  # noqa: E402

CELL = """\
// nonce {nonce}
#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void vadd(const float* a, const float* b, float* c, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}}
int main() {{
  const int n = 1 << 20;
  float *a, *b, *c;
  if (hipMalloc(&a, n * 4) != hipSuccess) {{ printf("no GPU\\n"); return 0; }}
  hipMalloc(&b, n * 4); hipMalloc(&c, n * 4);
  hipLaunchKernelGGL(vadd, dim3(n / 256), dim3(256), 0, 0, a, b, c, n);
  hipDeviceSynchronize();
  printf("done\\n");
  return 0;
}}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--target", default=None)
    ap.add_argument("--out", default=None, help="folder for hip_cache_<backend>.txt (a copy of what it prints)")
    a = ap.parse_args()
    if a.out:
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = measure(a)
        print(buf.getvalue(), end="")
        from rocmlab.machine.detect import current

        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / f"hip_cache_{current().backend}.txt").write_text(buf.getvalue())
        return rc
    return measure(a)


def measure(a) -> int:
    src = CELL.format(nonce=uuid.uuid4().hex)
    # platform detection and toolchain discovery happen once per process: keep them out of both timings
    from rocmlab.machine.detect import current

    current()
    build.default_target("hip")
    for kind in ("offline", "rocm", "nvcc"):
        build.find_toolchain(kind)
    t0 = time.perf_counter()
    cold = build.compile(src, target=a.target)
    cold_s = time.perf_counter() - t0
    if not cold.ok:
        print(cold.summary())
        return 1
    assert not cold.cached, "the first compile of a fresh source must not be a cache hit"
    warm = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        r = build.compile(src, target=a.target)
        warm.append(time.perf_counter() - t0)
        assert r.cached and r.binary == cold.binary, "the repeat must be a cache hit with the same binary"
    warm_s = statistics.median(warm)
    print(f"toolchain: {cold.toolchain}, target {cold.target}")
    headline("HIP cell cold compile", cold_s, "s")
    headline(f"HIP cell warm cache hit (median of {a.repeats})", warm_s * 1000, "ms")
    ratio = cold_s / warm_s
    headline("warm cache hit speed-up over cold compile", round(ratio), "x", note="goal >= 30x")
    # the first hit in a fresh session also asks the compilers for their versions (the key includes them)
    driver.forget_toolchains()
    t0 = time.perf_counter()
    first = build.compile(src, target=a.target)
    first_s = time.perf_counter() - t0
    assert first.cached
    headline("cache hit including toolchain discovery (a fresh session's first)", first_s * 1000, "ms",
             note=f"{cold_s / first_s:.0f}x faster than cold")
    return 0 if ratio >= 30 else 1


if __name__ == "__main__":
    raise SystemExit(main())
