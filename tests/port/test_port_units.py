"""Units of rocmlab port without a compiler: error categories, guard analysis, fixes, trap scan."""

from __future__ import annotations

import random

import pytest

from rocmlab.cuda2hip import translate
from rocmlab.port import diagnose, unit_build
from rocmlab.cuda2hip.scan import scan as scan_source


def scan(name: str, text: str) -> list:
    """THE scanner's compiled findings for one file (errors and warnings)."""
    return [f for f in scan_source(text, filename=name).findings if f.compiled and f.severity != "info"]


def guard_traps(name: str, text: str) -> list:
    return [f for f in scan_source(text, filename=name).findings if f.kind == "preprocessor"]

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
    assert diagnose.categorise(message, code) == category


def test_every_category_is_reachable_and_explained():
    reached = {c for _, _, c in CATEGORY_CASES}
    for cat, (means, fix) in diagnose.CATEGORIES.items():
        assert means
        if cat not in ("ok",):
            assert fix, cat
    assert reached <= set(diagnose.CATEGORIES)


def test_first_error_prefers_the_compiler_location():
    log = ("a.hip:3:5: warning: unused\n/tmp/o/a.hip:7:12: error: use of undeclared identifier 'hipFoo'\n"
           "/tmp/o/a.hip:9:1: error: second\n")
    f, line, _where, msg = diagnose.first_error(log)
    assert (f, line, msg) == ("/tmp/o/a.hip", 7, "use of undeclared identifier 'hipFoo'")
    assert diagnose.first_error("lld: error: undefined hidden symbol: x\nclang++-19: error: amdgcn-link failed")[3] \
        .startswith("lld: error")


def _kernel(body_lines: list[str], name="k") -> str:
    return f"__global__ void {name}(float* x) {{\n" + "\n".join(body_lines) + "\n}\n"


@pytest.mark.parametrize("seed", range(5))
def test_guard_analysis_random_layouts(seed):
    rng = random.Random()
    arch = rng.choice([300, 530, 600, 700, 800, 900])
    pre = [f"  x[{i}] = {rng.randint(1, 99)}.f;" for i in range(rng.randint(0, 3))]
    body = [f"  x[threadIdx.x + {i}] *= 2.f;" for i in range(rng.randint(1, 6))] + ["  int l = threadIdx.x & 31;"]
    alt = [f"  x[threadIdx.x] -= {i}.f;" for i in range(rng.randint(1, 4))] + ["  int m = threadIdx.x % 32;"]
    with_else = rng.random() < 0.5
    lines = pre + [f"#if __CUDA_ARCH__ >= {arch}"] + body + (["#else"] + alt if with_else else []) + ["#endif"]
    src = "// header\n" + _kernel(lines, "kern")
    r = scan_source(src, filename="k.hip")
    guards = [f for f in r.findings if f.rule == "cuda-arch-guard"]
    assert len(guards) == 1 and guards[0].severity == "error" and guards[0].line == 3 + len(pre)
    assert "NEVER compiled" in guards[0].message
    lane = {f.line: f.compiled for f in r.findings if f.rule == "lane-arithmetic-32"}
    body_line = 3 + len(pre) + len(body)
    assert lane[body_line] is False                      # the #if branch: never compiled under HIP
    if with_else:
        assert lane[body_line + 1 + len(alt)] is True    # the #else branch: always compiled


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
    assert "NEVER compiled" in t[1].message
    assert "ALWAYS compiled" in t[6].message and "ALWAYS compiled" in t[9].message
    assert t[15].rule == "cuda-version-guard" and "HIP_VERSION" in t[15].fix
    assert t[18].rule == "cuda-arch-use"
    assert all(x.severity == "error" for x in t.values())


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
    rules = [(t.line, t.rule) for t in scan("a.hip", text)]
    assert rules == [(4, "cuda-left")]          # cudaFree is still a CUDA name left over
    lone = "void g() { cudaCheck(hipFree(0), \"x\"); }\n"
    assert [t.rule for t in scan("a.hip", lone)] == ["cuda-left"]   # without the project's definition it fires


def test_fixes_that_make_real_code_compile():
    text = ("#include <hip/hip_runtime.h>\n#define FULL 0xffffffff\n#if CUDART_VERSION >= 2020\nint ok;\n#endif\n"
            "__global__ void k(unsigned *o, unsigned a) {\n  int mask = 0xffffffff;\n"
            "  o[0] = __any_sync(mask, a) + umin(a, 3u) + __shfl_down_sync(0xffffffffu, a, 1) + __shfl_sync(FULL, a, 0);\n"
            "}\nvoid CUDART_CB cb(void*) {}\n")
    masks = translate.sync_mask_names([text])
    out, fixes = translate.fix_file("a.cu", "a.hip", text, {"a.cu": "a.hip"}, ["."], masks)
    assert "#define FULL 0xffffffffffffffffull" in out and "#if HIP_VERSION >= 2020" in out
    assert "unsigned long long mask = 0xffffffffffffffffull;" in out.replace("   ", " ").replace("  ", " ")
    assert "min(a, 3u)" in out and "umin" not in out and "CUDART_CB" not in out
    assert "__shfl_down_sync(0xffffffffffffffffull, a, 1)" in out
    assert {f.kind for f in fixes} >= {"full-mask-64", "cuda-version-guard", "cuda-name"}
    # control: a project's own umin() is left alone, and a 64-bit mask is not touched
    own = "__device__ unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n" \
          "__global__ void k(unsigned *o) { o[0] = umin(o[1], o[2]) + __shfl_sync(~0ull, o[0], 0); }\n"
    out2, fixes2 = translate.fix_file("b.cu", "b.hip", own, {"b.cu": "b.hip"}, ["."], set())
    assert "umin(o[1], o[2])" in out2 and "~0ull" in out2
    assert [f.kind for f in fixes2] == ["explicit-hip-runtime"]


def test_runtime_header_moved_before_cooperative_groups():
    text = "#include <hip/hip_cooperative_groups.h>\n#include <stdio.h>\n#include <hip/hip_runtime.h>\n__global__ void k() {}\n"
    out, fixes = translate.fix_file("a.cu", "a.hip", text, {"a.cu": "a.hip"}, ["."])
    lines = out.split("\n")
    assert lines[0] == "#include <hip/hip_runtime.h>" and lines[1] == "#include <hip/hip_cooperative_groups.h>"
    assert [f.kind for f in fixes] == ["runtime-header-first"]
    ok = "#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n"
    assert translate.fix_file("b.cu", "b.hip", ok, {"b.cu": "b.hip"}, ["."]) == (ok, [])


def test_log_names_stay_short():
    rel = "/".join(["a-very-long-folder-name"] * 40) + "/k.hip"
    name = unit_build.log_name(rel)
    assert len(name.encode()) <= 200 and name.endswith("k.hip.log")
    assert unit_build.log_name("src/k.hip") == "src__k.hip.log"
    assert unit_build.log_name(rel) != unit_build.log_name(rel.replace("a-very", "b-very"))


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


def test_crlf_sources_keep_their_line_endings():
    text = "#if __CUDA_ARCH__ >= 700\r\nint a;\r\n#endif\r\n"
    out, _ = translate.fix_file("a.cu", "a.hip", text, {"a.cu": "a.hip"}, ["."])
    guard = next(line for line in out.split("\n") if "__CUDA_ARCH__" in line)
    assert guard.endswith("\r") and "rocmlab port: TRAP" in guard


def test_two_targets_in_one_compile():
    from pathlib import Path

    from rocmlab.hip.toolchain import Toolchain

    rocm = Toolchain("rocm", "/opt/rocm/bin/hipcc", "7.2", ("gfx942", "gfx90a"))
    cmd = unit_build.compile_command(rocm, Path("a.hip"), Path("a.o"), ("gfx942", "gfx90a"), ["/o/include"])
    assert cmd[0] == "/opt/rocm/bin/hipcc" and "-I/o/include" in cmd
    assert cmd.count("--offload-arch=gfx942") == 1 and cmd.count("--offload-arch=gfx90a") == 1 and "-c" in cmd


def test_first_error_is_linear_on_a_long_token_and_still_finds_tool_errors():
    """A 400 KB run of 'clang' once took a backtracking regex about 80 s; the line-by-line scan is linear."""
    import random
    import time

    from rocmlab.port.diagnose import first_error

    blob = "clang" * random.randint(70_000, 90_000)
    t0 = time.monotonic()
    assert first_error(blob)[3] == blob            # no error line: the last line is shown
    assert time.monotonic() - t0 < 5
    # controls: each kind of tool error is still found, the first one wins
    assert first_error("x\nclang++: error: linker command failed\n")[3] == "clang++: error: linker command failed"
    assert first_error("a.o: x.cpp:(.text): undefined reference to `f'\nld.lld: error: y\n")[3].endswith("`f'")
    assert first_error("ld.lld: error: undefined symbol: bar\n")[3] == "ld.lld: error: undefined symbol: bar"
    assert first_error("not a clang tool: error: x\nlast")[3] == "last"   # a head with spaces is not a tool
