"""rocmlab.cuda2hip.scan: THE trap scanner (token-based, preprocessor-aware, linear)."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from rocmlab import settings
from rocmlab.cuda2hip.scan import SEVERITIES, scan, scan_project

DATA = Path(__file__).parents[1] / "data" / "port" / "traps"
WARP_KINDS = ("warp", "preprocessor")


def planted(path: Path) -> set[tuple[str, int, str]]:
    out = set()
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = re.search(r"TRAP ([\w-]+)\s*$", line)
        if m:
            out.add((path.name, n, m.group(1)))
    return out


def recall_and_false_positives(report, files):
    want = set().union(*(planted(f) for f in files))
    got = {(Path(f.file).name, f.line, f.rule) for f in report.findings
           if f.kind in WARP_KINDS and f.compiled and f.severity in ("error", "warning")}
    found = want & got
    planted_lines = {(f, n) for f, n, _ in want}
    false_pos = {g for g in got if (g[0], g[1]) not in planted_lines}
    return found, want, false_pos


def test_every_planted_trap_is_flagged_and_nothing_else():
    r = scan(DATA / "planted_warp32.cu")
    found, want, false_pos = recall_and_false_positives(r, [DATA / "planted_warp32.cu", DATA / "planted_common.cuh"])
    assert want and found == want, f"missed: {sorted(want - found)}"
    assert not false_pos, f"false positives: {sorted(false_pos)}"


def test_never_compiled_code_has_no_error_and_is_marked():
    r = scan(DATA / "planted_warp32.cu")
    never = [f for f in r.findings if not f.compiled]
    assert never, "the #if 0 block and the #ifdef'd cuBLAS table are still scanned, as never compiled"
    assert all(f.severity == "info" for f in never)
    assert {f.line for f in never if f.file.endswith("planted_common.cuh")} >= {6, 9}
    assert "cublas" not in r.libraries          # a library is needed only when used in compiled code
    # control: the same table, compiled, is an error and needs hipBLAS
    r2 = scan(DATA / "planted_warp32.cu", defines={"CUBLAS_API_H_": "1"})
    assert any(f.rule == "library-left" and f.compiled and f.severity == "error" for f in r2.findings)
    assert "cublas" in r2.libraries


def test_config_is_named_and_cuda_arch_is_undefined():
    src = "#if __CUDA_ARCH__ >= 700\n__global__ void k(int *o) { o[0] = threadIdx.x & 31; }\n#endif\n"
    r = scan(src, filename="k.hip")
    dev = r.config["device_pass"]
    assert dev["__HIP_PLATFORM_AMD__"] == "1" and dev["__HIPCC__"] == "1" and dev["__HIP_DEVICE_COMPILE__"] == "1"
    assert dev["__AMDGCN_WAVEFRONT_SIZE"] == "64" and dev[f"__{settings.DEFAULT_TARGET}__"] == "1"
    assert "__HIP_DEVICE_COMPILE__" not in r.config["host_pass"]
    guard = [f for f in r.findings if f.rule == "cuda-arch-guard"]
    assert guard and guard[0].severity == "error" and "NEVER compiled" in guard[0].message
    body = [f for f in r.findings if f.rule == "lane-arithmetic-32"]
    assert body and not body[0].compiled and body[0].severity == "info"
    # control: a real architecture test for the target keeps the body compiled
    r2 = scan(src.replace("__CUDA_ARCH__ >= 700", f"defined(__{settings.DEFAULT_TARGET}__)"), filename="k.hip")
    assert [f.compiled for f in r2.findings if f.rule == "lane-arithmetic-32"] == [True]
    # gfx90a: the gfx942 test is false there
    r3 = scan(src.replace("__CUDA_ARCH__ >= 700", "defined(__gfx942__)"), filename="k.hip", target="gfx90a")
    assert [f.compiled for f in r3.findings if f.rule == "lane-arithmetic-32"] == [False]


def test_device_or_host_pass_counts_as_compiled():
    # a warp-level unit (it ballots), so its host code that computes lanes of 32 is judged too
    src = ("#ifdef __HIP_DEVICE_COMPILE__\n__device__ int a(int t) { return t & 31; }\n#else\n"
           "int b(int tid) { return tid % 32; }\n#endif\n"
           "__device__ unsigned long long vote(int p) { return __ballot(p); }\n")
    r = scan(src, filename="p.hip")
    lines = {f.line: f.compiled for f in r.findings if f.rule == "lane-arithmetic-32"}
    assert lines == {2: True, 4: True}


def test_macros_values_and_includes_flow():
    src = ('#include "w.h"\n__global__ void k(int *o) {\n  int v = o[0];\n'
           '  for (int i = 1; i < WS; i <<= 1) v += __shfl_up(v, i);\n  o[0] = __shfl_down_sync(FULL, v, 1);\n}\n')
    r = scan(src, filename="k.hip", root=DATA)  # w.h is not there: no values known
    assert not [f for f in r.findings if f.rule in ("lane-loop-32", "shfl-sync-32-bit-mask")]
    tmp_hdr = {"w.h": "#define WS (32)\n#define FULL 0xFFFFFFFFu\n", "k.hip": src}
    r = scan_project("/nonexistent-root-for-test", sources=tmp_hdr)
    rules = {(f.file, f.rule) for f in r.findings}
    assert ("k.hip", "lane-loop-32") in rules and ("k.hip", "shfl-sync-32-bit-mask") in rules
    assert ("w.h", "hard-coded-warp-size") not in rules     # WS is not named like a warp size
    assert "__shfl_down_sync" in r.calls and r.launches == []


def test_launches_calls_and_cuda_left_in_compiled_code_only():
    src = ("#include <hip/hip_runtime.h>\n__global__ void k(int *o) { o[0] = 1; }\n"
           "template <int N> __global__ void t(int *o) {}\n"
           "int main() {\n  k<<<1, 64>>>(nullptr);\n  t<4><<<1, 64>>>(nullptr);\n"
           "  hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, 0, nullptr);\n  cudaDeviceSynchronize();\n"
           "#if 0\n  cudaFree(0);\n  k<<<1, 1>>>(nullptr);\n#endif\n  return 0;\n}\n")
    r = scan(src, filename="m.hip")
    assert [(line, k) for _, line, k in r.launches] == [(5, "k"), (6, "t"), (7, "k")]
    assert [f.line for f in r.cuda_left] == [8]
    assert "cudaFree" not in r.calls and "hipLaunchKernelGGL" in r.calls and r.has_main


def test_include_outside_root_is_read_and_listed(tmp_path):
    common = tmp_path / "Common"
    common.mkdir()
    (common / "helper.h").write_text("#pragma once\n#define WARP_SIZE 32\n")
    proj = tmp_path / "Samples" / "a" / "b"
    proj.mkdir(parents=True)
    (proj / "main.cu").write_text("#include <helper.h>\nint main() { return WARP_SIZE; }\n")
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
    r = scan(proj / "main.cu", include_dirs=["../../../Common"])
    assert any(f.rule == "hard-coded-warp-size" and f.file.endswith("helper.h") for f in r.findings)
    assert [Path(p).name for p in r.outside_root] == ["helper.h"]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == before
    # control: without the -I the header is not found, nothing from it
    r2 = scan(proj / "main.cu")
    assert not r2.outside_root and not any(f.file.endswith("helper.h") for f in r2.findings)


def test_symlink_leaving_root_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.h").write_text("#define WARP_SIZE 32\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "secret.h").symlink_to(outside / "secret.h")
    (proj / "inner.h").write_text("#define WAVE_SIZE 32\n")
    (proj / "main.cu").write_text('#include "secret.h"\n#include "inner.h"\nint main() { return 0; }\n')
    r = scan(proj / "main.cu")
    assert not any(f.file.endswith("secret.h") for f in r.findings)
    assert [Path(p).name for p in r.not_followed] == ["secret.h"]
    assert any(f.file == "inner.h" for f in r.findings)      # control: the real file is read


def test_one_severity_scale_and_unknown_target():
    r = scan(DATA / "planted_warp32.cu")
    assert {f.severity for f in r.findings} <= set(SEVERITIES)
    with pytest.raises(ValueError, match="unknown target"):
        scan("int x;", target="sm_90")


def test_linear_time_on_400_kb():
    rng = random.Random()
    pieces = [(DATA / "planted_warp32.cu").read_text(), "int a = (((((1)))));\n", "x(" * 50 + "\n",
              "/* " + "y" * 200 + " */\n", '"' + "z" * 100 + '"\n', "__popc(" * 30 + "\n", "#if (1\n#endif\n"]
    src = []
    size = 0
    while size < 400_000:
        p = rng.choice(pieces)
        src.append(p)
        size += len(p)
    text = "".join(src)
    t0 = time.monotonic()
    r = scan(text, filename="big.cu")
    dt = time.monotonic() - t0
    assert r.findings
    assert dt < 30, f"400 KB took {dt:.1f} s"
