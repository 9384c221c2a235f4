"""Units of rocmlab port without a compiler: error categories, guard analysis, fixes, trap scan."""

from __future__ import annotations

import random

import pytest

from rocmlab.port import build, translate
from rocmlab.port.traps import guard_traps, project_names, scan

CATEGORY_CASES = [
    ("'hipblas/hipblas.h' file not found", "", "library"),
    ("'thrust/sort.h' file not found", "", "thrust-cub"),
    ("'cooperative_groups/reduce.h' file not found", "", "cooperative-groups"),
    ("'cuda_runtime.h' file not found", "", "cuda-left"),
    ("'my_helpers.h' file not found", "", "missing-header"),
    ("static assertion failed due to requirement 'sizeof(unsigned int) == 8': The mask must be a 64-bit integer", "",
     "warp-sync"),
    ("use of undeclared identifier '__shfl_down_sync'", "", "warp-sync"),
    ("invalid output constraint '=r' in asm", "", "inline-ptx"),
    ("unknown token in expression", "  asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(l));", "inline-ptx"),
    ("no member named 'reduce' in namespace 'cooperative_groups'", "", "cooperative-groups"),
    ("'tex1Dfetch<float, nullptr>' is unavailable: The image/texture API not supported on the device", "",
     "texture-surface"),
    ("no member named 'sharedMemPerMultiprocessor' in 'hipDeviceProp_t'", "", "device-prop"),
    ("use of undeclared identifier 'cuLaunchCooperativeKernelMultiDevice'", "", "driver-api"),
    ("use of undeclared identifier 'cudaFooBar'", "", "cuda-left"),
    ("unknown type name 'hipUserObject_t'", "", "missing-hip-api"),
    ("use of undeclared identifier 'hipMalloc'", "", "missing-hip-api"),
    ("reference to __host__ function 'ceil_div' in __global__ function", "", "host-device"),
    ("use of undeclared identifier 'hipblasSgemm'", "", "library"),
    ("lld: error: undefined hidden symbol: llvm.amdgcn.atomic.inc.i32.p0i32", "", "offline-toolchain"),
    ("expected ';' after expression", "", "compile-error"),
]


@pytest.mark.parametrize("message,code,category", CATEGORY_CASES)
def test_categorise(message, code, category):
    assert build.categorise(message, code) == category


def test_every_category_is_reachable_and_explained():
    reached = {c for _, _, c in CATEGORY_CASES}
    for cat, (means, fix) in build.CATEGORIES.items():
        assert means
        if cat not in ("ok",):
            assert fix, cat
    assert reached <= set(build.CATEGORIES)


def test_first_error_prefers_the_compiler_location():
    log = ("a.hip:3:5: warning: unused\n/tmp/o/a.hip:7:12: error: use of undeclared identifier 'hipFoo'\n"
           "/tmp/o/a.hip:9:1: error: second\n")
    f, line, _where, msg = build.first_error(log)
    assert (f, line, msg) == ("/tmp/o/a.hip", 7, "use of undeclared identifier 'hipFoo'")
    assert build.first_error("lld: error: undefined hidden symbol: x\nclang++-19: error: amdgcn-link failed")[3] \
        .startswith("lld: error")


def _kernel(body_lines: list[str], name="k") -> str:
    return f"__global__ void {name}(float* x) {{\n" + "\n".join(body_lines) + "\n}\n"


@pytest.mark.parametrize("seed", range(5))
def test_guard_analysis_random_layouts(seed):
    rng = random.Random(seed * 7919 + 1)
    arch = rng.choice([300, 530, 600, 700, 800, 900])
    pre = [f"  x[{i}] = {rng.randint(1, 99)}.f;" for i in range(rng.randint(0, 3))]
    body = [f"  x[threadIdx.x + {i}] *= 2.f;" for i in range(rng.randint(1, 6))]
    alt = [f"  x[threadIdx.x] -= {i}.f;" for i in range(rng.randint(1, 4))]
    with_else = rng.random() < 0.5 or bool(pre)
    lines = pre + [f"#if __CUDA_ARCH__ >= {arch}"] + body + (["#else"] + alt if with_else else []) + ["#endif"]
    src = "// header\n" + _kernel(lines, "kern")
    traps = guard_traps("k.hip", src)
    assert len(traps) == 1 and traps[0].level == "error" and traps[0].rule == "cuda-arch-guard"
    t = traps[0]
    assert t.line == 3 + len(pre)
    first, last = t.line + 1, t.line + len(body)
    assert f"lines {first}-{last} ({len(body)} line" in t.why
    if with_else:
        assert f"the branch at line {last + 1} is used instead" in t.why
    if not pre and not with_else:
        assert "whole body of kernel kern()" in t.why
    else:
        assert "whole body" not in t.why


def test_guard_forms():
    src = ("#ifdef __CUDA_ARCH__\nint a;\n#else\nint b;\n#endif\n"
           "#ifndef __CUDA_ARCH__\nint c;\n#endif\n"
           "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700\nint d;\n#endif\n"
           "#if defined(FOO) && __CUDA_ARCH__ >= 800\nint e;\n#endif\n"
           "#if TORCH_HIP_VERSION >= 11000\nint f;\n#endif\n"
           "constexpr int arch = __CUDA_ARCH__;\n"
           "// #if __CUDA_ARCH__ >= 900 in a comment is not a guard\n"
           "#if FOO\nint g;\n#endif\n")
    t = {x.line: x for x in guard_traps("a.hip", src)}
    assert set(t) == {1, 6, 9, 12, 15, 18}
    assert "ALWAYS compiled out" in t[1].why and "line 3 is used instead" in t[1].why
    assert "ALWAYS compiled, for the device and the host" in t[6].why
    assert "ALWAYS compiled" in t[9].why
    assert "depends on other macros" in t[12].why
    assert t[15].rule == "cuda-version-guard" and "HIP_VERSION" in t[15].fix
    assert t[18].rule == "cuda-arch-use"
    assert all(x.level == "error" for x in t.values())


CLEAN_TEMPLATE = """#include <hip/hip_runtime.h>
__global__ void {name}(const float* x, float* out, unsigned long long* hits, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % warpSize;
  int wave = threadIdx.x / warpSize;
  float v = i < n ? x[i] * {scale}f : 0.f;
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
  unsigned long long votes = __ballot(v > {thr}f);
  if (lane == 0) {{
    atomicAdd(&out[wave], v);
    atomicAdd(hits, (unsigned long long)__popcll(votes));
  }}
  __shared__ float tile[{tile}];
  tile[threadIdx.x % {tile}] = v;
  __syncthreads();
}}
"""


@pytest.mark.parametrize("seed", range(6))
def test_no_false_positives_on_random_clean_kernels(seed):
    rng = random.Random(1000 + seed)
    src = CLEAN_TEMPLATE.format(name=f"k{rng.randint(0, 999)}", scale=rng.choice(["0.5", "2.0", "1.25"]),
                                thr=rng.choice(["0.1", "3.0"]), tile=rng.choice([64, 128, 256, 1024]))
    assert scan("clean.hip", src) == []


TRAP_SNIPPETS = [
    ("  for (int o = {n}; o > 0; o /= 2) v += __shfl_down(v, o);", "lane-offset-16-or-32", (16, 32)),
    ("  v += __shfl_xor_sync(0xffffffff, v, {n});", "shfl-sync-32-bit-mask", (1, 2, 4, 8)),
    ("  unsigned int m = __ballot(v > {n}.f);", "ballot-in-32-bits", (0, 1, 7)),
    ("  int lane = threadIdx.x % 32 + {n};", "lane-arithmetic-32", (0, 1)),
    ("  const int warp_size = 32; int w = {n} / warp_size;", "hard-coded-warp-size", (256, 1024)),
]


@pytest.mark.parametrize("idx", range(len(TRAP_SNIPPETS)))
def test_each_trap_found_in_random_context(idx):
    rng = random.Random(idx)
    line, rule, values = TRAP_SNIPPETS[idx]
    body = ["  float v = x[threadIdx.x];"] * rng.randint(0, 4) + [line.format(n=rng.choice(values))]
    traps = scan("t.hip", "#include <hip/hip_runtime.h>\n" + _kernel(body))
    assert rule in {t.rule for t in traps}
    assert next(t for t in traps if t.rule == rule).line == 2 + len(body)


def test_project_function_named_cuda_is_not_cuda_left_over():
    text = ("inline void cudaCheck(hipError_t e, const char* what) {\n  if (e) abort();\n}\n"
            "void f() { cudaCheck(hipFree(0), \"free\"); cudaFree(0); }\n")
    own = project_names([text])
    assert "cudaCheck" in own
    rules = [(t.line, t.rule) for t in scan("a.hip", text, own)]
    assert rules == [(4, "cuda-api-left")]          # cudaFree is still a CUDA name left over
    lone = "void g() { cudaCheck(hipFree(0), \"x\"); }\n"
    assert scan("a.hip", lone, own) == []
    assert [t.rule for t in scan("a.hip", lone)] == ["cuda-api-left"]   # without the project's names it fires


def test_plan_names_and_collisions():
    names, notes = translate.plan_names(["a/cuda_util.cuh", "a/k.cu", "b/k.hip", "b/k.cu", "c/x.cpp"])
    assert names["a/cuda_util.cuh"] == "a/hip_util.cuh"
    assert names["a/k.cu"] == "a/k.hip"
    assert names["b/k.cu"] == "b/k.cu" and any("b/k.cu" in n for n in notes)     # b/k.hip exists already
    assert names["c/x.cpp"] == "c/x.cpp"


def test_fix_file_include_and_runtime_insertion_after_guard():
    names = {"inc/cuda_helpers.h": "inc/hip_helpers.h", "src/k.cu": "src/k.hip", "src/impl.cu": "src/impl.hip"}
    text = ('// k\n#include "cuda_helpers.h"\n#include "../inc/cuda_helpers.h"\n#include "impl.cu"\n'
            '#include <vector>\n__global__ void k() {}\n')
    out, fixes = translate.fix_file("src/k.cu", "src/k.hip", text, names, [".", "inc"])
    lines = out.split("\n")
    assert lines[1] == "#include <hip/hip_runtime.h>"
    assert '#include "hip_helpers.h"' in lines and '#include "../inc/hip_helpers.h"' in lines
    assert '#include "impl.hip"' in lines and "#include <vector>" in lines
    assert sorted(f.kind for f in fixes) == ["explicit-hip-runtime"] + ["include-renamed"] * 3
    for f in fixes:
        assert lines[f.line - 1].strip() == f.after.strip()
    drv = "#include <cuda.h>\nint f();\n"          # CUDA-only header: becomes the HIP runtime, nothing added
    out, fixes = translate.fix_file("src/d.cu", "src/d.hip", drv, {"src/d.cu": "src/d.hip"}, ["."])
    assert out.split("\n")[0] == "#include <hip/hip_runtime.h>" and [f.kind for f in fixes] == ["cuda-only-header"]
    hdr = "#ifndef G_H\n#define G_H\n__device__ inline int f(int a) { return a; }\n#endif\n"
    out, fixes = translate.fix_file("inc/g.h", "inc/g.h", hdr, {"inc/g.h": "inc/g.h"}, ["."])
    assert out.split("\n")[2] == "#include <hip/hip_runtime.h>" and fixes[0].line == 3
    plain = "#pragma once\nint add(int a, int b);\n"
    assert translate.fix_file("inc/p.h", "inc/p.h", plain, {"inc/p.h": "inc/p.h"}, ["."]) == (plain, [])


def test_compiler_run_is_stopped_at_the_time_limit(tmp_path):
    import time

    from rocmlab.hip import compile as driver
    from rocmlab.hip.toolchain import Toolchain

    tc = Toolchain("rocm", "/bin/sh", "0", ("gfx942",))     # the port compiles through the one driver
    t0 = time.monotonic()
    r = driver.run(tc, ["sh", "-c", "sleep 30 & sleep 30"], cwd=tmp_path, time_limit=0.5)
    assert r.timed_out and not r.ok and time.monotonic() - t0 < 10
    r = driver.compile_file(tc, tmp_path / "a.hip", tmp_path / "a.o", cwd=tmp_path, time_limit=5)
    assert not r.ok and r.diagnostics and r.diagnostics[0].severity == "error"


def test_crlf_sources_keep_their_line_endings():
    text = "#if __CUDA_ARCH__ >= 700\r\nint a;\r\n#endif\r\n"
    out, _ = translate.fix_file("a.cu", "a.hip", text, {"a.cu": "a.hip"}, ["."])
    guard = next(line for line in out.split("\n") if "__CUDA_ARCH__" in line)
    assert guard.endswith("\r") and "rocmlab port: TRAP" in guard


def test_two_targets_in_one_compile():
    from pathlib import Path

    from rocmlab.hip.toolchain import Toolchain

    tc = Toolchain("offline", "/usr/bin/hipcc", "7.2", ("gfx942", "gfx950", "gfx90a"), "/root-fs", "7.2.4")
    cmd = build.compile_command(tc, Path("a.hip"), Path("a.o"), ("gfx942", "gfx90a"), ["/o/include"])
    assert cmd.count("--offload-arch=gfx942") == 1 and cmd.count("--offload-arch=gfx90a") == 1
    assert "-I/o/include" in cmd and "-c" in cmd and cmd[0] == "/usr/bin/hipcc"
    rocm = Toolchain("rocm", "/opt/rocm/bin/hipcc", "6.4", ("gfx942", "gfx90a"))
    cmd = build.compile_command(rocm, Path("a.hip"), Path("a.o"), ("gfx942", "gfx90a"), [])
    assert cmd[0] == "/opt/rocm/bin/hipcc" and "--offload-arch=gfx90a" in cmd
